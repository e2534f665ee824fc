"""Energies and the forces derived from them (`forces.md`).

    U(q) = Σ_i U_Ji(q_Ji) + U_Bi(q_Bi)          (joint springs, body materials)
    R(q, q̇) = Σ_i R_Ji(q̇_Ji) + R_Bi(q_Bi, q̇_Bi) (joint dampers, body damping)
    V_g(q) = −Σ_k m_k gravity · p_k^world       (quadrature over all bodies)
    s(q, q̇) = ∂U/∂q + ∂R/∂q̇,   K(q) = ∂²U/∂q²

Internal stresses have zero resultant on a body, so `s` never enters the recursion.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from . import _recursion as rec
from ._body import MassMoments
from ._body import kinetic_energy as _body_kinetic_energy
from ._chain import link_pose, prefix_poses
from ._entry import algorithm
from ._model import Link, Robot

__all__ = [
    "damping_force",
    "dissipation",
    "elastic_energy",
    "elastic_force",
    "gravity_energy",
    "internal_force",
    "kinetic_energy",
    "link_dissipation",
    "link_energy",
    "link_internal_derivatives",
    "link_internal_force",
    "link_stiffness",
    "potential_energy",
    "stiffness",
    "stiffness_matrix",
    "total_dissipation",
    "total_elastic_energy",
]


def link_energy(link: Link, q: Array) -> Array:
    nj = link.joint.n_q
    return link.joint.energy(q[:nj]) + link.body.elastic_energy(q[nj:])


def link_dissipation(link: Link, q: Array, qd: Array) -> Array:
    nj = link.joint.n_q
    return link.joint.dissipation(qd[:nj]) + link.body.dissipation(q[nj:], qd[nj:])


def link_internal_force(link: Link, q: Array, qd: Array) -> Array:
    """`s_i = ∂U_i/∂q_i + ∂R_i/∂q̇_i` `(n_i,)`: the joint's spring and damper, then the body's
    material (`Body.internal_force`)."""
    nj = link.joint.n_q
    joint = _joint_force(link, q[:nj], qd[:nj])
    return jnp.concatenate([joint, link.body.internal_force(q[nj:], qd[nj:])])


def _joint_force(link: Link, qj: Array, qdj: Array) -> Array:
    # s_J = ∂U_J/∂q_J + ∂R_J/∂q̇_J, the joint's spring and damper
    return jax.grad(link.joint.energy)(qj) + jax.grad(link.joint.dissipation)(qdj)


def link_internal_derivatives(link: Link, q: Array, qd: Array) -> tuple[Array, Array, Array]:
    """`(s_i, ∂s_i/∂q_i, ∂s_i/∂q̇_i)`: the joint's `(∇U_J + ∇R_J, ∇²U_J, ∇²R_J)` and the
    body's `Body.internal_force_derivatives`, block-diagonal (neither depends on the other's
    coordinates)."""
    nj = link.joint.n_q
    qj, qdj = q[:nj], qd[:nj]
    joint = _joint_force(link, qj, qdj)
    stiff = jax.hessian(link.joint.energy)(qj).reshape(nj, nj)
    damp = jax.hessian(link.joint.dissipation)(qdj).reshape(nj, nj)
    s, d_q, d_qd = link.body.internal_force_derivatives(q[nj:], qd[nj:])
    block = jax.scipy.linalg.block_diag
    return jnp.concatenate([joint, s]), block(stiff, d_q), block(damp, d_qd)


def _sum(parts: list[Array], dtype: jnp.dtype) -> Array:
    return sum((jnp.sum(p) for p in parts), jnp.zeros((), dtype))


def link_stiffness(link: Link, q: Array) -> Array:
    """`∂²U_i/∂q_i²` `(n_i, n_i)` of one link's joint spring and body material."""
    return jax.jacfwd(jax.grad(lambda x: link_energy(link, x)))(q)


def stiffness(robot: Robot, q: Array) -> Array:
    """`K(q) = ∂²U/∂q²` `(n_q, n_q)` (unchecked core): block diagonal, since
    `U = Σ_i U_i(q_i)` couples no two links' coordinates; each block is the Hessian of one
    link's energy in its own `n_i` coordinates, so the cost grows with `Σ n_i²`, where the
    Hessian of the whole `U` pushes all `n_q` tangents through every body (the 3-segment
    helicoid: 9.7 against 19.2 ms)."""
    k = jnp.zeros((q.shape[0], q.shape[0]), q.dtype)
    for g, blocks in zip(rec.groups(robot), rec.map_groups(robot, link_stiffness, rec.coords(q))):
        if g.n:
            idx = g.q_start + g.n * np.arange(g.size)[:, None] + np.arange(g.n)  # (size, n)
            k = k.at[idx[:, :, None], idx[:, None, :]].set(blocks)
    return k


def total_elastic_energy(robot: Robot, q: Array) -> Array:
    """`U(q)` (unchecked core)."""
    return _sum(rec.map_groups(robot, link_energy, rec.coords(q)), q.dtype)


