"""A 50-joint serial revolute arm against Pinocchio (seed 002's fixed-base 50-DoF manipulator).

The arm is `benchmarks/_peers.rigid_chain(n)` (seeded random axes, origins and inertials; the
same model in Pinocchio by `pin_rigid_chain`). Timed in the same run, one state per call:

- inverse dynamics `ν = M q̈ + c + g`:  `softrigid.inverse_dynamics`  vs  `pin.rnea`;
- mass matrix `M(q)`:                  `softrigid.mass_matrix`       vs  `pin.crba`;
- forward dynamics `q̈ = M⁻¹ (τ − c − g)`: `softrigid.forward_dynamics` with
  `solver="articulated"` (`O(N)`) and `solver="cholesky"` (`M` by the recursion, then
  Cholesky)  vs  `pin.aba`.

The softrigid functions are the public ones closed over the robot and jitted
(`jax.jit(lambda q, ...: sr.inverse_dynamics(robot, q, ...))`, as the README recommends), timed
after their first call (trace + compile + run, reported as `first_call_s`); Pinocchio is called
through its Python bindings (C++). Each JSON line carries the per-call median in µs with its
spread, the ratio softrigid / Pinocchio, and the largest relative difference
`max |a − b|_∞ / |b|_∞` of the results over `--states` seeded random states (`crba` fills the
upper triangle; it is symmetrized first). The process pins itself to one core before JAX starts
its threads (`--cores 0`: no pinning).

Run: python benchmarks/rigid50.py [--n 50] [--states 5] [--cores 1]
"""

from __future__ import annotations

import argparse
import sys

if __name__ == "__main__":
    from _timing import early_int, pin_cores

    pin_cores(early_int("--cores", 1))

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402

try:
    import _peers as peers
    from _timing import emit, machine, positive_int, time_call, time_first_call
except ImportError:  # run as a module
    from benchmarks import _peers as peers
    from benchmarks._timing import emit, machine, positive_int, time_call, time_first_call

State = tuple[np.ndarray, np.ndarray, np.ndarray]


def _states(n: int, count: int) -> list[State]:
    """Seeded `(q, q̇, x)`: `q` uniform in [−π, π], `q̇` and `x` (a `q̈` or a `τ`) normal."""
    return [peers.rigid_state(n, 1000 + k) for k in range(count)]


def _max_relative(fn: Callable[..., Any], args: list, expected: list[np.ndarray]) -> float:
    """`max_states |fn(args) − expected|_∞ / |expected|_∞`."""
    worst = 0.0
    for a, b in zip(args, expected):
        diff = np.max(np.abs(np.asarray(fn(*a)) - b)) / np.max(np.abs(b))
        worst = max(worst, float(diff))
    return worst


def _symmetric(upper: np.ndarray) -> np.ndarray:
    """The full matrix from `crba`'s upper triangle."""
    return np.triu(upper) + np.triu(upper, 1).T


class _Operation(NamedTuple):
    """One timed operation: its implementations (Pinocchio, the reference, last), how many of
    the state's arrays it takes, and how the reference's raw result becomes comparable (outside
    the timing: a copy of Pinocchio's buffer, `crba`'s triangle symmetrized)."""

    impls: dict[str, Callable[..., Any]]
    n_args: int
    finish: Callable[[Any], np.ndarray]


def _operations(n: int) -> dict[str, _Operation]:
    """The operations on `rigid_chain(n)` and its Pinocchio model."""
    import pinocchio as pin

    robot = peers.rigid_chain(n)
    model, data = peers.pin_rigid_chain(n)

    def fd(solver: str) -> Callable[..., Any]:
        return jax.jit(lambda q, qd, tau: sr.forward_dynamics(robot, q, qd, tau, solver=solver))

    return {
        "inverse_dynamics": _Operation(
            {
                "softrigid": jax.jit(lambda q, qd, qdd: sr.inverse_dynamics(robot, q, qd, qdd)),
                "pinocchio.rnea": lambda q, qd, qdd: pin.rnea(model, data, q, qd, qdd),
            },
            3,
            np.array,
        ),
        "mass_matrix": _Operation(
            {
                "softrigid": jax.jit(lambda q: sr.mass_matrix(robot, q)),
                "pinocchio.crba": lambda q: pin.crba(model, data, q),
            },
            1,
            _symmetric,
        ),
        "forward_dynamics": _Operation(
            {
                "softrigid.articulated": fd("articulated"),
                "softrigid.cholesky": fd("cholesky"),
                "pinocchio.aba": lambda q, qd, tau: pin.aba(model, data, q, qd, tau),
            },
            3,
            np.array,
        ),
    }


def measure(n: int, n_states: int) -> None:
    """Time every operation on `rigid_chain(n)` and emit one JSON line per operation."""
    states = _states(n, n_states)
    for op, (impls, n_args, finish) in _operations(n).items():
        args = [tuple(np.ascontiguousarray(x) for x in s[:n_args]) for s in states]
        jax_args = [tuple(jnp.asarray(x) for x in a) for a in args]
        *ours, reference = impls
        first, timing = {}, {}
        for name, fn in impls.items():
            call_args = args[0] if name == reference else jax_args[0]
            first[name] = time_first_call(lambda fn=fn, a=call_args: fn(*a))
            timing[name] = time_call(lambda fn=fn, a=call_args: fn(*a))
        expected = [finish(impls[reference](*a)) for a in args]
        emit(
            f"rigid50.{op}",
            n_joints=n,
            reference=reference,
            per_call_us={k: 1e6 * v["median_s"] for k, v in timing.items()},
            spread_us={k: [1e6 * v["min_s"], 1e6 * v["max_s"]] for k, v in timing.items()},
            first_call_s=first,
            ratio={
                f"{k}/{reference}": timing[k]["median_s"] / timing[reference]["median_s"]
                for k in ours
            },
            max_rel_diff={k: _max_relative(impls[k], jax_args, expected) for k in ours},
            states=n_states,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=positive_int, default=50, help="number of revolute joints")
    parser.add_argument("--states", type=positive_int, default=5, help="states for the differences")
    parser.add_argument("--cores", type=int, default=1, help="pin to this many cores; 0: no pin")
    args = parser.parse_args()
    try:
        import pinocchio
    except ImportError:
        sys.exit("rigid50: needs Pinocchio (pip install pin)")
    emit(
        "rigid50.machine",
        **machine(),
        cores=args.cores,
        pinocchio=pinocchio.__version__,
    )
    measure(args.n, args.states)


if __name__ == "__main__":
    main()
