"""Checks of the meshing functions' arguments (plain NumPy: meshes are built before any JAX
program), shared with the quadrature and io modules that read meshes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["ceil_count", "index_array", "positive_float", "real_array", "sized_sequence"]


def positive_float(name: str, value: Any) -> float:
    arr = None if isinstance(value, (str, bytes)) or value is None else np.asarray(value)
    if arr is None or arr.dtype.kind not in "iuf" or arr.shape != ():
        raise TypeError(f"{name} must be a finite positive number, got {value!r}")
    v = float(arr)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite positive number, got {value!r}")
    return v


def real_array(name: str, value: Any, finite: bool = True) -> np.ndarray:
    """A float64 copy of `value`: a `TypeError` naming it when it holds no real numbers
    (strings, complex, objects, booleans), a `ValueError` when not finite (if `finite`)."""
    arr = None if isinstance(value, (str, bytes)) or value is None else np.asarray(value)
    if arr is None or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be an array of real numbers, got {type(value).__name__}")
    arr = arr.astype(float)
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def index_array(name: str, value: Any) -> np.ndarray:
    """Node indices as int64; integral floats are accepted, fractions and negatives refused."""
    arr = None if isinstance(value, (str, bytes)) or value is None else np.asarray(value)
    if arr is None or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be an array of node indices, got {type(value).__name__}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr) & (arr == np.round(arr))):
        raise ValueError(f"{name} must hold integer node indices")
    arr = arr.astype(np.int64)
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must hold non-negative node indices")
    return arr


def sized_sequence(name: str, value: Any, n: int, what: str) -> Sequence[Any]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__} {value!r}")
    if np.ndim(value) != 1 or len(value) != n:
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return value


def ceil_count(ratio: float) -> int:
    """`ceil(ratio)`, with a ratio within 1e-6 above an integer taken as that integer (sizes
    rounded to float32: 0.2 / (0.02 / 3) is 30.0000011, not 31 layers)."""
    return math.ceil(ratio * (1.0 - 1e-6))
