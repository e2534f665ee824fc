"""Spatial piecewise-constant strain (PCS) segment: the SE(3) exponential in closed form."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax import Array

from .._checks import as_vector
from .._math import stumpffs
from .._module import module, static
from ._bases import _components
from ._rod import Rod, check_length

__all__ = ["SpatialPCS"]

_ALL = ("bend1", "bend2", "twist", "shear1", "shear2", "axial")


@module
class SpatialPCS(Rod):
    """Spatial constant-strain segment of rest length `L` (Renda et al.'s PCS element).

    The strain `ξ = (κ, σ)` (angular first, `κ = (κ1, κ2, κ3)`: bending about `x1`, `x2` and
    twist; `σ = (σ1, σ2, σ3)`: shears along `x1`, `x2` and axial stretch) is constant along the
    segment: `ξ = rest_strain + (the active coordinates)`, with `q` holding the active
    components in the order given by `strains` (names of `softrigid.kinematics.Monomial`'s
    strains or indices 0..5, e.g. `strains=("bend", "axial")` for `q = (Δκ1, Δκ2, Δσ3)`). The
    backbone `g(x3) = exp(x3 ξ^)` is written out componentwise with the Stumpff functions
    `c_k(t)` of `t = x3² |κ|²` (`c0 = cos θ`, `c1 = sin θ/θ`, `c2 = (1 − cos θ)/θ²`,
    `c3 = (θ − sin θ)/θ³`, `θ = x3 |κ|`):

        R(x3) = c0 I + x3 c1 κ^ + x3² c2 κ κᵀ,
        r(x3) = x3 c1 σ + x3² c2 κ × σ + x3³ c3 (κ·σ) κ,
        f(x, q) = r(x3) + R(x3) (x1, x2, 0),

    (from `R = I + x3 c1 κ^ + x3² c2 κ^²`, `r = (x3 I + x3² c2 κ^ + x3³ c3 κ^²) σ` and
    `κ^² = κκᵀ − |κ|² I`): no matrix products, so XLA fuses the rows' frames and their
    derivatives into a few kernels. It equals `Cosserat(L, Monomial(L, 0, strains))` (one exact
    Magnus step) to rounding and is exact, with finite derivatives of every order, at `κ = 0`;
    `f(x, 0) = x` for the default rest strain `(0, 0, 0, 0, 0, 1)`. Defined for every `q`; a
    physical placement while the sections do not fold (`σ3 − κ2 x1 + κ1 x2 > 0` on the
    section). The distal frame is the backbone frame at `x3 = L`, exact.

    Args:
        length: rest length `L > 0`.
        strains: the active components, names (`"bend1"`, `"bend2"`, `"twist"`, `"shear1"`,
            `"shear2"`, `"axial"`, `"bend"` = both bendings, `"shear"` = both shears) or
            indices 0..5, in the order of the coordinates; default all six.
        rest_strain: `ξ*` `(6,)` of the reference configuration (default `(0, 0, 0, 0, 0, 1)`).

    Example:
        >>> import jax.numpy as jnp
        >>> from softrigid.kinematics import SpatialPCS
        >>> seg = SpatialPCS(0.1, strains=("bend", "axial"))
        >>> [round(float(x), 6) for x in seg(jnp.array([0.0, 0.0, 0.1]), jnp.zeros(3))]
        [0.0, 0.0, 0.1]
    """

    length: Array
    rest_strain: Array
    components: tuple[int, ...] = static()
    n_q: int = static()

    def __init__(
        self,
        length: Any,
        strains: Any = _ALL,
        rest_strain: Any = (0.0, 0.0, 0.0, 0.0, 0.0, 1.0),
    ) -> None:
        components, _ = _components("SpatialPCS", strains, 0)
        object.__setattr__(self, "length", check_length("SpatialPCS", length))
        object.__setattr__(
            self, "rest_strain", as_vector("SpatialPCS: rest_strain", rest_strain, 6)
        )
        object.__setattr__(self, "components", components)
        object.__setattr__(self, "n_q", len(components))

    def _xi(self, q: Array) -> list[Array]:
        """The six strain components, rest plus the active coordinates (scalars: elementwise,
        fused with their users, instead of a scatter)."""
        rest = self.rest_strain.astype(q.dtype)
        active = {c: q[j] for j, c in enumerate(self.components)}
        return [rest[i] + active[i] if i in active else rest[i] for i in range(6)]

    def strain(self, X: Array, q: Array) -> Array:
        """`ξ = rest_strain + E q` `(6,)` (constant along the segment)."""
        del X
        return jnp.stack(self._xi(q))

    def frames(self, x3: Array, q: Array) -> tuple[Array, Array]:
        k1, k2, k3, s1, s2, s3 = self._xi(q)
        t = x3 * x3 * (k1 * k1 + k2 * k2 + k3 * k3)
        c0, c1, c2, c3 = stumpffs(0, 4, t)
        a, b, c = x3 * c1, x3 * x3 * c2, x3 * x3 * x3 * c3
        # R = c0 I + a κ^ + b κκᵀ
        rot = jnp.stack(
            [
                jnp.stack([c0 + b * k1 * k1, b * k1 * k2 - a * k3, b * k1 * k3 + a * k2], -1),
                jnp.stack([b * k2 * k1 + a * k3, c0 + b * k2 * k2, b * k2 * k3 - a * k1], -1),
                jnp.stack([b * k3 * k1 - a * k2, b * k3 * k2 + a * k1, c0 + b * k3 * k3], -1),
            ],
            -2,
        )
        # r = a σ + b κ × σ + c (κ·σ) κ
        dot = c * (k1 * s1 + k2 * s2 + k3 * s3)
        r = jnp.stack(
            [
                a * s1 + b * (k2 * s3 - k3 * s2) + dot * k1,
                a * s2 + b * (k3 * s1 - k1 * s3) + dot * k2,
                a * s3 + b * (k1 * s2 - k2 * s1) + dot * k3,
            ],
            -1,
        )
        return rot, r
