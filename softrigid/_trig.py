"""`sin` and `cos` as elementwise arithmetic that XLA:CPU vectorizes and fuses.

XLA:CPU evaluates `sin` and `cos` by a call into the C library per element (`__sincos_fma`,
about 12 ns here), and its fusion pass counts them as cheap: a trigonometric value consumed by
several fusions is recomputed in each. On the helicoid robot's full mesh that came to 49 calls
per node and per `inverse_dynamics` (about five distinct ones), 18 % of the call's time. `sincos` is
the textbook algorithm (fdlibm's, as in musl) written with array operations:

    k = round(x · 2/π),   x − k π/2 = r + y   (Cody–Waite: π/2 = P1 + P2 + P3, `P1`, `P2` of
                                           33 significant bits, so `k P1`, `k P2` are exact
                                           for |k| < 2²⁰; `y` the rounding of `r` and `k P3`)
    sin r = r + r³ (S1 + r² (S2 + … + r⁸ S6)),   cos r = 1 − r²/2 + r⁴ (C1 + … + r¹⁰ C6)
    sin(r + y) = sin r + y cos r,   cos(r + y) = cos r − y sin r
    (sin x, cos x) = (s, c), (c, −s), (−s, −c), (−c, s)   for k mod 4 = 0, 1, 2, 3,

with fdlibm's minimax coefficients on `|r| ≤ π/4`. Measured against the C library in extended
precision (2·10⁶ seeded points each): within 1.15 ulp for `|x| ≤ 10⁴` and 1.25 ulp for
`|x| ≤ 10⁶` (the C library: 0.52); beyond, the error stays near `|x| · 2⁻⁵³` absolutely, the
rounding that `x` itself carries, and the values stay in `[−1, 1]` (to 1e-12) for any finite
`x`. `±inf` and NaN give NaN, as `jnp.sin` does. The derivatives reuse the values
(`d sin = cos dx`, `d cos = −sin dx`, a custom JVP), so a derivative of any order evaluates the
polynomials once. Other dtypes than float64 take `jnp.sin` and `jnp.cos`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

__all__ = ["sincos"]

_TWO_OVER_PI = 6.36619772367581382433e-01
# π/2 = _P1 + _P2 + _P3 (fdlibm's pio2_1, pio2_2, pio2_3 + pio2_3t)
_P1 = 1.57079632673412561417e00
_P2 = 6.07710050630396597660e-11
_P3 = 2.02226624871116645580e-21 + 8.47842766036889956997e-32
# fdlibm __kernel_sin / __kernel_cos
_S = (
    -1.66666666666666324348e-01,
    8.33333333332248946124e-03,
    -1.98412698298579493134e-04,
    2.75573137070700676789e-06,
    -2.50507602534068634195e-08,
    1.58969099521155010221e-10,
)
_C = (
    4.16666666666666019037e-02,
    -1.38888888888741095749e-03,
    2.48015872894767294178e-05,
    -2.75573143513906633035e-07,
    2.08757232129817482790e-09,
    -1.13596475577881948265e-11,
)


def _kernels(r: Array) -> tuple[Array, Array]:
    """`(sin r, cos r)` for `|r| ≤ π/4` (musl's `__sin`, `__cos` with no tail)."""
    z = r * r
    w = z * z
    # sin r = r + r³ (S1 + z (S2 + z (S3 + z S4) + z w (S5 + z S6)))
    tail = _S[1] + z * (_S[2] + z * _S[3]) + z * w * (_S[4] + z * _S[5])
    sin = r + (z * r) * (_S[0] + z * tail)
    # cos r = w0 + ((1 − w0) − z/2 + z² p(z)),  w0 = 1 − z/2 (the rounding of 1 − z/2 recovered)
    p = z * (_C[0] + z * (_C[1] + z * _C[2])) + w * w * (_C[3] + z * (_C[4] + z * _C[5]))
    half = 0.5 * z
    w0 = 1.0 - half
    cos = w0 + (((1.0 - w0) - half) + z * p)
    return sin, cos


@jax.custom_jvp
def sincos(x: Array) -> tuple[Array, Array]:
    """`(sin x, cos x)` elementwise (module docstring: the algorithm, its accuracy and why)."""
    x = jnp.asarray(x)
    if x.dtype != jnp.float64:
        return jnp.sin(x), jnp.cos(x)
    return _sincos64(x)


# staged once per shape: every call site and derivative order is then one equation of the
# caller's program (JAX traces and lowers the ~50 operations once, XLA inlines the call)
@jax.jit
def _sincos64(x: Array) -> tuple[Array, Array]:
    k = jnp.round(x * _TWO_OVER_PI)
    # x − k π/2 = r + y: `k P1`, `k P2` exact, `hi` too (Sterbenz); `y` the rounding of `r`
    # (Fast2Sum) and `k P3`
    hi = x - k * _P1
    r = hi - k * _P2
    y = ((hi - r) - k * _P2) - k * _P3
    # beyond |x| ~ 2⁵² the reduction means nothing (nor does the input's last bit): keep the
    # kernels' argument and the correction in range, so that the values stay in [−1, 1]
    r, y = jnp.clip(r, -1.0, 1.0), jnp.clip(y, -(2.0**-20), 2.0**-20)
    s, c = _kernels(r)
    # sin(r + y) = sin r + y cos r,  cos(r + y) = cos r − y sin r  (y² below the rounding)
    s, c = s + y * c, c - y * s
    quadrant = k - 4.0 * jnp.floor(0.25 * k)  # k mod 4 in {0, 1, 2, 3}
    odd = (quadrant == 1.0) | (quadrant == 3.0)
    sin = jnp.where(odd, c, s)
    cos = jnp.where(odd, s, c)
    sin = jnp.where(quadrant >= 2.0, -sin, sin)
    cos = jnp.where((quadrant == 1.0) | (quadrant == 2.0), -cos, cos)
    return sin, cos


@sincos.defjvp
def _sincos_jvp(primals: tuple[Array], tangents: tuple[Array]) -> tuple:
    (x,), (dx,) = primals, tangents
    sin, cos = sincos(x)
    return (sin, cos), (cos * dx, -sin * dx)