def total_dissipation(robot: Robot, q: Array, qd: Array) -> Array:
    """`R(q, q̇)` (unchecked core)."""
    return _sum(rec.map_groups(robot, link_dissipation, rec.coords(q), rec.coords(qd)), q.dtype)


def _posed_moment(link: Link, q: Array) -> tuple[tuple[Array, ...], tuple[Array, Array]]:
    """A link's joint transform and relative pose (`_chain.prefix_poses`'s inputs), and its
    body's mass `Σ_k m_k` and first moment `Σ_k m_k f(x_k, q)` `(3,)` in its proximal frame,
    the pose and the nodes from one call of the body's map where it has one
    (`Body.posed_mass_points`)."""
    pose, (points, masses) = link.body.posed_mass_points(q[link.joint.n_q :])
    return link_pose(link, q, pose), (jnp.sum(masses), masses @ points)


def gravity_energy(robot: Robot, q: Array) -> Array:
    """`V_g = −Σ_k m_k gravity · p_k^world` (unchecked core), body by body from the mass `m_i`
    and first moment `c_i` in the proximal frame `(R_i, t_i)`:

        V_g = −gravity · Σ_i (R_i c_i + m_i t_i),

    each group of identical bodies mapped once (`map_groups`)."""
    poses, moments = zip(*rec.map_groups(robot, _posed_moment, rec.coords(q)))
    rot, trans = prefix_poses(*(rec.concat(list(x)) for x in zip(*poses)))[:2]
    mass, first = (rec.concat(list(x)) for x in zip(*moments))
    world = jnp.einsum("nij,nj->i", rot, first) + mass @ trans
    return -world @ robot.gravity.astype(q.dtype)


def internal_forces(robot: Robot, q: Array, qd: Array) -> Array:
    """`s = ∂U/∂q + ∂R/∂q̇` (unchecked core), link by link (`link_internal_force`)."""
    parts = rec.map_groups(robot, link_internal_force, rec.coords(q), rec.coords(qd))
    return jnp.concatenate([p.reshape(-1) for p in parts])


@algorithm()
def elastic_energy(robot: Robot, q: Array) -> Array:
    """`U(q)`: elastic energy of the bodies' materials and joint springs (scalar)."""
    return total_elastic_energy(robot, q)


@algorithm()
def dissipation(robot: Robot, q: Array, qd: Array) -> Array:
    """Rayleigh dissipation function `R(q, q̇) ≥ 0` of the whole robot (scalar); the damping
    power is `−q̇ᵀ ∂R/∂q̇ = −2R`."""
    return total_dissipation(robot, q, qd)


@algorithm()
def elastic_force(robot: Robot, q: Array) -> Array:
    """`∂U/∂q` `(n_q,)`: body elasticity (materials) and joint springs."""
    return jax.grad(total_elastic_energy, argnums=1)(robot, q)


@algorithm()
def damping_force(robot: Robot, q: Array, qd: Array) -> Array:
    """`∂R/∂q̇` `(n_q,)`: body damping (materials) and joint dampers."""
    return jax.grad(total_dissipation, argnums=2)(robot, q, qd)


@algorithm()
def internal_force(robot: Robot, q: Array, qd: Array) -> Array:
    """`s(q, q̇) = ∂U/∂q + ∂R/∂q̇` `(n_q,)` (elastic plus damping forces)."""
    return internal_forces(robot, q, qd)


@algorithm()
def stiffness_matrix(robot: Robot, q: Array) -> Array:
    """Stiffness matrix `K(q) = ∂s_elastic/∂q = ∂²U/∂q²` `(n_q, n_q)`, symmetric.

    `U` is the elastic energy of the bodies' materials and the joint springs; gravity is not
    included (the Jacobian of the full static balance is in `softrigid.statics`). `K` is block
    diagonal, one `n_i × n_i` block per link (no link's energy depends on another's
    coordinates), and is computed block by block.
    """
    return stiffness(robot, q)


@algorithm()
def potential_energy(robot: Robot, q: Array) -> Array:
    """`V(q) = V_gravity + U_elastic` (scalar), gravity by quadrature over all bodies."""
    return gravity_energy(robot, q) + total_elastic_energy(robot, q)


def _link_kinetic(link: Link, m: MassMoments, qd: Array, v: Array, w: Array) -> Array:
    return _body_kinetic_energy(m, qd[link.joint.n_q :], v, w)


@algorithm()
def kinetic_energy(robot: Robot, q: Array, qd: Array) -> Array:
    """`T(q, q̇)` (scalar) from the link velocities of the forward pass and each body's mass
    moments: `T = ½ Σ_k m_k |v_i + ω_i × p_k + J_k q̇_B|²`."""
    pos = rec.position_level(robot, q)
    v, w = rec.link_velocities(pos.rot, pos.trans, *rec.relative_rates(robot, pos, qd))
    energies = rec.map_groups(
        robot, _link_kinetic, rec.grouped(pos.moments), rec.coords(qd), rec.rows(v), rec.rows(w)
    )
    return _sum(energies, q.dtype)
