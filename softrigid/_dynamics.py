"""Public dynamics algorithms: `ν = M(q) q̈ + c(q, q̇) + g(q) + s(q, q̇) − Q_ext` (seed 003, eq. 1).

Every function is pure, takes the robot first, works under `jax.jit`, `jax.vmap` and `jax.grad`
(also with respect to the robot's physical parameters), and checks its inputs: shapes at trace
time, finiteness whenever the values are concrete. For repeated calls, close over the robot:
`id_fn = jax.jit(functools.partial(softrigid.inverse_dynamics, robot))`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

from . import _recursion as rec
from ._bodies import SoftBody
from ._checks import check_state
from ._loads import check_loads
from ._model import Link, Robot

__all__ = [
    "damping_force",
    "dissipation",
    "elastic_energy",
    "elastic_force",
    "forward_dynamics",
    "forward_kinematics",
    "gravity_force",
    "inertial_inverse_dynamics",
    "internal_force",
    "inverse_dynamics",
    "kinetic_energy",
    "mass_inertial_inverse_dynamics",
    "mass_inverse_dynamics",
    "mass_matrix",
    "material_points",
    "potential_energy",
    "world_points",
]


def _robot(robot: Any) -> Robot:
    if not isinstance(robot, Robot):
        raise TypeError(f"expected a softrigid.Robot, got {type(robot).__name__}")
    return robot


def _states(robot: Robot, **arrays: Any) -> list[Array]:
    out = []
    for name, value in arrays.items():
        arr = check_state(name, value, robot.n_q)
        if arr.ndim != 1:
            raise ValueError(
                f"{name} must have shape ({robot.n_q},); for a batch of states use jax.vmap, got {arr.shape}"
            )
        out.append(arr)
    return out


def _mass_from_position(robot: Robot, pos: tuple[rec.LinkPosition, ...]) -> Array:
    # M e_j = IID(q, 0, e_j) with a_0 = 0 (eq. 48): n unit accelerations through the same passes,
    # sharing the position-level terms.
    vel0 = rec.zero_velocity(robot, pos)
    zero = jnp.zeros(3, dtype=pos[0].rot.dtype)
    eye = jnp.eye(robot.n_q, dtype=pos[0].rot.dtype)
    columns = jax.vmap(lambda e: rec.inertial_forces(robot, pos, vel0, e, zero))(eye)
    return columns.T


def _link_energy(link: Link, q: Array) -> Array:
    nj = link.joint.n_q
    energy = link.joint.energy(q[:nj])
    body = link.body
    if isinstance(body, SoftBody) and body.material is not None:
        energy = energy + body.material.energy(body, q[nj:])
    return energy


def _link_dissipation(link: Link, q: Array, qd: Array) -> Array:
    nj = link.joint.n_q
    value = link.joint.dissipation(qd[:nj])
    body = link.body
    if isinstance(body, SoftBody) and body.material is not None:
        value = value + body.material.dissipation(body, q[nj:], qd[nj:])
    return value


def _sum_over_links(robot: Robot, fn: Any, *xs: Array) -> Array:
    total = jnp.zeros(())
    for g in rec.groups(robot):
        links = rec.stacked_links(robot, g)
        parts = [rec.group_coordinates(g, x) for x in xs]
        total = total + jnp.sum(jax.vmap(fn)(links, *parts))
    return total


def _elastic_energy(robot: Robot, q: Array) -> Array:
    return _sum_over_links(robot, _link_energy, q)


def _dissipation(robot: Robot, q: Array, qd: Array) -> Array:
    return _sum_over_links(robot, _link_dissipation, q, qd)


def _internal_force(robot: Robot, q: Array, qd: Array) -> Array:
    # s = ∂U/∂q + ∂R/∂q̇
    return jax.grad(_elastic_energy, argnums=1)(robot, q) + jax.grad(_dissipation, argnums=2)(
        robot, q, qd
    )


def _iid(robot: Robot, q: Array, qd: Array, qdd: Array) -> Array:
    pos = rec.position_level(robot, q)
    vel = rec.velocity_level(robot, pos, q, qd)
    return rec.inertial_forces(robot, pos, vel, qdd, jnp.zeros(3, dtype=q.dtype))


def _id(robot: Robot, q: Array, qd: Array, qdd: Array, loads: tuple) -> tuple[Array, Any]:
    pos = rec.position_level(robot, q)
    vel = rec.velocity_level(robot, pos, q, qd)
    ext = rec.loads_contribution(robot, q, pos, loads) if loads else None
    # Gravity as a base acceleration: a_0 = −gravity
    nu = rec.inertial_forces(robot, pos, vel, qdd, -robot.gravity.astype(q.dtype), ext)
    return nu + _internal_force(robot, q, qd), pos


@jax.jit
def _iid_jit(robot: Robot, q: Array, qd: Array, qdd: Array) -> Array:
    return _iid(robot, q, qd, qdd)


@jax.jit
def _id_jit(robot: Robot, q: Array, qd: Array, qdd: Array, loads: tuple) -> Array:
    return _id(robot, q, qd, qdd, loads)[0]


@jax.jit
def _miid_jit(robot: Robot, q: Array, qd: Array, qdd: Array) -> tuple[Array, Array]:
    pos = rec.position_level(robot, q)
    vel = rec.velocity_level(robot, pos, q, qd)
    iid = rec.inertial_forces(robot, pos, vel, qdd, jnp.zeros(3, dtype=q.dtype))
    return iid, _mass_from_position(robot, pos)


@jax.jit
def _mid_jit(robot: Robot, q: Array, qd: Array, qdd: Array, loads: tuple) -> tuple[Array, Array]:
    nu, pos = _id(robot, q, qd, qdd, loads)
    return nu, _mass_from_position(robot, pos)


@jax.jit
def _dalembert_jit(robot: Robot, q: Array, qd: Array, qdd: Array, a0: Array) -> rec.Wrenches:
    pos = rec.position_level(robot, q)
    return rec.dalembert(robot, pos, rec.velocity_level(robot, pos, q, qd), qdd, a0)


def dalembert_wrenches(
    robot: Robot, q: Array, qd: Array, qdd: Array, gravity: bool = False
) -> tuple[Array, Array, tuple[Array, ...]]:
    """The D'Alembert (inertial) resultants of every body, the intermediate terms of the
    recursion (`algorithm.md`), in each body's distal frame `S_i`:

        F*_i = −Σ m_k acc_k,  T*_i = −Σ m_k p_k × acc_k (about the origin of S_i),
        π*_i = −Σ m_k J_kᵀ acc_k.

    Args:
        robot, q, qd, qdd: as `inverse_dynamics`.
        gravity: include gravity as the base acceleration `a_0 = −gravity` (the ID
            convention); default `False` (IID).

    Returns:
        `(F* (N, 3), T* (N, 3), π*)` with `π*` a tuple of one `(n_Bi,)` vector per link.
    """
    robot = _robot(robot)
    q, qd, qdd = _states(robot, q=q, qd=qd, qdd=qdd)
    a0 = -robot.gravity.astype(q.dtype) if gravity else jnp.zeros(3, q.dtype)
    force, moment, gen = _dalembert_jit(robot, q, qd, qdd, a0)
    per_link = tuple(pi for g, block in zip(rec.groups(robot), gen) for pi in block)
    return force, moment, per_link


def inertial_inverse_dynamics(robot: Robot, q: Array, qd: Array, qdd: Array) -> Array:
    """Inertial inverse dynamics (IID, Algorithm 1): `M(q) q̈ + c(q, q̇)`.

    Args:
        robot: the robot.
        q, qd, qdd: `(n_q,)` configuration, velocity and acceleration.

    Returns:
        `(n_q,)` generalized inertial forces.
    """
    robot = _robot(robot)
    q, qd, qdd = _states(robot, q=q, qd=qd, qdd=qdd)
    return _iid_jit(robot, q, qd, qdd)


def inverse_dynamics(
    robot: Robot,
    q: Array,
    qd: Array,
    qdd: Array,
    loads: Any = None,
    *,
    actuators: Any = None,
    u: Array | None = None,
) -> Array:
    """Inverse dynamics (ID, Algorithm 2): `ν = M q̈ + c + g + s − Q_ext`.

    Gravity enters as the base acceleration `a_0 = −gravity`; `s = ∂U/∂q + ∂R/∂q̇` collects the
    bodies' elastic and damping forces and the joint springs and dampers. With `actuators` and
    their inputs `u` it returns the residual `ν − A(q) u`: the generalized force still needed
    on top of the actuators (zero exactly when `u` produces the motion).

    Args:
        robot: the robot.
        q, qd, qdd: `(n_q,)` configuration, velocity and acceleration.
        loads: optional external loads, a `PointLoad`, a `Wrench` or a sequence of them.
        actuators: optional `softrigid.actuators.Actuator` or sequence of them (with `u`).
        u: `(m,)` actuator inputs in the order of `actuators` (tensions, pressures, torques).

    Returns:
        `(n_q,)` generalized actuation force `ν` (or the residual `ν − A(q) u`).
    """
    robot = _robot(robot)
    q, qd, qdd = _states(robot, q=q, qd=qd, qdd=qdd)
    nu = _id_jit(robot, q, qd, qdd, check_loads(robot, loads))
    if actuators is None and u is None:
        return nu
    if actuators is None or u is None:
        raise ValueError("inverse_dynamics: give both actuators and u, or neither")
    from .actuators import actuation_force  # a lazy import: actuators builds on this module

    return nu - actuation_force(robot, actuators, q, u)


def mass_inertial_inverse_dynamics(
    robot: Robot, q: Array, qd: Array, qdd: Array
) -> tuple[Array, Array]:
    """MIID: `(M q̈ + c, M)` from one evaluation of the position-level terms.

    Returns:
        `(n_q,)` inertial forces and the `(n_q, n_q)` mass matrix.
    """
    robot = _robot(robot)
    q, qd, qdd = _states(robot, q=q, qd=qd, qdd=qdd)
    return _miid_jit(robot, q, qd, qdd)


def mass_inverse_dynamics(
    robot: Robot, q: Array, qd: Array, qdd: Array, loads: Any = None
) -> tuple[Array, Array]:
    """MID: `(ν, M)` with `ν` as `inverse_dynamics`, from one evaluation of the position level."""
    robot = _robot(robot)
    q, qd, qdd = _states(robot, q=q, qd=qd, qdd=qdd)
    return _mid_jit(robot, q, qd, qdd, check_loads(robot, loads))


@jax.jit
def _mass_jit(robot: Robot, q: Array) -> Array:
    return _mass_from_position(robot, rec.position_level(robot, q))


def mass_matrix(robot: Robot, q: Array) -> Array:
    """The mass matrix `M(q)` `(n_q, n_q)`, `M = ∂IID(q, 0, q̈)/∂q̈` (eq. 48), symmetric
    positive definite."""
    robot = _robot(robot)
    (q,) = _states(robot, q=q)
    return _mass_jit(robot, q)


@jax.jit
def _gravity_jit(robot: Robot, q: Array) -> Array:
    pos = rec.position_level(robot, q)
    zero = jnp.zeros(robot.n_q, dtype=q.dtype)
    return rec.inertial_forces(
        robot, pos, rec.zero_velocity(robot, pos), zero, -robot.gravity.astype(q.dtype)
    )


def gravity_force(robot: Robot, q: Array) -> Array:
    """`g(q) = ∂V_g/∂q` `(n_q,)`, by the recursion at rest with `a_0 = −gravity`."""
    robot = _robot(robot)
    (q,) = _states(robot, q=q)
    return _gravity_jit(robot, q)


def elastic_force(robot: Robot, q: Array) -> Array:
    """`∂U/∂q` `(n_q,)`: body elasticity (materials) and joint springs."""
    robot = _robot(robot)
    (q,) = _states(robot, q=q)
    return jax.jit(jax.grad(_elastic_energy, argnums=1))(robot, q)


def damping_force(robot: Robot, q: Array, qd: Array) -> Array:
    """`∂R/∂q̇` `(n_q,)`: body damping (materials) and joint dampers."""
    robot = _robot(robot)
    q, qd = _states(robot, q=q, qd=qd)
    return jax.jit(jax.grad(_dissipation, argnums=2))(robot, q, qd)


def internal_force(robot: Robot, q: Array, qd: Array) -> Array:
    """`s(q, q̇) = elastic_force + damping_force` `(n_q,)`."""
    robot = _robot(robot)
    q, qd = _states(robot, q=q, qd=qd)
    return jax.jit(_internal_force)(robot, q, qd)


def elastic_energy(robot: Robot, q: Array) -> Array:
    """`U(q)`: elastic energy of the bodies' materials and joint springs (scalar)."""
    robot = _robot(robot)
    (q,) = _states(robot, q=q)
    return jax.jit(_elastic_energy)(robot, q)


