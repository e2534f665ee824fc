"""Heavy bodies (issue 11 targets): per-call and first-call cost of the dynamics of meshed LVP
bodies, with same-run references, and the error of the compressed rule.

Robots (float64, the CPU backend):

- `helicoid`: the seed's 3-segment helicoid robot, `lvp.helicoid_segment(0.1)` on
  `meshes/helicoid.vtu`, density 960, `IncompressibleNeoHookean(C=0.178e6, eta=0.05)`, fixed
  joints, 24 coordinates;
- `gripper`: a rigid link then the gripper body `lvp.gripper(0.05)` on `meshes/gripper.vtu`
  (the law and distal frame of `compress_accuracy.py`), 2 body coordinates.

Per robot and rule (`compressed`: `compress(from_mesh(degree=4), 6)`, the README's default;
`mesh`: `from_mesh(degree=1)`, the full mesh; `empirical`: `quadrature.empirical` of the
degree-4 rule fitted to the body's `SoftBody.integrals` at 10 seeded states, slow to fit for
the helicoid), each function wrapped in `jax.jit` with
softrigid's compiler options (`sr.compiler_options()`, as its own programs are): first call
(trace + compile + run) and steady-state time per call (median of batches, `_timing.time_call`)
of `inverse_dynamics`, `mass_inverse_dynamics`, `elastic_force + damping_force` (two calls),
`internal_force` (the same sum in one call), `inverse_dynamics_derivatives`, `linearize` and
its reference `jax.jacfwd` of the forward dynamics (`forward_dynamics_jacobian`: `x` and `u`
columns); the same-run reference is the map and its `q`-Jacobian at every
node of every body (`jax.jacfwd` of `map_points`), and the ratio `ID / (map + Jacobian)`. For the
compressed and empirical rules, the relative error of `M`, `ID`, `g` and `s` against the reference rule
`from_mesh(degree=4)` at one seeded state. Peak resident memory of the process at the end
(`ru_maxrss`). One JSON object per line.

Run: taskset -c 1 python benchmarks/heavy.py [--robots helicoid gripper]
     [--rules compressed mesh empirical]
     [--skip derivatives] [--no-reference] [--fast] [--closed] [--default-emitters]
(`--fast`: XLA:CPU's faster-compiling emitters, `sr.fast_compilation()`, for the whole process;
`--default-emitters`: `jax.jit` without options (XLA:CPU's default MLIR emitters);
`--closed`: each function jitted closed over the robot, whose arrays become constants of the
program, instead of taking it as an argument)
"""

from __future__ import annotations

import argparse
import functools
import resource
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid import joints, quadrature  # noqa: E402
from softrigid.kinematics import lvp  # noqa: E402

try:
    from _timing import emit, machine, time_call, time_first_call
    from compress_accuracy import GRIPPER_FRAME, _compressible, _neo_hookean
except ImportError:  # run as a module
    from benchmarks._timing import emit, machine, time_call, time_first_call
    from benchmarks.compress_accuracy import GRIPPER_FRAME, _compressible, _neo_hookean

ROOT = Path(__file__).resolve().parents[1]


def rule(
    mesh: str,
    kind: str,
    body: Callable[[quadrature.QuadratureRule], sr.SoftBody] | None = None,
    scale: np.ndarray | None = None,
) -> quadrature.QuadratureRule:
    """The full mesh (`degree=1`), the compressed default, the reference (`degree=4`), or the
    empirical cubature of the reference fitted to `body(rule).integrals(q, q̇)` at 10 seeded
    states with body coordinates `scale · U(−1, 1)` (`tol` 1e-10)."""
    path = ROOT / "meshes" / mesh
    if kind == "mesh":
        return quadrature.from_mesh(path, degree=1)
    fine = quadrature.from_mesh(path, degree=4)
    if kind == "empirical":
        rng = np.random.default_rng(5)
        q, qd = (jnp.asarray(f * scale * rng.uniform(-1, 1, (10, scale.size))) for f in (1, 3))
        return quadrature.empirical(fine, lambda r, s: body(r).integrals(*s), (q, qd))
    return fine if kind == "reference" else quadrature.compress(fine, 6)


