"""Planar piecewise-constant strain segment (bend, shear, axial strain; any subset active)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax import Array

from .._checks import as_vector
from .._math import stumpffs
from .._module import module, static
from .._trig import sincos
from ._rod import Rod, check_length

__all__ = ["PlanarPCS"]

_PLANAR = ("bend", "shear", "axial")


@module
class PlanarPCS(Rod):
    """Planar constant-strain segment of rest length `L` in the `x1–x3` plane.

    Strains `(κ, σ1, σ3)` (bending, shear along `x1`, axial stretch) are constant along the
    segment: `(κ, σ1, σ3) = rest_strain + (the active coordinates)`, with `q` holding the
    active strains in the order given by `strains` (e.g. `strains=("bend", "axial")`:
    `q = (Δκ [1/m], Δσ3 [-])`); inactive strains keep their rest value. As a Cosserat strain,
    `ξ = (0, κ, 0, σ1, 0, σ3)`: a positive `κ` rotates the sections about `+x2` and tilts the
    axis towards `+x1` (the opposite sense to `PlanarConstantCurvature`'s `q`). With
    `u = κ x3`, `Sc = x3 A(u²)`, `Ss = x3 u B(u²)` (`A = sin u/u`, `B = (1 − cos u)/u²`):

        r(x3) = (Sc σ1 + Ss σ3, 0, −Ss σ1 + Sc σ3),
        R(x3) = [[cos u, 0, sin u], [0, 1, 0], [−sin u, 0, cos u]],
        f(x, q) = r(x3) + R(x3) (x1, x2, 0),

    which equals `exp(x3 ξ^)` to rounding, is exact with finite derivatives of every order at
    `κ = 0`, and `f(x, 0) = x` for the default rest strain `(0, 0, 1)`. Defined for every `q`;
    a physical placement while `σ3 − κ x1 > 0` on the section (`|κ| R < σ3` for a section of
    radius `R`, no folding) — outside, the values are finite but the body is inverted. The
    distal frame is the backbone frame at `x3 = L`, exact.

    Args:
        length: rest length `L > 0`.
        strains: the active strains, any non-empty subset of `("bend", "shear", "axial")`,
            in the order of the coordinates.
        rest_strain: `(κ*, σ1*, σ3*)` of the reference configuration (default `(0, 0, 1)`).
    """

    length: Array
    rest_strain: Array
    strains: tuple[str, ...] = static()
    n_q: int = static()

    def __init__(
        self,
        length: Any,
        strains: Any = _PLANAR,
        rest_strain: Any = (0.0, 0.0, 1.0),
    ) -> None:
        if not isinstance(strains, (str, tuple, list)):
            raise TypeError(
                f"PlanarPCS: strains must be a name or a sequence of names (bend, shear, axial), "
                f"got {strains!r}"
            )
        strains = (strains,) if isinstance(strains, str) else tuple(strains)
        if not strains:
            raise ValueError("PlanarPCS: strains must select at least one of bend, shear, axial")
        for s in strains:
            if s not in _PLANAR:
                raise ValueError(f"PlanarPCS: unknown strain {s!r}; use bend, shear or axial")
        if len(set(strains)) != len(strains):
            raise ValueError(f"PlanarPCS: strains listed twice in {strains}")
        object.__setattr__(self, "length", check_length("PlanarPCS", length))
        object.__setattr__(self, "rest_strain", as_vector("PlanarPCS: rest_strain", rest_strain, 3))
        object.__setattr__(self, "strains", strains)
        object.__setattr__(self, "n_q", len(strains))

    def planar_strain(self, q: Array) -> Array:
        """`(κ, σ1, σ3)` = rest strain plus the active coordinates."""
        rest = self.rest_strain.astype(q.dtype)
        active = {s: q[j] for j, s in enumerate(self.strains)}
        # stacked, not scattered (`.at[].add`): elementwise, fused with its users by XLA
        return jnp.stack(
            [rest[i] + active[s] if s in active else rest[i] for i, s in enumerate(_PLANAR)]
        )

    def strain(self, X: Array, q: Array) -> Array:
        """`ξ = (0, κ, 0, σ1, 0, σ3)` (constant along the segment)."""
        del X
        kappa, s1, s3 = self.planar_strain(q)
        zero = jnp.zeros_like(kappa)
        return jnp.stack([zero, kappa, zero, s1, zero, s3])

    def frames(self, x3: Array, q: Array) -> tuple[Array, Array]:
        kappa, s1, s3 = self.planar_strain(q)
        u = kappa * x3
        uu = u * u
        a, b = stumpffs(1, 2, uu)  # A, B
        sc = x3 * a
        ss = x3 * u * b
        s, c = sincos(u)
        zero, one = jnp.zeros_like(u), jnp.ones_like(u)
        rot = jnp.stack(
            [
                jnp.stack([c, zero, s], -1),
                jnp.stack([zero, one, zero], -1),
                jnp.stack([-s, zero, c], -1),
            ],
            -2,
        )
        r = jnp.stack([sc * s1 + ss * s3, zero, -ss * s1 + sc * s3], -1)
        return rot, r