def dissipation(robot: Robot, q: Array, qd: Array) -> Array:
    """Rayleigh dissipation function `R(q, q̇) ≥ 0` of the whole robot (scalar); the damping
    power is `−q̇ᵀ ∂R/∂q̇ = −2R`."""
    robot = _robot(robot)
    q, qd = _states(robot, q=q, qd=qd)
    return jax.jit(_dissipation)(robot, q, qd)


@jax.jit
def _fd_jit(robot: Robot, q: Array, qd: Array, nu: Array, loads: tuple) -> Array:
    zero = jnp.zeros_like(q)
    bias, mass = _mid_jit(robot, q, qd, zero, loads)
    # q̈ = M⁻¹ (ν − c − g − s + Q_ext) by Cholesky
    factor = jax.scipy.linalg.cho_factor(mass)
    return jax.scipy.linalg.cho_solve(factor, nu - bias)


def forward_dynamics(robot: Robot, q: Array, qd: Array, nu: Array, loads: Any = None) -> Array:
    """Forward dynamics `q̈ = M⁻¹ (ν − c − g − s + Q_ext)` `(n_q,)`, with `(c + g + s, M)` from
    MID at `q̈ = 0` and a Cholesky solve."""
    robot = _robot(robot)
    q, qd, nu = _states(robot, q=q, qd=qd, nu=nu)
    return _fd_jit(robot, q, qd, nu, check_loads(robot, loads))


