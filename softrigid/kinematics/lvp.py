"""Locally volume-preserving (LVP) primitives (Xu and Chirikjian, 2023) and their compositions.

Each primitive `h(x, q)` has `det(∂h/∂x) = 1` wherever it is defined, so any composition
`f = h_P ∘ … ∘ h_1` preserves volume locally (the determinant of a composition is the product)
and the body mass is independent of `q`. Every primitive is driven by one or more scalar fields
of the axial coordinate `z = x3` **of its own input point**, each a modal expansion

    field(z) = Σ_j m_j(z) q_j = m(z) · q,

with mode functions `m` given as `Modes` (`Polynomial` in `z/L`, or any callable `z -> (n,)`).
At `q = 0` every primitive is the identity, so the rest configuration is the reference volume.
Coordinates `(x, y, z) = (x1, x2, x3)`; the body axis is `x3 ∈ [0, L]`.

Primitives: `Twist`, `Stretch`, `Shear`, `Bend` (planar), `Bend3D` (on a backbone), `Source`
(cavity of a hollow body). `compose(h_1, …, h_P)` builds one body map (a `Kinematics`) applying
`h_1` first, with the coordinate vectors concatenated (or placed by `coordinates=`).
`helicoid_segment` and `gripper` are the bodies of the seed's Simulations 1 and 2 (its
Tables 4 and 5).

Outside a primitive's valid range (stated in each docstring) the map returns NaN, which the
dynamics propagates; `valid(x, q)` tells where a configuration is admissible (usable under `jit`)
and `check(points, q)` raises a `ValueError` naming the primitive and the condition.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .._math import coef_a, coef_b, coef_c
from .._module import module, static
from ._base import Kinematics
from ._rod import check_length

__all__ = [
    "Bend",
    "Bend3D",
    "Composite",
    "FunctionModes",
    "Modes",
    "Polynomial",
    "Primitive",
    "Shear",
    "Source",
    "Stretch",
    "Twist",
    "compose",
    "gripper",
    "helicoid_segment",
]

# ψ root: the branch ψ³ − ψ = u through ψ(0) = 1 exists for u ≥ U_MIN
U_MIN = -2.0 / np.sqrt(27.0)


def _gauss(order: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights on `[0, 1]`."""
    t, w = np.polynomial.legendre.leggauss(order)
    return 0.5 * (t + 1.0), 0.5 * w


def _check_count(name: str, value: Any) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


# --------------------------------------------------------------------------------------------
# Mode functions


class Modes(abc.ABC):
    """Mode functions `m(z) -> (n,)` of a primitive's field `m(z) · q`.

    `integral(z) = ∫_0^z m(s) ds` (needed by `Stretch`, `Bend` and `Source`) defaults to a
    Gauss–Legendre rule with `n_gauss` nodes on `[0, z]` (exact for polynomials of degree
    `2 n_gauss − 1`).
    """

    n: int
    n_gauss: int = 8

    @abc.abstractmethod
    def __call__(self, z: Array) -> Array:
        """`m(z)` `(n,)`."""

    def integral(self, z: Array) -> Array:
        """`∫_0^z m(s) ds` `(n,)`."""
        t, w = _gauss(self.n_gauss)
        values = jax.vmap(self)(z * jnp.asarray(t, dtype=jnp.result_type(z, float)))
        return z * (jnp.asarray(w, dtype=values.dtype) @ values)


@module
class Polynomial(Modes):
    """Polynomial modes in `s = z / L`: `m_j(z) = Σ_k C[j, k] s^k`, integrals in closed form.

    Args:
        coefficients: `C` `(n, d + 1)` (a list of lists; row `j` is mode `j`, column `k` the
            coefficient of `s^k`).
        length: the scale `L` (default 1).

    Example: `Polynomial([[0, 1, -1]], L)` is the single mode `(z/L)(1 − z/L)`.
    """

    coefficients: Array
    length: Array
    n: int = static()

    def __init__(self, coefficients: Any, length: Any = 1.0) -> None:
        c = jnp.asarray(coefficients, dtype=float)
        if c.ndim != 2 or c.shape[0] < 1 or c.shape[1] < 1:
            raise ValueError(
                f"Polynomial: coefficients must have shape (n_modes, degree + 1), got {c.shape}"
            )
        object.__setattr__(self, "coefficients", c)
        object.__setattr__(self, "length", check_length("Polynomial", length))
        object.__setattr__(self, "n", int(c.shape[0]))

    def _powers(self, s: Array, count: int) -> Array:
        out = [jnp.ones_like(s)]
        for _ in range(1, count):
            out.append(out[-1] * s)
        return jnp.stack(out)

    def __call__(self, z: Array) -> Array:
        s = z / self.length
        return self.coefficients @ self._powers(s, self.coefficients.shape[1])

    def integral(self, z: Array) -> Array:
        # ∫_0^z s^k dz = L s^{k+1} / (k + 1)
        s = z / self.length
        d = self.coefficients.shape[1]
        powers = self._powers(s, d + 1)[1:] / jnp.arange(1, d + 1, dtype=s.dtype)
        return self.length * (self.coefficients @ powers)


