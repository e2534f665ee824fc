"""Shared timing helpers for the benchmarks: JSON lines, first call vs steady state."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax

__all__ = ["emit", "machine", "time_call", "time_first_call"]


def machine() -> dict[str, Any]:
    """What ran the benchmark."""
    return {
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "backend": jax.default_backend(),
        "device": str(jax.devices()[0]),
        "jax": jax.__version__,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


def emit(name: str, **fields: Any) -> dict[str, Any]:
    """Print one JSON object on a line and return it."""
    record = {"name": name, **fields}
    print(json.dumps(record), flush=True)
    return record


def time_first_call(fn: Callable[[], Any]) -> float:
    """Seconds for the first call (trace + compile + run)."""
    start = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - start


def time_call(fn: Callable[[], Any], repeats: int = 7, min_time: float = 0.05) -> dict[str, float]:
    """Per-call seconds of an already compiled `fn`: median and spread (min, max) over
    `repeats` batches, each batch long enough (`min_time`) to swamp the timer's resolution."""
    jax.block_until_ready(fn())
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            out = fn()
        jax.block_until_ready(out)
        if time.perf_counter() - start > min_time:
            break
        number *= 2
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            out = fn()
        jax.block_until_ready(out)
        samples.append((time.perf_counter() - start) / number)
    return {
        "median_s": statistics.median(samples),
        "min_s": min(samples),
        "max_s": max(samples),
        "calls": number * repeats,
    }
