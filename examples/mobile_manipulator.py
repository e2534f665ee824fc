"""Seed 002's nonholonomic mobile manipulator: a differential-drive base carrying a 3-link arm.

Run:  python examples/mobile_manipulator.py [--t-final T] [--out DIR]

The base is a `Planar` joint (normal z, `q_b = (x, y, φ)`: the world position of the wheel-axle
midpoint and the heading) under the rolling constraint of a differential drive (the seed's
eq. 64), imposed by the Udwadia–Kalaba equation (`constraints.Nonholonomic`):

    a(q) q̇ = −sin φ ẋ + cos φ ẏ = 0        (no sideways slip of the axle),

with the seed's `b = −ȧ q̇` (no drift control, `γ = 0`): the residual `a(q) q̇` then measures
the integrator's error alone. The arm is a turret (revolute about z), a shoulder and an elbow
(revolute about y), q = (x, y, φ, θ1, θ2, θ3). The seed simulates an 8-DoF robot in V-REP
without publishing its parameters, so they are chosen here (SI units):

- base: 20 kg box 0.5 × 0.4 × 0.2 m, centre of mass 0.1 m behind the axle and 0.15 m up;
- arm mounted 0.1 m ahead of the axle, 0.25 m up: a 1.5 kg turret column (0.1 m), a 1.2 kg
  upper arm (0.35 m) and a 0.8 kg forearm (0.3 m), tubes of radius 3 cm; gravity −9.81 z.

Inputs (generalized forces, no actuator model): the wheels' traction `F` along the heading and
a yaw torque `τ`, i.e. `Q_b = (F cos φ, F sin φ, τ)` (virtual power `F v + τ ω`), track the
forward speed `v = ẋ cos φ + ẏ sin φ` and the yaw rate `ω = φ̇` of a reference that drives
straight, then turns: `F = k_v (v_d − v)`, `τ = k_ω (ω_d − ω)`. The arm is held at a target
posture by `control.CompensatedPD` (PD plus gravity compensation) on its three joints; the
base's accelerations and turning act on it as disturbances, and the turret's start yaws the
base the other way (its reaction torque) until the yaw-rate loop catches it. RK4 at 1 ms.
Without the constraint the same base is the seed's holonomic (planar-joint) mobile base.

The residual is set during that fast start and stays constant after it (with `γ = 0` the
dynamics keeps `ψ = a q̇` constant, so nothing pulls it back; `Nonholonomic(rolling, gamma)`
would make it decay like `e^{−γ t}`). It is RK4's error, fourth order in the step: measured
max |a q̇| = 8.2e-9, 4.6e-10 and 2.7e-11 m/s at 2, 1 and 0.5 ms (speeds of 0.4 m/s).

Writes `base_path.png` (the axle and gripper paths in the plane; the speeds and their
references), `arm_angles.png` (θ1..θ3 against the target) and `constraint_residual.png`
(`|a(q) q̇|` over time) to `out/mobile_manipulator/` and prints the final residual.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, NamedTuple

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid import constraints, control, joints  # noqa: E402

GRAVITY = (0.0, 0.0, -9.81)
DT = 1e-3
ARM = (3, 4, 5)  # the arm's coordinates (and inputs) in q = (x, y, φ, θ1, θ2, θ3)
ARM_START = (0.0, 0.3, 0.5)  # θ1..θ3 at t = 0 [rad]
ARM_TARGET = (0.8, -0.5, 1.0)  # the posture the arm is held at [rad]
SPEED, TURN_RATE = 0.4, 0.5  # cruise speed [m/s] and yaw rate once turning [rad/s]
KP, KD = (40.0, 60.0, 20.0), (8.0, 9.0, 1.5)  # arm gains [N·m/rad], [N·m·s/rad]
K_SPEED, K_TURN = 120.0, 12.0  # base gains [N·s/m], [N·m·s/rad]
GRIPPER = 3  # the forearm's link: its distal frame is the gripper


def _box(mass: float, size: tuple[float, float, float]) -> jax.Array:
    """Inertia of a solid box about its centre, `m/12 diag(b² + c², a² + c², a² + b²)`."""
    a, b, c = size
    return mass / 12.0 * jnp.diag(jnp.array([b * b + c * c, a * a + c * c, a * a + b * b]))


def _tube(mass: float, length: float, radius: float, axis: int) -> jax.Array:
    """Inertia of a solid cylinder about its centre, its axis along `axis` (0 = x, 2 = z)."""
    across = mass * (3.0 * radius**2 + length**2) / 12.0
    moments = [across] * 3
    moments[axis] = mass * radius**2 / 2.0
    return jnp.diag(jnp.array(moments))


def build() -> sr.Robot:
    """The mobile manipulator (parameters in the module docstring), `n_q = 6`, no actuators
    (the inputs are the generalized forces)."""
    base = sr.RigidBody(
        20.0,
        (-0.1, 0.0, 0.15),
        _box(20.0, (0.5, 0.4, 0.2)),
        distal=(jnp.eye(3), jnp.array([0.1, 0.0, 0.25])),  # the arm's mount
    )
    column = sr.RigidBody(
        1.5, (0.0, 0.0, 0.05), _tube(1.5, 0.1, 0.05, 2), distal=(jnp.eye(3), (0.0, 0.0, 0.1))
    )
    upper = sr.RigidBody(
        1.2, (0.175, 0.0, 0.0), _tube(1.2, 0.35, 0.03, 0), distal=(jnp.eye(3), (0.35, 0.0, 0.0))
    )
    fore = sr.RigidBody(
        0.8, (0.15, 0.0, 0.0), _tube(0.8, 0.3, 0.03, 0), distal=(jnp.eye(3), (0.3, 0.0, 0.0))
    )
    y_axis = (0.0, 1.0, 0.0)
    return sr.Robot(
        [
            sr.Link(joints.Planar((0.0, 0.0, 1.0)), base),
            sr.Link(joints.Revolute((0.0, 0.0, 1.0)), column),
            sr.Link(joints.Revolute(y_axis), upper),
            sr.Link(joints.Revolute(y_axis), fore),
        ],
        gravity=GRAVITY,
    )


def rolling(q: jax.Array) -> jax.Array:
    """The differential drive's constraint row `a(q) = (−sin φ, cos φ, 0, 0, 0, 0)`."""
    phi = q[2]
    return jnp.zeros_like(q).at[0].set(-jnp.sin(phi)).at[1].set(jnp.cos(phi))


