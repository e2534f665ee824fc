"""The LVP primitives `Twist`, `Stretch`, `Shear`, planar `Bend`, `Source` and their base.

Each `Primitive` is a map `h(x, q)` with `det(∂h/∂x) = 1`, driven by modal fields `m(z) · q` of
the axial coordinate `z = x3` of its input point.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ..._checks import as_count
from ..._math import small_dot
from ..._module import module, static
from ..._trig import sincos
from ...quadrature._gauss import gauss_legendre
from .._base import Kinematics
from ._modes import Modes, _as_modes

__all__ = [
    "Bend",
    "ComponentPrimitive",
    "Components",
    "Primitive",
    "Shear",
    "Source",
    "Stretch",
    "Twist",
]

Components = tuple[Array, Array, Array]


class Primitive(Kinematics):
    """An LVP primitive `h(x, q)` with `det(∂h/∂x) = 1`; also usable alone as a body map."""

    def valid(self, x: Array, q: Array) -> Array:
        """True where `(x, q)` is inside the primitive's valid range (boolean scalar)."""
        del x, q
        return jnp.asarray(True)

    def condition(self) -> str:
        """The valid range, in words (for error messages)."""
        return "always valid"

    def needs_hollow(self) -> bool:
        """Whether the map needs a body that leaves out its axis `x1 = x2 = 0` (a `Source`:
        `SoftBody` refuses a volume that contains the axis)."""
        return False

    def axial_span(self, span: Array, q: Array) -> Array | None:
        """Where the input's axial range `[0, span]` goes along the axis, when the primitive maps
        axial slabs to slabs (`None`: unknown, e.g. after a bend)."""
        del span, q
        return None

    def prepare(self, q: Array, span: Array | None) -> Any:
        """Per-body work shared by every point, given the input's axial range `[0, span]`
        (`None`: unknown); passed back to `apply`. Default: nothing."""
        del q, span
        return None

    def apply(self, x: Array, q: Array, prepared: Any) -> Array:
        """`h(x, q)` with the result of `prepare` (default: `h(x, q)`)."""
        del prepared
        return self(x, q)

    def apply_components(self, x: Components, q: Array, prepared: Any) -> Components:
        """`apply` on the point's three coordinates as separate scalars (a composition passes
        them from primitive to primitive, stacking once at the end: per point, no stack and
        index pair between primitives, whose reverse-mode transposes are pads). Default:
        through `apply`."""
        y = self.apply(jnp.stack(x), q, prepared)
        return y[0], y[1], y[2]

    def check(self, points: Array, q: Array) -> None:
        """Raise a `ValueError` when a point of `points` `(K, 3)` is outside the valid range at
        `q` (call outside `jit`), or where `q` is not finite."""
        if not np.all(np.isfinite(np.asarray(q))):
            raise ValueError(f"{type(self).__name__}: q must be finite, got {np.asarray(q)}")
        ok = np.asarray(jax.vmap(self.valid, in_axes=(0, None))(jnp.asarray(points), q))
        if not ok.all():
            k = int(np.argmin(ok))
            raise ValueError(
                f"{type(self).__name__}: configuration outside the valid range at material "
                f"point {np.asarray(points)[k].tolist()}: needs {self.condition()}"
            )


class ComponentPrimitive(Primitive):
    """A primitive written on the point's components: `__call__` and `apply` stack what
    `apply_components` returns, so the subclass implements that one method."""

    def __call__(self, x: Array, q: Array) -> Array:
        return self.apply(x, q, None)

    def apply(self, x: Array, q: Array, prepared: Any) -> Array:
        return jnp.stack(self.apply_components((x[0], x[1], x[2]), q, prepared))


@module
class Twist(ComponentPrimitive):
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

    def axial_span(self, span: Array, q: Array) -> Array:
        return span

    def apply_components(self, x: Components, q: Array, prepared: Any) -> Components:
        x1, x2, z = x
        phi = self.modes.field(z, q)
        s, c = sincos(phi)
        return c * x1 - s * x2, s * x1 + c * x2, z


