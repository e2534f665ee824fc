"""A rod's integration rows: a soft body whose kinematics has a backbone, on a rule whose nodes
are ordered in axial rows (`QuadratureRule.n_axial`: the nodes of a row share one `x3`), is
integrated row by row.

Its nodes are affine in the section coordinates, `p = a(x3) + A(x3) (x1, x2)` with
`a = R_Bᵀ (r(x3) − t_B)` and `A` the first two columns of `R_Bᵀ rot(x3)`, and so are their
Jacobians; with `u = (p, J e_1, …, J e_n) = z_r (1, x1, x2)` and each row's moment matrix
`M3_r = Σ_{k ∈ r} m_k (1, x1_k, x2_k)(1, x1_k, x2_k)ᵀ` (`m_k = ρ_k w_k`),

    Σ m u = Σ_r z_r M3_r e_1,     Σ m u uᵀ = Σ_r (z_r M3_r) z_rᵀ,

exactly: one backbone evaluation per row instead of a map evaluation per node. The rows may
differ in their sections, weights and densities (a rule rescaled node by node, a density per
node), and the moments are differentiable in every node's weight, density and `(x1, x2)`; a
row's `x3` is that of its first node, as wherever a map reads the rows
(`Kinematics.map_points` with `n_axial`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from ._ad import directional_pair, value_and_jacfwd
from ._body import MassMoments, Pose, VelocityMoments
from ._math import rmatvec, vee

if TYPE_CHECKING:
    from ._soft_body import SoftBody
    from .kinematics._base import Kinematics
    from .quadrature._rule import QuadratureRule

__all__ = [
    "Rows",
    "integrates_by_rows",
    "row_moments_rate",
    "row_position_level",
    "row_velocity_level",
]


class Rows(NamedTuple):
    """A rod's integration rows: `u = z_r (1, x1, x2)` is affine in the section coordinates.

    `z_r = [a_r | A_r]` (3 columns) with the rows' moment matrices
    `M3_r = Σ_{k ∈ r} m_k (1, x1_k, x2_k)(1, x1_k, x2_k)ᵀ`, so that `Σ m u = Σ_r z_r M3_r e_1`
    and `Σ m u uᵀ = Σ_r z_r M3_r z_rᵀ`, exactly; here `u_k = (p_k, J_k e_1, …, J_k e_n)`.
    """

    z: Array  # (R, 3 + 3n, 3)
    m3: Array  # (R, 3, 3)


def integrates_by_rows(kin: Kinematics, volume: QuadratureRule) -> bool:
    """True when `kin` declares a backbone and `volume`'s nodes are ordered in axial rows that
    share one `x3` each (`n_axial`, checked by the rule): then a body is integrated row by
    row, exactly, whatever its sections, weights and density."""
    return kin.has_backbone and volume.n_axial is not None


def _section(body: SoftBody) -> tuple[Array, Array]:
    """The rows' axial coordinates `x3` (R,) and moment matrices
    `M3_r = Σ_{k ∈ r} m_k (1, x1_k, x2_k)(1, x1_k, x2_k)ᵀ` (R, 3, 3)."""
    na = body.volume.n_axial
    rows = body.volume.points.reshape(na, -1, 3)
    m = body.mass_weights.reshape(na, -1)
    e = jnp.stack([jnp.ones_like(rows[..., 0]), rows[..., 0], rows[..., 1]], -1)
    return rows[:, 0, 2], jnp.einsum("rs,rsi,rsj->rij", m, e, e)


def _row_frames(body: SoftBody, x3: Array, q: Array) -> tuple[tuple[Array, Array], Pose]:
    """`(a, A)` of the rows and the distal pose `(R_B, t_B)` they are placed with."""
    # p = R_Bᵀ (r(x3) − t_B) + R_Bᵀ rot(x3) (x1, x2, 0) = a + A (x1, x2)
    rot_b, t_b = body.distal_pose(q)
    r, rot = body.kinematics.backbone(x3, q)
    frames = rmatvec(rot_b, r - t_b), jnp.einsum("ia,rib->rab", rot_b, rot[:, :, :2])
    return frames, (rot_b, t_b)


def _times_m3(z: Array, m3: Array) -> Array:
    """`z_r M3_r` row by row, `z` `(R, a, 3)`, as column products (fusible)."""
    return sum(z[..., i, None] * m3[:, None, i] for i in range(m3.shape[-1]))


def _stack_u(points: Array, jac: Array) -> Array:
    """`u_k = (p_k, J_k e_1, …, J_k e_n)` as rows `(K, 3 + 3n)`."""
    k = points.shape[0]
    return jnp.concatenate([points, jnp.swapaxes(jac, 1, 2).reshape(k, -1)], axis=1)


def row_position_level(body: SoftBody, q: Array) -> tuple[Pose, Pose, MassMoments, Rows]:
    """The distal pose and its Jacobian from the same forward pass as the rows' `z_r`, and the
    mass moments of `u = (p, J e_1, …, J e_n)` from them (module docstring)."""
    x3, m3 = _section(body)
    ((a, big_a), pose), ((da, dbig_a), d_pose) = value_and_jacfwd(
        lambda x: _row_frames(body, x3, x), q
    )
    offset = _stack_u(a, da)
    slope = jnp.concatenate([big_a, jnp.moveaxis(dbig_a, 3, 1).reshape(a.shape[0], -1, 2)], 1)
    rows = Rows(jnp.concatenate([offset[..., None], slope], -1), m3.astype(q.dtype))
    zm = _times_m3(rows.z, rows.m3)
    n = body.n_q
    # Σ m u = Σ_r z_r M3_r e_1,  Σ m u uᵀ = Σ_r (z_r M3_r) z_rᵀ
    first = jnp.sum(zm[..., 0], 0)
    second = jnp.einsum("rai,rbi->ab", zm, rows.z)
    moments = MassMoments(
        mass=jnp.sum(rows.m3[:, 0, 0]),
        first=first[:3],
        second=second[:3, :3],
        jac_first=first[3:].reshape(n, 3),
        jac_second=second[3:, :3].reshape(n, 3, 3),
        jac_jac=second[3:, 3:].reshape(n, 3, n, 3).transpose(0, 2, 1, 3),
    )
    return pose, d_pose, moments, rows


def row_velocity_level(
    body: SoftBody, rows: Rows, q: Array, qd: Array
) -> tuple[Pose, Pose, VelocityMoments]:
    """The distal pose's directional derivatives from the same jvp of a jvp as the rows' `h`,
    and the moments `Σ m h`, `Σ m p × h`, `Σ m J_jᵀ h` of `h = ∂²p/∂q²[q̇, q̇] = [c | C] (1, x1,
    x2)`."""
    x3 = _section(body)[0]
    (_, rate), ((c, big_c), bias) = directional_pair(lambda x: _row_frames(body, x3, x), q, qd)
    hz = jnp.concatenate([c[..., None], big_c], -1)  # h = [c | C] (1, x1, x2)
    return rate, bias, _row_moments(hz, rows)


def _row_moments(hz: Array, rows: Rows) -> VelocityMoments:
    """`Σ m h`, `Σ m p × h`, `Σ m J_jᵀ h` of the rows' `h = [c | C] (1, x1, x2)`, `hz` `(R, 3,
    k)` (linear in `hz`)."""
    z, m3 = rows
    hm = _times_m3(hz, m3)
    # U = Σ m h uᵀ (3, 3 + 3n): Σ m p × h = vee(U_p − U_pᵀ), Σ m J_jᵀ h = tr U_j
    u = jnp.einsum("rai,rbi->ab", hm, z)
    n = (z.shape[1] - 3) // 3
    return VelocityMoments(
        jnp.sum(hm[..., 0], 0),
        2.0 * vee(u[:, :3]),
        jnp.trace(u[:, 3:].reshape(3, n, 3), axis1=0, axis2=2),
    )


def row_moments_rate(body: SoftBody, rows: Rows, d_rows: Rows, qd: Array) -> VelocityMoments:
    """`∂V/∂q̇_j = V(2 ∂²[a | A][q̇, e_j])` (tangent axis last; `Body.velocity_moments_rate`),
    with `∂²[a | A][q̇, e_j] = Σ_k ∂(∂[a | A]/∂q_k)/∂q_j q̇_k` from the tangents of the rows'
    Jacobian columns `z[:, 3 + 3k : 6 + 3k]`."""
    r, _, k, nt = d_rows.z.shape
    d_jac = d_rows.z[:, 3:].reshape(r, body.n_q, 3, k, nt)
    dhz = 2.0 * jnp.einsum("rbikt,b->rikt", d_jac, qd.astype(d_jac.dtype))
    return jax.vmap(lambda hz: _row_moments(hz, rows), in_axes=-1, out_axes=-1)(dhz)