@module
class FunctionModes(Modes):
    """Mode functions from a callable `fn(z) -> (n,)` (constants inside it are not traced;
    subclass `Modes` as a `@module` for traced parameters).

    Args:
        fn: the mode functions.
        n_gauss: nodes of the Gauss rule of `integral` (default 8).
        name: shown in error messages (defaults to the function's name).
    """

    fn: Callable[[Array], Array] = static()
    n: int = static()
    n_gauss: int = static()
    name: str = static()

    def __init__(self, fn: Callable[[Array], Array], n_gauss: int = 8, name: str = "") -> None:
        if not callable(fn):
            raise TypeError(f"FunctionModes: fn must be callable, got {type(fn).__name__}")
        name = name or getattr(fn, "__name__", repr(fn))
        out = jax.eval_shape(fn, jax.ShapeDtypeStruct((), jnp.dtype(float)))
        shape = getattr(out, "shape", None)
        if shape is None or len(shape) != 1 or shape[0] < 1:
            raise ValueError(
                f"mode functions {name!r} must return a (n,) vector for a scalar z, got {shape}"
            )
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "n", int(shape[0]))
        object.__setattr__(self, "n_gauss", _check_count("FunctionModes: n_gauss", n_gauss))
        object.__setattr__(self, "name", name)

    def __call__(self, z: Array) -> Array:
        return self.fn(z)


def _as_modes(cls: str, modes: Any) -> Modes:
    if isinstance(modes, Modes):
        return modes
    if callable(modes):
        return FunctionModes(modes)
    raise TypeError(
        f"{cls}: modes must be a lvp.Modes or a callable z -> (n,), got {type(modes).__name__}"
    )


# --------------------------------------------------------------------------------------------
# Primitives


class Primitive(Kinematics):
    """An LVP primitive `h(x, q)` with `det(∂h/∂x) = 1`; also usable alone as a body map."""

    def valid(self, x: Array, q: Array) -> Array:
        """True where `(x, q)` is inside the primitive's valid range (boolean scalar)."""
        del x, q
        return jnp.asarray(True)

    def condition(self) -> str:
        """The valid range, in words (for error messages)."""
        return "always valid"

    def check(self, points: Array, q: Array) -> None:
        """Raise a `ValueError` when a point of `points` `(K, 3)` is outside the valid range at
        `q` (call outside `jit`)."""
        ok = np.asarray(jax.vmap(self.valid, in_axes=(0, None))(jnp.asarray(points), q))
        if not ok.all():
            k = int(np.argmin(ok))
            raise ValueError(
                f"{type(self).__name__}: configuration outside the valid range at material "
                f"point {np.asarray(points)[k].tolist()}: needs {self.condition()}"
            )


@module
class Twist(Primitive):
    """Twist: the section at `z` rotates by `φ(z) = m(z) · q` about `+x3` (counter-clockwise
    seen from `+x3`, `e1` towards `e2`):

        h = (x cos φ − y sin φ,  x sin φ + y cos φ,  z).

    `det = 1` for every `φ`; valid everywhere. `φ(0) = 0` keeps the proximal face fixed.

    Args:
        modes: mode functions of `φ` (`n_q = modes.n`).
    """

    modes: Modes
    n_q: int = static()

    def __init__(self, modes: Any) -> None:
        modes = _as_modes("Twist", modes)
        object.__setattr__(self, "modes", modes)
        object.__setattr__(self, "n_q", modes.n)

    def __call__(self, x: Array, q: Array) -> Array:
        phi = self.modes(x[2]) @ q
        c, s = jnp.cos(phi), jnp.sin(phi)
        return jnp.stack([c * x[0] - s * x[1], s * x[0] + c * x[1], x[2]])


