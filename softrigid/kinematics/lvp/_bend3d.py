"""The 3D LVP bend `Bend3D` and the cubic root `psi_root` of its section map.

The section at `z` is scaled by `1 / (ψ(u) √ν3)` with `ψ³ − ψ = u`, which makes the bend
volume-preserving (`det(∂h/∂x) = 1`).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.custom_derivatives import SymbolicZero

from ..._checks import as_count
from ..._math import stumpffs
from ..._module import module, static
from ..._trig import sincos
from ...quadrature._gauss import gauss_legendre
from ._modes import Modes, _as_modes
from ._primitives import ComponentPrimitive, Components

__all__ = ["U_MIN", "Bend3D", "chebyshev_basis", "chebyshev_integral", "psi_root"]

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
    trig = sincos(jnp.arccos(jnp.where(low, a, 0.0)) / 3.0)[1]
    hyp = jnp.cosh(jnp.arccosh(jnp.where(low, 1.0, a)) / 3.0)
    psi = (2.0 / np.sqrt(3.0)) * jnp.where(low, trig, hyp)
    return jnp.where(u >= U_MIN, psi, jnp.nan)


@psi_root.defjvp
def _psi_root_jvp(primals: tuple[Array], tangents: tuple[Array]) -> tuple[Array, Array]:
    (u,), (du,) = primals, tangents
    p = psi_root(u)
    return p, du / (3.0 * p * p - 1.0)


@functools.cache
def chebyshev_integral(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes `y_j = cos(π (j + ½)/m)` `(m,)` and the matrix `P` `(m + 1, m)` that maps values
    `f(y_j)` to the Chebyshev coefficients `b` of `F(y) = ∫_{−1}^y p(t) dt`, `p` the degree
    `m − 1` interpolant of `f` at the nodes: `F = Σ_k b_k T_k`.

    With `p = Σ_k a_k T_k`, `a_k = (2/m) Σ_j f(y_j) cos(k θ_j)` (`a_0` halved) and
    `∫ T_k = ½ (T_{k+1}/(k+1) − T_{k−1}/(k−1))`: `b_k = (c_{k−1} a_{k−1} − a_{k+1}) / (2k)`
    (`c_0 = 2`, `a_k = 0` for `k ≥ m`), and `b_0` makes `F(−1) = Σ_k (−1)^k b_k = 0`.
    """
    theta = np.pi * (np.arange(m) + 0.5) / m
    a = (2.0 / m) * np.cos(np.outer(np.arange(m + 1), theta))
    a[0] *= 0.5
    a[m] = 0.0
    p = np.zeros((m + 1, m))
    for k in range(1, m + 1):
        p[k] = ((2.0 if k == 1 else 1.0) * a[k - 1] - (a[k + 1] if k + 1 < m else 0.0)) / (2 * k)
    p[0] = -((-1.0) ** np.arange(1, m + 1)) @ p[1:]
    return np.cos(theta), p


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def chebyshev_basis(y: Array, count: int) -> Array:
    """`T(y) = (T_0(y), …, T_{count−1}(y))` `(count,)` at a scalar `y` (`T_{k+1} = 2y T_k −
    T_{k−1}`). Its derivative (custom JVP) is the basis itself times a constant matrix,
    `T'(y) = E T(y)` (`chebyshev_derivative`), so a derivative of any order is one recurrence
    and products with `E`, where differentiating the recurrence nests a recurrence of jets per
    order (the helicoid robot's third-order terms held 89 kernels of it)."""
    out, two_y = [jnp.ones_like(y), y], 2.0 * y
    for _ in range(2, count):
        out.append(two_y * out[-1] - out[-2])
    return jnp.stack(out[:count])


@chebyshev_basis.defjvp
def _chebyshev_basis_jvp(count: int, primals: tuple, tangents: tuple) -> tuple[Array, Array]:
    (y,), (dy,) = primals, tangents
    basis = chebyshev_basis(y, count)
    # dT = E T(y) dy
    return basis, jnp.sum(jnp.asarray(chebyshev_derivative(count), basis.dtype) * basis, -1) * dy


@functools.cache
def chebyshev_derivative(count: int) -> np.ndarray:
    """`E` `(count, count)` with `T_k'(y) = Σ_j E_kj T_j(y)` (row `k`: the Chebyshev
    coefficients of `T_k'`, `numpy.polynomial.chebyshev.chebder`; exact small integers)."""
    e = np.zeros((count, count))
    for k in range(1, count):
        d = np.polynomial.chebyshev.chebder(np.eye(count)[k])
        e[k, : d.size] = d
    return e