class DriveAndHold(eqx.Module, control.Controller):
    """The base tracks a forward speed and a yaw rate, the arm a posture:

        F = k_v (v_d − v),  τ = k_ω (ω_d − ω),  v = ẋ cos φ + ẏ sin φ,  ω = φ̇,
        u = (F cos φ, F sin φ, τ, 0, 0, 0) + arm(t, q, q̇, terms),

    with `arm` a law on the arm's coordinates that leaves the base's inputs at zero.
    """

    gains: jax.Array  # (k_v, k_ω)
    speed: control.Reference  # v_d(t), size 1
    turn: control.Reference  # ω_d(t), size 1
    arm: control.Controller

    def __call__(
        self, t: jax.Array, q: jax.Array, qd: jax.Array, terms: sr.DynamicsTerms
    ) -> jax.Array:
        phi = q[2]
        heading = jnp.array([jnp.cos(phi), jnp.sin(phi)])
        v, omega = heading @ qd[:2], qd[2]
        force = self.gains[0] * (self.speed(t)[0][0] - v)
        torque = self.gains[1] * (self.turn(t)[0][0] - omega)
        base = jnp.zeros_like(q).at[:2].set(force * heading).at[2].set(torque)
        return base + self.arm(t, q, qd, terms)


def controller(robot: sr.Robot) -> DriveAndHold:
    """Speed up to `SPEED` over the first 1.5 s, turn at `TURN_RATE` from t = 2.5 s (reached
    at 3.5 s), hold the arm at `ARM_TARGET`."""
    arm = control.CompensatedPD(robot, KP, KD, ARM_TARGET, coordinates=ARM, inputs=ARM)
    return DriveAndHold(
        gains=jnp.array([K_SPEED, K_TURN]),
        speed=control.CubicRestToRest([0.0], [SPEED], 0.0, 1.5),
        turn=control.CubicRestToRest([0.0], [TURN_RATE], 2.5, 3.5),
        arm=arm,
    )


class Result(NamedTuple):
    """A run: the trajectory, the residual `a(q) q̇` `(S + 1,)`, the speed references and
    the gripper's world positions `(S + 1, 3)`."""

    traj: sr.Trajectory
    residual: np.ndarray
    speed_ref: np.ndarray
    turn_ref: np.ndarray
    gripper: np.ndarray


def rollout(robot: sr.Robot, t_final: float, dt: float = DT) -> Result:
    """Simulate from rest (axle at the origin, heading +x, the arm at `ARM_START`)."""
    law = controller(robot)
    q0 = jnp.array([0.0, 0.0, 0.0, *ARM_START])
    qd0 = jnp.zeros(robot.n_q)
    drive = constraints.Nonholonomic(rolling)
    traj = sr.simulate(
        robot, q0, qd0, t_final, dt, controller=law, constraints=drive, progress=True
    )
    residual = jax.vmap(drive.residual)(traj.q, traj.qd)[:, 0]
    refs = jax.vmap(lambda t: (law.speed(t)[0][0], law.turn(t)[0][0]))(traj.t)
    gripper = jax.vmap(lambda q: sr.forward_kinematics(robot, q)[1][GRIPPER])(traj.q)
    return Result(traj, *(np.asarray(x) for x in (residual, *refs, gripper)))


