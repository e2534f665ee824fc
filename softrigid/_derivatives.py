"""Derivatives of the inverse dynamics in one call, for implicit integrators, Newton statics and
linearization:

    ν(q, q̇, q̈) = M(q) q̈ + c(q, q̇) + g(q) + s(q, q̇) − Q_ext(q) [− A(q) u],
    returns (ν, M, ∂ν/∂q, ∂ν/∂q̇).

`∂ν/∂q` is forward mode over the recursion (one tangent per coordinate through the position and
velocity levels); `∂ν/∂q̇` is forward mode over the velocity level only, with the position level
of the state computed once and shared (`q̇` enters only the relative velocities, the `q̇`-quadratic
accelerations and the damping); `M` comes from the same position level.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from . import _recursion as rec
from ._ad import value_and_jacfwd
from ._dynamics import _mass, actuation
from ._energy import internal_forces
from ._entry import algorithm
from ._loads import external_loads
from ._model import Robot

__all__ = ["InverseDynamicsDerivatives", "derivatives", "inverse_dynamics_derivatives"]


class InverseDynamicsDerivatives(NamedTuple):
    """`(ν, M, ∂ν/∂q, ∂ν/∂q̇)` at one state (`(n_q,)`, then three `(n_q, n_q)`)."""

    nu: Array
    mass_matrix: Array
    d_q: Array
    d_qd: Array


def _id_and_velocity_jacobian(
    robot: Robot, q: Array, qd: Array, qdd: Array, loads: tuple, u: Array | None
) -> tuple[Array, tuple[Array, Array, Array]]:
    pos = rec.position_level(robot, q)
    ext = external_loads(robot, q, pos, loads) if loads else None
    grav = -robot.gravity.astype(q.dtype)

    def of_qd(x: Array) -> Array:
        # ν at fixed position level: the recursion with the velocity level at q̇ = x, plus s
        vel = rec.velocity_level(robot, pos, q, x)
        return rec.inertial_forces(robot, pos, vel, qdd, grav, ext) + internal_forces(robot, q, x)

    nu, d_qd = value_and_jacfwd(of_qd, qd)
    if u is not None:
        nu = nu - actuation(robot, q) @ u
    return nu, (nu, _mass(robot, pos), d_qd)


def derivatives(
    robot: Robot, q: Array, qd: Array, qdd: Array, loads: tuple = (), u: Array | None = None
) -> InverseDynamicsDerivatives:
    """`(ν, M, ∂ν/∂q, ∂ν/∂q̇)` (unchecked core, for use inside other compiled code, e.g. the
    Newton iterations of the implicit integrators); with `u`, `ν` includes `− A(q) u`."""
    d_q, (nu, mass, d_qd) = jax.jacfwd(
        lambda x: _id_and_velocity_jacobian(robot, x, qd, qdd, loads, u), has_aux=True
    )(q)
    return InverseDynamicsDerivatives(nu, mass, d_q, d_qd)


@algorithm(static_argnames=("actuated",))
def _derivatives(
    robot: Robot, q: Array, qd: Array, qdd: Array, u: Array, loads: Any, actuated: bool
) -> InverseDynamicsDerivatives:
    return derivatives(robot, q, qd, qdd, loads, u if actuated else None)


def inverse_dynamics_derivatives(
    robot: Robot, q: Array, qd: Array, qdd: Array, u: Array | None = None, loads: Any = None
) -> InverseDynamicsDerivatives:
    """`(ν, M, ∂ν/∂q, ∂ν/∂q̇)` at `(q, q̇, q̈)` in one call, sharing the position-level work.

    With the robot's inputs `u`, `ν` is the residual `M q̈ + c + g + s − Q_ext − A(q) u` and
    `∂ν/∂q` includes `−∂(A(q) u)/∂q` (the actuation's configuration dependence, e.g. tendons).

    Args:
        robot: the robot.
        q, qd, qdd: `(n_q,)` configuration, velocity and acceleration.
        u: optional `(n_u,)` inputs.
        loads: optional external loads.

    Returns:
        `InverseDynamicsDerivatives(nu, mass_matrix, d_q, d_qd)`; `∂ν/∂q̈ = M`.
    """
    if u is None:
        n_u = robot.n_u if isinstance(robot, Robot) else 0
        return _derivatives(robot, q, qd, qdd, jnp.zeros(n_u), loads, actuated=False)
    return _derivatives(robot, q, qd, qdd, u, loads, actuated=True)
