"""Public dynamics algorithms: `ν = M(q) q̈ + c(q, q̇) + g(q) + s(q, q̇) − Q_ext` (seed 003, eq. 1)
and `ν = A(q) u` for the robot's inputs.

Every function is pure, takes the robot first, works under `jax.jit`, `jax.vmap` and `jax.grad`
(also with respect to the robot's physical parameters), and checks its inputs at the entry
(`softrigid._entry`). `dynamics_terms` evaluates everything a state needs once (`M`, the bias
`c + g + s − Q_ext`, `A(q)`, the frame poses) for forward dynamics, statics, integrators and
controllers.
"""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from . import _recursion as rec
from ._articulated import articulated_accelerations, choose_solver
from ._energy import internal_forces
from ._entry import algorithm
from ._loads import external_loads
from ._model import Robot
from ._reports import check_positive_definite

__all__ = [
    "DynamicsTerms",
    "actuation",
    "actuation_force",
    "actuation_matrix",
    "dalembert_wrenches",
    "dynamics_terms",
    "forward_dynamics",
    "gravity_force",
    "inertial_inverse_dynamics",
    "inverse_dynamics",
    "mass_inertial_inverse_dynamics",
    "mass_inverse_dynamics",
    "mass_matrix",
    "solve_accelerations",
    "terms",
]


def _mass(robot: Robot, pos: rec.LinkPosition) -> Array:
    # M e_j = IID(q, 0, e_j) with a_0 = 0 (eq. 48): n unit accelerations through the same passes,
    # sharing the position-level terms; the passes in each link's frame, whose per-link steps
    # all n columns share (`softrigid._passes`)
    vel0 = rec.zero_velocity(robot, pos)
    zero = jnp.zeros(3, dtype=pos.rot.dtype)
    eye = jnp.eye(robot.n_q, dtype=pos.rot.dtype)

    def column(e: Array) -> Array:
        return rec.inertial_forces(robot, pos, vel0, e, zero, sequential=True)

    return jax.vmap(column)(eye).T


def _nu(robot: Robot, q: Array, qd: Array, qdd: Array, loads: tuple) -> tuple[Array, Any]:
    """`ν = IID(q, q̇, q̈; a_0 = −gravity) − Q_ext + s` and the position level."""
    pos = rec.position_level(robot, q)
    vel = rec.velocity_level(robot, pos, q, qd)
    ext = external_loads(robot, q, pos, loads) if loads else None
    # Gravity as a base acceleration: a_0 = −gravity
    nu = rec.inertial_forces(robot, pos, vel, qdd, -robot.gravity.astype(q.dtype), ext)
    return nu + internal_forces(robot, q, qd), pos


def actuation(robot: Robot, q: Array) -> Array:
    """`A(q)` `(n_q, n_u)` (unchecked core): the actuators' columns, or `I` without actuators."""
    if not robot.actuators:
        return jnp.eye(robot.n_q, dtype=q.dtype)
    # consecutive actuators of one class together (`Actuator.group_columns`)
    groups = itertools.groupby(robot.actuators, type)
    return jnp.concatenate([kind.group_columns(robot, q, list(g)) for kind, g in groups], axis=1)


def generalized_input(robot: Robot, q: Array, u: Array) -> Array:
    """`ν = A(q) u` (unchecked core): `u` itself for a robot without actuators (`A = I`; XLA
    does not simplify a product with an identity it builds, an `n_q × n_q` kernel and a `dot`
    per call)."""
    return actuation(robot, q) @ u if robot.actuators else u


@algorithm()
def inertial_inverse_dynamics(robot: Robot, q: Array, qd: Array, qdd: Array) -> Array:
    """Inertial inverse dynamics (IID, Algorithm 1): `M(q) q̈ + c(q, q̇)` `(n_q,)`.

    Args:
        robot: the robot.
        q, qd, qdd: `(n_q,)` configuration, velocity and acceleration.
    """
    pos = rec.position_level(robot, q)
    vel = rec.velocity_level(robot, pos, q, qd)
    return rec.inertial_forces(robot, pos, vel, qdd, jnp.zeros(3, dtype=q.dtype))


@algorithm()
def inverse_dynamics(robot: Robot, q: Array, qd: Array, qdd: Array, loads: Any = None) -> Array:
    """Inverse dynamics (ID, Algorithm 2): `ν = M q̈ + c + g + s − Q_ext` `(n_q,)`.

    Gravity enters as the base acceleration `a_0 = −gravity`; `s = ∂U/∂q + ∂R/∂q̇` collects the
    bodies' elastic and damping forces and the joint springs and dampers. `ν` is the generalized
    force that produces the motion; the inputs of an actuated robot that produce it solve
    `A(q) u = ν` (`actuation_matrix`).

    Args:
        robot: the robot.
        q, qd, qdd: `(n_q,)` configuration, velocity and acceleration.
        loads: optional external loads, a `PointLoad`, a `Wrench` or a sequence of them.
    """
    return _nu(robot, q, qd, qdd, loads)[0]


