"""Shared timing helpers for the benchmarks: JSON lines, first call vs steady state, pinning,
and the examples' own robots (`load_example`).

JAX is imported inside the helpers, not here, so that a script can call `pin_cores` before JAX
(or NumPy) starts its threads: `from _timing import pin_cores; pin_cores(1)`, then `import jax`.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import platform
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "emit",
    "load",
    "load_example",
    "machine",
    "pin_core",
    "pin_cores",
    "time_call",
    "time_first_call",
    "time_interleaved",
]


def load_example(name: str) -> ModuleType:
    """`examples/<name>.py` as a module (its robots are what some benchmarks time)."""
    path = Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


@functools.cache
def _cli() -> ModuleType:
    """`examples/_cli.py`, loaded once (not at import: most scripts never parse a count)."""
    return load_example("_cli")


def positive_int(text: str) -> int:
    """An argparse type: an integer ≥ 1 (sizes, state counts, chunks); the examples' own
    (`examples/_cli.py`)."""
    return _cli().positive_int(text)


def early_int(option: str, default: int) -> int:
    """The value of the integer command-line `option` (`--cores 2` or `--cores=2`), read before
    the script's parser runs (to pin the process before JAX starts); `default` where it is
    absent or malformed: the script's own parser then reports it."""
    import sys

    args = sys.argv[1:]
    for i, arg in enumerate(args):
        if arg.startswith(option + "="):
            value = arg[len(option) + 1 :]
        elif arg == option and i + 1 < len(args):
            value = args[i + 1]
        else:
            continue
        try:
            return int(value)
        except ValueError:
            return default
    return default


def pin_core(core: int) -> None:
    """Restrict this process to core number `core` (`core < 0`: no restriction); call it
    before importing JAX, as `pin_cores`."""
    if core >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {core})


def pin_cores(n: int) -> None:
    """Restrict this process to the first `n` cores (`n <= 0`: no restriction). Call it before
    importing JAX or NumPy: threads started earlier keep their affinity."""
    if n > 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(range(n)))


def load() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (`None` where the system has none)."""
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def machine() -> dict[str, Any]:
    """What ran the benchmark (and the load average when it was asked)."""
    import jax

    return {
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "backend": jax.default_backend(),
        "device": str(jax.devices()[0]),
        "jax": jax.__version__,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load": load(),
    }


def emit(name: str, **fields: Any) -> dict[str, Any]:
    """Print one JSON object on a line and return it."""
    record = {"name": name, **fields}
    print(json.dumps(record), flush=True)
    return record


def time_first_call(fn: Callable[[], Any]) -> float:
    """Seconds for the first call (trace + compile + run)."""
    import jax

    start = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - start


def _batch(fn: Callable[[], Any], number: int) -> float:
    """Seconds for `number` calls of `fn` in a row, waiting for the last result."""
    import jax

    start = time.perf_counter()
    for _ in range(number):
        out = fn()
    jax.block_until_ready(out)
    return time.perf_counter() - start


def _calibrate(fn: Callable[[], Any], min_time: float) -> int:
    """The smallest power of two of calls that lasts longer than `min_time`."""
    import jax

    jax.block_until_ready(fn())
    number = 1
    while _batch(fn, number) <= min_time:
        number *= 2
    return number


def _summary(samples: list[float], calls: int) -> dict[str, float]:
    return {
        "median_s": statistics.median(samples),
        "min_s": min(samples),
        "max_s": max(samples),
        "calls": calls,
    }


def time_call(fn: Callable[[], Any], repeats: int = 7, min_time: float = 0.05) -> dict[str, float]:
    """Per-call seconds of an already compiled `fn`: median and spread (min, max) over
    `repeats` batches, each batch long enough (`min_time`) to swamp the timer's resolution."""
    number = _calibrate(fn, min_time)
    samples = [_batch(fn, number) / number for _ in range(repeats)]
    return _summary(samples, number * repeats)


def time_interleaved(
    fns: dict[str, Callable[[], Any]], repeats: int = 7, min_time: float = 0.05
) -> dict[str, dict[str, float]]:
    """`time_call` of several compiled functions, their batches interleaved round by round, so
    that a change of the machine's load hits them alike and their ratios stay meaningful."""
    numbers = {name: _calibrate(fn, min_time) for name, fn in fns.items()}
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            samples[name].append(_batch(fn, numbers[name]) / numbers[name])
    return {name: _summary(samples[name], numbers[name] * repeats) for name in fns}


# `%name = shape opcode(`, the shape a tuple `(…)` for loops, conditionals and custom calls
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%\S+ = (?:\(.*?\)|\S+) ([\w-]+)\(", re.M)
_FREE = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def hlo_counts(fn: Callable[..., Any], *args: Any) -> dict[str, int]:
    """Size of `fn`'s optimized XLA program for `args` (`fn` a `jax.jit` function): all its
    instructions, and the operations XLA:CPU runs as kernels of their own outside the fused
    computations and the conditionals' branches (`fusion`, `dot`, `custom-call`, `while`,
    `conditional`, `copy`, …; parameters, constants, bitcasts and tuples are free), with the
    fusions, dots and loops apart. A loop's body counts once, however many times it runs."""
    text = fn.lower(*args).compile().as_text()
    # the branches of conditionals (the run-time checks' failing sides) do not run
    branches = set()
    for group in re.findall(r"branch_computations=\{([^}]*)\}", text):
        branches.update(name.strip() for name in group.split(","))
    kernels: dict[str, int] = {}
    for block in re.split(r"\n(?=\S)", text):
        name = block.split(" ", 1)[0].removeprefix("ENTRY ").strip()
        if name.startswith(("%fused", "%wrapped")) or name in branches:
            continue
        for op in _INSTRUCTION.findall(block):
            if op not in _FREE:
                kernels[op] = kernels.get(op, 0) + 1
    return {
        "instructions": len(_INSTRUCTION.findall(text)),
        "kernels": sum(kernels.values()),
        "fusions": kernels.get("fusion", 0),
        "dots": kernels.get("dot", 0),
        "loops": kernels.get("while", 0),
    }
