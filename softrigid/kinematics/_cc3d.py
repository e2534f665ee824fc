"""3D constant curvature with optional elongation (bending-angle vector, no singular chart)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from .._math import stumpffs
from .._module import module, static
from ._rod import Rod, check_length

__all__ = ["ConstantCurvature3D"]


@module
class ConstantCurvature3D(Rod):
    """3D constant-curvature segment of rest length `L`, optionally extensible.

    Coordinates: `q = (q1, q2, q3)` (`n_q = 3`) or `(q1, q2)` with `elongation=False`. The
    bending-angle vector `(q1, q2) = θ (cos ψ, sin ψ)` holds the total bending angle `θ` and the
    bending direction `ψ` (no singular chart at `θ = 0`); `q3` is the elongation, so the
    backbone length is `L + q3`. The constant strain is

        ξ = (−q2/L, q1/L, 0, 0, 0, 1 + q3/L)        (κ angular first, ν linear),

    i.e. a positive `q1` rotates the sections about `+x2` and tilts the axis towards `+x1`, a
    positive `q2` rotates them about `−x1` and tilts the axis towards `+x2`. With
    `Θ(x3) = (x3/L)(−q2, q1, 0)`, `t = |Θ|²`, `A = sin θ/θ`, `B = (1 − cos θ)/θ²` in `t`:

        R(x3) = I + A skew(Θ) + B skew(Θ)²,
        r(x3) = x3 (1 + q3/L) [A e3 + B (x3/L)(q1, q2, 0)],
        f(x, q) = r(x3) + R(x3) (x1, x2, 0).

    The tip is `L (1 + q3/L) ((1 − cos θ)/θ cos ψ, (1 − cos θ)/θ sin ψ, sin θ/θ)`; `f(x, 0) = x`.
    The coefficients are safe in `t` (exact, finite derivatives of every order at `q = 0`).
    The map is defined for every `q`; it is a physical placement (the material does not fold
    or invert) while `1 + q3/L > 0` and `θ R / L < 1` for a section of radius `R` — outside,
    values stay finite but describe an inverted body. The distal frame is the backbone frame
    at `x3 = L`, exact.

    Args:
        length: rest length `L > 0`.
        elongation: include `q3` (default `True`).
    """

    length: Array
    elongation: bool = static()
    n_q: int = static()

    def __init__(self, length: Any, elongation: bool = True) -> None:
        if not isinstance(elongation, (bool, np.bool_)):
            raise TypeError(f"ConstantCurvature3D: elongation must be a bool, got {elongation!r}")
        elongation = bool(elongation)
        object.__setattr__(self, "length", check_length("ConstantCurvature3D", length))
        object.__setattr__(self, "elongation", elongation)
        object.__setattr__(self, "n_q", 3 if elongation else 2)

    def _stretch(self, q: Array) -> Array:
        return 1.0 + q[2] / self.length if self.elongation else jnp.ones((), q.dtype)

    def strain(self, X: Array, q: Array) -> Array:
        """`ξ = (−q2/L, q1/L, 0, 0, 0, 1 + q3/L)` (constant along the rod)."""
        del X
        zero = jnp.zeros((), q.dtype)
        return jnp.stack(
            [-q[1] / self.length, q[0] / self.length, zero, zero, zero, self._stretch(q)]
        )

    def frames(self, x3: Array, q: Array) -> tuple[Array, Array]:
        s = x3 / self.length  # (m,)
        th1, th2 = -s * q[1], s * q[0]  # Θ = s (−q2, q1, 0)
        t = th1 * th1 + th2 * th2
        a, b = stumpffs(1, 2, t)  # A, B
        zero = jnp.zeros_like(t)
        # R = I + A skew(Θ) + B skew(Θ)², with Θ3 = 0
        rot = jnp.stack(
            [
                jnp.stack([1.0 - b * th2 * th2, b * th1 * th2, a * th2], -1),
                jnp.stack([b * th1 * th2, 1.0 - b * th1 * th1, -a * th1], -1),
                jnp.stack([-a * th2, a * th1, 1.0 - b * t], -1),
            ],
            -2,
        )
        # r = x3 λ [A e3 + B s (q1, q2, 0)]
        scale = x3 * self._stretch(q)
        r = jnp.stack([scale * b * s * q[0], scale * b * s * q[1], scale * a + zero], -1)
        return rot, r
