"""Joints: the placement of a body's proximal frame in the previous body's distal frame.

Every joint has an `origin`, the fixed placement of the joint frame in the previous link's distal
frame (the base frame for the first link), given as `None` (identity), a 4×4 homogeneous matrix or
a `(rotation, translation)` pair. The joint motion acts in the joint frame:
`T_J(q_J) = origin · motion(q_J)`.

Joints and their charts (`q_J`, the motion `(R, t)` in the joint frame; `[a]θ` is the rotation
by `θ` about the unit axis `a`):

| joint | `n_q` | `q_J` | `R` | `t` |
| --- | --- | --- | --- | --- |
| `Fixed` | 0 | — | `I` | `0` |
| `Revolute(a)` | 1 | `θ` | `[a]θ` | `0` |
| `Prismatic(a)` | 1 | `d` | `I` | `d a` |
| `Helical(a, pitch)` | 1 | `θ` | `[a]θ` | `pitch θ / (2π) a` |
| `Cylindrical(a)` | 2 | `(d, θ)` | `[a]θ` | `d a` |
| `Universal(a1, a2)` | 2 | `(θ1, θ2)` | `[a1]θ1 [a2]θ2` | `0` |
| `Planar(n)` | 3 | `(x, y, θ)` | `[n]θ` | `x e1 + y e2` |
| `Spherical` | 3 | `φ` | `exp(skew φ)` | `0` |
| `Free` | 6 | `(p, φ)` | `exp(skew φ)` | `p` |

Every joint except `Fixed` and `Free` may carry linear springs and dampers on its coordinates
(seed 000): `U = ½ Σ_j k_j (q_j − r_j)²`, `R = ½ Σ_j d_j q̇_j²`, which enter `s` of
`ν = M q̈ + c + g + s`. `stiffness`, `damping` and `rest` are scalars (the same for every
coordinate) or `(n_q,)` vectors.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import jax.numpy as jnp
import numpy as np
from jax import Array

from ._checks import as_float, as_placement, as_scalar
from ._math import axis_rotation, rechart_rotation_vector, rotation_exp
from ._module import is_concrete, module, static

__all__ = [
    "Cylindrical",
    "Fixed",
    "Free",
    "Helical",
    "Joint",
    "Planar",
    "Prismatic",
    "Revolute",
    "Spherical",
    "Universal",
]

_ORTHOGONAL_TOL = 1e-8


def _unit_axis(name: str, axis: Any) -> Array:
    """`axis / |axis|` for a `(3,)` axis; a concrete axis is checked finite and non-zero."""
    if is_concrete(axis):
        arr = np.asarray(axis, dtype=float)
        if arr.shape != (3,):
            raise ValueError(f"{name} must have shape (3,), got {arr.shape}")
        norm = float(np.linalg.norm(arr))
        if not np.isfinite(norm) or norm < 1e-12:
            raise ValueError(f"{name} must be a finite non-zero vector, got {arr}")
        return as_float(arr / norm)
    arr = jnp.asarray(axis, dtype=float)
    if arr.shape != (3,):
        raise ValueError(f"{name} must have shape (3,), got {arr.shape}")
    return arr / jnp.linalg.norm(arr)


def _spring_parameter(name: str, value: Any, n: int, *, nonnegative: bool) -> Array:
    """A spring or damper parameter: a scalar or an `(n,)` vector, stored with shape `()` for a
    one-coordinate joint and `(n,)` otherwise; finite (and non-negative) when concrete."""
    arr = as_float(value)
    if arr.shape not in ((), (n,)):
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got {arr.shape}")
    shape = () if n == 1 else (n,)
    if not is_concrete(arr):
        return jnp.broadcast_to(arr.reshape(()) if n == 1 else arr, shape)
    v = np.asarray(arr)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite, got {v}")
    if nonnegative and np.any(v < 0):
        raise ValueError(f"{name} must be non-negative, got {v}")
    return as_float(np.broadcast_to(v.reshape(()) if n == 1 else v, shape))


class Joint(abc.ABC):
    """A joint with `n_q` coordinates; `transform(q_J)` is its pose `(R, t)` in the parent frame."""

    n_q: int
    origin_rotation: Array
    origin_translation: Array

    @abc.abstractmethod
    def motion(self, q: Array) -> tuple[Array, Array]:
        """Pose `(R (3, 3), t (3,))` of the joint's moving frame in the joint frame, for
        `q (n_q,)`."""

    def transform(self, q: Array) -> tuple[Array, Array]:
        """`T_J(q) = origin · motion(q)` as `(R (3, 3), t (3,))`."""
        rot, trans = self.motion(q)
        return self.origin_rotation @ rot, self.origin_translation + self.origin_rotation @ trans

    def energy(self, q: Array) -> Array:
        """Elastic energy of the joint spring (zero for joints without one)."""
        del q
        return jnp.zeros(())

    def dissipation(self, qd: Array) -> Array:
        """Rayleigh dissipation function of the joint damper (zero without one)."""
        del qd
        return jnp.zeros(())

    def rechart(self, q: Array, qd: Array, *accelerations: Array) -> tuple[Array, ...]:
        """`(q, q̇, q̈…)` in another chart of the same pose, away from the chart's singularity
        (`softrigid.simulate` calls it after every step); the identity for joints whose chart
        has none. Rates map with the chart change `ψ`: `q̇' = ψ'(q) q̇`,
        `q̈' = ψ'(q) q̈ + ψ''(q)[q̇, q̇]`."""
        return (q, qd, *accelerations)


def _set_origin(joint: Any, origin: Any, name: str) -> None:
    rot, trans = as_placement(f"{name}: origin", origin)
    object.__setattr__(joint, "origin_rotation", rot)
    object.__setattr__(joint, "origin_translation", trans)


@module
class Fixed(Joint):
    """A rigid connection (no coordinate)."""

    origin_rotation: Array
    origin_translation: Array
    n_q: int = static(default=0, init=False)

    def __init__(self, origin: Any = None) -> None:
        object.__setattr__(self, "n_q", 0)
        _set_origin(self, origin, "Fixed")

    def motion(self, q: Array) -> tuple[Array, Array]:
        del q
        return jnp.eye(3), jnp.zeros(3)


@module
class _SpringJoint(Joint):
    """A joint with a linear spring and damper on each coordinate:
    `U = ½ Σ_j k_j (q_j − r_j)²`, `R = ½ Σ_j d_j q̇_j²` (module docstring)."""

    origin_rotation: Array
    origin_translation: Array
    stiffness: Array
    damping: Array
    rest: Array
    n_q: int = static(default=1, init=False)

    def _set_common(self, n_q: int, origin: Any, stiffness: Any, damping: Any, rest: Any) -> None:
        """Set `n_q`, the origin and the spring and damper parameters (every constructor)."""
        name = type(self).__name__
        object.__setattr__(self, "n_q", n_q)
        _set_origin(self, origin, name)
        for field, value, nonnegative in (
            ("stiffness", stiffness, True),
            ("damping", damping, True),
            ("rest", rest, False),
        ):
            param = _spring_parameter(f"{name}: {field}", value, n_q, nonnegative=nonnegative)
            object.__setattr__(self, field, param)

    def energy(self, q: Array) -> Array:
        # U = ½ Σ_j k_j (q_j − r_j)²
        return 0.5 * jnp.sum(self.stiffness * (q - self.rest) ** 2)

    def dissipation(self, qd: Array) -> Array:
        # R = ½ Σ_j d_j q̇_j²
        return 0.5 * jnp.sum(self.damping * qd**2)


@module
class _AxisJoint(_SpringJoint):
    """A joint along or about one unit `axis`, with `_N_Q` coordinates."""

    axis: Array
    _N_Q: ClassVar[int] = 1

    def __init__(
        self,
        axis: Any,
        origin: Any = None,
        stiffness: Any = 0.0,
        damping: Any = 0.0,
        rest: Any = 0.0,
    ) -> None:
        object.__setattr__(self, "axis", _unit_axis(f"{type(self).__name__}: axis", axis))
        self._set_common(self._N_Q, origin, stiffness, damping, rest)


@module
class Revolute(_AxisJoint):
    """Rotation by `q` about the unit `axis` of the joint frame (right-hand rule).

    Args:
        axis: `(3,)` rotation axis in the joint frame (normalized here).
        origin: placement of the joint frame in the previous distal frame.
        stiffness, damping, rest: optional spring `k ≥ 0` [N·m/rad], damper `d ≥ 0`
            [N·m·s/rad] and spring rest angle.
    """

    def motion(self, q: Array) -> tuple[Array, Array]:
        return axis_rotation(self.axis, q[0]), jnp.zeros(3)


@module
class Prismatic(_AxisJoint):
    """Translation by `q` along the unit `axis` of the joint frame.

    Args: as `Revolute`, with stiffness in N/m and damping in N·s/m.
    """

    def motion(self, q: Array) -> tuple[Array, Array]:
        return jnp.eye(3), self.axis * q[0]


@module
class Helical(_AxisJoint):
    """A screw: rotation by `θ = q` about the unit `axis` and translation `pitch θ / (2π)` along
    it, `R = exp(θ skew(a))`, `t = (pitch θ / 2π) a`.

    Pitch convention: `pitch` is the advance per full turn [m/rev] (a thread's pitch); positive
    is a right-handed screw (positive `θ` advances along `+axis`), negative a left-handed one,
    zero a revolute joint. (Pinocchio's `JointModelHelical` takes the advance per radian,
    `pitch / (2π)`.) The chart is global: no singularity.

    Args:
        axis: `(3,)` screw axis in the joint frame (normalized here).
        pitch: advance per turn [m], finite.
        origin: placement of the joint frame in the previous distal frame.
        stiffness, damping, rest: optional spring `k ≥ 0` [N·m/rad] and damper `d ≥ 0`
            [N·m·s/rad] on `θ`, and the spring's rest angle.
    """

    pitch: Array

    def __init__(
        self,
        axis: Any,
        pitch: Any,
        origin: Any = None,
        stiffness: Any = 0.0,
        damping: Any = 0.0,
        rest: Any = 0.0,
    ) -> None:
        super().__init__(axis, origin, stiffness, damping, rest)
        object.__setattr__(self, "pitch", as_scalar("Helical: pitch", pitch))

    def motion(self, q: Array) -> tuple[Array, Array]:
        # R = exp(θ [a]),  t = pitch θ / (2π) a
        return axis_rotation(self.axis, q[0]), self.axis * (self.pitch * q[0] / (2.0 * np.pi))


@module
class Cylindrical(_AxisJoint):
    """Translation `d` along and rotation `θ` about one unit `axis`: `q = (d, θ)`,
    `R = exp(θ skew(a))`, `t = d a` (the two motions commute). The chart is global: no
    singularity.

    Args:
        axis: `(3,)` axis in the joint frame (normalized here).
        origin: placement of the joint frame in the previous distal frame.
        stiffness, damping, rest: optional springs and dampers on `(d, θ)`, scalars or `(2,)`
            ([N/m, N·m/rad], [N·s/m, N·m·s/rad]) and the rest position `(d_0, θ_0)`.
    """

    _N_Q: ClassVar[int] = 2

    def motion(self, q: Array) -> tuple[Array, Array]:
        return axis_rotation(self.axis, q[1]), self.axis * q[0]


@module
class Universal(_SpringJoint):
    """Two revolute joints with intersecting orthogonal axes (a Hooke joint): rotation `θ1`
    about `axis1`, then `θ2` about `axis2` of the rotated frame, `q = (θ1, θ2)`,
    `R = exp(θ1 skew(a1)) exp(θ2 skew(a2))`, `t = 0`.

    Chart: the angular velocity `ω = θ̇1 exp(θ2 skew(a2))ᵀ a1 + θ̇2 a2` (moving frame) has
    rank 2 for every `q` because `a1 ⊥ a2`: no singularity (the angles are 2π-periodic).

    Args:
        axis1: `(3,)` first axis in the joint frame.
        axis2: `(3,)` second axis, in the frame rotated by `θ1` (at `q = 0`, the joint frame);
            orthogonal to `axis1` (to 1e-8 after normalization).
        origin: placement of the joint frame in the previous distal frame.
        stiffness, damping, rest: optional springs [N·m/rad] and dampers [N·m·s/rad] on
            `(θ1, θ2)`, scalars or `(2,)`, and the rest angles.
    """

    axis1: Array
    axis2: Array

    def __init__(
        self,
        axis1: Any,
        axis2: Any,
        origin: Any = None,
        stiffness: Any = 0.0,
        damping: Any = 0.0,
        rest: Any = 0.0,
    ) -> None:
        a1 = _unit_axis("Universal: axis1", axis1)
        a2 = _unit_axis("Universal: axis2", axis2)
        if is_concrete(a1, a2):
            dot = float(np.dot(np.asarray(a1), np.asarray(a2)))
            if abs(dot) > _ORTHOGONAL_TOL:
                raise ValueError(
                    f"Universal: axis1 and axis2 must be orthogonal, got a1·a2 = {dot:.3g} "
                    "(unit axes)"
                )
        object.__setattr__(self, "axis1", a1)
        object.__setattr__(self, "axis2", a2)
        self._set_common(2, origin, stiffness, damping, rest)

    def motion(self, q: Array) -> tuple[Array, Array]:
        # R = exp(θ1 [a1]) exp(θ2 [a2])
        return axis_rotation(self.axis1, q[0]) @ axis_rotation(self.axis2, q[1]), jnp.zeros(3)


def _plane_axes(normal: Array) -> tuple[Array, Array]:
    """In-plane axes `(e1, e2)` of a unit `normal`: `e1` is the basis vector following (x → y →
    z → x) the largest component of `n`, projected on the plane and normalized; `e2 = n × e1`."""
    concrete = is_concrete(normal)
    xp = np if concrete else jnp
    n = np.asarray(normal) if concrete else normal
    k = (xp.argmax(xp.abs(n)) + 1) % 3
    e = xp.eye(3)[k]
    e1 = e - xp.dot(e, n) * n
    e1 = e1 / xp.linalg.norm(e1)
    e2 = xp.cross(n, e1)
    return (as_float(e1), as_float(e2)) if concrete else (e1, e2)


@module
class Planar(_SpringJoint):
    """Motion in the plane orthogonal to the unit `normal`: translations `(x, y)` along the
    in-plane axes `(e1, e2)`, then the rotation `θ` about the normal, `q = (x, y, θ)`,
    `R = exp(θ skew(n))`, `t = x e1 + y e2`.

    In-plane axes: `e1` is the basis vector that follows the largest component of `n` in the
    cycle x → y → z → x, projected on the plane and normalized, and `e2 = n × e1`, so
    `(e1, e2, n)` is right-handed; normal z gives `(x, y)`, x gives `(y, z)`, y gives `(z, x)`
    (ties between components take the first). They are stored as `tangent1`, `tangent2`.
    The chart is global: no singularity.

    Args:
        normal: `(3,)` plane normal in the joint frame (normalized here).
        origin: placement of the joint frame in the previous distal frame.
        stiffness, damping, rest: optional springs and dampers on `(x, y, θ)`, scalars or
            `(3,)` ([N/m, N/m, N·m/rad] and [N·s/m, N·s/m, N·m·s/rad]), and the rest position.
    """

    normal: Array
    tangent1: Array
    tangent2: Array

    def __init__(
        self,
        normal: Any,
        origin: Any = None,
        stiffness: Any = 0.0,
        damping: Any = 0.0,
        rest: Any = 0.0,
    ) -> None:
        n = _unit_axis("Planar: normal", normal)
        e1, e2 = _plane_axes(n)
        object.__setattr__(self, "normal", n)
        object.__setattr__(self, "tangent1", e1)
        object.__setattr__(self, "tangent2", e2)
        self._set_common(3, origin, stiffness, damping, rest)

    def motion(self, q: Array) -> tuple[Array, Array]:
        # R = exp(θ [n]),  t = x e1 + y e2
        return axis_rotation(self.normal, q[2]), self.tangent1 * q[0] + self.tangent2 * q[1]


@module
class Spherical(_SpringJoint):
    """A ball joint: `q = φ` (3), the rotation vector, `R = exp(skew(φ))`, `t = 0`.

    Chart (the rotation part of `Free`): exponential coordinates, smooth everywhere with the
    pose exact for any `φ` (and at `φ = 0`); the map from `φ̇` to the angular velocity,
    `ω = J_r(φ) φ̇`, is singular at `|φ| = 2π k` (k ≥ 1). `rechart` moves `|φ| > π` to
    `φ (1 − 2π/|φ|)` (`softrigid._math.rechart_rotation_vector`); `simulate` does it after
    every step, so `|φ| ≤ π` up to one step's rotation; a joint with a spring or damper
    (defined in the chart) is never re-charted.

    Args:
        origin: placement of the joint frame in the previous distal frame.
        stiffness, damping, rest: optional springs [N·m/rad] and dampers [N·m·s/rad] on the
            components of `φ`, scalars or `(3,)`, and the rest `φ_0`: `U = ½ Σ k_j (φ_j −
            φ0_j)²`, `R = ½ Σ d_j φ̇_j²`. With a scalar `k` and `φ_0 = 0`, `U = ½ k θ²` is the
            isotropic torsion spring about the rest orientation (`θ = |φ|` the rotation angle);
            otherwise the spring is defined in the chart.
    """

    def __init__(
        self, origin: Any = None, stiffness: Any = 0.0, damping: Any = 0.0, rest: Any = 0.0
    ) -> None:
        self._set_common(3, origin, stiffness, damping, rest)

    def motion(self, q: Array) -> tuple[Array, Array]:
        return rotation_exp(q[0:3]), jnp.zeros(3)

    def rechart(self, q: Array, qd: Array, *accelerations: Array) -> tuple[Array, ...]:
        # the spring and damper are defined in the chart: a sprung or damped joint keeps it
        plain = jnp.all(self.stiffness == 0) & jnp.all(self.damping == 0)
        new = rechart_rotation_vector(q, qd, *accelerations)
        return tuple(jnp.where(plain, n, o) for n, o in zip(new, (q, qd, *accelerations)))


@module
class Free(Joint):
    """A 6-DoF floating base: `q = (p, φ)`, translation `p` (3) in the joint frame, then the
    rotation `R = exp(skew(φ))` by the rotation vector `φ` (3).

    Chart: the exponential coordinates are smooth everywhere and the pose is exact for any
    `φ`; the map from `φ̇` to the angular velocity is singular at `|φ| = 2π k` (k ≥ 1).
    `rechart` moves `|φ| > π` to `φ (1 − 2π/|φ|)` (as `Spherical`; `p` is unchanged).
    """

    origin_rotation: Array
    origin_translation: Array
    n_q: int = static(default=6, init=False)

    def __init__(self, origin: Any = None) -> None:
        object.__setattr__(self, "n_q", 6)
        _set_origin(self, origin, "Free")

    def motion(self, q: Array) -> tuple[Array, Array]:
        return rotation_exp(q[3:6]), q[0:3]

    def rechart(self, q: Array, qd: Array, *accelerations: Array) -> tuple[Array, ...]:
        rates = (q, qd, *accelerations)
        rotated = rechart_rotation_vector(*(x[3:6] for x in rates))
        return tuple(jnp.concatenate([x[0:3], r]) for x, r in zip(rates, rotated))
