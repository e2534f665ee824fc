"""Small numerical kernels shared by the whole package.

The coefficient functions of rotations and rigid motions have removable singularities at zero
angle. They are Stumpff functions of `t = θ²` (entire in `t`),

    c_k(t) = Σ_j (−t)^j / (k + 2j)!:   A = c_1 = sin θ / θ,   B = c_2 = (1 − cos θ) / θ²,
                                        C = c_3 = (θ − sin θ) / θ³,

evaluated by their series below `t = 4` and from `cos θ`, `sin θ / θ` and `t c_{k+2} = 1/k! − c_k`
above (a double `where`, never differentiated), with the derivative of every order given by
the identity `dc_k/dt = (k c_{k+2} − c_{k+1}) / 2` (a custom JVP): the derivative programs stay
as small as the values, and derivatives of every order are finite and exact at `t = 0`
(`bodies.md`).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax import Array

from ._trig import sincos

__all__ = [
    "axis_rotation",
    "fused_matmul",
    "normalize",
    "rechart_rotation_vector",
    "rigid_exp",
    "rotation_exp",
    "sinc",
    "skew",
    "small_dot",
    "stumpff",
    "stumpffs",
    "unrolled_matmul",
    "vee",
]

# The Stumpff functions: series below _STUMPFF_SPLIT (θ = 2), where 14 terms reach rounding; the
# recurrence above it divides the rounding error of c_0, c_1 by t ≥ 4 at every second order.
_STUMPFF_SPLIT = 4.0
_STUMPFF_TERMS = 14


def _horner(coeffs: tuple[float, ...], t: Array) -> Array:
    out = jnp.full_like(t, coeffs[-1])
    for c in coeffs[-2::-1]:
        out = out * t + c
    return out


def small_dot(a: Array, b: Array) -> Array:
    """`Σ_i a_i b_i` over the last axis of length `n`, unrolled into `n` products: elementwise
    work that XLA fuses with its neighbours, where `a @ b` of a short vector is a kernel of its
    own (per point and per tangent once vectorized)."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    out = a[..., 0] * b[..., 0]
    for i in range(1, a.shape[-1]):
        out = out + a[..., i] * b[..., i]
    return out


def _stumpffs_large(k: int, m: int, t: Array) -> list[Array]:
    """`c_k … c_{k+m−1}` for `t ≥ 4`: `c_0 = cos θ`, `c_1 = sin θ / θ` and the upward
    recurrence `c_j = (1/(j − 2)! − c_{j−2}) / t`, which divides their rounding by `t`."""
    theta = jnp.sqrt(t)
    sin, cos = sincos(theta)
    out = [cos, sin / theta]
    for j in range(2, k + m):
        out.append((1.0 / math.factorial(j - 2) - out[j - 2]) / t)
    return out[k : k + m]


def _stumpff_series(k: int, t: Array) -> Array:
    # c_k(t) = Σ_j (−t)^j / (k + 2j)!, 14 terms (Horner)
    return _horner(tuple((-1.0) ** j / math.factorial(k + 2 * j) for j in range(_STUMPFF_TERMS)), t)


