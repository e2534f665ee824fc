"""The joint interface (`Joint`), the joint origin, the linear springs and dampers shared by the
sprung joints (`SpringJoint`), and the rigid connection `Fixed` (the table in `softrigid.joints`)."""

from __future__ import annotations

import abc
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from .._checks import as_float, as_placement, traced_check
from .._math import matmul, matvec
from .._module import is_concrete, module, static

__all__ = ["Fixed", "Joint", "SpringJoint", "set_origin", "unit_axis"]


def unit_axis(name: str, axis: Any) -> Array:
    """`axis / |axis|` for a `(3,)` axis of real numbers, finite and non-zero: checked at once
    when concrete, by a run-time check when traced (the norm is taken of `axis / max|axis_i|`,
    so a finite axis as long as 1e308 does not overflow)."""
    arr = as_float(axis, name)
    if arr.shape != (3,):
        raise ValueError(f"{name} must have shape (3,), got {arr.shape}")
    if is_concrete(arr):
        a = np.asarray(arr)
        scale = float(np.max(np.abs(a)))
        scaled = a / scale if np.all(np.isfinite(a)) and scale > 0 else None
        if scaled is None or np.linalg.norm(scaled) * scale < 1e-12:
            raise ValueError(f"{name} must be a finite non-zero vector (norm ≥ 1e-12), got {a}")
        return as_float(scaled / np.linalg.norm(scaled))
    scale = jnp.max(jnp.abs(arr))
    bad = ~jnp.all(jnp.isfinite(arr)) | ~(scale * jnp.linalg.norm(arr / scale) >= 1e-12)
    arr = traced_check(arr, bad, f"{name} must be a finite non-zero vector (norm ≥ 1e-12)")
    return arr / scale / jnp.linalg.norm(arr / scale)


def _spring_parameter(name: str, value: Any, n: int, *, nonnegative: bool) -> Array:
    """A spring or damper parameter: a scalar or an `(n,)` vector, stored with shape `()` for a
    one-coordinate joint and `(n,)` otherwise; finite (and non-negative): checked at build time
    when concrete, by a run-time check when traced (a joint built inside `jit`)."""
    arr = as_float(value, name)
    if arr.shape not in ((), (n,)):
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got {arr.shape}")
    shape = () if n == 1 else (n,)
    if not is_concrete(arr):
        bad = ~jnp.isfinite(arr) | (arr < 0 if nonnegative else False)
        sign = " and non-negative" if nonnegative else ""
        arr = traced_check(arr, bad, f"{name} must be finite{sign}")
        return jnp.broadcast_to(arr.reshape(()) if n == 1 else arr, shape)
    v = np.asarray(arr)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite, got {v}")
    if nonnegative and np.any(v < 0):
        raise ValueError(f"{name} must be non-negative, got {v}")
    return as_float(np.broadcast_to(v.reshape(()) if n == 1 else v, shape))


class Joint(abc.ABC):
    """A joint with `n_q` coordinates; `transform(q_J)` is its pose `(R, t)` in the parent frame."""

    n_q: int
    origin_rotation: Array
    origin_translation: Array

    @abc.abstractmethod
    def motion(self, q: Array) -> tuple[Array, Array]:
        """Pose `(R (3, 3), t (3,))` of the joint's moving frame in the joint frame, for
        `q (n_q,)`."""

    def transform(self, q: Array) -> tuple[Array, Array]:
        """`T_J(q) = origin · motion(q)` as `(R (3, 3), t (3,))`."""
        rot, trans = self.motion(q)
        o = self.origin_rotation
        return matmul(o, rot), self.origin_translation + matvec(o, trans)

    def energy(self, q: Array) -> Array:
        """Elastic energy of the joint spring (zero for joints without one)."""
        del q
        return jnp.zeros(())

    def dissipation(self, qd: Array) -> Array:
        """Rayleigh dissipation function of the joint damper (zero without one)."""
        del qd
        return jnp.zeros(())

    def rechart(self, q: Array, qd: Array, *accelerations: Array) -> tuple[Array, ...]:
        """`(q, q̇, q̈…)` in another chart of the same pose, away from the chart's singularity
        (`softrigid.simulate` calls it after every step); the identity for joints whose chart
        has none. Rates map with the chart change `ψ`: `q̇' = ψ'(q) q̇`,
        `q̈' = ψ'(q) q̈ + ψ''(q)[q̇, q̇]`."""
        return (q, qd, *accelerations)


def set_origin(joint: Any, origin: Any, name: str) -> None:
    rot, trans = as_placement(f"{name}: origin", origin)
    object.__setattr__(joint, "origin_rotation", rot)
    object.__setattr__(joint, "origin_translation", trans)


@module
class Fixed(Joint):
    """A rigid connection (no coordinate)."""

    origin_rotation: Array
    origin_translation: Array
    n_q: int = static(default=0, init=False)

    def __init__(self, origin: Any = None) -> None:
        object.__setattr__(self, "n_q", 0)
        set_origin(self, origin, "Fixed")

    def motion(self, q: Array) -> tuple[Array, Array]:
        del q
        return jnp.eye(3), jnp.zeros(3)


@module
class SpringJoint(Joint):
    """A joint with a linear spring and damper on each coordinate:
    `U = ½ Σ_j k_j (q_j − r_j)²`, `R = ½ Σ_j d_j q̇_j²` (`softrigid.joints`)."""

    origin_rotation: Array
    origin_translation: Array
    stiffness: Array
    damping: Array
    rest: Array
    n_q: int = static(default=1, init=False)

    def _set_common(self, n_q: int, origin: Any, stiffness: Any, damping: Any, rest: Any) -> None:
        """Set `n_q`, the origin and the spring and damper parameters (every constructor)."""
        name = type(self).__name__
        object.__setattr__(self, "n_q", n_q)
        set_origin(self, origin, name)
        for field, value, nonnegative in (
            ("stiffness", stiffness, True),
            ("damping", damping, True),
            ("rest", rest, False),
        ):
            param = _spring_parameter(f"{name}: {field}", value, n_q, nonnegative=nonnegative)
            object.__setattr__(self, field, param)

    def energy(self, q: Array) -> Array:
        # U = ½ Σ_j k_j (q_j − r_j)²
        return 0.5 * jnp.sum(self.stiffness * (q - self.rest) ** 2)

    def dissipation(self, qd: Array) -> Array:
        # R = ½ Σ_j d_j q̇_j²
        return 0.5 * jnp.sum(self.damping * qd**2)
