"""Joints: the placement of a body's proximal frame in the previous body's distal frame.

Every joint has an `origin`, the fixed placement of the joint frame in the previous link's distal
frame (the base frame for the first link), given as `None` (identity), a 4×4 homogeneous matrix or
a `(rotation, translation)` pair. The joint motion acts in the joint frame:
`T_J(q_J) = origin · motion(q_J)`.

Revolute and prismatic joints may carry a linear spring and damper (seed 000):
`U = ½ k (q − q_rest)²`, `R = ½ d q̇²`, which enter `s` of `ν = M q̈ + c + g + s`.
"""

from __future__ import annotations

import abc
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from ._checks import as_placement, as_scalar
from ._math import rotation_exp
from ._module import is_concrete, module, static

__all__ = ["Fixed", "Free", "Joint", "Prismatic", "Revolute"]


def _unit_axis(cls: str, axis: Any) -> Array:
    arr = jnp.asarray(axis, dtype=float)
    if arr.shape != (3,):
        raise ValueError(f"{cls}: axis must have shape (3,), got {arr.shape}")
    if is_concrete(arr):
        norm = float(np.linalg.norm(np.asarray(arr)))
        if not np.isfinite(norm) or norm < 1e-12:
            raise ValueError(f"{cls}: axis must be a finite non-zero vector, got {np.asarray(arr)}")
    return arr / jnp.linalg.norm(arr)


class Joint(abc.ABC):
    """A joint with `n_q` coordinates; `transform(q_J)` is its pose `(R, t)` in the parent frame."""

    n_q: int
    origin_rotation: Array
    origin_translation: Array

    @abc.abstractmethod
    def motion(self, q: Array) -> tuple[Array, Array]:
        """Pose `(R, t)` of the joint's moving frame in the joint frame."""

    def transform(self, q: Array) -> tuple[Array, Array]:
        """`T_J(q) = origin · motion(q)` as `(R (3, 3), t (3,))`."""
        rot, trans = self.motion(q)
        return self.origin_rotation @ rot, self.origin_translation + self.origin_rotation @ trans

    def energy(self, q: Array) -> Array:
        """Elastic energy of the joint spring (zero for joints without one)."""
        del q
        return jnp.zeros(())

    def dissipation(self, qd: Array) -> Array:
        """Rayleigh dissipation function of the joint damper (zero without one)."""
        del qd
        return jnp.zeros(())


def _set_origin(joint: Any, origin: Any, name: str) -> None:
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
        _set_origin(self, origin, "Fixed")

    def motion(self, q: Array) -> tuple[Array, Array]:
        del q
        return jnp.eye(3), jnp.zeros(3)


@module
class _SpringJoint(Joint):
    axis: Array
    origin_rotation: Array
    origin_translation: Array
    stiffness: Array
    damping: Array
    rest: Array
    n_q: int = static(default=1, init=False)

    def __init__(
        self,
        axis: Any,
        origin: Any = None,
        stiffness: Any = 0.0,
        damping: Any = 0.0,
        rest: Any = 0.0,
    ) -> None:
        name = type(self).__name__
        object.__setattr__(self, "n_q", 1)
        object.__setattr__(self, "axis", _unit_axis(name, axis))
        _set_origin(self, origin, name)
        object.__setattr__(
            self, "stiffness", as_scalar(f"{name}: stiffness", stiffness, nonnegative=True)
        )
        object.__setattr__(
            self, "damping", as_scalar(f"{name}: damping", damping, nonnegative=True)
        )
        object.__setattr__(self, "rest", as_scalar(f"{name}: rest", rest))

    def energy(self, q: Array) -> Array:
        # U = ½ k (q − q_rest)²
        return 0.5 * self.stiffness * (q[0] - self.rest) ** 2

    def dissipation(self, qd: Array) -> Array:
        # R = ½ d q̇²
        return 0.5 * self.damping * qd[0] ** 2


@module
class Revolute(_SpringJoint):
    """Rotation by `q` about the unit `axis` of the joint frame (right-hand rule).

    Args:
        axis: `(3,)` rotation axis in the joint frame (normalized here).
        origin: placement of the joint frame in the previous distal frame.
        stiffness, damping, rest: optional spring `k ≥ 0` [N·m/rad], damper `d ≥ 0`
            [N·m·s/rad] and spring rest angle.
    """

    def motion(self, q: Array) -> tuple[Array, Array]:
        return rotation_exp(self.axis * q[0]), jnp.zeros(3)


@module
class Prismatic(_SpringJoint):
    """Translation by `q` along the unit `axis` of the joint frame.

    Args: as `Revolute`, with stiffness in N/m and damping in N·s/m.
    """

    def motion(self, q: Array) -> tuple[Array, Array]:
        return jnp.eye(3), self.axis * q[0]


@module
class Free(Joint):
    """A 6-DoF floating base: `q = (p, φ)`, translation `p` (3) in the joint frame, then the
    rotation `R = exp(skew(φ))` by the rotation vector `φ` (3).

    Chart: the exponential coordinates are smooth everywhere and the pose is exact for any
    `φ`; the map from `φ̇` to the angular velocity is singular at `|φ| = 2π k` (k ≥ 1), so keep
    `|φ| < 2π` (re-chart by `φ ← φ (1 − 2π/|φ|)` when it approaches `2π`).
    """

    origin_rotation: Array
    origin_translation: Array
    n_q: int = static(default=6, init=False)

    def __init__(self, origin: Any = None) -> None:
        object.__setattr__(self, "n_q", 6)
        _set_origin(self, origin, "Free")

    def motion(self, q: Array) -> tuple[Array, Array]:
        return rotation_exp(q[3:6]), q[0:3]