@module
class Stretch(ComponentPrimitive):
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
        return 1.0 + self.modes.field(z, q)

    def axial_map(self, z: Array, q: Array) -> Array:
        """`Λ(z) = z + (∫_0^z m) · q`: where the section at `z` goes along the axis."""
        return z + self.modes.field_integral(z, q)

    def axial_span(self, span: Array, q: Array) -> Array:
        return self.axial_map(span, q)

    def apply_components(self, x: Components, q: Array, prepared: Any) -> Components:
        x1, x2, z = x
        k = 1.0 / jnp.sqrt(self.stretch(z, q))
        return x1 * k, x2 * k, self.axial_map(z, q)

    def valid(self, x: Array, q: Array) -> Array:
        return self.stretch(x[2], q) > 0

    def condition(self) -> str:
        return "λ(z) = 1 + m(z)·q > 0"


@module
class Shear(ComponentPrimitive):
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

    def axial_span(self, span: Array, q: Array) -> Array:
        return span

    def apply_components(self, x: Components, q: Array, prepared: Any) -> Components:
        x1, x2, z = x
        s1 = x1 if self.modes1 is None else x1 + self.modes1.field(z, q[: self.n1])
        s2 = x2 if self.modes2 is None else x2 + self.modes2.field(z, q[self.n1 :])
        return s1, s2, z


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
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool) or axis not in (1, 2):
            raise ValueError(
                f"Bend: axis must be the integer 1 or 2 (bending about x1 or x2), got {axis!r}"
            )
        axis = int(axis)
        modes = _as_modes("Bend", modes)
        object.__setattr__(self, "modes", modes)
        object.__setattr__(self, "axis", axis)
        object.__setattr__(self, "n_gauss", as_count("Bend: n_gauss", n_gauss))
        object.__setattr__(self, "n_q", modes.n)

    def _local(self, x: Array) -> Array:
        # about x1: (x, y) -> (−y, x) brings it to a bend about x2
        return x if self.axis == 2 else jnp.stack([-x[1], x[0], x[2]])

    def _radicand(self, x: Array, q: Array) -> Array:
        xl = self._local(x)
        return 1.0 - 2.0 * self.modes.field(xl[2], q) * xl[0]

    def __call__(self, x: Array, q: Array) -> Array:
        xl = self._local(x)
        z = xl[2]
        t, w = gauss_legendre(self.n_gauss)
        nodes = z * jnp.asarray(t, dtype=jnp.result_type(z, float))
        # θ at the rule's nodes and at z; r(z) = z Σ w_i (sin θ_i, cos θ_i)
        theta_i = jax.vmap(self.modes.field_integral, in_axes=(0, None))(nodes, q)
        theta = self.modes.field_integral(z, q)
        w = jnp.asarray(w, dtype=theta_i.dtype)
        sin_i, cos_i = sincos(theta_i)
        r1, r3 = z * small_dot(w, sin_i), z * small_dot(w, cos_i)
        kappa = self.modes.field(z, q)
        rho = 2.0 * xl[0] / (1.0 + jnp.sqrt(1.0 - 2.0 * kappa * xl[0]))
        s, c = sincos(theta)
        h = jnp.stack([r1 + rho * c, xl[1], r3 - rho * s])
        return h if self.axis == 2 else jnp.stack([h[1], -h[0], h[2]])

    def valid(self, x: Array, q: Array) -> Array:
        return self._radicand(x, q) > 0

    def condition(self) -> str:
        return "2κ(z) x < 1 on the compressed side of the bend (2|κ|R < 1)"


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

    def axial_span(self, span: Array, q: Array) -> Array:
        return span

    def needs_hollow(self) -> bool:
        return True

    def __call__(self, x: Array, q: Array) -> Array:
        g = self.modes.field(x[2], q)
        r2 = x[0] * x[0] + x[1] * x[1]
        on_axis = r2 == 0
        # double where: the off-axis branch never sees r = 0
        k = jnp.where(on_axis, 1.0, jnp.sqrt(1.0 + g / jnp.where(on_axis, 1.0, r2)))
        return jnp.stack([x[0] * k, x[1] * k, x[2]])

    def injected_volume(self, q: Array, z0: Array, z1: Array) -> Array:
        """`π ∫_{z0}^{z1} g(z) dz`: the change of the volume of a cavity spanning `[z0, z1]`."""
        return jnp.pi * (self.modes.field_integral(z1, q) - self.modes.field_integral(z0, q))

    def valid(self, x: Array, q: Array) -> Array:
        r2 = x[0] * x[0] + x[1] * x[1]
        return (r2 > 0) & (r2 + self.modes.field(x[2], q) > 0)

    def condition(self) -> str:
        return "a material point off the axis (hollow body) with r² + g(z) > 0"