@module
class Stretch(Primitive):
    """Stretch and compression: axial stretch `λ(z) = 1 + m(z) · q`, `Λ(z) = ∫_0^z λ`,

        h = (x / √λ(z),  y / √λ(z),  Λ(z)),

    the section shrinking as the axis stretches (`det = λ^{-1} λ = 1`). `λ = 1` at an end keeps
    that face undeformed. Valid while `λ(z) > 0` (a positive stretch); outside, NaN.

    Args:
        modes: mode functions of `λ − 1` (`n_q = modes.n`); their integrals give `Λ − z`.
    """

    modes: Modes
    n_q: int = static()

    def __init__(self, modes: Any) -> None:
        modes = _as_modes("Stretch", modes)
        object.__setattr__(self, "modes", modes)
        object.__setattr__(self, "n_q", modes.n)

    def stretch(self, z: Array, q: Array) -> Array:
        """`λ(z) = 1 + m(z) · q`."""
        return 1.0 + self.modes(z) @ q

    def axial_map(self, z: Array, q: Array) -> Array:
        """`Λ(z) = z + (∫_0^z m) · q`: where the section at `z` goes along the axis."""
        return z + self.modes.integral(z) @ q

    def __call__(self, x: Array, q: Array) -> Array:
        k = 1.0 / jnp.sqrt(self.stretch(x[2], q))
        return jnp.stack([x[0] * k, x[1] * k, self.axial_map(x[2], q)])

    def valid(self, x: Array, q: Array) -> Array:
        return self.stretch(x[2], q) > 0

    def condition(self) -> str:
        return "λ(z) = 1 + m(z)·q > 0"


@module
class Shear(Primitive):
    """Shear: the section at `z` translates by `(s1(z), s2(z))`, `s_a = m_a(z) · q_a`:

        h = (x + s1(z),  y + s2(z),  z).

    `det = 1`; valid everywhere. Coordinates: those of `s1`, then those of `s2`.

    Args:
        modes1: mode functions of `s1` (along `x1`), or `None`.
        modes2: mode functions of `s2` (along `x2`), or `None`.
    """

    modes1: Modes | None
    modes2: Modes | None
    n1: int = static()
    n_q: int = static()

    def __init__(self, modes1: Any = None, modes2: Any = None) -> None:
        if modes1 is None and modes2 is None:
            raise ValueError("Shear: give modes1 (along x1), modes2 (along x2) or both")
        m1 = None if modes1 is None else _as_modes("Shear", modes1)
        m2 = None if modes2 is None else _as_modes("Shear", modes2)
        n1 = 0 if m1 is None else m1.n
        object.__setattr__(self, "modes1", m1)
        object.__setattr__(self, "modes2", m2)
        object.__setattr__(self, "n1", n1)
        object.__setattr__(self, "n_q", n1 + (0 if m2 is None else m2.n))

    def __call__(self, x: Array, q: Array) -> Array:
        zero = jnp.zeros((), jnp.result_type(x, q))
        s1 = zero if self.modes1 is None else self.modes1(x[2]) @ q[: self.n1]
        s2 = zero if self.modes2 is None else self.modes2(x[2]) @ q[self.n1 :]
        return jnp.stack([x[0] + s1, x[1] + s2, x[2]])


