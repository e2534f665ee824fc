"""Shared machinery of rod families (rigid sections on a backbone `g(X) = (R(X), r(X))`).

A rod maps the material point `x = (x1, x2, x3)` to `f(x, q) = r(x3) + R(x3) (x1, x2, 0)`, with
the backbone solving `g' = g ξ^`, `g(0) = I` for the strain `ξ = (κ, ν)` (angular first).
"""

from __future__ import annotations

import abc

import jax.numpy as jnp
import numpy as np
from jax import Array

from .._checks import as_float, traced_check
from .._math import rigid_exp
from .._module import is_concrete
from ..quadrature._gauss import gauss_legendre
from ._base import Kinematics

__all__ = ["GAUSS2", "bracket", "check_length", "zanna_step"]

# Nodes of the two-point Gauss rule on [0, 1] (the Zanna step's)
GAUSS2 = tuple(gauss_legendre(2)[0])


def check_length(cls: str, length: object) -> Array:
    """A scalar length, finite and positive: checked now when concrete, by a run-time check
    where it is used when traced (a model built inside `jit`)."""
    arr = as_float(length, f"{cls}: length")  # complex, text and booleans refused
    if arr.shape != ():
        raise ValueError(f"{cls}: length must be a scalar, got shape {arr.shape}")
    if not is_concrete(arr):  # a run-time check where the length is used
        bad = ~(jnp.isfinite(arr) & (arr > 0))
        return traced_check(arr, bad, f"{cls}: length must be finite and positive")
    value = float(arr)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{cls}: length must be finite and positive, got {value}")
    return arr


def bracket(a: Array, b: Array) -> Array:
    """`ad_a b = [a, b]` for twists `(..., 6)` (angular first):
    `(κa × κb, κa × νb + νa × κb)`."""
    ka, na, kb, nb = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    return jnp.concatenate([jnp.cross(ka, kb), jnp.cross(ka, nb) + jnp.cross(na, kb)], -1)


def zanna_step(xi_a: Array, xi_b: Array, h: Array) -> tuple[Array, Array]:
    """One 4th-order Magnus (Zanna) step of `g' = g ξ^` over a length `h` (batched):

        Ω = (h/2)(ξa + ξb) + (√3 h²/12) ad_{ξa} ξb,      g(X + h) = g(X) exp(Ω^),

    with `ξa, ξb` the strain at the Gauss points `X + (1/2 ∓ √3/6) h`. Returns the increment
    `exp(Ω^) = (R, t)`.
    """
    h = h[..., None]
    omega = 0.5 * h * (xi_a + xi_b) + (np.sqrt(3.0) / 12.0) * h * h * bracket(xi_a, xi_b)
    return rigid_exp(omega[..., :3], omega[..., 3:])


class Rod(Kinematics):
    """A body map with rigid sections on a backbone: `f(x, q) = r(x3) + R(x3) (x1, x2, 0)`.

    Subclasses implement `frames(x3 (m,), q) -> (R (m, 3, 3), r (m, 3))` and `strain`; the
    distal frame is the backbone frame at `x3 = L` (exact).
    """

    length: Array
    exact_distal = True
    has_backbone = True

    @abc.abstractmethod
    def frames(self, x3: Array, q: Array) -> tuple[Array, Array]:
        """Backbone frames `(R (m, 3, 3), r (m, 3))` at the axial coordinates `x3` `(m,)`."""

    @abc.abstractmethod
    def strain(self, X: Array, q: Array) -> Array:
        """Strain `ξ(X, q) = (κ1, κ2, κ3, ν1, ν2, ν3)` `(6,)` at the axial coordinate `X`."""

    def __call__(self, x: Array, q: Array) -> Array:
        rot, r = self.frames(x[2][None], q)
        return r[0] + rot[0, :, 0] * x[0] + rot[0, :, 1] * x[1]

    def map_points(self, points: Array, q: Array, n_axial: int | None = None) -> Array:
        """Positions `(K, 3)`; with `n_axial` the backbone is evaluated once per axial row and
        the section is mapped by broadcasting."""
        if n_axial is None:
            rot, r = self.frames(points[:, 2], q)
            return r + rot[:, :, 0] * points[:, 0, None] + rot[:, :, 1] * points[:, 1, None]
        rows = points.reshape(n_axial, -1, 3)
        rot, r = self.frames(rows[:, 0, 2], q)
        out = (
            r[:, None, :]
            + rot[:, None, :, 0] * rows[..., 0, None]
            + rot[:, None, :, 1] * rows[..., 1, None]
        )
        return out.reshape(points.shape)

    def backbone(self, x3: Array, q: Array) -> tuple[Array, Array]:
        """`(r (m, 3), R (m, 3, 3))` at `x3` `(m,)`: `f(x, q) = r(x3) + R(x3) (x1, x2, 0)`."""
        rot, r = self.frames(x3, q)
        return r, rot

    def distal_pose(self, q: Array) -> tuple[Array, Array]:
        """The backbone frame at `x3 = L`: `(R(L), r(L))`, exact."""
        rot, r = self.frames(self.length[None], q)
        return rot[0], r[0]
