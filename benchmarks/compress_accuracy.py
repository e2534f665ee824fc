"""Accuracy of compressed quadrature (issue 11 §1) against the full reference rule.

Per body family, one soft body on a fixed joint, a reference rule and its compressions
`quadrature.compress(reference, d)`, `d = 2, 4, 6, 8, 10` (each compressed from the reference,
so the comparison isolates the compression error):

- `helicoid`: `lvp.helicoid_segment(0.1)` on `meshes/helicoid.vtu`, density 960,
  `IncompressibleNeoHookean(C=0.178e6, eta=0.05)`; reference `from_mesh(degree=4)`;
- `gripper`: `lvp.gripper(0.05)` on `meshes/gripper.vtu` (length 0.05 m, `meshes/README.md`),
  `CompressibleNeoHookean(mu=2C, lam=20C, eta=0.05)` (see `_compressible`), distal frame on
  the chamber wall (`GRIPPER_FRAME`); reference `from_mesh(degree=4)`;
- `cc3d`: `ConstantCurvature3D(0.3)` on `cylinder(0.03, 0.3)`, density 1000,
  `CosseratRod(E=1e6, G=E/3, eta=0.05)`; reference `cylinder(n_axial=12, n_radial=8,
  n_angular=25)` (degree 23 in every direction);
- `cosserat`: `Cosserat(0.3, Legendre(0.3, 2, ("bend", "axial")))` on the same cylinder and
  reference, the same material.

At `--states` seeded random states inside each family's valid range (checked with the map's
`valid` on the reference nodes), the relative errors `‖X_d − X_ref‖ / ‖X_ref‖` (Frobenius for
`M`; the largest over the states) of `M`, `ID = M q̈ + c + g + s`, `g`, the elastic force
`∂U/∂q` and the damping force `∂R/∂q̇`; node counts; compression time. The compressed rules are evaluated padded to
`C(13, 3) = 286` nodes (a node repeated with split weights, the same integrals) so that the
dynamics compile once per family. With `--empirical`, also the empirical cubature
(`quadrature.empirical`) of the same quantities, fitted on `--train` other seeded states at the
singular-value tolerances `TOLERANCES` and measured on the same test states (nodes, fit time,
errors). One JSON object per line.

Run: python benchmarks/compress_accuracy.py [--states 3] [--families helicoid gripper ...]
         [--empirical] [--train 10] [--no-degrees]
"""

from __future__ import annotations

import argparse
import math
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid import joints, kinematics, materials, quadrature  # noqa: E402
from softrigid.kinematics import lvp  # noqa: E402

try:
    from _timing import emit, machine, positive_int
except ImportError:  # run as a module
    from benchmarks._timing import emit, machine, positive_int

DEGREES = (2, 4, 6, 8, 10)
TOLERANCES = (1e-6, 1e-8, 1e-10)
QUANTITIES = ("M", "ID", "g", "elastic", "damping")


def _neo_hookean() -> materials.IncompressibleNeoHookean:
    return materials.IncompressibleNeoHookean(C=0.178e6, eta=0.05)


def _compressible() -> materials.CompressibleNeoHookean:
    """The gripper's law: `IncompressibleNeoHookean` validates `det F = 1` at random
    `q ~ 0.05 N(0, I)`, where the source coordinate (m²) empties the 12 mm chamber and the
    map is undefined; on the volume-preserving map this law is the same `W` up to `ln J = 0`."""
    return materials.CompressibleNeoHookean(mu=0.356e6, lam=3.56e6, eta=0.05)


def _rod() -> materials.CosseratRod:
    return materials.CosseratRod(E=1e6, G=1e6 / 3, eta=0.05)