@module
class Bend(Primitive):
    """Planar bend with curvature `κ(z) = m(z) · q` about `x2` (default) or `x1`.

    About `x2` (`axis=2`): with `θ(z) = ∫_0^z κ` (a positive `κ` turns the axis towards `+x1`,
    like the Cosserat `κ2`),

        h = r(z) + ρ n(z) + y e2,   r(z) = ∫_0^z (sin θ, 0, cos θ),   n = (cos θ, 0, −sin θ),
        ρ = 2x / (1 + √(1 − 2κx))          (= (1 − √(1 − 2κx)) / κ, safe at κ = 0),

    which solves `ρ − κρ²/2 = x`, hence `det = ∂ρ/∂x (1 − κρ) = 1`. `r` is integrated by a
    Gauss–Legendre rule of `n_gauss` nodes on `[0, z]` (so `h` stays differentiable; the
    determinant is 1 to the rule's accuracy, rounding for `|θ| ≲ 2` with the default 8 nodes),
    `θ` from the modes' integrals. About `x1` (`axis=1`) the same map is conjugated by the
    quarter turn `(x, y) -> (−y, x)`: a positive `κ` turns the axis towards `−x2` (like the
    Cosserat `κ1`). Valid while `2κx < 1` on the compressed side (`2|κ| R < 1` for a section
    of radius `R`); outside, NaN.

    Args:
        modes: mode functions of `κ` (`n_q = modes.n`).
        axis: 2 (bend in the `x1–x3` plane) or 1 (in the `x2–x3` plane).
        n_gauss: nodes of the rule for `r(z)`.
    """

    modes: Modes
    axis: int = static()
    n_gauss: int = static()
    n_q: int = static()

    def __init__(self, modes: Any, axis: int = 2, n_gauss: int = 8) -> None:
        if axis not in (1, 2):
            raise ValueError(f"Bend: axis must be 1 or 2 (bending about x1 or x2), got {axis!r}")
        modes = _as_modes("Bend", modes)
        object.__setattr__(self, "modes", modes)
        object.__setattr__(self, "axis", axis)
        object.__setattr__(self, "n_gauss", _check_count("Bend: n_gauss", n_gauss))
        object.__setattr__(self, "n_q", modes.n)

    def _local(self, x: Array) -> Array:
        # about x1: (x, y) -> (−y, x) brings it to a bend about x2
        return x if self.axis == 2 else jnp.stack([-x[1], x[0], x[2]])

    def _radicand(self, x: Array, q: Array) -> Array:
        xl = self._local(x)
        return 1.0 - 2.0 * (self.modes(xl[2]) @ q) * xl[0]

    def __call__(self, x: Array, q: Array) -> Array:
        xl = self._local(x)
        z = xl[2]
        t, w = _gauss(self.n_gauss)
        nodes = z * jnp.asarray(t, dtype=jnp.result_type(z, float))
        # θ at the rule's nodes and at z; r(z) = z Σ w_i (sin θ_i, cos θ_i)
        theta_i = jax.vmap(self.modes.integral)(nodes) @ q
        theta = self.modes.integral(z) @ q
        w = jnp.asarray(w, dtype=theta_i.dtype)
        r1, r3 = z * (w @ jnp.sin(theta_i)), z * (w @ jnp.cos(theta_i))
        kappa = self.modes(z) @ q
        rho = 2.0 * xl[0] / (1.0 + jnp.sqrt(1.0 - 2.0 * kappa * xl[0]))
        c, s = jnp.cos(theta), jnp.sin(theta)
        h = jnp.stack([r1 + rho * c, xl[1], r3 - rho * s])
        return h if self.axis == 2 else jnp.stack([h[1], -h[0], h[2]])

    def valid(self, x: Array, q: Array) -> Array:
        return self._radicand(x, q) > 0

    def condition(self) -> str:
        return "2κ(z) x < 1 on the compressed side of the bend (2|κ|R < 1)"


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
        t_nodes, w = _gauss(self.n_gauss)
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


@module
class Source(Primitive):
    """Source (cavity) of a hollow body: the radius `r` of a material point becomes `R` with

        R² = r² + g(z),    g = m(z) · q,     h = (x, y) √(1 + g/r²) ⊕ z,

    so a cavity of radius `r_i` grows to `√(r_i² + g)` and its volume changes by
    `π ∫ g dz` (`injected_volume`), the volume pressure works against; `det = R dR/(r dr) = 1`.
    Only for hollow bodies: valid where `r > 0` and `r² + g > 0`; outside, NaN. Points on the
    axis (`r = 0`, not material in a hollow body) are left in place, so a distal pivot on the
    axis stays on the axis.

    Args:
        modes: mode functions of `g` [m²] (`n_q = modes.n`).
    """

    modes: Modes
    n_q: int = static()

    def __init__(self, modes: Any) -> None:
        modes = _as_modes("Source", modes)
        object.__setattr__(self, "modes", modes)
        object.__setattr__(self, "n_q", modes.n)

    def __call__(self, x: Array, q: Array) -> Array:
        g = self.modes(x[2]) @ q
        r2 = x[0] * x[0] + x[1] * x[1]
        on_axis = r2 == 0
        # double where: the off-axis branch never sees r = 0
        k = jnp.where(on_axis, 1.0, jnp.sqrt(1.0 + g / jnp.where(on_axis, 1.0, r2)))
        return jnp.stack([x[0] * k, x[1] * k, x[2]])

    def injected_volume(self, q: Array, z0: Array, z1: Array) -> Array:
        """`π ∫_{z0}^{z1} g(z) dz`: the change of the volume of a cavity spanning `[z0, z1]`."""
        return jnp.pi * ((self.modes.integral(z1) - self.modes.integral(z0)) @ q)

    def valid(self, x: Array, q: Array) -> Array:
        r2 = x[0] * x[0] + x[1] * x[1]
        return (r2 > 0) & (r2 + self.modes(x[2]) @ q > 0)

    def condition(self) -> str:
        return "a material point off the axis (hollow body) with r² + g(z) > 0"


