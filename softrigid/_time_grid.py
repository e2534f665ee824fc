"""`simulate`'s time arguments: the final time, the step and the zero-order-hold period, all
known before tracing (they fix the number of steps), and the run's length in steps."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._module import is_concrete

__all__ = ["time_grid"]

# A trajectory stores every state: refuse runs whose record would not fit in memory.
MAX_RECORD_BYTES = 4 * 2**30


def _rounding(value: Any) -> float:
    """The relative rounding of a time given in `value`'s floating type (float64's for Python
    numbers and integers)."""
    dtype = getattr(value, "dtype", None)
    floating = dtype is not None and np.issubdtype(dtype, np.floating)
    return float(np.finfo(dtype if floating else np.float64).eps)


def _positive_number(name: str, value: Any) -> float:
    """A finite positive time known at trace time (it fixes the number of steps)."""
    if isinstance(value, (bool, np.bool_)) or not is_concrete(value):
        raise TypeError(
            f"simulate: {name} must be a Python or NumPy number known before tracing (it fixes "
            f"the number of steps), got {type(value).__name__}"
        )
    arr = np.asarray(value)
    if arr.shape != () or arr.dtype.kind not in "iuf":
        raise TypeError(f"simulate: {name} must be a real scalar, got {value!r}")
    v = float(arr)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"simulate: {name} must be a finite positive number, got {v!r}")
    return v


def _control_period(period: Any, dt: float) -> int | None:
    """The zero-order-hold period in steps (`control_period` a multiple of `dt`), or `None`."""
    if period is None:
        return None
    m = _positive_number("control_period", period) / dt
    if m >= 2**31:
        raise ValueError(
            f"simulate: control_period = {period!r} is {m:.3g} steps of dt = {dt:.6g} (at most "
            "2**31 − 1): a period longer than the run holds the first input throughout"
        )
    if round(m) < 1 or not math.isclose(m, round(m), rel_tol=1e-9):
        raise ValueError(
            f"simulate: control_period must be a multiple of dt = {dt:.6g}, got {period!r}"
        )
    return round(m)


def time_grid(
    t_final: Any, dt: Any, control_period: Any, bytes_per_step: int
) -> tuple[float, float, int, int | None]:
    """`(t_final, dt, n_steps, period)`: the times as Python floats, `n_steps = ceil(t_final /
    dt)` with `t_final` a multiple of `dt` to the inputs' rounding (float32 times: 0.3 / 0.1 =
    3.00000007), and the hold period in steps (`None` without). A run whose record of
    `bytes_per_step` a step would exceed `MAX_RECORD_BYTES` is refused."""
    eps = max(_rounding(t_final), _rounding(dt))
    t_final = _positive_number("t_final", t_final)
    dt = _positive_number("dt", dt)
    period = _control_period(control_period, dt)
    ratio = t_final / dt
    n_steps = max(1, math.ceil(ratio - max(1e-9, 8.0 * ratio * eps))) if ratio < 2**63 else 2**63
    record = bytes_per_step * (n_steps + 1)
    if n_steps >= 2**31 or record > MAX_RECORD_BYTES:
        raise ValueError(
            f"simulate: t_final / dt = {t_final:.3g} / {dt:.3g} asks for {ratio:.3g} steps, "
            f"whose record ({record / 2**30:.3g} GiB) exceeds the limit of "
            f"{MAX_RECORD_BYTES / 2**30:.0f} GiB; simulate in shorter pieces or with a larger dt"
        )
    return t_final, dt, n_steps, period
