"""A rigid link carrying three elastic planar constant-curvature segments, swinging under gravity.

Run:  python examples/swinging_arm.py [output-folder]

Writes `q_of_t.png` (the coordinates over time) and `snapshots.png` (the arm at a few instants)
to the output folder (default `out/swinging_arm`) and prints where they are.

The method is the fastest one within 1e-3 rad of a tight Radau reference
(`benchmarks/simulate.py`, README "Simulation speed"): RK4 at `DT` = 8 ms (8e-4 rad; 4e-5 at
4 ms). The arm is only mildly stiff (its fastest damped mode lets RK4 take steps of several ms),
so RK4's four force evaluations per step cost less than the Newton solves of the implicit
methods, which also need shorter steps for this accuracy (generalized-α with ρ∞ = 0.5 is 3e-3
rad off at 5 ms, implicit Euler 2e-2 rad at 1 ms).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid import joints, kinematics, materials, quadrature  # noqa: E402
from softrigid.integrators import RK4  # noqa: E402
from softrigid.plotting import plot_snapshots, plot_trajectory  # noqa: E402

METHOD, DT = RK4(), 8e-3


def build_robot() -> sr.Robot:
    """A 0.3 m, 1 kg link on a damped revolute joint about y, then three silicone segments
    (length 0.2 m, radius 2 cm, density 1070 kg/m³; Cosserat rod law with E = 1.07 MPa,
    i.e. 6 C for the seed's C = 0.17857 MPa, G = E/3, damping time 0.02 s)."""
    link_length = 0.3
    rigid = sr.RigidBody(
        mass=1.0,
        com=(0.0, 0.0, link_length / 2),
        inertia=jnp.diag(jnp.array([1.0, 1.0, 0.02]) * link_length**2 / 12),
        distal=(jnp.eye(3), jnp.array([0.0, 0.0, link_length])),
    )
    soft = sr.SoftBody(
        kinematics.PlanarConstantCurvature(0.2),
        quadrature.cylinder(0.02, 0.2, n_axial=4, n_radial=2, n_angular=3),
        density=1070.0,
        material=materials.CosseratRod(E=1.07e6, G=1.07e6 / 3, eta=0.02),
    )
    # The arm starts horizontal along +x: the base joint frame is rotated so that z points along x.
    base = joints.Revolute(
        axis=(0.0, 1.0, 0.0),
        origin=(jnp.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]), jnp.zeros(3)),
        damping=0.05,
    )
    links = [sr.Link(base, rigid)] + [sr.Link(joints.Fixed(), soft) for _ in range(3)]
    return sr.Robot(links, gravity=(0.0, 0.0, -9.81))


def main(out: Path) -> None:
    robot = build_robot()
    q0 = jnp.array([0.0, 0.3, -0.2, 0.1])
    qd0 = jnp.zeros(robot.n_q)
    start = time.perf_counter()
    traj = sr.simulate(robot, q0, qd0, t_final=1.0, dt=DT, method=METHOD)
    jax.block_until_ready(traj.q)
    elapsed = time.perf_counter() - start
    start = time.perf_counter()  # the same call again reuses the compiled program
    jax.block_until_ready(sr.simulate(robot, q0, qd0, t_final=1.0, dt=DT, method=METHOD).q)
    again = time.perf_counter() - start
    e0 = sr.kinetic_energy(robot, traj.q[0], traj.qd[0]) + sr.potential_energy(robot, traj.q[0])
    e1 = sr.kinetic_energy(robot, traj.q[-1], traj.qd[-1]) + sr.potential_energy(robot, traj.q[-1])
    out.mkdir(parents=True, exist_ok=True)
    labels = ["base angle", "segment 1 bend", "segment 2 bend", "segment 3 bend"]
    plot_trajectory(traj, out / "q_of_t.png", labels)
    plot_snapshots(robot, traj, out / "snapshots.png", times=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    print(
        f"simulated {float(traj.t[-1]):.2f} s with {METHOD.name}, dt = {DT * 1e3:g} ms: "
        f"{elapsed:.2f} s wall including compilation, {again:.3f} s after it "
        f"(real-time factor {float(traj.t[-1]) / again:.1f})"
    )
    print(
        f"energy (kinetic + gravity + elastic): {float(e0):.4f} J -> {float(e1):.4f} J (dampers dissipate)"
    )
    print(f"plots written to {out.resolve()}")


if __name__ == "__main__":
    from _cli import output_folder  # beside this script

    sr.fast_compilation()  # XLA:CPU compiles 2-2.7x faster (README, "Fast start")
    sr.enable_compilation_cache()  # a later run loads the compiled programs (README, "Fast start")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "out", nargs="?", type=output_folder, default=Path("out/swinging_arm"), help="output folder"
    )
    main(parser.parse_args().out)