# --------------------------------------------------------------------------------------------
# Composition


@module
class Composite(Primitive):
    """The composition `f = h_P ∘ … ∘ h_1` of LVP primitives (`h_1` acts first on `x`), one
    body map with `det(∂f/∂x) = 1`. Build it with `compose`.

    Attributes:
        primitives: `(h_1, …, h_P)`.
        index: for each primitive, the positions of its coordinates in the body's `q`.
    """

    primitives: tuple[Primitive, ...]
    index: tuple[tuple[int, ...], ...] = static()
    n_q: int = static()

    def _parts(self, q: Array) -> list[Array]:
        return [q[np.asarray(idx, dtype=int)] for idx in self.index]

    def __call__(self, x: Array, q: Array) -> Array:
        for prim, qp in zip(self.primitives, self._parts(q)):
            x = prim(x, qp)
        return x

    def valid(self, x: Array, q: Array) -> Array:
        ok = jnp.asarray(True)
        for prim, qp in zip(self.primitives, self._parts(q)):
            ok = ok & prim.valid(x, qp)
            x = prim(x, qp)
        return ok

    def check(self, points: Array, q: Array) -> None:
        """Raise a `ValueError` naming the first primitive whose valid range a point of
        `points` `(K, 3)` leaves at `q` (call outside `jit`)."""
        x = jnp.asarray(points)
        for p, (prim, qp) in enumerate(zip(self.primitives, self._parts(jnp.asarray(q)))):
            try:
                prim.check(x, qp)
            except ValueError as err:
                raise ValueError(f"primitive {p} of the composition: {err}") from None
            x = jax.vmap(prim, in_axes=(0, None))(x, qp)

    def cavity_volume(self, q: Array, inner_radius: Any, length: Any) -> Array:
        """Volume of the cavity `{r < inner_radius, 0 ≤ z ≤ length}` (reference coordinates)
        after the map: `π r_i² L + Σ_sources π ∫ g` over the cavity's axial extent at each
        source (moved by the stretches before it). Needs every primitive before the last
        `Source` to be a `Stretch`, `Twist`, `Shear` or `Source` (they map axial slabs to
        slabs); the primitives after it preserve the cavity's volume."""
        sources = [p for p, prim in enumerate(self.primitives) if isinstance(prim, Source)]
        last = sources[-1] if sources else -1
        for prim in self.primitives[:last]:
            if not isinstance(prim, (Stretch, Twist, Shear, Source)):
                raise ValueError(
                    f"cavity_volume: a {type(prim).__name__} acts before a Source; the cavity's "
                    "axial extent is then not a slab"
                )
        ri = jnp.asarray(inner_radius, dtype=float)
        z0, z1 = jnp.zeros((), q.dtype), jnp.asarray(length, dtype=q.dtype)
        volume = jnp.pi * ri * ri * z1
        for prim, qp in zip(self.primitives[: last + 1], self._parts(q)):
            if isinstance(prim, Stretch):
                z0, z1 = prim.axial_map(z0, qp), prim.axial_map(z1, qp)
            elif isinstance(prim, Source):
                volume = volume + prim.injected_volume(qp, z0, z1)
        return volume