@algorithm()
def mass_inertial_inverse_dynamics(
    robot: Robot, q: Array, qd: Array, qdd: Array
) -> tuple[Array, Array]:
    """MIID: `(M q̈ + c, M)` from one evaluation of the position-level terms."""
    pos = rec.position_level(robot, q)
    vel = rec.velocity_level(robot, pos, q, qd)
    iid = rec.inertial_forces(robot, pos, vel, qdd, jnp.zeros(3, dtype=q.dtype))
    return iid, _mass(robot, pos)


@algorithm()
def mass_inverse_dynamics(
    robot: Robot, q: Array, qd: Array, qdd: Array, loads: Any = None
) -> tuple[Array, Array]:
    """MID: `(ν, M)` with `ν` as `inverse_dynamics`, from one evaluation of the position level."""
    nu, pos = _nu(robot, q, qd, qdd, loads)
    return nu, _mass(robot, pos)


@algorithm()
def mass_matrix(robot: Robot, q: Array) -> Array:
    """The mass matrix `M(q)` `(n_q, n_q)`, `M = ∂IID(q, 0, q̈)/∂q̈` (eq. 48), symmetric
    positive definite."""
    return _mass(robot, rec.position_level(robot, q))


def _gravity(robot: Robot, pos: rec.LinkPosition) -> Array:
    # g(q) = IID(q, 0, 0) with a_0 = −gravity
    zero = jnp.zeros(robot.n_q, dtype=pos.rot.dtype)
    vel0 = rec.zero_velocity(robot, pos)
    return rec.inertial_forces(robot, pos, vel0, zero, -robot.gravity.astype(zero.dtype))


@algorithm()
def gravity_force(robot: Robot, q: Array) -> Array:
    """`g(q) = ∂V_g/∂q` `(n_q,)`, by the recursion at rest with `a_0 = −gravity`."""
    return _gravity(robot, rec.position_level(robot, q))


@algorithm(static_argnames=("gravity",))
def _dalembert_wrenches(
    robot: Robot, q: Array, qd: Array, qdd: Array, gravity: bool
) -> tuple[Array, Array, tuple[Array, ...]]:
    pos = rec.position_level(robot, q)
    vel = rec.velocity_level(robot, pos, q, qd)
    a0 = -robot.gravity.astype(q.dtype) if gravity else jnp.zeros(3, q.dtype)
    motion = rec.link_motion(robot, pos, vel, qdd, a0, rec.frame_poses(pos.rot, pos.trans))
    wrenches = rec.body_terms(robot, pos, vel, qdd, motion)
    force = jnp.concatenate([w.force for w in wrenches])
    moment = jnp.concatenate([w.moment for w in wrenches])
    return force, moment, tuple(pi for w in wrenches for pi in w.generalized)


def dalembert_wrenches(
    robot: Robot, q: Array, qd: Array, qdd: Array, gravity: bool = False
) -> tuple[Array, Array, tuple[Array, ...]]:
    """The D'Alembert (inertial) resultants of every body, the intermediate terms of the
    recursion (seed 003's Kane recursion; `softrigid._body`), in each body's distal frame
    `S_i`:

        F*_i = −Σ m_k acc_k,  T*_i = −Σ m_k p_k × acc_k (about the origin of S_i),
        π*_i = −Σ m_k J_kᵀ acc_k,

    with `p_k` the node's position relative to `S_i` in `S_i`'s axes, `J_k = ∂p_k/∂q_B` its
    Jacobian with respect to the body's own coordinates in the same axes (not the world
    Jacobian of `world_points`), and `acc_k` the node's absolute acceleration in `S_i`'s axes.

    Args:
        robot, q, qd, qdd: as `inverse_dynamics`.
        gravity: include gravity as the base acceleration `a_0 = −gravity` (the ID
            convention); default `False` (IID).

    Returns:
        `(F* (N, 3), T* (N, 3), π*)` with `π*` a tuple of one `(n_Bi,)` vector per link.
    """
    return _dalembert_wrenches(robot, q, qd, qdd, gravity=gravity)


class DynamicsTerms(NamedTuple):
    """Everything the dynamics of one state `(q, q̇)` needs, evaluated once:

        M(q) q̈ + bias(q, q̇) = A(q) u,    bias = c + g + s − Q_ext.

    Attributes:
        mass_matrix: `M(q)` `(n_q, n_q)`.
        bias: `c + g + s − Q_ext` `(n_q,)`.
        actuation: `A(q)` `(n_q, n_u)` (`I` for a robot without actuators).
        rotation, translation: world poses of the distal frames `(N, 3, 3)`, `(N, 3)`.
        coriolis, gravity, internal: the parts `c(q, q̇)`, `g(q)`, `s(q, q̇)` when requested
            (`parts=True`), else `None`; then `bias = coriolis + gravity + internal − Q_ext`.
    """

    mass_matrix: Array
    bias: Array
    actuation: Array
    rotation: Array
    translation: Array
    coriolis: Array | None = None
    gravity: Array | None = None
    internal: Array | None = None