@jax.jit
def _fk_jit(robot: Robot, q: Array) -> tuple[Array, Array]:
    return rec.world_poses(robot, rec.position_level(robot, q))


def forward_kinematics(robot: Robot, q: Array) -> tuple[Array, Array]:
    """World poses of every link's distal frame `S_i`.

    Returns:
        `(R (N, 3, 3), t (N, 3))`: rotation and origin of `S_i` in the base frame.
    """
    robot = _robot(robot)
    (q,) = _states(robot, q=q)
    return _fk_jit(robot, q)


def _proximal_pose(robot: Robot, q: Array, i: int) -> tuple[Array, Array]:
    # T_prox_i = T_0,i−1 · T_J(q_Ji)
    qs = robot.split(q)
    rot, trans = jnp.eye(3, dtype=q.dtype), jnp.zeros(3, dtype=q.dtype)
    for k in range(i + 1):
        link = robot.links[k]
        nj = link.joint.n_q
        rj, tj = link.joint.transform(qs[k][:nj])
        rot, trans = rot @ rj, trans + rot @ tj
        if k < i:
            rb, tb = link.body.distal_pose(qs[k][nj:])
            rot, trans = rot @ rb, trans + rot @ tb
    return rot, trans


def world_points(robot: Robot, q: Array, i: int, points: Array) -> Array:
    """World positions `(M, 3)` of material points `points` `(M, 3)` of the body of link `i`.

    For a soft body the points go through its map `f(x, q_B)`; for a rigid body they are
    coordinates in its proximal frame.
    """
    robot = _robot(robot)
    (q,) = _states(robot, q=q)
    if not isinstance(i, int) or not 0 <= i < robot.n_links:
        raise ValueError(f"link index must be an integer in [0, {robot.n_links}), got {i!r}")
    points = jnp.asarray(points, dtype=q.dtype)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"points must have shape (M, 3), got {points.shape}")
    rot, trans = _proximal_pose(robot, q, i)
    body = robot.links[i].body
    if isinstance(body, SoftBody):
        qb = robot.split(q)[i][robot.links[i].joint.n_q :]
        points = body.kinematics.map_points(points, qb)
    return points @ rot.T + trans


