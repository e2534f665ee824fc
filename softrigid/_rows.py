"""A rod's integration rows: a soft body whose kinematics has a backbone, on a tensor-product
volume (an axial rule times one section rule) of uniform density, is integrated row by row.

Its nodes are affine in the section coordinates, `p = a(x3) + A(x3) (x1, x2)` with
`a = R_Bᵀ (r(x3) − t_B)` and `A` the first two columns of `R_Bᵀ rot(x3)`, and so are their
Jacobians; with `u = (p, J e_1, …, J e_n) = z_r (1, x1, x2)` and the section's normalized moment
matrix `M3 = [[1, s1ᵀ], [s1, S2]]`,

    Σ m u = Σ_r w_r z_r M3 e_1,     Σ m u uᵀ = Σ_r w_r (z_r M3) z_rᵀ,

exactly: one backbone evaluation per row instead of a map evaluation per node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._ad import directional_pair, value_and_jacfwd
from ._body import MassMoments, Pose, VelocityMoments
from ._math import rmatvec, vee
from ._module import is_concrete

if TYPE_CHECKING:
    from ._soft_body import SoftBody
    from .kinematics._base import Kinematics
    from .quadrature._rule import QuadratureRule

__all__ = [
    "Rows",
    "is_rod_on_product_rule",
    "row_moments_rate",
    "row_position_level",
    "row_velocity_level",
]


class Rows(NamedTuple):
    """A rod's integration rows: `u = z_r (1, x1, x2)` is affine in the section coordinates.

    `z_r = [a_r | A_r]` (3 columns) with the section's normalized moment matrix
    `M3 = [[1, s1ᵀ], [s1, S2]]`, so that `Σ m u = Σ_r w_r z_r M3 e_1` and
    `Σ m u uᵀ = Σ_r w_r z_r M3 z_rᵀ`, exactly; here `u_k = (p_k, J_k e_1, …, J_k e_n)`.
    """

    z: Array  # (R, 3 + 3n, k)
    weights: Array  # (R,) masses of the rows / nodes
    m3: Array  # (k, k)


def is_rod_on_product_rule(kin: Kinematics, volume: QuadratureRule, density: Array) -> bool:
    """True when `kin` declares a backbone and `volume` is, concretely, a product of an axial
    rule and one section rule (rows share `x3`, identical sections, weights `w_r w_s`), with a
    uniform density: then a body is integrated row by row, exactly."""
    if (
        not kin.has_backbone
        or volume.n_axial is None
        or density.shape != ()
        or not is_concrete(volume.points, volume.weights)
    ):
        return False
    rows = np.asarray(volume.points).reshape(volume.n_axial, -1, 3)
    w = np.asarray(volume.weights).reshape(volume.n_axial, -1)
    wr, ws = w.sum(1), w[0] / w[0].sum()
    scale = max(1.0, float(np.abs(rows).max()))
    return bool(
        np.allclose(rows[:, :, 2], rows[:, :1, 2], rtol=0, atol=1e-14 * scale)
        and np.allclose(rows[:, :, :2], rows[:1, :, :2], rtol=0, atol=1e-14 * scale)
        and np.allclose(w, wr[:, None] * ws[None, :], rtol=1e-12, atol=0)
    )


def _section(body: SoftBody) -> tuple[Array, Array, Array, Array]:
    """Rows of a tensor-product volume: axial nodes `x3` (R,), row masses (R,), and the
    section's normalized first and second moments `s1 = Σ w_s (x1, x2)`,
    `S2 = Σ w_s (x1, x2)(x1, x2)ᵀ` (`Σ w_s = 1`)."""
    na = body.volume.n_axial
    rows = body.volume.points.reshape(na, -1, 3)
    w = body.volume.weights.reshape(na, -1)
    section = rows[0, :, :2]
    ws = w[0] / jnp.sum(w[0])
    s1 = ws @ section
    s2 = (section * ws[:, None]).T @ section
    return rows[:, 0, 2], body.density * jnp.sum(w, 1), s1, s2


def _row_frames(body: SoftBody, x3: Array, q: Array) -> tuple[tuple[Array, Array], Pose]:
    """`(a, A)` of the rows and the distal pose `(R_B, t_B)` they are placed with."""
    # p = R_Bᵀ (r(x3) − t_B) + R_Bᵀ rot(x3) (x1, x2, 0) = a + A (x1, x2)
    rot_b, t_b = body.distal_pose(q)
    r, rot = body.kinematics.backbone(x3, q)
    frames = rmatvec(rot_b, r - t_b), jnp.einsum("ia,rib->rab", rot_b, rot[:, :, :2])
    return frames, (rot_b, t_b)


def _times_m3(z: Array, m3: Array) -> Array:
    """`z M3` over the last axis (k ≤ 3 columns), as column products (fusible)."""
    k = m3.shape[0]
    return sum(z[..., i, None] * m3[i] for i in range(k))


def _stack_u(points: Array, jac: Array) -> Array:
    """`u_k = (p_k, J_k e_1, …, J_k e_n)` as rows `(K, 3 + 3n)`."""
    k = points.shape[0]
    return jnp.concatenate([points, jnp.swapaxes(jac, 1, 2).reshape(k, -1)], axis=1)


def row_position_level(body: SoftBody, q: Array) -> tuple[Pose, Pose, MassMoments, Rows]:
    """The distal pose and its Jacobian from the same forward pass as the rows' `z_r`, and the
    mass moments of `u = (p, J e_1, …, J e_n)` from them (module docstring)."""
    x3, wr, s1, s2 = _section(body)
    ((a, big_a), pose), ((da, dbig_a), d_pose) = value_and_jacfwd(
        lambda x: _row_frames(body, x3, x), q
    )
    offset = _stack_u(a, da)
    slope = jnp.concatenate([big_a, jnp.moveaxis(dbig_a, 3, 1).reshape(a.shape[0], -1, 2)], 1)
    m3 = jnp.block([[jnp.ones((1, 1), q.dtype), s1[None]], [s1[:, None], s2]])
    rows = Rows(jnp.concatenate([offset[..., None], slope], -1), wr, m3)
    zm = _times_m3(rows.z, rows.m3)
    w, n = rows.weights, body.n_q
    # Σ m u = Σ_r w_r z_r M3 e_1,  Σ m u uᵀ = Σ_r w_r (z_r M3) z_rᵀ
    first = w @ zm[..., 0]
    second = jnp.einsum("rai,rbi->ab", zm * w[:, None, None], rows.z)
    moments = MassMoments(
        mass=jnp.sum(w),
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
    z, w, m3 = rows
    hm = _times_m3(hz, m3) * w[:, None, None]
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
