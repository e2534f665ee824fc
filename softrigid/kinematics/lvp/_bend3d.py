"""The 3D LVP bend `Bend3D` and the cubic root `psi_root` of its section map.

The section at `z` is scaled by `1 / (ψ(u) √ν3)` with `ψ³ − ψ = u`, which makes the bend
volume-preserving (`det(∂h/∂x) = 1`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ..._math import coef_a, coef_b, coef_c
from ..._module import module, static
from ...quadrature._gauss import gauss_legendre
from ._modes import Modes, _as_modes, _check_count
from ._primitives import Primitive

__all__ = ["U_MIN", "Bend3D", "psi_root"]

# ψ root: the branch ψ³ − ψ = u through ψ(0) = 1 exists for u ≥ U_MIN
U_MIN = -2.0 / np.sqrt(27.0)


@jax.custom_jvp
def psi_root(u: Array) -> Array:
    """The root `ψ(u)` of `ψ³ − ψ = u` on the branch through `ψ(0) = 1` (`ψ > 1/√3`), defined
    for `u ≥ −2/√27`, NaN below. Closed form (Viète), with `a = (3√3/2) u`:

        ψ = (2/√3) cos(arccos(a)/3)  for |a| ≤ 1,     ψ = (2/√3) cosh(arccosh(a)/3)  for a > 1,

    accurate to rounding except within `~1e-8` of `u = −2/√27`, where the root is
    ill-conditioned. Derivative by the custom JVP `ψ' = 1/(3ψ² − 1)` (exact to every order).
    """
    u = jnp.asarray(u)
    a = 1.5 * np.sqrt(3.0) * u
    low = a <= 1.0
    # double where: each branch only sees arguments in its own domain
    trig = jnp.cos(jnp.arccos(jnp.where(low, a, 0.0)) / 3.0)
    hyp = jnp.cosh(jnp.arccosh(jnp.where(low, 1.0, a)) / 3.0)
    psi = (2.0 / np.sqrt(3.0)) * jnp.where(low, trig, hyp)
    return jnp.where(u >= U_MIN, psi, jnp.nan)


@psi_root.defjvp
def _psi_root_jvp(primals: tuple[Array], tangents: tuple[Array]) -> tuple[Array, Array]:
    (u,), (du,) = primals, tangents
    p = psi_root(u)
    return p, du / (3.0 * p * p - 1.0)


@module
class Bend3D(Primitive):
    """3D bend of the section on a backbone with bending rates `κ1(z), κ2(z)` and axial
    stretch `ν3(z)`, `(q = (q1, q2, q3))`:

        κ1 = m1(z) · q1,   κ2 = m2(z) · q2,   ν3 = 1 + m3(z) · q3.

    Backbone in exponential coordinates (the bending-angle vector, as `ConstantCurvature3D`):
    `Θ(z) = ∫_0^z (κ1, κ2, 0)`, `R = I + A Θ^ + B Θ^²` (`A = sin θ/θ`, `B = (1 − cos θ)/θ²`,
    `C = (θ − sin θ)/θ³` in `t = |Θ|²`, safe at zero), `r(z) = ∫_0^z ν3 R e3` by a
    Gauss–Legendre rule of `n_gauss` nodes. `κ1` rotates the sections about `+x1` (the axis
    turns towards `−x2`), `κ2` about `+x2` (towards `+x1`). With a constant bending direction
    this is a constant-curvature arc; in general the backbone's curvature in the section is
    `κ̃ = A κ + C Θ (Θ · κ)` (exact derivative of `R`). The section, at `(x, y) = (x1, x2)`:

        h = r(z) + R(z) (ρ'1, ρ'2, 0),      ρ' = (x, y) / (ψ(u) √ν3),
        u = (2/3)(κ̃1 y − κ̃2 x) / ν3^{3/2},  ψ³ − ψ = u,  ψ(0) = 1   (φ = 1/ψ: φ² + uφ³ = 1),

    so `det = (φ² + uφφ')(1 + 3uφ/2) = 1` to the accuracy of the rule for `r` and of the
    modes' integrals (rounding for bending angles `|Θ| ≲ 2` with the default 8 nodes and
    `Polynomial` modes, whose integrals are exact; raise `n_gauss` for faster-varying modes). The fibres on the inner side of the
    bend (`u < 0`) widen, the outer ones narrow. Smooth at zero curvature (`ψ` is analytic at
    `u = 0`; the root has a custom JVP, so derivatives of every order are exact). Valid while
    `ν3 > 0` and `u > −2/√27` (the inner fibre is not crushed: `|κ| R ≲ 0.58 ν3^{3/2}` for a
    section of radius `R`); outside, NaN.

    Args:
        modes1, modes2: mode functions of `κ1` and `κ2` (either may be `None`).
        stretch_modes: mode functions of `ν3 − 1`, or `None` (`ν3 = 1`).
        n_gauss: nodes of the rule for `r(z)`.
    """

    modes1: Modes | None
    modes2: Modes | None
    stretch_modes: Modes | None
    sizes: tuple[int, int, int] = static()
    n_gauss: int = static()
    n_q: int = static()

    def __init__(
        self, modes1: Any = None, modes2: Any = None, stretch_modes: Any = None, n_gauss: int = 8
    ) -> None:
        if modes1 is None and modes2 is None:
            raise ValueError("Bend3D: give modes1 (κ1), modes2 (κ2) or both")
        ms = tuple(
            None if m is None else _as_modes("Bend3D", m) for m in (modes1, modes2, stretch_modes)
        )
        sizes = tuple(0 if m is None else m.n for m in ms)
        object.__setattr__(self, "modes1", ms[0])
        object.__setattr__(self, "modes2", ms[1])
        object.__setattr__(self, "stretch_modes", ms[2])
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "n_gauss", _check_count("Bend3D: n_gauss", n_gauss))
        object.__setattr__(self, "n_q", sum(sizes))

    def _field(self, which: int, z: Array, q: Array, integral: bool) -> Array:
        modes = (self.modes1, self.modes2, self.stretch_modes)[which]
        if modes is None:
            return jnp.zeros((), jnp.result_type(z, q))
        start = sum(self.sizes[:which])
        qa = q[start : start + self.sizes[which]]
        return (modes.integral(z) if integral else modes(z)) @ qa

    def stretch(self, z: Array, q: Array) -> Array:
        """`ν3(z) = 1 + m3(z) · q3`."""
        return 1.0 + self._field(2, z, q, False)

    def angles(self, z: Array, q: Array) -> Array:
        """The bending-angle vector `(Θ1, Θ2) = ∫_0^z (κ1, κ2)` `(2,)`."""
        return jnp.stack([self._field(0, z, q, True), self._field(1, z, q, True)])

    def _rotation(self, th: Array, a: Array, b: Array) -> Array:
        """`R = I + A Θ^ + B Θ^²` for `Θ = (th1, th2, 0)` `(3, 3)`."""
        t = th[0] * th[0] + th[1] * th[1]
        return jnp.stack(
            [
                jnp.stack([1.0 - b * th[1] * th[1], b * th[0] * th[1], a * th[1]]),
                jnp.stack([b * th[0] * th[1], 1.0 - b * th[0] * th[0], -a * th[0]]),
                jnp.stack([-a * th[1], a * th[0], 1.0 - b * t]),
            ]
        )

    def _position(self, z: Array, q: Array) -> Array:
        """`r(z) = ∫_0^z ν3 R e3` `(3,)` by the Gauss–Legendre rule of `n_gauss` nodes."""
        t_nodes, w = gauss_legendre(self.n_gauss)
        s = z * jnp.asarray(t_nodes, dtype=jnp.result_type(z, float))

        def tangent(si: Array) -> Array:
            # ν3 R e3 = ν3 (A Θ2, −A Θ1, 1 − B t)
            th = self.angles(si, q)
            t = th @ th
            a = coef_a(t)
            return self.stretch(si, q) * jnp.stack([a * th[1], -a * th[0], 1.0 - coef_b(t) * t])

        return z * (jnp.asarray(w, dtype=s.dtype) @ jax.vmap(tangent)(s))

    def backbone_frame(self, z: Array, q: Array) -> tuple[Array, Array]:
        """`g(z) = (R (3, 3), r (3,))` of the backbone."""
        th = self.angles(z, q)
        t = th @ th
        return self._rotation(th, coef_a(t), coef_b(t)), self._position(z, q)

    def _section(self, x: Array, q: Array) -> tuple[Array, Array, Array, Array]:
        """`(R, r, u, ν3)` at the point `x`."""
        z = x[2]
        th = self.angles(z, q)
        t = th @ th
        a = coef_a(t)
        kappa = jnp.stack([self._field(0, z, q, False), self._field(1, z, q, False)])
        # κ̃ = A κ + C Θ (Θ · κ), in-plane components
        bent = a * kappa + coef_c(t) * th * (th @ kappa)
        nu = self.stretch(z, q)
        u = (2.0 / 3.0) * (bent[0] * x[1] - bent[1] * x[0]) / (nu * jnp.sqrt(nu))
        return self._rotation(th, a, coef_b(t)), self._position(z, q), u, nu

    def __call__(self, x: Array, q: Array) -> Array:
        rot, r, u, nu = self._section(x, q)
        scale = 1.0 / (psi_root(u) * jnp.sqrt(nu))
        return r + rot[:, 0] * (scale * x[0]) + rot[:, 1] * (scale * x[1])

    def valid(self, x: Array, q: Array) -> Array:
        _, _, u, nu = self._section(x, q)
        return (nu > 0) & (u > U_MIN)

    def condition(self) -> str:
        return "ν3 > 0 and u = (2/3)(κ̃1 x2 − κ̃2 x1)/ν3^{3/2} > −2/√27"
