"""The wrapper tax: an eager public call against the jitted core, on the same arrays, same run.

For each robot and algorithm, the time of single calls (µs; the variants interleaved round by
round, so that a load spike hits them alike; 10th percentile and median over all calls):

- `eager`: `f(robot, q, qd, x)` without a `jax.jit` of the user's (the fast path of
  `softrigid._fastpath`, warmed up: the robot's own program);
- `jit`: the jitted core `g = jax.jit(lambda q, qd, x: f(robot, q, qd, x))` on the same arrays,
  compiled with the options of softrigid's own programs (`sr.compiler_options()`: the eager
  call's), each call waited for (`jax.block_until_ready`), as the eager call is: it raises its errors
  before it returns;
- `shared`: the eager call on a second robot of the same structure before it has its own
  program (the program shared by the structure, the leaves as arguments);
- `checked`: the eager call through the checked path (`_fastpath.disabled()`), what every eager
  call cost before the fast path;

with `tax = eager − jit` (the target: ≤ 20 µs) and, for reference, `jit_async_min`: the jitted
core in a loop that waits only at the end (calls overlap; min over rounds of the mean). Next to
them the load average before and after, the first call and the specialization (the calls, and
their seconds, up to the robot's own program under the default policy of `_fastpath.AMORTIZE`). Robots: planar constant-curvature chains of 1, 5 and 20 bodies (the
4 × 2 × 3 cylinder rule of `benchmarks/scaling.py`) and a 6-joint rigid chain
(`benchmarks/_peers.py`); algorithms: `inverse_dynamics`, `mass_inverse_dynamics`,
`forward_dynamics`, `dynamics_terms`. The process pins itself to one core (`--core`, default 1;
`-1`: no pinning). One JSON object per line.

Run: python benchmarks/entry.py [--robots cc1 cc5 cc20 rigid6] [--functions inverse_dynamics ...]
         [--rounds 20] [--calls 100]
"""

from __future__ import annotations

import argparse
import os
import sys

if __name__ == "__main__":
    from _timing import early_int, pin_core

    pin_core(early_int("--core", 1))

import time
from collections.abc import Callable
from typing import Any

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid import _fastpath  # noqa: E402

try:
    from _peers import rigid_chain
    from _timing import emit, machine, positive_int
    from scaling import build_chain
except ImportError:  # run as a module
    from benchmarks._peers import rigid_chain
    from benchmarks._timing import emit, machine, positive_int
    from benchmarks.scaling import build_chain

ROBOTS: dict[str, Callable[[], sr.Robot]] = {
    "cc1": lambda: build_chain(1, 4, 2, 3),
    "cc5": lambda: build_chain(5, 4, 2, 3),
    "cc20": lambda: build_chain(20, 4, 2, 3),
    "rigid6": lambda: rigid_chain(6),
}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "inverse_dynamics": sr.inverse_dynamics,
    "mass_inverse_dynamics": sr.mass_inverse_dynamics,
    "forward_dynamics": sr.forward_dynamics,
    "dynamics_terms": lambda robot, q, qd, x: sr.dynamics_terms(robot, q, qd),
}


def latencies(fns: dict[str, Callable[[], Any]], calls: int, rounds: int) -> dict[str, np.ndarray]:
    """Seconds of every single call of each of `fns` (each call waits for its result), the
    functions interleaved round by round so that a load spike hits them alike."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    clock = time.perf_counter
    for _ in range(rounds):
        for name, fn in fns.items():
            out = samples[name]
            for _ in range(calls):
                start = clock()
                fn()
                out.append(clock() - start)
    return {name: np.asarray(values) for name, values in samples.items()}


def throughput(fn: Callable[[], Any], calls: int, rounds: int) -> float:
    """Seconds per call of `fn` in a loop that waits only at the end of each round (the calls
    overlap), min over rounds."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            out = fn()
        jax.block_until_ready(out)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def measure(robot_name: str, fn_name: str, calls: int, rounds: int) -> dict[str, Any]:
    """One record: eager, jitted core (waited for and not), checked path and the tax."""
    robot, fn = ROBOTS[robot_name](), FUNCTIONS[fn_name]
    rng = np.random.default_rng(0)
    q, qd, x = (jnp.asarray(rng.uniform(-1.0, 1.0, robot.n_q)) for _ in range(3))
    core = jax.jit(lambda q, qd, x: fn(robot, q, qd, x), compiler_options=sr.compiler_options())
    start = time.perf_counter()
    jax.block_until_ready(fn(robot, q, qd, x))
    first = time.perf_counter() - start
    start, warmup = time.perf_counter(), 0
    entries = _fastpath.handle(robot).entries.values()
    while not all(e.specialized for e in entries):  # the default policy, to the robot's program
        jax.block_until_ready(fn(robot, q, qd, x))
        warmup += 1
    specialize = time.perf_counter() - start
    jax.block_until_ready(core(q, qd, x))

    def checked() -> Any:
        with _fastpath.disabled():
            return fn(robot, q, qd, x)

    twin = ROBOTS[robot_name]()  # the same structure, its first calls: the shared program
    variants = {
        "eager": lambda: fn(robot, q, qd, x),
        "jit": lambda: jax.block_until_ready(core(q, qd, x)),
        "shared": lambda: fn(twin, q, qd, x),
        "checked": checked,
    }
    checked()
    load = os.getloadavg()[0]
    after, _fastpath.SPECIALIZE_AFTER = _fastpath.SPECIALIZE_AFTER, sys.maxsize
    try:
        samples = latencies(variants, calls, rounds)
    finally:
        _fastpath.SPECIALIZE_AFTER = after
    stats = {
        f"{name}_{label}": round(float(np.percentile(t, pct)) * 1e6, 1)
        for name, t in samples.items()
        for label, pct in (("p10", 10), ("median", 50))
    }
    tax = {
        f"tax_{label}": round(stats[f"eager_{label}"] - stats[f"jit_{label}"], 1)
        for label in ("p10", "median")
    }
    jit_async = round(throughput(lambda: core(q, qd, x), calls, rounds) * 1e6, 1)
    same = jax.tree_util.tree_all(
        jax.tree_util.tree_map(
            lambda a, b: bool(np.allclose(a, b, rtol=1e-12, atol=1e-12)),
            fn(robot, q, qd, x),
            core(q, qd, x),
        )
    )
    return emit(
        "entry.tax",
        robot=robot_name,
        function=fn_name,
        n_q=robot.n_q,
        **tax,
        **stats,
        jit_async_min=jit_async,
        same_result=same,
        specialized=all(e.specialized for e in _fastpath.handle(robot).entries.values()),
        first_call_s=round(first, 2),
        specialize_s=round(specialize, 2),
        specialize_calls=warmup,
        calls=calls,
        rounds=rounds,
        load_before=round(load, 2),
        load_after=round(os.getloadavg()[0], 2),
        **machine(),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=list(ROBOTS))
    parser.add_argument("--functions", nargs="+", default=list(FUNCTIONS), choices=list(FUNCTIONS))
    parser.add_argument("--calls", type=positive_int, default=100, help="calls per round")
    parser.add_argument("--rounds", type=positive_int, default=20)
    parser.add_argument("--core", type=int, default=1, help="pin to this core (-1: no)")
    args = parser.parse_args()
    for robot in args.robots:
        for fn in args.functions:
            measure(robot, fn, args.calls, args.rounds)


if __name__ == "__main__":
    main()