def families() -> dict[str, tuple]:
    """name -> (kinematics, reference rule factory, density, material factory, state scale)."""
    cyl = lambda: quadrature.cylinder(0.03, 0.3, n_axial=12, n_radial=8, n_angular=25)  # noqa: E731
    return {
        "helicoid": (
            lvp.helicoid_segment(0.1),
            lambda: quadrature.from_mesh("meshes/helicoid.vtu", degree=4),
            960.0,
            _neo_hookean,
            np.array([0.2, 0.1, 1.0, 0.1, 1.0, 0.5, 0.01, 0.01]),
        ),
        "gripper": (
            lvp.gripper(0.05),
            lambda: quadrature.from_mesh("meshes/gripper.vtu", degree=4),
            960.0,
            _compressible,
            np.array([0.2, 5e-5]),
        ),
        "cc3d": (
            kinematics.ConstantCurvature3D(0.3),
            cyl,
            1000.0,
            _rod,
            np.array([1.0, 1.0, 0.03]),
        ),
        "cosserat": (
            kinematics.Cosserat(0.3, kinematics.Legendre(0.3, 2, ("bend", "axial")), n_steps=4),
            cyl,
            1000.0,
            _rod,
            np.array([3.0, 2.0, 1.0, 3.0, 2.0, 1.0, 0.1, 0.05, 0.02]),
        ),
    }


# The gripper's source map `R² = r² + g` is undefined on the axis, where the mesh's default
# pivot `(0, 0, L)` lies (NaN distal frame): take the distal frame on the chamber wall instead.
GRIPPER_FRAME = {
    "pivot": (0.016, 0.0, 0.05),
    "contact_points": ((0.02, 0.0, 0.05), (0.016, 0.004, 0.05)),
}


def robot(
    kin: object, rule: quadrature.QuadratureRule, density: float, material: object, **frame
) -> sr.Robot:
    body = sr.SoftBody(kin, rule, density, material=material, **frame)
    return sr.Robot([sr.Link(joints.Fixed(), body)], gravity=(0.0, 0.0, -9.81))


def terms(rob: sr.Robot, q: jax.Array, qd: jax.Array, qdd: jax.Array) -> dict[str, jax.Array]:
    return {
        "M": sr.mass_matrix(rob, q),
        "ID": sr.inverse_dynamics(rob, q, qd, qdd),
        "g": sr.gravity_force(rob, q),
        "elastic": sr.elastic_force(rob, q),
        "damping": sr.damping_force(rob, q, qd),
    }


# one program per robot structure; the robot is an argument, not a closure constant (XLA would
# fold its node arrays)
_TERMS = jax.jit(jax.vmap(terms, in_axes=(None, 0, 0, 0)))


def evaluate(rob: sr.Robot, states: tuple[jax.Array, ...]) -> tuple[dict, float]:
    """The terms at every state (one jitted, vmapped call) and its wall time (compile included
    at the first call per robot structure)."""
    start = time.perf_counter()
    out = _TERMS(rob, *states)
    out = {k: np.asarray(v) for k, v in jax.block_until_ready(out).items()}
    return out, time.perf_counter() - start


def padded(rule: quadrature.QuadratureRule, n: int) -> quadrature.QuadratureRule:
    """The same rule on `n ≥ K` nodes: its last node repeated with its weight split, so every
    compressed rule of a family has one shape and the dynamics compile once for all degrees."""
    reps = np.ones(rule.n_points, dtype=int)
    reps[-1] += n - rule.n_points
    w = np.asarray(rule.weights) / reps
    return quadrature.QuadratureRule(
        np.repeat(np.asarray(rule.points), reps, axis=0),
        np.repeat(w, reps),
        pivot=rule.pivot,
        contact_a=rule.contact_a,
        contact_b=rule.contact_b,
        density=None if rule.density is None else np.repeat(np.asarray(rule.density), reps),
        geometry=rule.geometry,
        dimensions=rule.dimensions,
        mesh=rule.mesh,
    )


def sample(kin: object, rule: quadrature.QuadratureRule, scale: np.ndarray, n: int, seed: int):
    """`n` states `(q, q̇, q̈)` with `q` inside the map's valid range at every reference node."""
    rng = np.random.default_rng(seed)
    point_valid = getattr(kin, "valid", None)
    valid = None
    if point_valid is not None:
        valid = jax.jit(lambda x, q: jnp.all(jax.vmap(point_valid, (0, None))(x, q)))
    qs = []
    while len(qs) < n:
        q = scale * rng.uniform(-1.0, 1.0, scale.size)
        if valid is None or bool(valid(rule.points, jnp.asarray(q))):
            qs.append(q)
    q = np.stack(qs)
    qd = scale * rng.uniform(-1.0, 1.0, q.shape)
    qdd = 10.0 * scale * rng.uniform(-1.0, 1.0, q.shape)
    return tuple(jnp.asarray(a) for a in (q, qd, qdd))