def _stumpffs_small(k: int, m: int, t: Array) -> list[Array]:
    """`c_k … c_{k+m−1}` for `t < 4`: the top two by their series, the others by the downward
    recurrence `c_j = 1/j! − t c_{j+2}`, which is the last step of `c_j`'s own Horner series
    (whose inner part is `c_{j+2}`'s), so each member is as accurate as its series (absolute
    error ~1e-16; relative, it grows only near `c_0`'s zero at `t = π²/4`, as the series'
    does); two Horner series for any `m`."""
    out = {j: _stumpff_series(j, t) for j in range(max(k, k + m - 2), k + m)}
    for j in range(k + m - 3, k - 1, -1):
        out[j] = 1.0 / math.factorial(j) - t * out[j + 2]
    return [out[j] for j in range(k, k + m)]


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def stumpffs(k: int, m: int, t: Array) -> tuple[Array, ...]:
    """`(c_k(t), …, c_{k+m−1}(t))` (`stumpff`).

    Its custom JVP evaluates the `m + 2` functions `c_k … c_{k+m+1}` in one call of itself
    (`dc_j/dt = (j c_{j+2} − c_{j+1}) / 2`), so a derivative of order `n` traces `n + 1`
    calls of `m + 2n` functions, not the `3ⁿ` calls of one function each that a per-function
    rule (`c_j`'s JVP calling `c_j`, `c_{j+1}`, `c_{j+2}`) would trace."""
    t = jnp.asarray(t)
    small = t < _STUMPFF_SPLIT
    series = _stumpffs_small(k, m, jnp.where(small, t, 0.0))
    large = _stumpffs_large(k, m, jnp.where(small, _STUMPFF_SPLIT, t))
    return tuple(jnp.where(small, c, d) for c, d in zip(series, large))


@stumpffs.defjvp
def _stumpffs_jvp(k: int, m: int, primals: tuple[Array], tangents: tuple[Array]) -> tuple:
    (t,), (dt,) = primals, tangents
    c = stumpffs(k, m + 2, t)
    # dc_j/dt = (j c_{j+2} − c_{j+1}) / 2, j = k … k + m − 1
    rates = tuple(0.5 * ((k + j) * c[j + 2] - c[j + 1]) * dt for j in range(m))
    return c[:m], rates


def stumpff(k: int, t: Array) -> Array:
    """The Stumpff function `c_k(t) = Σ_j (−t)^j / (k + 2j)!` for `t ≥ 0` (`k ≥ 0` static):
    `c_0 = cos θ`, `c_1 = sin θ/θ`, `c_2 = (1 − cos θ)/θ²`, `c_3 = (θ − sin θ)/θ³` with `θ = √t`.

    Series (Horner, 14 terms) for `t < 4`, the recurrence `c_k = (1/(k − 2)! − c_{k−2}) / t`
    from `cos θ`, `sin θ / θ` above; rounding-accurate. Derivatives by the custom JVP of
    `stumpffs`, `dc_k/dt = (k c_{k+2} − c_{k+1}) / 2`, exact to every order and cheap (two
    more Stumpff functions per order, evaluated together).
    """
    return stumpffs(k, 1, t)[0]


def sinc(u: Array) -> Array:
    """Unnormalized `sin(u)/u = c_1(u²)`, smooth at 0 with exact derivatives of every order
    (`jnp.sinc` is the normalized one and inaccurate in its derivatives near 0)."""
    u = jnp.asarray(u)
    return stumpff(1, u * u)


def skew(w: Array) -> Array:
    """`skew(w) v = w × v` for 3-vectors (batched over leading axes)."""
    w = jnp.asarray(w)
    z = jnp.zeros_like(w[..., 0])
    return jnp.stack(
        [
            jnp.stack([z, -w[..., 2], w[..., 1]], -1),
            jnp.stack([w[..., 2], z, -w[..., 0]], -1),
            jnp.stack([-w[..., 1], w[..., 0], z], -1),
        ],
        -2,
    )


def vee(m: Array) -> Array:
    """Inverse of `skew` on the skew part of `m`: `(m32 − m23, m13 − m31, m21 − m12) / 2`."""
    return 0.5 * jnp.stack(
        [m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]], -1
    )


def axis_rotation(axis: Array, angle: Array) -> Array:
    """Rotation by `angle` about the unit `axis`: `R = I + sin θ K + (1 − cos θ) K²`,
    `K = skew(axis)` (Rodrigues with a known unit axis: exact and smooth for every angle, no
    series branch as in `rotation_exp`)."""
    k = skew(axis)
    eye = jnp.eye(3, dtype=k.dtype)
    sin, cos = sincos(angle)
    return eye + sin * k + (1.0 - cos) * (k @ k)