def compose(
    *primitives: Primitive, coordinates: Sequence[Sequence[int]] | None = None
) -> Composite:
    """Compose LVP primitives into one body map `f = h_P ∘ … ∘ h_1` (`h_1 = primitives[0]`
    acts first).

    Args:
        *primitives: the primitives (nested compositions are flattened).
        coordinates: optional, for each primitive the positions of its coordinates in the body's
            `q` (a primitive with `n` coordinates takes `n` positions; positions may be shared,
            every position in `0 … n_q − 1` must be used). Default: concatenated in order.

    Returns:
        A `Composite` (a `Kinematics`) with `n_q` coordinates.
    """
    if not primitives:
        raise ValueError("compose: give at least one primitive")
    for p, prim in enumerate(primitives):
        if not isinstance(prim, Primitive):
            raise TypeError(
                f"compose: primitive {p} must be a softrigid.kinematics.lvp primitive, got "
                f"{type(prim).__name__}"
            )
    if coordinates is None:
        index, start = [], 0
        for prim in primitives:
            index.append(tuple(range(start, start + prim.n_q)))
            start += prim.n_q
    else:
        index = [tuple(int(i) for i in idx) for idx in coordinates]
        if len(index) != len(primitives):
            raise ValueError(
                f"compose: coordinates has {len(index)} entries for {len(primitives)} primitives"
            )
        for p, (prim, idx) in enumerate(zip(primitives, index)):
            if len(idx) != prim.n_q:
                raise ValueError(
                    f"compose: primitive {p} ({type(prim).__name__}) has {prim.n_q} coordinates, "
                    f"got positions {idx}"
                )
        used = sorted({i for idx in index for i in idx})
        if used and (used[0] < 0 or used != list(range(used[-1] + 1))):
            raise ValueError(
                f"compose: coordinate positions must cover 0 … n_q − 1 without gaps, got {used}"
            )
    flat, flat_index = [], []
    for prim, idx in zip(primitives, index):
        if isinstance(prim, Composite):
            for inner, inner_idx in zip(prim.primitives, prim.index):
                flat.append(inner)
                flat_index.append(tuple(idx[i] for i in inner_idx))
        else:
            flat.append(prim)
            flat_index.append(idx)
    n_q = 1 + max((i for idx in flat_index for i in idx), default=-1)
    return Composite(tuple(flat), tuple(flat_index), n_q)


# --------------------------------------------------------------------------------------------
# The seed's bodies


def helicoid_segment(length: Any, n_gauss: int = 8) -> Composite:
    """The 8-coordinate body of the seed's Simulation 1 (its Table 4), `s = x3 / L`:

    - `q1`: stretch, `λ − 1 = s (1 − s) q1` (end faces undeformed);
    - `q2, q3`: bending curvature `κ1 = (q2 + x3 q3) / L` (about `x1`);
    - `q4, q5`: bending curvature `κ2 = (q4 + x3 q5) / L` (about `x2`);
    - `q6`: twist, `φ = s q6`;
    - `q7, q8`: shear, `(s1, s2) = s (q7, q8)`.

    Applied as stretch, twist, shear, then one `Bend3D` carrying both curvatures on a common
    backbone (`n_gauss` nodes for its position), so that stretch, twist and shear act on the
    straight body and the bend places it. `f(x, 0) = x`; the distal frame comes from the contact points.
    """
    length = check_length("helicoid_segment", length)
    linear = Polynomial([[0.0, 1.0]], length)
    # κ = q_a / L + q_b x3 / L: modes (1/L, s)
    curvature = Polynomial(
        jnp.stack([jnp.stack([1.0 / length, 0.0]), jnp.array([0.0, 1.0])]), length
    )
    return compose(
        Stretch(Polynomial([[0.0, 1.0, -1.0]], length)),
        Twist(linear),
        Shear(linear, linear),
        Bend3D(curvature, curvature, n_gauss=n_gauss),
        coordinates=((0,), (5,), (6, 7), (1, 2, 3, 4)),
    )


def gripper(length: Any) -> Composite:
    """The 2-coordinate soft gripper of the seed's Simulation 2 (its Table 5), `s = x3 / L`:
    stretch `λ − 1 = s² q1`, then a source `g = s² q2` [m²] on the cavity. Both modes vanish at
    the proximal face and not at the distal one, whose face deforms (the gripper ends the chain).
    Use it on a hollow volume (`softrigid.quadrature.tube`); `cavity_volume(q, r_i, L)` is the
    chamber volume for a pressure actuator."""
    length = check_length("gripper", length)
    square = Polynomial([[0.0, 0.0, 1.0]], length)
    return compose(Stretch(square), Source(square))
