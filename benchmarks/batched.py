"""Batched throughput: time per state of a `jax.vmap` of the public functions, B = 1 … 16384.

For each robot, function and batch size `B`, the same jitted `jax.vmap(sr.<function>)` is timed
in the same run, its variants interleaved: chunked (`softrigid._batching`: a scan over chunks
of `CHUNK` states, the default on CPU for `B > WHOLE_UP_TO`), for each chunk size asked, and as
one vectorized call over the whole batch (what a plain `vmap` gives). The variants are compiled
ahead of time, whose Python call costs ~0.2 ms more than a `jax.jit` call: the B = 1 figures
are dominated by it, from B = 64 on it is below 3 µs per state. One JSON line per (robot,
function, B) with the per-state times, their ratios and the agreement of the variants. The
process pins itself to one core unless `--cores 0`.

Robots: planar PCS chains of 8 and 16 segments (`_peers_pcs.py`), rigid chains of 6 and 30
revolute joints (`_peers.py`), the 20-body planar constant-curvature chain (`scaling.py`).

Run: python benchmarks/batched.py [--robots pcs8 rigid30 …] [--functions forward_dynamics …]
         [--batches 1 64 1024 16384] [--chunks 64]
"""

from __future__ import annotations

import argparse

try:
    from _timing import early_int, emit, machine, pin_cores, positive_int, time_interleaved
except ImportError:  # run as a module
    from benchmarks._timing import (
        early_int,
        emit,
        machine,
        pin_cores,
        positive_int,
        time_interleaved,
    )

if __name__ == "__main__":
    pin_cores(early_int("--cores", 1))

from collections.abc import Callable
from typing import Any

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid import _batching  # noqa: E402

try:
    import _peers as peers
    import _peers_pcs as pcs
    from scaling import build_chain
except ImportError:  # run as a module
    from benchmarks import _peers as peers
    from benchmarks import _peers_pcs as pcs
    from benchmarks.scaling import build_chain


def _uniform_state(n: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple(0.3 * rng.uniform(-1.0, 1.0, n) for _ in range(3))


ROBOTS: dict[str, tuple[Callable[[], sr.Robot], Callable[[int, int], tuple[np.ndarray, ...]]]] = {
    "pcs8": (lambda: pcs.planar_pcs_chain(8), lambda n, s: pcs.planar_pcs_state(8, s)),
    "pcs16": (lambda: pcs.planar_pcs_chain(16), lambda n, s: pcs.planar_pcs_state(16, s)),
    "rigid6": (lambda: peers.rigid_chain(6), lambda n, s: peers.rigid_state(6, s)),
    "rigid30": (lambda: peers.rigid_chain(30), lambda n, s: peers.rigid_state(30, s)),
    "cc20": (lambda: build_chain(20, 4, 2, 3), _uniform_state),
}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "forward_dynamics": sr.forward_dynamics,
    "inverse_dynamics": sr.inverse_dynamics,
    "mass_matrix": lambda robot, q, qd, x: sr.mass_matrix(robot, q),
}


def states(robot: sr.Robot, state: Callable, batch: int) -> tuple[jax.Array, ...]:
    """`batch` states: 64 seeded ones repeated (the values do not change the work)."""
    rows = [state(robot.n_q, 10_000 + k) for k in range(min(batch, 64))]
    cols = [np.stack(c) for c in zip(*rows)]
    reps = -(-batch // len(rows))
    return tuple(jnp.asarray(np.tile(c, (reps, 1))[:batch]) for c in cols)


def compiled(fn: Callable[..., Any], robot: sr.Robot, chunk: int, args: tuple) -> Callable:
    """`jit(vmap(fn))` traced with `_batching.CHUNK = chunk` (and chunking from any batch size),
    compiled ahead of time with softrigid's compiler options (`sr.compiler_options()`, as its
    own programs and `peers.py`; a `jax.jit` without them compiled the 30-joint chain's batch
    1.5× slower): a later change of `CHUNK` or clearing of JAX's caches leaves it as
    it is, so the variants can be timed interleaved."""
    saved = _batching.CHUNK, _batching.WHOLE_UP_TO
    _batching.CHUNK, _batching.WHOLE_UP_TO = chunk, 0
    jax.clear_caches()  # the batching rule runs again (JAX caches batched jaxprs)
    try:
        batched = jax.vmap(lambda q, qd, x: fn(robot, q, qd, x))
        options = sr.compiler_options()
        executable = jax.jit(batched, compiler_options=options).lower(*args).compile()
    finally:
        _batching.CHUNK, _batching.WHOLE_UP_TO = saved
    jax.block_until_ready(executable(*args))
    return executable


def measure(robot_name: str, fn_name: str, batch: int, chunks: list[int]) -> dict[str, Any]:
    build, state = ROBOTS[robot_name]
    robot = build()
    args = states(robot, state, batch)
    fn = FUNCTIONS[fn_name]
    sizes = {f"chunk{c}": c for c in chunks if c < batch}
    variants = {k: compiled(fn, robot, c, args) for k, c in {**sizes, "whole": batch}.items()}
    outputs = {k: np.asarray(f(*args)) for k, f in variants.items()}
    times = time_interleaved(
        {k: (lambda f=f: jax.block_until_ready(f(*args))) for k, f in variants.items()}, 5, 0.2
    )
    per_state = {k: 1e6 * t["median_s"] / batch for k, t in times.items()}
    ref = outputs["whole"]
    return emit(
        "batched.per_state",
        robot=robot_name,
        function=fn_name,
        n_q=robot.n_q,
        batch=batch,
        per_state_us=per_state,
        ratio_to_whole={k: v / per_state["whole"] for k, v in per_state.items()},
        max_relative_difference=max(
            float(np.max(np.abs(o - ref)) / np.max(np.abs(ref))) for o in outputs.values()
        ),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=list(ROBOTS))
    parser.add_argument(
        "--functions", nargs="+", default=["forward_dynamics"], choices=list(FUNCTIONS)
    )
    parser.add_argument("--batches", nargs="+", type=positive_int, default=[1, 64, 1024, 16384])
    parser.add_argument("--chunks", nargs="+", type=positive_int, default=[_batching.CHUNK])
    parser.add_argument("--cores", type=int, default=1, help="cores to pin to (0: all)")
    args = parser.parse_args()
    emit("batched.machine", **machine())
    for robot_name in args.robots:
        for fn_name in args.functions:
            for batch in args.batches:
                measure(robot_name, fn_name, batch, args.chunks)


if __name__ == "__main__":
    main()
