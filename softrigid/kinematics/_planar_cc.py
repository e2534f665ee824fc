"""Planar constant curvature (one coordinate: the total bending angle)."""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array

from .._math import sinc
from .._module import module, static
from .._trig import sincos
from ._base import Kinematics
from ._rod import check_length

__all__ = ["PlanarConstantCurvature"]


@module
class PlanarConstantCurvature(Kinematics):
    """Planar constant-curvature segment of rest length `L`, bending in the `x1–x3` plane.

    Coordinate `q` (`n_q = 1`): the total bending angle; the section at `x3` is rotated by
    `θ = q x3 / L` about `−x2` (it sends `e1` to `(cos θ, 0, sin θ)`), so a positive `q` bends
    the axis towards `−x1`:

        f(x, q) = ( L (cos θ − 1)/q + x1 cos θ,  x2,  (L + q x1) sin θ / q )

    evaluated in the safe form `( −x3 θ B(θ²) + x1 cos θ, x2, x3 A(θ²) + x1 sin θ )` with
    `A = sin θ/θ`, `B = (1 − cos θ)/θ²` (`bodies.md`), written with the half angle `u = θ/2`
    as `θ B = sinc(u) sin u`, `A = sinc(u) cos u`: exact with finite derivatives of every order
    at `q = 0`, where `f(x, 0) = x`. Valid for every `q`; the material stays injective
    while `|q| R / L < 1` (the inner fibre does not fold), which is the physical range.
    The distal frame (pivot `(0, 0, L)`) is rotated by `q` about `−x2`:
    `R = [[cos q, 0, −sin q], [0, 1, 0], [sin q, 0, cos q]]`. With `L = 1` this is the
    toy body of the seed (eq. 3).
    """

    length: Array
    n_q: int = static(default=1, init=False)
    exact_distal = True
    has_backbone = True

    def __post_init__(self) -> None:
        # finite and positive, at run time when traced (a negative traced length computed)
        object.__setattr__(self, "length", check_length("PlanarConstantCurvature", self.length))

    def _section_frame(self, x3: Array, q: Array) -> tuple[Array, Array, Array, Array]:
        # Half-angle form, u = θ/2: sin θ/θ = sinc(u) cos u, (1 − cos θ)/θ = sinc(u) sin u,
        # cos θ = 1 − 2 sin² u, sin θ = 2 sin u cos u (two transcendentals, no division by θ)
        u = 0.5 * q[0] * x3 / self.length
        (su, cu), sc = sincos(u), sinc(u)
        return x3 * sc * cu, -x3 * sc * su, 1.0 - 2.0 * su * su, 2.0 * su * cu

    def __call__(self, x: Array, q: Array) -> Array:
        sa, sb, c, s = self._section_frame(x[2], q)
        return jnp.stack([sb + x[0] * c, x[1], sa + x[0] * s])

    def map_points(self, points: Array, q: Array, n_axial: int | None = None) -> Array:
        if n_axial is None:
            return super().map_points(points, q)
        rows = points.reshape(n_axial, -1, 3)
        sa, sb, c, s = self._section_frame(rows[:, 0, 2], q)  # backbone once per axial row
        x1, x2 = rows[..., 0], rows[..., 1]
        out = jnp.stack([sb[:, None] + x1 * c[:, None], x2, sa[:, None] + x1 * s[:, None]], -1)
        return out.reshape(points.shape)

    def backbone(self, x3: Array, q: Array) -> tuple[Array, Array]:
        sa, sb, c, s = self._section_frame(x3, q)
        zero, one = jnp.zeros_like(c), jnp.ones_like(c)
        r = jnp.stack([sb, zero, sa], -1)
        rot = jnp.stack(
            [
                jnp.stack([c, zero, -s], -1),
                jnp.stack([zero, one, zero], -1),
                jnp.stack([s, zero, c], -1),
            ],
            -2,
        )
        return r, rot

    def strain(self, x3: Array, q: Array) -> Array:
        """Cosserat strain `ξ = (κ, ν) = (0, −q/L, 0, 0, 0, 1)` (constant): the backbone obeys
        `R' = R skew(κ)`, `r' = R ν` with the section turning about `−x2`."""
        zero = jnp.zeros_like(q[0] * x3)
        return jnp.stack([zero, zero - q[0] / self.length, zero, zero, zero, zero + 1.0])

    def distal_pose(self, q: Array) -> tuple[Array, Array]:
        r, rot = self.backbone(self.length[None], q)
        return rot[0], r[0]
