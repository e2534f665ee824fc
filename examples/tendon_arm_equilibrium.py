"""Equilibria of a tendon-driven soft arm under gravity, and inverse statics for a tip target.

Run:  python examples/tendon_arm_equilibrium.py [output-folder]

A rigid link on a spring-loaded, motorized shoulder (a revolute joint about y) carries three
silicone segments (planar constant curvature, Cosserat rod law) horizontally along +x; gravity
acts along −z. Two antagonistic tendons run at 1.2 cm from the backbone: the lower one through
all three segments, the upper one through the first two. The motor and the tendons are the
robot's actuators (`sr.Robot(..., actuators=...)`), its inputs `u = (τ, u_lower, u_upper)`.
For a sweep of tensions `sr.equilibrium(robot, u)` solves `g(q) + s(q, 0) = A(q) u` by
Newton's method, each solve warm-started from the previous equilibrium (shoulder motor off);
`sr.inverse_statics` then finds the shoulder torque and the two tensions that put the tip on a
target, as the smallest change from a pretension of 25 N in each tendon (three inputs, two
outputs). Prints the tensions, tip positions, Newton iterations and stability, and writes
`equilibria.png` to the output folder (default `out/tendon_arm_equilibrium`). Needs matplotlib
(the `plot` extra) for the figure.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import Array  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid import joints, kinematics, materials, quadrature  # noqa: E402
from softrigid.actuators import JointMotor, Tendon  # noqa: E402
from softrigid.plotting import backbones  # noqa: E402

SEGMENT_LENGTH = 0.1  # [m]
RADIUS = 0.02  # [m]
YOUNG = 1.0e6  # [Pa], a stiff silicone
DENSITY = 1100.0  # [kg/m³]
TENDON_OFFSET = 0.012  # [m] from the backbone
MOUNT_LENGTH = 0.05  # [m]
SHOULDER_STIFFNESS = 5.0  # [N m / rad]

# (lower, upper) tensions [N]: gravity alone, then the upper tendon lifting, then the lower one
TENSIONS = ((0.0, 0.0), (10.0, 0.0), (0.0, 15.0), (0.0, 30.0), (0.0, 45.0), (5.0, 45.0))
TARGET = (0.3, 0.0, 0.1)  # tip target [m] in the plane y = 0
PRETENSION = 25.0  # [N] in each tendon, the starting point of the inverse statics


class Arm(NamedTuple):
    """The robot (its actuators: shoulder motor, lower tendon, upper tendon) and the tip's
    link."""

    robot: sr.Robot
    tip_link: int


class Equilibrium(NamedTuple):
    """One solved equilibrium: inputs, configuration, tip, Newton iterations, stability."""

    u: np.ndarray
    q: np.ndarray
    tip: np.ndarray
    iterations: int
    stable: bool


def build_arm(n_segments: int = 3, n_axial: int = 3) -> Arm:
    """A 5 cm rigid link (0.2 kg) on a revolute shoulder about the world `y` axis (torsion
    spring 5 N m/rad, a motor), whose origin turns the chain's `z` axis to the world `+x`, then
    `n_segments` silicone segments (length 0.1 m, radius 2 cm, density 1100 kg/m³, rod law with `E = 1 MPa`, `G = E/3`) on fixed joints; planar constant curvature bends in
    the body's `x1 x3` plane, which is the world's `x z` plane here (`x1` points down).

    The lower tendon (body `x1 = +1 cm`) runs through every segment and the upper one
    (`x1 = −1 cm`) through all but the last: `A = −d` per segment it crosses, so pulling
    bends each of those segments toward the tendon. The robot's inputs are
    `u = (τ, u_lower, u_upper)`."""
    if n_segments < 2:
        raise ValueError(f"the arm needs at least 2 segments, got {n_segments}")
    turn = jnp.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # z → x, x → −z
    mount = sr.RigidBody(
        mass=0.2,
        com=(0.0, 0.0, MOUNT_LENGTH / 2),
        inertia=jnp.diag(jnp.array([1.0, 1.0, 0.1]) * 0.2 * MOUNT_LENGTH**2 / 12),
        distal=(jnp.eye(3), jnp.array([0.0, 0.0, MOUNT_LENGTH])),
    )
    segment = sr.SoftBody(
        kinematics.PlanarConstantCurvature(SEGMENT_LENGTH),
        quadrature.cylinder(RADIUS, SEGMENT_LENGTH, n_axial=n_axial, n_radial=2, n_angular=5),
        density=DENSITY,
        material=materials.CosseratRod(E=YOUNG, G=YOUNG / 3),
    )
    shoulder = joints.Revolute(
        (0.0, 1.0, 0.0), origin=(turn, jnp.zeros(3)), stiffness=SHOULDER_STIFFNESS
    )
    links = [sr.Link(shoulder, mount)]
    links += [sr.Link(joints.Fixed(), segment) for _ in range(n_segments)]
    soft = list(range(1, n_segments + 1))
    lower = Tendon(soft, (TENDON_OFFSET, 0.0))
    upper = Tendon(soft[:-1], (-TENDON_OFFSET, 0.0))
    robot = sr.Robot(links, gravity=(0.0, 0.0, -9.81), actuators=[JointMotor(0), lower, upper])
    return Arm(robot, n_segments)


def tip_position(arm: Arm, q: Array) -> Array:
    """World position `(3,)` of the tip (the end of the last segment's backbone)."""
    tip = jnp.array([[0.0, 0.0, SEGMENT_LENGTH]])
    return sr.world_points(arm.robot, q, arm.tip_link, tip)[0]


def sweep(arm: Arm, tensions: Sequence[Sequence[float]]) -> list[Equilibrium]:
    """Equilibria `g(q) + s(q, 0) = A(q) u` for each `(lower, upper)` tension pair with the
    shoulder motor off, every Newton solve warm-started from the previous equilibrium."""
    q = None
    out = []
    for lower, upper in tensions:
        u = jnp.array([0.0, lower, upper])
        sol = sr.equilibrium(arm.robot, u, q0=q)
        q = sol.q
        out.append(
            Equilibrium(
                np.asarray(sol.u),
                np.asarray(sol.q),
                np.asarray(tip_position(arm, sol.q)),
                int(sol.iterations),
                bool(sol.stable),
            )
        )
    return out


def reach(
    arm: Arm, target: Sequence[float], pretension: float = PRETENSION
) -> sr.InverseStaticSolution:
    """Inputs `u = (τ, u_lower, u_upper)` whose equilibrium puts the tip's `(x, z)` on
    `target`'s. Three inputs, two outputs: damped least squares over the inputs (an exact
    equilibrium at every iterate) takes minimum-norm steps from `u0 = (0, p, p)`, so it finds a
    solution near the pretension `p`, which keeps both tendons pulling."""
    goal = jnp.asarray(target, dtype=float)[jnp.array([0, 2])]

    def tip_xz(q: Array) -> Array:
        return tip_position(arm, q)[jnp.array([0, 2])]

    u0 = jnp.array([0.0, pretension, pretension])
    return sr.inverse_statics(arm.robot, tip_xz, goal, u0=u0, tol=1e-12)


def plot(
    arm: Arm,
    states: Sequence[Equilibrium],
    inverse: sr.InverseStaticSolution,
    target: Sequence[float],
    path: Path,
) -> Path:
    """Draw the backbones (world `x z` plane) of the swept equilibria and of the inverse-statics
    solution with its target; save to `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
    cmap = plt.get_cmap("viridis")
    for k, state in enumerate(states):
        colour = cmap(k / max(1, len(states) - 1))
        label = f"(lower, upper) = ({state.u[1]:g}, {state.u[2]:g}) N"
        _draw(left, arm, state.q, colour, label)
    _draw(right, arm, np.asarray(inverse.q), "tab:red", "inverse statics")
    right.plot(target[0], target[2], "kx", ms=10, mew=2, label="tip target")
    left.set_title("equilibria under (lower, upper) tendon tensions")
    right.set_title(
        f"tip target: τ = {inverse.u[0]:.2f} N m, tensions ({inverse.u[1]:.1f}, "
        f"{inverse.u[2]:.1f}) N"
    )
    for ax in (left, right):
        ax.set_aspect("equal")
        ax.set_xlabel("x [m]")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower left", fontsize="small")
    left.set_ylabel("z [m]")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def _draw(ax, arm: Arm, q: np.ndarray, colour, label: str) -> None:
    for j, line in enumerate(backbones(arm.robot, jnp.asarray(q))):
        line = np.asarray(line)
        ax.plot(
            line[:, 0],
            line[:, 2],
            color=colour if j else "0.3",
            lw=3 if j else 6,
            label=label if j == 1 else None,
        )


def main(out: Path) -> None:
    start = time.perf_counter()
    arm = build_arm()
    states = sweep(arm, TENSIONS)
    swept = time.perf_counter()
    inverse = reach(arm, TARGET)
    reached = time.perf_counter()
    print("lower [N]  upper [N]   tip x [m]   tip z [m]  Newton  stable")
    for s in states:
        print(
            f"{s.u[1]:9.2f}  {s.u[2]:9.2f}  {s.tip[0]:10.4f}  {s.tip[2]:10.4f}  "
            f"{s.iterations:6d}  {s.stable}"
        )
    print(
        f"inverse statics: tip target (x, z) = ({TARGET[0]}, {TARGET[2]}) m reached with "
        f"shoulder torque {float(inverse.u[0]):.4f} N m and tensions (lower, upper) = "
        f"({float(inverse.u[1]):.4f}, {float(inverse.u[2]):.4f}) N in {inverse.iterations} "
        "iterations, "
        f"|error| = {inverse.output_error:.2e} m (converged: {inverse.converged})"
    )
    print(
        f"sweep: {swept - start:.2f} s, inverse statics: {reached - swept:.2f} s "
        "(wall, including JIT compilation)"
    )
    out.mkdir(parents=True, exist_ok=True)
    figure = plot(arm, states, inverse, TARGET, out / "equilibria.png")
    print(f"figure written to {figure.resolve()}")


if __name__ == "__main__":
    from _cli import folder_main  # beside this script

    sr.fast_compilation()  # XLA:CPU compiles 2-2.7x faster (README, "Fast start")
    sr.enable_compilation_cache()  # a later run loads the compiled programs (README, "Fast start")
    folder_main(main, __doc__.splitlines()[0], "out/tendon_arm_equilibrium")
