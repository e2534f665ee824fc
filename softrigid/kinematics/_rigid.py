"""The rigid body map `f(x) = x` (no coordinates)."""

from __future__ import annotations

from jax import Array

from .._module import module, static
from ._base import Kinematics

__all__ = ["Rigid"]


@module
class Rigid(Kinematics):
    """Identity map `f(x, q) = x` with `n_q = 0`: a rigid body described by a volume.

    With the default contact points the distal frame is the proximal frame translated to the
    pivot `(0, 0, L)`.
    """

    n_q: int = static(default=0, init=False)

    def __call__(self, x: Array, q: Array) -> Array:
        del q
        return x

    def map_points(self, points: Array, q: Array, n_axial: int | None = None) -> Array:
        del q, n_axial
        return points