def plot(result: Result, out: Path) -> list[Path]:
    """The three figures of the module docstring, written to `out`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    t, q, qd = (np.asarray(x) for x in result.traj[:3])
    paths = [out / n for n in ("base_path.png", "arm_angles.png", "constraint_residual.png")]

    fig, (ax, ax_v) = plt.subplots(1, 2, figsize=(11, 4.5))
    ax.plot(q[:, 0], q[:, 1], label="axle midpoint (x, y)")
    ax.plot(result.gripper[:, 0], result.gripper[:, 1], "--", label="gripper (x, y)")
    marks = np.linspace(0, len(t) - 1, 9).astype(int)
    ax.quiver(q[marks, 0], q[marks, 1], np.cos(q[marks, 2]), np.sin(q[marks, 2]), width=0.004)
    ax.set(xlabel="x [m]", ylabel="y [m]", title="base path (arrows: heading)", aspect="equal")
    ax.legend()
    v = qd[:, 0] * np.cos(q[:, 2]) + qd[:, 1] * np.sin(q[:, 2])
    ax_v.plot(t, v, label="v [m/s]")
    ax_v.plot(t, result.speed_ref, "k--", lw=0.8, label="references")
    ax_v.plot(t, qd[:, 2], label="ω [rad/s]")
    ax_v.plot(t, result.turn_ref, "k--", lw=0.8)
    ax_v.set(xlabel="t [s]", title="forward speed and yaw rate")
    ax_v.legend()
    fig.tight_layout()
    fig.savefig(paths[0], dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for k, (i, target) in enumerate(zip(ARM, ARM_TARGET)):
        (line,) = ax.plot(t, q[:, i], label=f"θ{k + 1}")
        ax.axhline(target, color=line.get_color(), ls="--", lw=0.8)
    ax.set(xlabel="t [s]", ylabel="[rad]", title="arm joints (dashed: target)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(paths[1], dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.semilogy(t, np.maximum(np.abs(result.residual), 1e-18))
    ax.set(xlabel="t [s]", ylabel="|a(q) q̇| [m/s]", title="rolling constraint residual (RK4)")
    fig.tight_layout()
    fig.savefig(paths[2], dpi=120)
    plt.close(fig)
    return paths


def run(t_final: float = 8.0, out: Path | str = Path("out/mobile_manipulator")) -> dict[str, Any]:
    """Build, simulate over `[0, t_final]`, plot to `out`, print and return a summary.

    Returns:
        a dict: `t`, `residual` (`a(q) q̇`) and `arm_error` (`|θ − θ_target|_∞`) as arrays over
        time; `max_residual`, `final_residual`, `speed` (final forward speed), `distance`
        (path length of the axle), `wall_s`, and `figures` (the written paths).
    """
    robot = build()
    start = time.perf_counter()
    result = rollout(robot, t_final)
    wall = time.perf_counter() - start
    t, q, qd = (np.asarray(x) for x in result.traj[:3])
    arm_error = np.max(np.abs(q[:, ARM] - np.asarray(ARM_TARGET)), axis=1)
    steps = np.hypot(np.diff(q[:, 0]), np.diff(q[:, 1]))
    summary = {
        "t": t,
        "residual": result.residual,
        "arm_error": arm_error,
        "max_residual": float(np.max(np.abs(result.residual))),
        "final_residual": float(abs(result.residual[-1])),
        "speed": float(qd[-1, 0] * np.cos(q[-1, 2]) + qd[-1, 1] * np.sin(q[-1, 2])),
        "distance": float(np.sum(steps)),
        "wall_s": wall,
        "figures": plot(result, Path(out)),
    }
    print(
        f"mobile manipulator: {t[-1]:.3g} s in {wall:.2f} s wall (compilation included); "
        f"axle travelled {summary['distance']:.3f} m, heading {q[-1, 2]:.3f} rad, "
        f"speed {summary['speed']:.4f} m/s"
    )
    print(f"arm error |θ − θ_target|_∞: {arm_error[0]:.3g} rad -> {arm_error[-1]:.3g} rad")
    print(
        f"rolling constraint residual |a(q) q̇|: final {summary['final_residual']:.3e} m/s, "
        f"max over the run {summary['max_residual']:.3e} m/s"
    )
    print(f"figures written to {Path(out).resolve()}")
    return summary


if __name__ == "__main__":
    from _cli import simulation_main  # beside this script

    sr.fast_compilation()  # XLA:CPU compiles 2-2.7x faster (README, "Fast start")
    sr.enable_compilation_cache()  # a later run loads the compiled programs (README, "Fast start")
    simulation_main(run, __doc__.splitlines()[0], 8.0, "out/mobile_manipulator")
