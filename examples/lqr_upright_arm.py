"""An inverted soft arm balanced upright by an LQR designed on `sr.linearize`.

Run:  python examples/lqr_upright_arm.py [--t-final T] [--out DIR]

A motorized revolute base carries a rigid link pointing up and, on top of it, an elastic planar
constant-curvature segment with two antagonistic tendons: 2 coordinates (base angle, bend),
3 inputs (base torque, two tensions). Straight up is an equilibrium (`sr.equilibrium`), but an
unstable one: the statics report `stable = False`, the linearization an eigenvalue with a
positive real part. The tendons can only pull, so the design point holds both at a pretension
`T0` and the LQR acts about it, `u = u0 − K (x − x_eq)` (`control.StateFeedback`); the script
reports the smallest tension of the run (positive: no tendon had to push). The same start without feedback
(`u = u0`) falls over. Writes `coordinates.png` (both runs), `inputs.png`, `snapshots.png` and
`summary.json` to the output folder (default `out/lqr_upright_arm`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid import control, joints, kinematics, materials, quadrature  # noqa: E402
from softrigid.actuators import JointMotor, Tendon  # noqa: E402

LINK, SEGMENT, RADIUS = 0.2, 0.25, 0.015  # [m]
PRETENSION = 2.0  # T0 [N], each tendon at the design point
OFFSET = 0.01  # tendons' distance from the backbone [m]
DT = 2e-3  # RK4 step [s]
# LQR weights: x = (base angle, bend, their rates); u = (torque [N m], tensions [N])
STATE_WEIGHTS = (10.0, 1.0, 1.0, 0.1)
INPUT_WEIGHTS = (1.0, 0.5, 0.5)
START = (0.15, -0.1)  # the perturbed start: base angle [rad], bend [rad]


def build_robot() -> sr.Robot:
    """A 0.3 kg, 0.2 m rigid link on a damped revolute joint about y, pointing up (gravity
    −z), then a silicone segment (0.25 m, radius 1.5 cm, 1070 kg/m³; Cosserat rod law with
    E = 2 MPa, G = E/3, damping time 0.02 s) bending in the same plane, its two tendons at
    ±1 cm along x1."""
    rigid = sr.RigidBody(
        mass=0.3,
        com=(0.0, 0.0, LINK / 2),
        inertia=jnp.diag(jnp.array([1.0, 1.0, 0.02]) * 0.3 * LINK**2 / 12),
        distal=(jnp.eye(3), jnp.array([0.0, 0.0, LINK])),
    )
    soft = sr.SoftBody(
        kinematics.PlanarConstantCurvature(SEGMENT),
        quadrature.cylinder(RADIUS, SEGMENT, n_axial=4, n_radial=2, n_angular=3),
        density=1070.0,
        material=materials.CosseratRod(E=2e6, G=2e6 / 3, eta=0.02),
    )
    links = [
        sr.Link(joints.Revolute((0.0, 1.0, 0.0), damping=0.01), rigid),
        sr.Link(joints.Fixed(), soft),
    ]
    tendons = (Tendon([1], (OFFSET, 0.0)), Tendon([1], (-OFFSET, 0.0)))
    return sr.Robot(links, gravity=(0.0, 0.0, -9.81), actuators=(JointMotor(0), *tendons))


def design(robot: sr.Robot) -> dict[str, Any]:
    """The upright equilibrium under `u0 = (0, T0, T0)`, the linearization there and the LQR
    gain `K = R⁻¹ Bᵀ P` (`P` from the continuous algebraic Riccati equation)."""
    u0 = jnp.array([0.0, PRETENSION, PRETENSION])
    eq = sr.equilibrium(robot, u0)
    lin = sr.linearize(robot, eq.q, jnp.zeros(robot.n_q), u0)
    a, b = np.asarray(lin.state_matrix), np.asarray(lin.input_matrix)
    q_w, r_w = np.diag(STATE_WEIGHTS), np.diag(INPUT_WEIGHTS)
    p = scipy.linalg.solve_continuous_are(a, b, q_w, r_w)
    gain = np.linalg.solve(r_w, b.T @ p)
    return {
        "u0": u0,
        "equilibrium": eq,
        "open_loop_eigenvalues": np.linalg.eigvals(a),
        "closed_loop_eigenvalues": np.linalg.eigvals(a - b @ gain),
        "gain": jnp.asarray(gain),
    }


def run(robot: sr.Robot, plan: dict[str, Any], t_final: float) -> dict[str, sr.Trajectory]:
    """The nonlinear robot from `START` at rest with the LQR (`control.StateFeedback`) and
    without feedback (the same law with a zero gain: its gain is traced, so both runs share one
    compiled program)."""
    q_eq, u0, gain = plan["equilibrium"].q, plan["u0"], plan["gain"]
    x_eq = jnp.concatenate([q_eq, jnp.zeros(robot.n_q)])
    q0, qd0 = q_eq + jnp.asarray(START), jnp.zeros(robot.n_q)
    return {
        name: sr.simulate(
            robot, q0, qd0, t_final, DT, controller=control.StateFeedback(k, x_eq, u0)
        )
        for name, k in (("lqr", gain), ("open loop", jnp.zeros_like(gain)))
    }


def write_figures(robot: sr.Robot, runs: dict[str, sr.Trajectory], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from softrigid.plotting import plot_snapshots

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharex=True)
    for k, label in enumerate(("base angle [rad]", "bend [rad]")):
        for name, traj in runs.items():
            axes[k].plot(traj.t, traj.q[:, k], label=name)
        axes[k].set_xlabel("t [s]")
        axes[k].set_ylabel(label)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(out / "coordinates.png", dpi=110)
    plt.close(fig)
    traj = runs["lqr"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharex=True)
    axes[0].plot(traj.t, traj.u[:, 0])
    axes[0].set_ylabel("base torque [N m]")
    axes[1].plot(traj.t, traj.u[:, 1], label="tendon +x1")
    axes[1].plot(traj.t, traj.u[:, 2], label="tendon −x1")
    axes[1].axhline(0.0, color="k", lw=0.5)
    axes[1].set_ylabel("tension [N]")
    axes[1].legend()
    for ax in axes:
        ax.set_xlabel("t [s]")
    fig.tight_layout()
    fig.savefig(out / "inputs.png", dpi=110)
    plt.close(fig)
    t_end = float(traj.t[-1])
    times = [t_end * k / 5 for k in range(6)]
    plot_snapshots(robot, traj, out / "snapshots.png", times=times, legend="outside")
    return ["coordinates.png", "inputs.png", "snapshots.png"]


def summarize(plan: dict[str, Any], runs: dict[str, sr.Trajectory]) -> dict[str, Any]:
    """The design's numbers and each run's distance from upright at its end."""
    q_eq = np.asarray(plan["equilibrium"].q)

    def error(traj: sr.Trajectory) -> float:
        return float(np.max(np.abs(np.asarray(traj.q[-1]) - q_eq)))

    lqr = runs["lqr"]
    return {
        "equilibrium_stable": bool(plan["equilibrium"].stable),
        "open_loop_max_real_eigenvalue": float(np.max(plan["open_loop_eigenvalues"].real)),
        "closed_loop_max_real_eigenvalue": float(np.max(plan["closed_loop_eigenvalues"].real)),
        "start_error_rad": float(np.max(np.abs(START))),
        "lqr_final_error_rad": error(lqr),
        "open_loop_final_error_rad": error(runs["open loop"]),
        "lqr_min_tension_N": float(np.min(np.asarray(lqr.u)[:, 1:])),
        "lqr_max_torque_Nm": float(np.max(np.abs(np.asarray(lqr.u)[:, 0]))),
    }


def main(t_final: float, out: Path) -> dict[str, Any]:
    tic = time.perf_counter()
    robot = build_robot()
    plan = design(robot)
    runs = run(robot, plan, t_final)
    summary = summarize(plan, runs)
    out.mkdir(parents=True, exist_ok=True)
    written = write_figures(robot, runs, out)
    summary.update(sim_s=t_final, wall_s=time.perf_counter() - tic)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(
        f"upright: stable without feedback {summary['equilibrium_stable']}, open-loop eigenvalue "
        f"{summary['open_loop_max_real_eigenvalue']:.2f} 1/s, closed loop "
        f"{summary['closed_loop_max_real_eigenvalue']:.2f} 1/s"
    )
    print(
        f"from {summary['start_error_rad']:.2f} rad off: LQR ends "
        f"{summary['lqr_final_error_rad']:.2e} rad off (tensions ≥ "
        f"{summary['lqr_min_tension_N']:.2f} N), without feedback "
        f"{summary['open_loop_final_error_rad']:.2f} rad off"
    )
    print(f"wall {summary['wall_s']:.1f} s; wrote {written} and summary.json to {out.resolve()}")
    return summary


if __name__ == "__main__":
    from _cli import simulation_main  # beside this script

    sr.fast_compilation()  # XLA:CPU compiles 2-2.7x faster (README, "Fast start")
    sr.enable_compilation_cache()  # a later run loads the compiled programs (README, "Fast start")
    simulation_main(main, __doc__.splitlines()[0], 3.0, "out/lqr_upright_arm")