def rotation_exp(w: Array) -> Array:
    """Rodrigues: `exp(skew(w)) = I + A(t) W + B(t) W²`, `t = w·w`; smooth at `w = 0`."""
    t = jnp.sum(w * w, axis=-1)[..., None, None]
    k = skew(w)
    eye = jnp.eye(3, dtype=k.dtype)
    a, b = stumpffs(1, 2, t)  # A, B from one evaluation (shared derivatives)
    return eye + a * k + b * (k @ k)


def rigid_exp(w: Array, v: Array) -> tuple[Array, Array]:
    """SE(3) exponential of the twist `(w, v)` (angular first): `(R, V v)` with
    `R = I + A W + B W²` and `V = I + B W + C W²`."""
    t = jnp.sum(w * w, axis=-1)[..., None, None]
    k = skew(w)
    k2 = k @ k
    eye = jnp.eye(3, dtype=k.dtype)
    a, b, c = stumpffs(1, 3, t)  # A, B, C from one evaluation (shared derivatives)
    rot = eye + a * k + b * k2
    vmat = eye + b * k + c * k2
    return rot, (vmat @ v[..., None])[..., 0]


def rmatvec(m: Array, v: Array) -> Array:
    """`mᵀ v` for a `(3, 3)` matrix `m`, batched over the leading axes of `v` `(..., 3)`.

    Written as three column products: XLA fuses them, where tiny batched `dot`s and
    broadcast-reductions are several times slower on CPU.
    """
    return v[..., 0, None] * m[0] + v[..., 1, None] * m[1] + v[..., 2, None] * m[2]


def matvec(m: Array, v: Array) -> Array:
    """`m v` for a `(3, 3)` matrix `m`, batched over the leading axes of `v` (see `rmatvec`)."""
    return v[..., 0, None] * m[:, 0] + v[..., 1, None] * m[:, 1] + v[..., 2, None] * m[:, 2]


def fused_matmul(a: Array, b: Array) -> Array:
    """`a @ b` for a matrix `a` `(m, k)` and a matrix `(k, p)` or vector `(k,)` `b`, as broadcast
    products summed over `k`: elementwise work that XLA:CPU fuses with its neighbours, where each
    small `dot` is a kernel of its own (measured on the articulated passes of one state; under
    `vmap` `unrolled_matmul` and batched `dot`s are the faster, `softrigid._articulated`)."""
    return jnp.sum(a.reshape(a.shape + (1,) * (b.ndim - 1)) * b[None], axis=1)


def unrolled_matmul(a: Array, b: Array) -> Array:
    """`a @ b` for a matrix `a` `(m, k)` and a matrix `(k, p)` or vector `(k,)` `b`, as the sum
    of `k` outer products (column `j` of `a` times row `j` of `b`): elementwise work only, which
    under `vmap` runs as a few loops over the whole batch, where a batched `dot` of small
    matrices is one small matrix product per state (the articulated passes of a batch)."""
    if b.ndim == 1:  # Σ_j a[:, j] b[j]
        return contract(a, b)
    if a.shape[1] == 0:  # nothing to contract
        return jnp.zeros((a.shape[0], b.shape[1]), jnp.result_type(a, b))
    out = a[:, 0:1] * b[0:1]
    for j in range(1, a.shape[1]):
        out = out + a[:, j : j + 1] * b[j : j + 1]
    return out


def matmul(a: Array, b: Array) -> Array:
    """`a b` for `(3, 3)` matrices, written as `matvec`s: elementwise work, never a `dot` (under
    `vmap`, XLA:CPU of jaxlib 0.10 may give a batched 3×3 `dot` a transposed output layout that
    its code emitter rejects with an abort)."""
    return matvec(a, b.T).T


