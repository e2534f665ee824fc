"""Joints about or along fixed unit axes: `Revolute`, `Prismatic`, `Helical`, `Cylindrical`,
`Universal` and `Planar` (charts in `softrigid.joints`); each rotates by the closed-form axis
rotation `R = I + sin θ K + (1 − cos θ) K²`, so none has a chart singularity."""

from __future__ import annotations

from typing import Any, ClassVar

import jax.numpy as jnp
import numpy as np
from jax import Array

from .._checks import as_float, as_scalar
from .._math import axis_rotation
from .._module import is_concrete, module
from ._base import SpringJoint, unit_axis

__all__ = ["Cylindrical", "Helical", "Planar", "Prismatic", "Revolute", "Universal"]

_ORTHOGONAL_TOL = 1e-8


@module
class _AxisJoint(SpringJoint):
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
        object.__setattr__(self, "axis", unit_axis(f"{type(self).__name__}: axis", axis))
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
class Universal(SpringJoint):
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
        a1 = unit_axis("Universal: axis1", axis1)
        a2 = unit_axis("Universal: axis2", axis2)
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
class Planar(SpringJoint):
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
        n = unit_axis("Planar: normal", normal)
        e1, e2 = _plane_axes(n)
        object.__setattr__(self, "normal", n)
        object.__setattr__(self, "tangent1", e1)
        object.__setattr__(self, "tangent2", e2)
        self._set_common(3, origin, stiffness, damping, rest)

    def motion(self, q: Array) -> tuple[Array, Array]:
        # R = exp(θ [n]),  t = x e1 + y e2
        return axis_rotation(self.normal, q[2]), self.tangent1 * q[0] + self.tangent2 * q[1]