def helicoid(kind: str) -> tuple[sr.Robot, np.ndarray]:
    """The 3-segment helicoid robot and the scale of its random states."""

    def body(r: quadrature.QuadratureRule) -> sr.SoftBody:
        return sr.SoftBody(lvp.helicoid_segment(0.1), r, density=960.0, material=_neo_hookean())

    scale = np.array([0.2, 0.1, 1.0, 0.1, 1.0, 0.5, 0.01, 0.01])
    seg = body(rule("helicoid.vtu", kind, body, scale))
    robot = sr.Robot([sr.Link(joints.Fixed(), seg) for _ in range(3)], gravity=(0, 0, -9.81))
    return robot, np.tile(scale, 3)


def gripper(kind: str) -> tuple[sr.Robot, np.ndarray]:
    """A rigid link carrying the gripper body."""

    def body(r: quadrature.QuadratureRule) -> sr.SoftBody:
        return sr.SoftBody(
            lvp.gripper(0.05), r, density=960.0, material=_compressible(), **GRIPPER_FRAME
        )

    scale = np.array([0.2, 5e-5])
    link = sr.RigidBody(0.2, (0.0, 0.0, 0.05), 1e-4 * jnp.eye(3), distal=(jnp.eye(3), (0, 0, 0.1)))
    links = [
        sr.Link(joints.Revolute((0.0, 1.0, 0.0)), link),
        sr.Link(joints.Fixed(), body(rule("gripper.vtu", kind, body, scale))),
    ]
    return sr.Robot(links, gravity=(0, 0, -9.81)), np.concatenate([[1.0], scale])


ROBOTS = {"helicoid": helicoid, "gripper": gripper}


def state(robot: sr.Robot, scale: np.ndarray) -> tuple[jax.Array, ...]:
    rng = np.random.default_rng(0)
    n = robot.n_q
    return tuple(jnp.asarray(s * rng.uniform(-1, 1, n)) for s in (scale, 3 * scale, 10 * scale))


# the timed functions' names (`functions`' keys, in order; `--skip` takes them)
FUNCTIONS = (
    "map_and_jacobian",
    "inverse_dynamics",
    "mass_inverse_dynamics",
    "elastic_plus_damping",
    "internal_force",
    "derivatives",
    "linearize",
    "forward_dynamics_jacobian",
)


def inputs(robot: sr.Robot, qdd: jax.Array) -> jax.Array:
    """Seeded inputs of the robot's shape: its generalized forces `q̈` without actuators, else
    the first `n_u` of them (a state-dependent stand-in, the same in every function)."""
    return qdd if not robot.actuators else qdd[: robot.n_u]


def fd_jacobian(robot: sr.Robot, q: jax.Array, qd: jax.Array, u: jax.Array) -> tuple:
    """`linearize`'s reference: `jax.jacfwd` of `ẋ = (q̇, forward_dynamics)` in `x` and `u`."""
    n = robot.n_q

    def f(x: jax.Array, v: jax.Array) -> jax.Array:
        return jnp.concatenate([x[n:], sr.forward_dynamics(robot, x[:n], x[n:], v)])

    return jax.jacfwd(f, argnums=(0, 1))(jnp.concatenate([q, qd]), u)


def functions(robot: sr.Robot, closed: bool = False, options: dict | None = None) -> dict[str, Any]:
    """The timed functions of `(robot, q, q̇, q̈)`, each jitted (with XLA `options`) with the
    robot as an argument, or with `closed` over the given robot (its arrays constants of the
    program, as in `jax.jit(lambda q: f(robot, q))`; the robot argument is then ignored)."""
    jit = functools.partial(jax.jit, compiler_options=options or {})

    def maps(rob: sr.Robot, q: jax.Array) -> list:
        out = []
        for i, link in enumerate(rob.links):
            if link.body.n_q:
                qb = q[rob.body_slice(i)]
                pts = link.body.volume.points
                out.append(jax.jacfwd(lambda x, b=link.body, p=pts: b.map_points(x, p))(qb))
        return out

    fns = {
        "map_and_jacobian": lambda r, q, qd, qdd: maps(r, q),
        "inverse_dynamics": lambda r, q, qd, qdd: sr.inverse_dynamics(r, q, qd, qdd),
        "mass_inverse_dynamics": lambda r, q, qd, qdd: sr.mass_inverse_dynamics(r, q, qd, qdd),
        "elastic_plus_damping": lambda r, q, qd, qdd: (
            sr.elastic_force(r, q) + sr.damping_force(r, q, qd)
        ),
        "internal_force": lambda r, q, qd, qdd: sr.internal_force(r, q, qd),
        "derivatives": lambda r, q, qd, qdd: sr.inverse_dynamics_derivatives(r, q, qd, qdd),
        "linearize": lambda r, q, qd, qdd: sr.linearize(r, q, qd, inputs(r, qdd)),
        "forward_dynamics_jacobian": lambda r, q, qd, qdd: fd_jacobian(r, q, qd, inputs(r, qdd)),
    }
    if not closed:
        return {name: jit(fn) for name, fn in fns.items()}

    def closed_over(fn: Any) -> Any:
        jitted = jit(lambda *xs: fn(robot, *xs))
        return lambda _robot, *xs: jitted(*xs)

    return {name: closed_over(fn) for name, fn in fns.items()}