@module
class Bend3D(ComponentPrimitive):
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

    Inside a composition that knows its axial range (`compose(..., length=L)`), the backbone is
    a per-body quantity: `ν3 R e3` is sampled once per evaluation at `n_series` Chebyshev nodes
    of the bend's axial range `[0, Z]` (`Z` the image of `L` under the stretches before it) and
    `r(z)` is the exact integral of that interpolant, a Chebyshev series summed per point
    (`chebyshev_integral`, `chebyshev_basis`), instead of `n_gauss` evaluations with trigonometry per
    point; spectrally accurate (rounding for `|Θ| ≲ 3.5` with 20 nodes, where the per-point rule
    of 8 nodes is at ~1e-11). Its derivative along `z` is the exact tangent `ν3 R e3` at the
    point (a custom JVP), so `∂h/∂x`, and `det = 1`, never depend on the series.

    Args:
        modes1, modes2: mode functions of `κ1` and `κ2` (either may be `None`).
        stretch_modes: mode functions of `ν3 − 1`, or `None` (`ν3 = 1`).
        n_gauss: nodes of the per-point rule for `r(z)`.
        n_series: Chebyshev nodes of the per-body backbone.
    """

    modes1: Modes | None
    modes2: Modes | None
    stretch_modes: Modes | None
    sizes: tuple[int, int, int] = static()
    n_gauss: int = static()
    n_series: int = static()
    n_q: int = static()

    def __init__(
        self,
        modes1: Any = None,
        modes2: Any = None,
        stretch_modes: Any = None,
        n_gauss: int = 8,
        n_series: int = 20,
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
        object.__setattr__(self, "n_gauss", as_count("Bend3D: n_gauss", n_gauss))
        object.__setattr__(self, "n_series", as_count("Bend3D: n_series", n_series))
        object.__setattr__(self, "n_q", sum(sizes))

    def _field(self, which: int, z: Array, q: Array, integral: bool) -> Array:
        modes = (self.modes1, self.modes2, self.stretch_modes)[which]
        if modes is None:
            return jnp.zeros((), jnp.result_type(z, q))
        start = sum(self.sizes[:which])
        qa = q[start : start + self.sizes[which]]
        return modes.field_integral(z, qa) if integral else modes.field(z, qa)

    def stretch(self, z: Array, q: Array) -> Array:
        """`ν3(z) = 1 + m3(z) · q3`."""
        return 1.0 + self._field(2, z, q, False)

    def angles(self, z: Array, q: Array) -> Array:
        """The bending-angle vector `(Θ1, Θ2) = ∫_0^z (κ1, κ2)` `(2,)`."""
        th1, th2, _ = self._angle_pair(z, q)
        return jnp.stack([th1, th2])

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

    def _angle_pair(self, z: Array, q: Array) -> tuple[Array, Array, Array]:
        """`(Θ1, Θ2, t = |Θ|²)` as scalars: per point, the rotation is built from them without
        stacking and indexing `(2,)` vectors (whose reverse-mode transposes are pads)."""
        th1, th2 = self._field(0, z, q, True), self._field(1, z, q, True)
        return th1, th2, th1 * th1 + th2 * th2

    def _tangent(self, s: Array, q: Array) -> Array:
        # ν3 R e3 = ν3 (A Θ2, −A Θ1, 1 − B t)
        th1, th2, t = self._angle_pair(s, q)
        # the run of `_section` (A, B, C), so that at a point XLA computes it once for both
        a, b, _ = stumpffs(1, 3, t)
        return self.stretch(s, q) * jnp.stack([a * th2, -a * th1, 1.0 - b * t])

    def _position(self, z: Array, q: Array, series: Any = None) -> Array:
        """`r(z) = ∫_0^z ν3 R e3` `(3,)`: by the Gauss–Legendre rule of `n_gauss` nodes on
        `[0, z]`, or, with the per-body `series` of `prepare`, by its Chebyshev series."""
        if series is not None:
            coefficients, span = series
            return _series_position(self, z, q, coefficients, span)
        t_nodes, w = gauss_legendre(self.n_gauss)
        s = z * jnp.asarray(t_nodes, dtype=jnp.result_type(z, float))
        tangents = jax.vmap(lambda si: self._tangent(si, q))(s)
        return z * (jnp.asarray(w, dtype=s.dtype) @ tangents)

    def prepare(self, q: Array, span: Array | None) -> Any:
        """The backbone on `[0, span]` as a Chebyshev series `(n_series + 1, 3)` (with `span`):
        `r(z) = (Z/2) Σ_k b_k T_k(2z/Z − 1)`, `b = P (ν3 R e3)(s_j)`; `None` without a span.
        The range `Z` is held constant under differentiation (`r` does not depend on it, see
        `_series_position`)."""
        if span is None:
            return None
        y, p = chebyshev_integral(self.n_series)
        span = jax.lax.stop_gradient(jnp.asarray(span, dtype=q.dtype))
        s = 0.5 * span * (1.0 + jnp.asarray(y, dtype=q.dtype))
        tangents = jax.vmap(lambda si: self._tangent(si, q))(s)
        return 0.5 * span * (jnp.asarray(p, dtype=q.dtype) @ tangents), span

    def backbone_frame(self, z: Array, q: Array) -> tuple[Array, Array]:
        """`g(z) = (R (3, 3), r (3,))` of the backbone."""
        th1, th2, t = self._angle_pair(z, q)
        return self._rotation(jnp.stack([th1, th2]), *stumpffs(1, 2, t)), self._position(z, q)

    def _section(
        self, x1: Array, x2: Array, z: Array, q: Array
    ) -> tuple[Array, Array, Array, Array, Array, Array]:
        """`(Θ1, Θ2, A, B, u, ν3)` at the point `(x1, x2, z)`, as scalars."""
        th1, th2, t = self._angle_pair(z, q)
        a, b, c = stumpffs(1, 3, t)  # A, B, C
        k1, k2 = self._field(0, z, q, False), self._field(1, z, q, False)
        # κ̃ = A κ + C Θ (Θ · κ), in-plane components
        along = c * (th1 * k1 + th2 * k2)
        bent1, bent2 = a * k1 + along * th1, a * k2 + along * th2
        nu = self.stretch(z, q)
        u = (2.0 / 3.0) * (bent1 * x2 - bent2 * x1) / (nu * jnp.sqrt(nu))
        return th1, th2, a, b, u, nu

    def apply_components(self, x: Components, q: Array, prepared: Any) -> Components:
        # h = r + ρ'1 R e1 + ρ'2 R e2, with R's first two columns written out:
        # R e1 = (1 − B Θ2², B Θ1 Θ2, −A Θ2),  R e2 = (B Θ1 Θ2, 1 − B Θ1², A Θ1)
        x1, x2, z = x
        th1, th2, a, b, u, nu = self._section(x1, x2, z, q)
        scale = 1.0 / (psi_root(u) * jnp.sqrt(nu))
        r1, r2 = scale * x1, scale * x2
        b12 = b * th1 * th2
        r = self._position(z, q, prepared)
        return (
            r[0] + (1.0 - b * th2 * th2) * r1 + b12 * r2,
            r[1] + b12 * r1 + (1.0 - b * th1 * th1) * r2,
            r[2] + a * (th1 * r2 - th2 * r1),
        )

    def valid(self, x: Array, q: Array) -> Array:
        *_, u, nu = self._section(x[0], x[1], x[2], q)
        return (nu > 0) & (u > U_MIN)

    def condition(self) -> str:
        return "ν3 > 0 and u = (2/3)(κ̃1 x2 − κ̃2 x1)/ν3^{3/2} > −2/√27"


def _series(z: Array, span: Array, coefficients: Array) -> Array:
    """`Σ_k c_k T_k(2z/Z − 1)` `(3,)` for coefficients `c` `(count, 3)` (linear in `c`)."""
    return chebyshev_basis(2.0 * z / span - 1.0, coefficients.shape[0]) @ coefficients


@jax.custom_jvp
def _series_position(bend: Bend3D, z: Array, q: Array, coefficients: Array, span: Array) -> Array:
    """`r(z) = Σ_k b_k T_k(2z/Z − 1)` `(3,)`, the per-body backbone series of `Bend3D.prepare`.

    Its derivative (custom JVP) is that of the backbone it interpolates: along `z` the exact
    tangent `∂r/∂z = ν3 R e3` at `z` (not the interpolant's derivative, a Chebyshev sum of its
    own per tangent), along the coefficients `b` their series; `r(z) = ∫_0^z ν3 R e3` does not
    depend on the interpolation range `Z`, so `Z` has no tangent. Hence `∂f/∂x` and its
    derivatives never sum the series (`det ∂f/∂x = 1` to rounding whatever `n_series`), and
    the `q`-derivatives sum it once per tangent.
    """
    del q
    return _series(z, span, coefficients)


@functools.partial(_series_position.defjvp, symbolic_zeros=True)
def _series_position_jvp(primals: tuple, tangents: tuple) -> tuple[Array, Array]:
    bend, z, q, coefficients, span = primals
    _, dz, _, dc, _ = tangents
    # the value through the custom function itself, so that a derivative of this rule (a
    # higher order) again takes the exact tangent along z
    r = _series_position(bend, z, q, coefficients, span)
    # dr = (ν3 R e3)(z) dz + Σ_k db_k T_k(y). A term whose tangent is a symbolic zero is left
    # out, not multiplied by zero: `q`-derivatives hold `z` (the material point), `x`-derivatives
    # (∂f/∂x) hold `b`, and XLA keeps a product with zero (it may be NaN).
    dr = []
    if not isinstance(dz, SymbolicZero):
        dr.append(bend._tangent(z, q) * dz)
    if not isinstance(dc, SymbolicZero):
        dr.append(_series(z, span, dc))
    return r, sum(dr[1:], dr[0]) if dr else jnp.zeros_like(r)
