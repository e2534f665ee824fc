"""The Euler–Lagrange baseline, by automatic differentiation of `L = T − V`.

    ID_EL(q, q̇, q̈) = d/dt ∂L/∂q̇ − ∂L/∂q + ∂R/∂q̇,
    T = ½ Σ_k m_k |ṗ_k|²  (+ ½ m |ċ|² + ½ ωᵀ I ω for rigid bodies),
    V = −Σ_k m_k gravity · p_k + U_elastic,

with the world positions `p_k` of every quadrature node obtained by chaining the joint and body
transforms. It shares no code with the recursion beyond the kinematics, and its cost grows
quadratically (or worse) with the number of bodies: it is the oracle of the tests and the
comparison of the seed's Simulation 3, slow on purpose. The public functions check their
arguments and outputs as the recursive algorithms do (`softrigid._entry.algorithm`): a
non-finite result raises an error naming the first bad coordinate.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

from ._energy import total_dissipation, total_elastic_energy
from ._entry import algorithm
from ._math import vee
from ._model import Robot
from ._rigid_body import RigidBody
from ._soft_body import SoftBody

__all__ = ["inverse_dynamics", "kinetic_energy", "lagrangian", "mass_matrix", "potential_energy"]


def _world(robot: Robot, q: Array) -> tuple[list, list]:
    """World positions and masses of soft nodes; world CoM, rotation, mass, inertia of rigid
    bodies (other `Body` subclasses are refused: their mass points need not carry their
    inertia)."""
    soft, rigid = [], []
    rot, trans = jnp.eye(3, dtype=q.dtype), jnp.zeros(3, dtype=q.dtype)
    for i, (link, qi) in enumerate(zip(robot.links, robot.split(q))):
        nj = link.joint.n_q
        rj, tj = link.joint.transform(qi[:nj])
        rot, trans = rot @ rj, trans + rot @ tj
        body, qb = link.body, qi[nj:]
        if isinstance(body, RigidBody):
            rigid.append((rot @ body.com + trans, rot, body.mass, body.inertia))
        elif isinstance(body, SoftBody):
            pts = body.kinematics.map_points(body.volume.points, qb, body.volume.n_axial)
            soft.append((pts @ rot.T + trans, body.mass_weights))
        else:  # a Body of the user's: its mass points need not carry its inertia
            raise TypeError(
                f"lagrangian: the Euler–Lagrange baseline integrates RigidBody and SoftBody "
                f"links; link {i} carries a {type(body).__name__}"
            )
        rb, tb = body.distal_pose(qb)
        rot, trans = rot @ rb, trans + rot @ tb
    return soft, rigid


def _kinetic_energy(robot: Robot, q: Array, qd: Array) -> Array:
    """`T(q, q̇)` (unchecked core)."""

    def positions(x: Array) -> tuple:
        soft, rigid = _world(robot, x)
        return [p for p, _ in soft], [(c, r) for c, r, _, _ in rigid]

    (_, rigid_p), (soft_v, rigid_v) = jax.jvp(positions, (q,), (qd,))
    soft, rigid = _world(robot, q)
    total = jnp.zeros((), q.dtype)
    for v, (_, m) in zip(soft_v, soft):
        total = total + 0.5 * jnp.sum(m * jnp.sum(v * v, -1))
    for (c_dot, r_dot), (_, r), (_, _, mass, inertia) in zip(rigid_v, rigid_p, rigid):
        w = vee(r_dot @ r.T)  # ω = vee(Ṙ Rᵀ), world frame
        total = total + 0.5 * mass * jnp.dot(c_dot, c_dot) + 0.5 * jnp.dot(w, r @ inertia @ r.T @ w)
    return total


def _potential_energy(robot: Robot, q: Array) -> Array:
    """`V(q)` (unchecked core)."""
    soft, rigid = _world(robot, q)
    g = robot.gravity
    v = -sum(jnp.sum(m * (p @ g)) for p, m in soft) - sum(
        mass * jnp.dot(c, g) for c, _, mass, _ in rigid
    )
    return v + total_elastic_energy(robot, q)


def _lagrangian(robot: Robot, q: Array, qd: Array) -> Array:
    return _kinetic_energy(robot, q, qd) - _potential_energy(robot, q)


# The public functions: arguments checked at the entry, outputs checked finite at run time
# (`softrigid._entry.algorithm`).


@algorithm()
def kinetic_energy(robot: Robot, q: Array, qd: Array) -> Array:
    """`T(q, q̇)` from the world velocities of every node (and rigid CoM / angular velocity)."""
    return _kinetic_energy(robot, q, qd)


@algorithm()
def potential_energy(robot: Robot, q: Array) -> Array:
    """`V(q) = −Σ m_k gravity · p_k + U_elastic(q)`."""
    return _potential_energy(robot, q)


@algorithm()
def lagrangian(robot: Robot, q: Array, qd: Array) -> Array:
    """`L = T − V`."""
    return _lagrangian(robot, q, qd)


@algorithm()
def inverse_dynamics(robot: Robot, q: Array, qd: Array, qdd: Array) -> Array:
    """`ν = d/dt ∂L/∂q̇ − ∂L/∂q + ∂R/∂q̇` `(n_q,)` by automatic differentiation."""

    def momentum(x: Array, xd: Array) -> Array:
        return jax.grad(_lagrangian, argnums=2)(robot, x, xd)

    # d/dt ∂L/∂q̇ along (q̇, q̈)
    _, dmomentum = jax.jvp(momentum, (q, qd), (qd, qdd))
    return (
        dmomentum
        - jax.grad(_lagrangian, argnums=1)(robot, q, qd)
        + jax.grad(total_dissipation, argnums=2)(robot, q, qd)
    )


@algorithm()
def mass_matrix(robot: Robot, q: Array) -> Array:
    """`M = ∂²T/∂q̇²` `(n_q, n_q)`."""
    return jax.hessian(_kinetic_energy, argnums=2)(robot, q, jnp.zeros_like(q))
