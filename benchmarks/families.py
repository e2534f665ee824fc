"""Cost of one inverse-dynamics call per kinematics family (issue 3).

Each robot is a rigid link on a revolute joint followed by one soft body of the family, on the
same cylinder rule (radius 0.03 m, length 0.3 m, `n_axial × n_radial × n_angular` nodes, default
4 × 2 × 4; the gripper on the tube of the same outer radius). Per family: the first call of the
recursion's ID (trace + compile + run), its per-call time (median over batches, after
`block_until_ready`) at a random state, and the same two for the Euler–Lagrange baseline
(`softrigid.lagrangian.inverse_dynamics`) as the in-run reference. One JSON object per line.

Run: python benchmarks/families.py [--families cc3d pcs ...] [--n-axial 4 --n-radial 2 --n-angular 4]
"""

from __future__ import annotations

import argparse
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid import joints, kinematics, quadrature  # noqa: E402
from softrigid.kinematics import lvp  # noqa: E402

try:
    from _timing import emit, machine, positive_int, time_call, time_first_call
except ImportError:  # run as a module
    from benchmarks._timing import emit, machine, positive_int, time_call, time_first_call

LENGTH, RADIUS = 0.3, 0.03


def _mlp(x: jax.Array, q: jax.Array, params: dict[str, jax.Array]) -> jax.Array:
    """A 16-unit tanh network as a body map (`examples/learned_kinematics.py`)."""

    def d(qq: jax.Array) -> jax.Array:
        h = jnp.tanh(params["w1"] @ jnp.concatenate([x / LENGTH, qq]) + params["b1"])
        return LENGTH * (params["w2"] @ h)

    return x + d(q) - d(jnp.zeros_like(q))


def family_maps() -> dict[str, tuple[object, dict]]:
    """name -> (kinematics, SoftBody keyword arguments); every map has rest length `LENGTH`."""
    linear = lvp.Polynomial([[0.0, 1.0]], LENGTH)
    key1, key2 = jax.random.split(jax.random.PRNGKey(0))
    mlp = {
        "w1": jax.random.normal(key1, (16, 4)) / 2,
        "b1": jnp.zeros(16),
        "w2": jax.random.normal(key2, (3, 16)) * 0.01,
    }
    return {
        "planar_cc": (kinematics.PlanarConstantCurvature(LENGTH), {}),
        "cc3d": (kinematics.ConstantCurvature3D(LENGTH), {}),
        "pcs": (kinematics.PlanarPCS(LENGTH), {}),
        "spatial_pcs": (kinematics.SpatialPCS(LENGTH), {}),
        "cosserat_pcs3": (
            kinematics.Cosserat(
                LENGTH, kinematics.PiecewiseConstant(LENGTH, 3, ("bend", "axial")), n_steps=3
            ),
            {},
        ),
        "cosserat_legendre2": (
            kinematics.Cosserat(
                LENGTH, kinematics.Legendre(LENGTH, 2, ("bend", "axial")), n_steps=4
            ),
            {},
        ),
        "lvp_twist": (lvp.Twist(linear), {}),
        "lvp_stretch": (lvp.Stretch(lvp.Polynomial([[0.0, 1.0, -1.0]], LENGTH)), {}),
        "lvp_shear": (lvp.Shear(linear, linear), {}),
        "lvp_bend": (lvp.Bend(linear), {}),
        "lvp_bend3d": (lvp.Bend3D(linear, linear), {}),
        "lvp_source": (lvp.Source(lvp.Polynomial([[0.0, 0.0, 1.0]], LENGTH)), {}),
        "helicoid_segment": (lvp.helicoid_segment(LENGTH), {}),
        "gripper": (lvp.gripper(LENGTH), {}),
        "mlp": (_mlp, {"n_q": 1, "params": mlp}),
    }


HOLLOW = ("lvp_source", "gripper")


def build(name: str, args: argparse.Namespace) -> sr.Robot:
    kin, extra = family_maps()[name]
    sizes = {"n_axial": args.n_axial, "n_radial": args.n_radial, "n_angular": args.n_angular}
    if name in HOLLOW:
        volume = quadrature.tube(0.5 * RADIUS, RADIUS, LENGTH, **sizes)
    else:
        volume = quadrature.cylinder(RADIUS, LENGTH, **sizes)
    rigid = sr.RigidBody(
        mass=0.5,
        com=(0.0, 0.0, 0.1),
        inertia=jnp.diag(jnp.array([1.7e-3, 1.7e-3, 1e-4])),
        distal=(jnp.eye(3), jnp.array([0.0, 0.0, 0.2])),
    )
    body = sr.SoftBody(kin, volume, 1000.0, **extra)
    return sr.Robot(
        [sr.Link(joints.Revolute((0.0, 1.0, 0.0)), rigid), sr.Link(joints.Fixed(), body)],
        gravity=(0.0, 0.0, -9.81),
    )


def state(robot: sr.Robot, name: str, seed: int = 0) -> tuple[jax.Array, ...]:
    """A random state inside every family's valid range (source coordinates in m²)."""
    rng = np.random.default_rng(seed)
    scale = np.full(robot.n_q, 0.3)
    if name in HOLLOW:
        scale[-1] = 1e-5
    return tuple(jnp.asarray(scale * rng.uniform(-1, 1, robot.n_q)) for _ in range(3))


def measure(name: str, args: argparse.Namespace) -> None:
    robot = build(name, args)
    q, qd, qdd = state(robot, name)
    rec = jax.jit(lambda a, b, c: sr.inverse_dynamics(robot, a, b, c))
    el = jax.jit(lambda a, b, c: sr.lagrangian.inverse_dynamics(robot, a, b, c))
    rec_first = time_first_call(lambda: rec(q, qd, qdd))
    rec_call = time_call(lambda: rec(q, qd, qdd))
    el_first = time_first_call(lambda: el(q, qd, qdd))
    el_call = time_call(lambda: el(q, qd, qdd), repeats=5)
    nu, nu_el = np.asarray(rec(q, qd, qdd)), np.asarray(el(q, qd, qdd))
    body = robot.links[1].body
    emit(
        "families.id",
        family=name,
        n_q_body=body.n_q,
        nodes=int(body.volume.points.shape[0]),
        row_by_row=bool(body.sectioned),
        quadrature=[args.n_axial, args.n_radial, args.n_angular],
        first_call_s=rec_first,
        per_call=rec_call,
        euler_lagrange_first_call_s=el_first,
        euler_lagrange_per_call=el_call,
        ratio_el=el_call["median_s"] / rec_call["median_s"],
        rel_diff=float(np.linalg.norm(nu - nu_el) / np.linalg.norm(nu_el)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(family_maps()))
    parser.add_argument("--n-axial", type=positive_int, default=4)
    parser.add_argument("--n-radial", type=positive_int, default=2)
    parser.add_argument("--n-angular", type=positive_int, default=4)
    args = parser.parse_args()
    unknown = set(args.families) - set(family_maps())
    if unknown:
        parser.error(f"unknown families {sorted(unknown)}; choose from {list(family_maps())}")
    start = time.perf_counter()
    emit("families.machine", **machine())
    for name in args.families:
        measure(name, args)
    emit("families.done", wall_s=time.perf_counter() - start)


if __name__ == "__main__":
    main()