def matmul_rows(a: Array, b: Array) -> Array:
    """`a b` for `(3, 3)` matrices built row by row, `(a b)[i] = Σ_k a[i, k] b[k]`: the products
    and sums of `matmul` in the same order (equal to the bit), but no transpose, so XLA lays
    the result out row-major where `matmul`'s may need a transposing copy (the link poses fed
    to the passes' loops). Measured for the recursion's link poses against `matmul` (one pinned
    core, the two compiled in one process and interleaved, µs per call): 30 revolute joints'
    forward dynamics 54.4 → 52.4 (at B = 1024 per state 5 % less), the 20-body planar CC IID
    70.2 → 68.0, the PCS chains 1–2 % less; used everywhere (the joints' transforms, the
    chain's poses) it made the 30-joint chain slower (76 µs)."""
    out = a[..., :, 0, None] * b[..., 0, None, :] + a[..., :, 1, None] * b[..., 1, None, :]
    return out + a[..., :, 2, None] * b[..., 2, None, :]


def contract(a: Array, x: Array) -> Array:
    """`Σ_j a[..., j] x[..., j]`: a Jacobian `(..., n)` times coordinates `(..., n)` (leading
    axes broadcast), unrolled for small `n` (fusible), a broadcast-sum otherwise."""
    n = x.shape[-1]
    if n == 0:
        return jnp.zeros(jnp.broadcast_shapes(a.shape[:-1], x.shape[:-1]), a.dtype)
    if n > 8:
        return jnp.sum(a * x, -1)
    out = a[..., 0] * x[..., 0]
    for j in range(1, n):
        out = out + a[..., j] * x[..., j]
    return out


def normalize(v: Array) -> Array:
    """`v / |v|` (the caller guarantees `v ≠ 0`)."""
    return v / jnp.sqrt(jnp.sum(v * v, axis=-1, keepdims=True))


def rechart_rotation_vector(phi: Array, phid: Array, *accelerations: Array) -> tuple[Array, ...]:
    """Move a rotation vector `φ` with `|φ| > π` to the equivalent one of norm `≤ π` (the same
    rotation, `exp(skew φ') = exp(skew φ)`: `k` whole turns about `n` taken off), and its rates
    to the new chart:

        φ' = ψ(φ) = φ (1 − 2πk/|φ|) = φ − 2πk n,   n = φ/|φ|,   k = round(|φ| / 2π),
        φ̇' = J φ̇,   J = ∂ψ/∂φ = I − (2πk/|φ|)(I − n nᵀ),
        φ̈' = J φ̈ + (∂J/∂φ · φ̇) φ̇         (each of `accelerations`; `k` is locally constant).

    `(φ, φ̇, φ̈…)` are returned unchanged when `|φ| ≤ π`. The chart map is evaluated at a safe
    point (`|φ| = 2π`, `k = 1`) in the unselected branch, so values and derivatives stay finite
    at `φ = 0` (double `where`)."""
    t = jnp.sum(phi * phi)
    flip = t > math.pi**2
    safe = jnp.where(flip, phi, jnp.zeros_like(phi).at[0].set(2 * math.pi))
    turns = jax.lax.stop_gradient(jnp.round(jnp.sqrt(jnp.sum(safe * safe)) / (2 * math.pi)))

    def chart(x: Array) -> Array:
        # ψ(φ) = φ (1 − 2πk/|φ|)
        return x * (1 - 2 * math.pi * turns / jnp.sqrt(jnp.sum(x * x)))

    def rate(x: Array) -> Array:
        return jax.jvp(chart, (x,), (phid,))[1]

    new_phi, new_phid = jax.jvp(chart, (safe,), (phid,))
    # φ̈' = J φ̈ + (∂J/∂φ · φ̇) φ̇: the tangent of φ̇' = J(φ) φ̇ along φ̇ at fixed φ̇, plus J φ̈
    curvature = jax.jvp(rate, (safe,), (phid,))[1]
    new_acc = [jax.jvp(chart, (safe,), (a,))[1] + curvature for a in accelerations]
    olds = (phi, phid, *accelerations)
    news = (new_phi, new_phid, *new_acc)
    return tuple(jnp.where(flip, new, old) for new, old in zip(news, olds))