def terms(
    robot: Robot, q: Array, qd: Array, loads: tuple = (), parts: bool = False
) -> DynamicsTerms:
    """`DynamicsTerms` at `(q, q̇)` (unchecked core, for use inside other compiled code)."""
    pos = rec.position_level(robot, q)
    vel = rec.velocity_level(robot, pos, q, qd)
    ext = external_loads(robot, q, pos, loads) if loads else None
    grav = -robot.gravity.astype(q.dtype)
    inertial = rec.inertial_forces(robot, pos, vel, jnp.zeros_like(q), grav, ext)
    internal = internal_forces(robot, q, qd)
    rot, trans = rec.world_poses(pos)
    out = DynamicsTerms(_mass(robot, pos), inertial + internal, actuation(robot, q), rot, trans)
    if not parts:
        return out
    # c(q, q̇) = IID(q, q̇, 0; a_0 = 0),  g(q) = IID(q, 0, 0; a_0 = −gravity)
    c = rec.inertial_forces(robot, pos, vel, jnp.zeros_like(q), jnp.zeros(3, q.dtype))
    return out._replace(coriolis=c, gravity=_gravity(robot, pos), internal=internal)


@algorithm(static_argnames=("parts",))
def dynamics_terms(
    robot: Robot, q: Array, qd: Array, loads: Any = None, parts: bool = False
) -> DynamicsTerms:
    """One evaluation of the dynamics terms of the state `(q, q̇)`: `M`, the bias
    `c + g + s − Q_ext`, `A(q)` and the world poses of the distal frames (`DynamicsTerms`).

    Forward dynamics, statics, the integrators and the controllers read these instead of
    evaluating the model again: `q̈ = M⁻¹ (A u − bias)`.

    Args:
        robot: the robot.
        q, qd: `(n_q,)` configuration and velocity.
        loads: optional external loads.
        parts: also return `c`, `g` and `s` separately (two more passes).
    """
    return terms(robot, q, qd, loads, parts)


def solve_accelerations(
    robot: Robot,
    t: DynamicsTerms,
    u: Array,
    check: bool = True,
    q: Array | None = None,
) -> Array:
    """`q̈ = M⁻¹ (A u − bias)` by Cholesky (M is symmetric positive definite: checked at run
    time with `check`, naming the coordinate where it is not, or the argument `q` where it is
    not finite; without, a NaN follows)."""
    factor, lower = jax.scipy.linalg.cho_factor(t.mass_matrix)
    if check:
        factor = check_positive_definite("forward_dynamics", robot, t.mass_matrix, factor, q)
    nu = t.actuation @ u if robot.actuators else u
    return jax.scipy.linalg.cho_solve((factor, lower), nu - t.bias)


@algorithm(static_argnames=("solver",))
def _forward_dynamics(
    robot: Robot, q: Array, qd: Array, u: Array, loads: Any = None, solver: str = "cholesky"
) -> Array:
    # both paths check their factorization at run time (M, or every D_i), naming the coordinate
    # (the Cholesky path the argument q where it is not finite)
    if solver == "articulated":
        return articulated_accelerations(robot, q, qd, generalized_input(robot, q, u), loads)
    return solve_accelerations(robot, terms(robot, q, qd, loads), u, q=q)


def forward_dynamics(
    robot: Robot, q: Array, qd: Array, u: Array, loads: Any = None, solver: str = "auto"
) -> Array:
    """Forward dynamics `q̈ = M⁻¹ (A(q) u − c − g − s + Q_ext)` `(n_q,)`.

    Two algorithms give the same `q̈` (to rounding):
    - `"cholesky"`: `M` by the recursion with `n_q` unit accelerations (`dynamics_terms`) and a
      Cholesky solve, `O(N²)` passes and an `O(N³)` factorization;
    - `"articulated"`: the articulated-body recursion for model-agnostic links (`O(N)`,
      `docs/articulated.md`): each link's joint and body coordinates are condensed into a
      6 × 6 articulated inertia seen at its proximal frame, from the tip in, and solved from
      the base out;
    - `"auto"` (default): Cholesky for a robot whose bodies are all rigid with fewer than 5
      coordinates in all (in float64), articulated otherwise: where each was measured the
      faster (`benchmarks/articulated.py`).

    Args:
        robot: the robot.
        q, qd: `(n_q,)` configuration and velocity.
        u: `(n_u,)` the robot's inputs: actuator inputs, or the generalized forces `ν` when
            the robot has no actuators.
        loads: optional external loads.
        solver: `"auto"`, `"articulated"` or `"cholesky"`.
    """
    if isinstance(robot, Robot):
        solver = choose_solver("forward_dynamics", robot, solver)
    return _forward_dynamics(robot, q, qd, u, loads, solver)


@algorithm()
def actuation_matrix(robot: Robot, q: Array) -> Array:
    """The actuation matrix `A(q)` `(n_q, n_u)` of the robot's actuators, `ν = A(q) u` (the
    identity for a robot without actuators). Columns in the order of `robot.actuators`."""
    return actuation(robot, q)


@algorithm()
def actuation_force(robot: Robot, q: Array, u: Array) -> Array:
    """The generalized actuation force `ν = A(q) u` `(n_q,)` for the inputs `u` `(n_u,)`
    (tendon tensions, pressures, joint torques/forces in the order of `robot.actuators`)."""
    return generalized_input(robot, q, u)