def _mass_points_world(robot: Robot, q: Array) -> list[tuple[Array, Array]]:
    out = []
    qs = robot.split(q)
    for i, link in enumerate(robot.links):
        rot, trans = _proximal_pose(robot, q, i)
        pts, masses = link.body.mass_points(qs[i][link.joint.n_q :])
        out.append((pts @ rot.T + trans, masses))
    return out


def material_points(robot: Robot, q: Array) -> tuple[Array, ...]:
    """World positions of every body's quadrature nodes (`(K_i, 3)` per link; the centre of
    mass `(1, 3)` for a `RigidBody`)."""
    robot = _robot(robot)
    (q,) = _states(robot, q=q)
    return tuple(p for p, _ in _mass_points_world(robot, q))


def _gravity_energy(robot: Robot, q: Array) -> Array:
    # V_g = −Σ_k m_k gravity · p_k^world
    return -sum(jnp.sum(m * (p @ robot.gravity)) for p, m in _mass_points_world(robot, q))


@jax.jit
def _potential_jit(robot: Robot, q: Array) -> Array:
    return _gravity_energy(robot, q) + _elastic_energy(robot, q)


def potential_energy(robot: Robot, q: Array) -> Array:
    """`V(q) = V_gravity + U_elastic` (scalar), gravity by quadrature over all bodies."""
    robot = _robot(robot)
    (q,) = _states(robot, q=q)
    return _potential_jit(robot, q)


@jax.jit
def _kinetic_jit(robot: Robot, q: Array, qd: Array) -> Array:
    pos = rec.position_level(robot, q)
    v, w = rec.velocities(robot, pos, rec.velocity_level(robot, pos, q, qd))
    total = jnp.zeros((), q.dtype)
    for g, p in zip(rec.groups(robot), pos):
        links = rec.stacked_links(robot, g)
        sl = slice(g.start, g.start + g.size)
        qdg = rec.group_coordinates(g, qd)[:, g.n_joint :]
        energies = jax.vmap(
            lambda link, bp, qdb, vi, wi: link.body.kinetic_energy(bp, qdb, vi, wi)
        )(links, p.body, qdg, v[sl], w[sl])
        total = total + jnp.sum(energies)
    return total


def kinetic_energy(robot: Robot, q: Array, qd: Array) -> Array:
    """`T(q, q̇)` (scalar) from the link velocities of the forward pass and each body's
    quadrature (or inertia tensor)."""
    robot = _robot(robot)
    q, qd = _states(robot, q=q, qd=qd)
    return _kinetic_jit(robot, q, qd)
