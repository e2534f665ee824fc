"""Joints charted by the rotation vector: the ball joint `Spherical` and the floating base
`Free` (exponential coordinates, re-charted away from `|φ| = 2π`; see `softrigid.joints`)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax import Array

from .._math import rechart_rotation_vector, rotation_exp
from .._module import module, static
from ._base import Joint, SpringJoint, set_origin

__all__ = ["Free", "Spherical"]


@module
class Spherical(SpringJoint):
    """A ball joint: `q = φ` (3), the rotation vector, `R = exp(skew(φ))`, `t = 0`.

    Chart (the rotation part of `Free`): exponential coordinates, smooth everywhere with the
    pose exact for any `φ` (and at `φ = 0`); the map from `φ̇` to the angular velocity,
    `ω = J_r(φ) φ̇`, is singular at `|φ| = 2π k` (k ≥ 1). `rechart` moves `|φ| > π` to
    `φ (1 − 2πk/|φ|)`, `k = round(|φ|/2π)` (`softrigid._math.rechart_rotation_vector`);
    `simulate` does it after every step, so `|φ| ≤ π` up to one step's rotation; a joint with
    a spring or damper (defined in the chart) is never re-charted. A generalized force on `φ`
    (a motor, a controller) acts in the chart: give a physical torque `τ` as `J_r(φ)ᵀ τ`.

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
    `rechart` moves `|φ| > π` to `φ (1 − 2πk/|φ|)` (as `Spherical`; `p` is unchanged).
    """

    origin_rotation: Array
    origin_translation: Array
    n_q: int = static(default=6, init=False)

    def __init__(self, origin: Any = None) -> None:
        object.__setattr__(self, "n_q", 6)
        set_origin(self, origin, "Free")

    def motion(self, q: Array) -> tuple[Array, Array]:
        return rotation_exp(q[3:6]), q[0:3]

    def rechart(self, q: Array, qd: Array, *accelerations: Array) -> tuple[Array, ...]:
        rates = (q, qd, *accelerations)
        rotated = rechart_rotation_vector(*(x[3:6] for x in rates))
        return tuple(jnp.concatenate([x[0:3], r]) for x, r in zip(rates, rotated))