def errors(name: str, robot: sr.Robot, states: tuple[jax.Array, ...]) -> dict[str, float]:
    """Relative errors of `M`, `ID`, `g`, `s` against the reference rule at one state."""
    reference = ROBOTS[name]("reference")[0]
    q, qd, qdd = states

    def terms(rob: sr.Robot) -> dict[str, np.ndarray]:
        out = {
            "M": sr.mass_matrix(rob, q),
            "ID": sr.inverse_dynamics(rob, q, qd, qdd),
            "g": sr.gravity_force(rob, q),
            "s": sr.internal_force(rob, q, qd),
        }
        return {k: np.asarray(v) for k, v in out.items()}

    a, b = terms(robot), terms(reference)
    return {k: float(np.linalg.norm(a[k] - b[k]) / np.linalg.norm(b[k])) for k in a}


def time_robot(
    label: str,
    robot: sr.Robot,
    states: tuple[jax.Array, ...],
    skip: list[str],
    closed: bool = False,
    options: dict | None = None,
) -> dict[str, dict[str, float]]:
    """First call and per-call time of every function of `functions` (one JSON line each)."""
    nodes = [link.body.volume.n_points for link in robot.links if link.body.n_q]
    timings = {}
    for fn_name, fn in functions(robot, closed, options).items():
        if fn_name in skip:
            continue
        first = time_first_call(lambda f=fn: f(robot, *states))
        per = time_call(lambda f=fn: f(robot, *states), repeats=5)
        timings[fn_name] = {"first_call_s": first, **per}
        emit(
            f"{label}/{fn_name}",
            nodes=nodes,
            n_q=robot.n_q,
            first_call_s=first,
            per_call_ms=1e3 * per["median_s"],
            min_ms=1e3 * per["min_s"],
        )
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=list(ROBOTS))
    parser.add_argument(
        "--rules",
        nargs="+",
        default=["compressed", "mesh"],
        choices=["compressed", "mesh", "empirical", "reference"],
    )
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=FUNCTIONS, help="functions not to time"
    )
    parser.add_argument("--no-reference", action="store_true", help="skip the error check")
    parser.add_argument(
        "--fast", action="store_true", help="sr.fast_compilation() first (README, Fast start)"
    )
    parser.add_argument(
        "--closed", action="store_true", help="jit each function closed over the robot"
    )
    parser.add_argument(
        "--default-emitters", action="store_true", help="jax.jit without sr.compiler_options()"
    )
    args = parser.parse_args()
    if args.fast:
        sr.fast_compilation()
    options = {} if args.default_emitters else sr.compiler_options()
    emit("machine", **machine(), closed=args.closed, compiler_options=options)
    for name in args.robots:
        for kind in args.rules:
            robot, scale = ROBOTS[name](kind)
            states = state(robot, scale)
            timings = time_robot(f"{name}/{kind}", robot, states, args.skip, args.closed, options)
            ref = timings.get("map_and_jacobian", {}).get("median_s")
            summary: dict[str, Any] = {}
            if ref:
                summary.update(
                    {
                        f"{k}_over_map_and_jacobian": v["median_s"] / ref
                        for k, v in timings.items()
                        if k != "map_and_jacobian"
                    }
                )
            if kind in ("compressed", "empirical") and not args.no_reference:
                summary["relative_error_vs_reference"] = errors(name, robot, states)
            summary["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            emit(f"{name}/{kind}/summary", **summary)


if __name__ == "__main__":
    main()