def errors(out: dict, ref: dict, n_states: int) -> dict[str, float]:
    """The largest relative error over the states of each quantity."""
    worst = {}
    for k in QUANTITIES:
        diff = np.linalg.norm((out[k] - ref[k]).reshape(n_states, -1), axis=1)
        norm = np.linalg.norm(ref[k].reshape(n_states, -1), axis=1)
        worst[k] = float(np.max(diff / norm))
    return worst


def measure_empirical(name: str, states: tuple, ref: dict, n_train: int) -> None:
    """The empirical cubature of `terms` fitted on `n_train` states (seed 5), measured on the
    test `states` against the reference values `ref`."""
    kin, make_rule, density, make_material, scale = families()[name]
    reference = make_rule()
    frame = GRIPPER_FRAME if name == "gripper" else {}
    train = sample(kin, reference, scale, n_train, seed=5)

    def integrals(r: quadrature.QuadratureRule, s: tuple) -> dict[str, jax.Array]:
        return terms(robot(kin, r, density, make_material(), **frame), *s)

    for tol in TOLERANCES:
        start = time.perf_counter()
        rule, info = quadrature.empirical(reference, integrals, train, tol=tol, return_info=True)
        fit_s = time.perf_counter() - start
        pad = padded(rule, max(rule.n_points, 400))
        out, eval_s = evaluate(robot(kin, pad, density, make_material(), **frame), states)
        emit(
            "compress.empirical",
            family=name,
            tol=tol,
            train_states=n_train,
            nodes=info.n_nodes,
            reference_nodes=reference.n_points,
            rank=info.rank,
            snapshots=info.n_snapshots,
            residual=info.residual,
            snapshot_error=info.snapshot_error,
            fit_s=fit_s,
            eval_s=eval_s,
            rel_error=errors(out, ref, len(states[0])),
        )


def measure(name: str, n_states: int, degrees: bool = True, n_train: int = 0) -> None:
    kin, make_rule, density, make_material, scale = families()[name]
    reference = make_rule()
    states = sample(kin, reference, scale, n_states, seed=11)
    frame = GRIPPER_FRAME if name == "gripper" else {}
    ref, ref_s = evaluate(robot(kin, reference, density, make_material(), **frame), states)
    emit(
        "compress.reference",
        family=name,
        nodes=reference.n_points,
        states=n_states,
        eval_s=ref_s,
        norms={
            k: float(np.max(np.linalg.norm(v.reshape(n_states, -1), axis=1)))
            for k, v in ref.items()
        },
    )
    if n_train:
        measure_empirical(name, states, ref, n_train)
    for degree in DEGREES if degrees else ():
        start = time.perf_counter()
        rule, info = quadrature.compress(reference, degree, return_info=True)
        compress_s = time.perf_counter() - start
        pad = padded(rule, math.comb(max(DEGREES) + 3, 3))
        out, eval_s = evaluate(robot(kin, pad, density, make_material(), **frame), states)
        emit(
            "compress.accuracy",
            family=name,
            degree=degree,
            nodes=info.n_nodes,
            reference_nodes=reference.n_points,
            bound=info.bound,
            residual=info.residual,
            monomial_residual=info.monomial_residual,
            compress_s=compress_s,
            eval_s=eval_s,
            rel_error=errors(out, ref, n_states),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(families()))
    parser.add_argument("--states", type=positive_int, default=3)
    parser.add_argument("--empirical", action="store_true", help="also quadrature.empirical")
    parser.add_argument(
        "--train", type=positive_int, default=10, help="states the empirical rule fits"
    )
    parser.add_argument("--no-degrees", action="store_true", help="skip the compress table")
    args = parser.parse_args()
    unknown = set(args.families) - set(families())
    if unknown:
        parser.error(f"unknown families {sorted(unknown)}; choose from {list(families())}")
    start = time.perf_counter()
    emit("compress.machine", **machine())
    for name in args.families:
        measure(name, args.states, not args.no_degrees, args.train if args.empirical else 0)
    emit("compress.done", wall_s=time.perf_counter() - start)


if __name__ == "__main__":
    main()
