"""GPU throughput (issue 15, item 4; issue 11's GPU row) and float32's accuracy against float64.

For each robot and function, `B` seeded random states (all distinct), `B = 1 … 65,536`:
`B = 1` is the unbatched `jax.jit` call (what a user's single call costs); `B > 1` is
`jax.vmap` over the batch, as one vectorized call up to the robot's `whole` size and as a
`lax.map` over vectorized chunks of `whole` states above it (`chunked: true`; the heavy
bodies' temporaries, ~30 MB per state for the full-mesh helicoid in float64, bound `whole`). The batched programs take the robot as an argument (`program` says why);
the single call closes over it, as a user's `jax.jit` of a lambda would.

The batched programs are lowered one after another and compiled ahead of time on a thread pool
(XLA compiles outside the GIL), so that several robots can be prepared at once by several
processes; `--lock FILE` makes their timing phases take turns on the GPU (`fcntl.flock`). An
ahead-of-time executable costs ~0.15 ms of host time per call more than a `jax.jit` call; the
GPU runs asynchronously, so that host time overlaps the previous call's GPU work whenever a
call lasts longer, which the `B = 1` figures (timed through `jax.jit`) bound.

Per (robot, function, B) one JSON line: seconds per call (median of `_timing.time_call`'s
batches, each waited for with `block_until_ready`), µs per state, states per second, the
compile time and the program's temporary memory (XLA's memory analysis).

Functions: `inverse_dynamics`, `mass_inverse_dynamics` (`ν` and `M`), `forward_dynamics` with
each solver (`cholesky`, `articulated`). Robots: the chains of `benchmarks/peers.py` (planar
PCS of 1, 8, 16 segments, spatial PCS of 4, rigid chains of 6 and 30 revolute joints), the
20-body planar constant-curvature chain of `scaling.py`, and `heavy.py`'s 3-segment helicoid
robot on its compressed rule (`helicoid`) and on the full mesh (`helicoid_mesh`, 2,688 nodes
per body).

Precision: `--dtype float64` (x64) or `float32` (x64 off: the model's arrays, the states and
every intermediate are float32; JAX's default float32 matrix products on recent GPUs are
TensorFloat-32, 10-bit mantissa, which the compressed helicoid's `det F = 1` check refuses on an
H100; `--matmul-precision highest` rounds them to float32 instead). The float64 run saves its
outputs at `B = ACCURACY_B` (`--save`); the float32 run compares its own at the same states
(`--compare`): per robot and function, `‖y32 − y64‖ / ‖y64‖` per state (median, 99th
percentile, max; the float32 inputs are the float64 ones rounded) and the number of non-finite
states. A program that fails (out of memory, say) gets a line with its error and the run goes
on; `--budget` seconds bound the run.

Run: python benchmarks/gpu.py --dtype float64 --robots rigid30 --save /tmp/rigid30.npz
     python benchmarks/gpu.py --dtype float32 --robots rigid30 --compare /tmp/rigid30.npz
     (`--functions`, `--batches` narrow it; on a CPU it runs as a dry run)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import fcntl
import functools
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import jax

try:
    import _peers as peers
    import _peers_pcs as pcs
    from _timing import emit, machine, positive_int, time_call
    from heavy import helicoid
    from scaling import build_chain
except ImportError:  # run as a module
    from benchmarks import _peers as peers
    from benchmarks import _peers_pcs as pcs
    from benchmarks._timing import emit, machine, positive_int, time_call
    from benchmarks.heavy import helicoid
    from benchmarks.scaling import build_chain

import jax.numpy as jnp
import numpy as np

import softrigid as sr

ACCURACY_B = 1024
BATCHES = (1, 64, 1024, 16384, 65536)
Scales = tuple[np.ndarray, np.ndarray, np.ndarray]


def _scales(q: list[float], n: int, qd: float, x: float) -> Scales:
    """Ranges of `q` (per body, tiled `n` times), `q̇` and `q̈`/`τ` (uniform in ±scale)."""
    qs = np.tile(np.asarray(q, float), n)
    return qs, np.full_like(qs, qd), np.full_like(qs, x)


def _helicoid_scales() -> Scales:
    """`heavy.py`'s ranges: `q̇` 3×, `q̈` 10× the configuration's."""
    q = np.tile([0.2, 0.1, 1.0, 0.1, 1.0, 0.5, 0.01, 0.01], 3)
    return q, 3 * q, 10 * q


PLANAR, SPATIAL = [5.0, 0.2, 0.2], [2.0, 5.0, 5.0, 0.2, 0.2, 0.2]
# name: (robot, state ranges (`_peers_pcs`'s and `_peers`'s), largest batch in one call)
ROBOTS: dict[str, tuple[Callable[[], sr.Robot], Callable[[], Scales], int]] = {
    "pcs1": (lambda: pcs.planar_pcs_chain(1), lambda: _scales(PLANAR, 1, 1, 1e-4), 65536),
    "pcs8": (lambda: pcs.planar_pcs_chain(8), lambda: _scales(PLANAR, 8, 1, 1e-4), 65536),
    "pcs16": (lambda: pcs.planar_pcs_chain(16), lambda: _scales(PLANAR, 16, 1, 1e-4), 65536),
    "spcs4": (lambda: pcs.spatial_pcs_chain(4), lambda: _scales(SPATIAL, 4, 1, 1e-4), 65536),
    "rigid6": (lambda: peers.rigid_chain(6), lambda: _scales([np.pi], 6, 1, 1), 65536),
    "rigid30": (lambda: peers.rigid_chain(30), lambda: _scales([np.pi], 30, 1, 1), 65536),
    "cc20": (lambda: build_chain(20, 4, 2, 3), lambda: _scales([np.pi], 20, 10, 100), 65536),
    "helicoid": (lambda: helicoid("compressed")[0], _helicoid_scales, 16384),
    "helicoid_mesh": (lambda: helicoid("mesh")[0], _helicoid_scales, 256),
}

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "inverse_dynamics": sr.inverse_dynamics,
    "mass_inverse_dynamics": sr.mass_inverse_dynamics,
    "forward_dynamics_cholesky": lambda r, q, qd, u: sr.forward_dynamics(
        r, q, qd, u, solver="cholesky"
    ),
    "forward_dynamics_articulated": lambda r, q, qd, u: sr.forward_dynamics(
        r, q, qd, u, solver="articulated"
    ),
}


def states(scales: Scales, count: int, seed: int = 0) -> tuple[jax.Array, ...]:
    """`count` distinct seeded states `(q, q̇, q̈ or τ)`, uniform in ±scale; each array from its
    own generator, so that the first states are the same whatever `count` (the float32 run
    compares its outputs at the float64 run's states, whatever batches either ran)."""
    return tuple(
        jnp.asarray(s * np.random.default_rng([seed, k]).uniform(-1.0, 1.0, (count, s.size)))
        for k, s in enumerate(scales)
    )


def program(robot: sr.Robot, fn: Callable[..., Any], batch: int, whole: int) -> Any:
    """The jitted function: of `(q, q̇, x)` for `batch == 1` (the robot closed over, its
    arrays constants of the program), else of `(robot, q, q̇, x)`, the `vmap` over the
    states, up to `whole` states in one call and as a `lax.map` over vectorized chunks of
    `whole` states above it. A closed-over robot under `vmap` lets XLA constant-fold the
    node-level terms that depend on the rule alone, materialized for every state: on the GPU
    the helicoid's batched programs (`f64[3, 2, 1425408]` folds of over a second each) did not
    compile in 5 minutes."""

    def single(q: jax.Array, qd: jax.Array, x: jax.Array) -> Any:
        return fn(robot, q, qd, x)

    if batch == 1:
        return jax.jit(single)
    batched = jax.vmap(fn, in_axes=(None, 0, 0, 0))
    if batch <= whole:
        return jax.jit(batched)
    return jax.jit(lambda r, *xs: jax.lax.map(lambda s: fn(r, *s), xs, batch_size=whole))


def _flat(out: Any, batch: int) -> np.ndarray:
    """The outputs of a batch as `(batch, k)`: every leaf flattened per state."""
    return np.concatenate([np.asarray(x).reshape(batch, -1) for x in jax.tree.leaves(out)], 1)


def _compile(lowered: dict[Any, Any]) -> dict[Any, tuple[Any, float]]:
    """Compile lowered programs on a thread pool: `(executable or exception, seconds)`."""

    def one(low: Any) -> tuple[Any, float]:
        start = time.perf_counter()
        try:
            return low.compile(), time.perf_counter() - start
        except Exception as exc:  # a compiler error or no memory: reported, the run goes on
            return exc, time.perf_counter() - start

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        return dict(zip(lowered, pool.map(one, lowered.values())))


@contextlib.contextmanager
def gpu_turn(path: str | None) -> Iterator[None]:
    """Hold `path`'s exclusive lock (if given) while timing, so processes take turns."""
    if path is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _temp_bytes(exe: Any) -> int | None:
    try:
        return int(exe.memory_analysis().temp_size_in_bytes)
    except Exception:  # not every backend reports it
        return None


def prepare(name: str, args: argparse.Namespace) -> tuple[sr.Robot, dict, tuple]:
    """Build the robot and compile its programs: `{(function, B): (call, compile_s, temp)}`."""
    build, scales, whole = ROBOTS[name]
    whole = args.whole or whole
    robot = build()
    data = states(scales(), max(args.batches))
    start = time.perf_counter()
    lowered, single = {}, {}
    for fn_name in args.functions:
        for b in args.batches:
            fn = program(robot, FUNCTIONS[fn_name], b, whole)
            if b == 1:
                single[(fn_name, 1)] = fn
            else:
                lowered[(fn_name, b)] = fn.lower(robot, *(x[:b] for x in data))
    lowered_s = time.perf_counter() - start
    with concurrent.futures.ThreadPoolExecutor(1) as side:
        pending = side.submit(_compile, lowered)  # the pool compiles while `jit` does B = 1
        programs = {}
        for key, fn in single.items():
            t0 = time.perf_counter()
            try:
                jax.block_until_ready(fn(*(x[0] for x in data)))
                programs[key] = (fn, time.perf_counter() - t0, None)
            except Exception as exc:
                programs[key] = (exc, time.perf_counter() - t0, None)
        for key, (exe, seconds) in pending.result().items():
            if isinstance(exe, Exception):
                programs[key] = (exe, seconds, None)
            else:
                programs[key] = (functools.partial(exe, robot), seconds, _temp_bytes(exe))
    emit(
        f"{name}/compile",
        dtype=args.dtype,
        lower_s=lowered_s,
        wall_s=time.perf_counter() - start,
        programs=len(programs),
    )
    return robot, programs, data


def measure(name: str, args: argparse.Namespace, deadline: float) -> dict[str, np.ndarray]:
    """Time every compiled (function, B) of one robot; returns the outputs at `ACCURACY_B`."""
    robot, programs, data = prepare(name, args)
    whole = args.whole or ROBOTS[name][2]
    outputs = {}
    with gpu_turn(args.lock):
        for (fn_name, b), (call, compile_s, temp) in programs.items():
            record = {"robot": name, "function": fn_name, "dtype": args.dtype, "B": b}
            if time.perf_counter() > deadline:
                emit("skipped", **record, reason="--budget spent")
                continue
            if isinstance(call, Exception):
                emit("failed", **record, stage="compile", error=str(call)[:300])
                continue
            cut = tuple(x[0] if b == 1 else x[:b] for x in data)
            try:
                out = jax.block_until_ready(call(*cut))
                timing = time_call(lambda c=call, s=cut: c(*s), repeats=args.repeats, min_time=0.02)
            except Exception as exc:
                emit("failed", **record, stage="run", error=str(exc)[:300])
                continue
            per = timing["median_s"]
            emit(
                "throughput",
                **record,
                n_q=robot.n_q,
                chunked=b > whole,
                compile_s=compile_s,
                temp_gb=None if temp is None else temp / 2**30,
                call_ms=1e3 * per,
                per_state_us=1e6 * per / b,
                states_per_s=b / per,
                spread_ms=[1e3 * timing["min_s"], 1e3 * timing["max_s"]],
            )
            if b == ACCURACY_B:
                outputs[f"{name}/{fn_name}"] = _flat(out, b)
    return outputs


def compare(outputs: dict[str, np.ndarray], path: str) -> None:
    """Relative error per state of this run's outputs against the saved float64 ones."""
    reference = np.load(path)
    for key, y in outputs.items():
        if key.replace("/", "__") not in reference:
            continue
        ref = reference[key.replace("/", "__")]
        finite = np.all(np.isfinite(y), axis=1)
        err = np.linalg.norm(y - ref, axis=1) / np.maximum(np.linalg.norm(ref, axis=1), 1e-300)
        err = err[finite]
        robot, fn = key.split("/")
        stats = {"median": np.median, "p99": lambda e: np.quantile(e, 0.99), "max": np.max}
        emit(
            "float32_error",
            robot=robot,
            function=fn,
            states=int(ref.shape[0]),
            non_finite=int((~finite).sum()),
            **{k: float(f(err)) if err.size else None for k, f in stats.items()},
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    parser.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=list(ROBOTS))
    parser.add_argument("--functions", nargs="+", default=list(FUNCTIONS), choices=list(FUNCTIONS))
    parser.add_argument("--batches", nargs="+", type=positive_int, default=list(BATCHES))
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument("--budget", type=float, default=float("inf"), help="seconds for the run")
    parser.add_argument("--lock", help="a file whose lock the timing phases take turns on")
    parser.add_argument("--save", help="float64: write the outputs at B = ACCURACY_B here (.npz)")
    parser.add_argument("--compare", help="float32: the float64 run's --save file")
    parser.add_argument(
        "--matmul-precision",
        choices=["default", "highest"],
        default="default",
        help="JAX's precision of float32 matrix products (default: TensorFloat-32 on recent GPUs)",
    )
    parser.add_argument(
        "--whole", type=int, default=0, help="states per vectorized call (default: the robot's)"
    )
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", args.dtype == "float64")
    if args.matmul_precision == "highest":
        jax.config.update("jax_default_matmul_precision", "highest")
    if jax.default_backend() != "gpu":
        print(f"gpu.py: no GPU: measuring on {jax.default_backend()!r}", file=sys.stderr)
    deadline = time.perf_counter() + args.budget
    emit("machine", **machine(), dtype=args.dtype, matmul_precision=args.matmul_precision)
    outputs: dict[str, np.ndarray] = {}
    for name in args.robots:
        try:
            outputs.update(measure(name, args, deadline))
        except Exception as exc:  # a robot that cannot be built or lowered: reported
            emit("failed", robot=name, dtype=args.dtype, stage="build", error=str(exc)[:300])
    if args.save:
        np.savez(args.save, **{k.replace("/", "__"): v for k, v in outputs.items()})
    if args.compare:
        compare(outputs, args.compare)


if __name__ == "__main__":
    main()
