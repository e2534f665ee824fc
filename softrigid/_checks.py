"""Input validation shared by the model and the algorithms (clear messages, no asserts)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from ._module import is_concrete

__all__ = ["as_float", "as_placement", "as_scalar", "as_vector", "check_state"]


def as_float(value: Any) -> Array:
    """A float JAX array; concrete values are converted in NumPy (no JAX dispatch, so building a
    model compiles nothing), traced ones with `jax.numpy`."""
    if is_concrete(value):
        return jnp.asarray(np.asarray(value, dtype=float))
    return jnp.asarray(value, dtype=float)


def as_scalar(name: str, value: Any, *, positive: bool = False, nonnegative: bool = False) -> Array:
    """A float scalar; checked finite (and positive / non-negative) when concrete."""
    arr = as_float(value)
    if arr.shape != ():
        raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    if is_concrete(arr):
        v = float(arr)
        if not np.isfinite(v):
            raise ValueError(f"{name} must be finite, got {v}")
        if positive and v <= 0:
            raise ValueError(f"{name} must be positive, got {v}")
        if nonnegative and v < 0:
            raise ValueError(f"{name} must be non-negative, got {v}")
    return arr


def as_vector(name: str, value: Any, size: int) -> Array:
    """A float vector of shape `(size,)`, checked finite when concrete."""
    arr = as_float(value)
    if arr.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {arr.shape}")
    if is_concrete(arr) and not bool(np.all(np.isfinite(np.asarray(arr)))):
        raise ValueError(f"{name} must be finite, got {np.asarray(arr)}")
    return arr


def as_placement(name: str, value: Any) -> tuple[Array, Array]:
    """A rigid placement from `None` (identity), a 4×4 homogeneous matrix or a `(R, t)` pair.

    The rotation is checked orthonormal with determinant +1 (to 1e-8) when concrete.
    """
    if value is None:
        return as_float(np.eye(3)), as_float(np.zeros(3))
    if isinstance(value, (tuple, list)) and len(value) == 2:
        rot = as_float(value[0])
        trans = as_float(value[1])
        if rot.shape != (3, 3) or trans.shape != (3,):
            raise ValueError(
                f"{name} as (R, t) needs R (3, 3) and t (3,), got {rot.shape} and {trans.shape}"
            )
    else:
        concrete = is_concrete(value)
        mat = np.asarray(value, dtype=float) if concrete else jnp.asarray(value, dtype=float)
        if mat.shape != (4, 4):
            raise ValueError(
                f"{name} must be a 4x4 homogeneous matrix or an (R, t) pair, got {mat.shape}"
            )
        if concrete and not np.allclose(mat[3], [0, 0, 0, 1], atol=1e-12):
            raise ValueError(f"{name}: last row of a homogeneous matrix must be (0, 0, 0, 1)")
        rot, trans = as_float(mat[:3, :3]), as_float(mat[:3, 3])
    if is_concrete(rot, trans):
        r = np.asarray(rot)
        if not (np.all(np.isfinite(r)) and np.all(np.isfinite(np.asarray(trans)))):
            raise ValueError(f"{name} must be finite")
        if not np.allclose(r.T @ r, np.eye(3), atol=1e-8) or np.linalg.det(r) < 0:
            raise ValueError(f"{name}: the rotation must be orthonormal with determinant +1")
    return rot, trans


def check_state(name: str, value: Any, n: int) -> Array:
    """A state vector `(n,)` or a batch `(..., n)`; finite when concrete."""
    arr = jnp.asarray(value)
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        arr = arr.astype(float)
    if arr.ndim < 1 or arr.shape[-1] != n:
        raise ValueError(
            f"{name} must have shape ({n},) for this robot (n_q = {n}), got {arr.shape}"
        )
    if is_concrete(arr) and not bool(np.all(np.isfinite(np.asarray(arr)))):
        bad = np.argwhere(~np.isfinite(np.asarray(arr)))
        raise ValueError(
            f"{name} contains non-finite values (NaN or inf) at index {bad[0].tolist()}"
        )
    return arr
