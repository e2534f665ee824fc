"""The residual of a static equilibrium (`softrigid.statics`):

    r(q) = g(q) + s(q, 0) − Q_ext(q) − A(q) u = ID(q, 0, 0) − A(q) u

(`algorithm.md`, `forces.md`; the seed's eq. 55 has the opposite sign), with the force scale the
Newton loop's convergence test is relative to. `g + s(q, 0)` is evaluated as `∂V/∂q` with
`V = V_gravity + U` (gravity by quadrature over the bodies): the same vector as `ID(q, 0, 0)`
(`g = ∂V_g/∂q`, and `∂R/∂q̇ = 0` at rest for a Rayleigh function), whose Jacobian (a Hessian)
compiles about twice as fast as the derivative of the recursion. External loads enter by
virtual power, `Q_ext = J_pᵀ f` (point loads) and `J_tᵀ F + J_ωᵀ M` (wrenches on distal
frames), as in the recursion; loads given in a distal frame follow it, and so make the
Jacobian non-symmetric, as a moment fixed in the world does on 3D rotations. Its Jacobian (`jacobian`) takes the stiffness block by block and the rest by
forward mode.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

from ._chain import distal_poses, proximal_poses
from ._dynamics import actuation
from ._energy import gravity_energy, stiffness, total_elastic_energy
from ._loads import PointLoad
from ._math import vee
from ._model import Robot

__all__ = ["jacobian", "residual"]


def _distal_frame(robot: Robot, q: Array, i: int) -> tuple[Array, Array]:
    """World pose `(R, t)` of the distal frame `S_i` of link `i`."""
    rot, trans = distal_poses(robot, q)
    return rot[i], trans[i]


def _world_point(robot: Robot, q: Array, i: int, point: Array) -> Array:
    """World position of the material point `point` of the body of link `i`."""
    rot, trans = proximal_poses(robot, q)
    return (
        rot[i] @ robot.links[i].body.map_points(q[robot.body_slice(i)], point[None])[0] + trans[i]
    )


def _load_force(robot: Robot, load: Any, q: Array) -> Array:
    """Generalized force `Q_ext` `(n_q,)` of one external load, by virtual power:
    `J_pᵀ f` for a `PointLoad` at `p(q)`, `J_tᵀ F + J_ωᵀ M` for a `Wrench` on `S_i`, with
    forces given in `S_i` (`frame="distal"`) rotated to the world (follower loads)."""
    rot = _distal_frame(robot, q, load.link)[0]

    def world(v: Array) -> Array:
        return rot @ v if load.frame == "distal" else v

    if isinstance(load, PointLoad):
        jac = jax.jacfwd(lambda x: _world_point(robot, x, load.link, load.point))(q)
        return jac.T @ world(load.force)
    (d_rot, d_t) = jax.jacfwd(lambda x: _distal_frame(robot, x, load.link))(q)
    # J_ω columns: vee(∂R/∂q_j Rᵀ)
    jac_w = vee(jnp.einsum("abj,cb->jac", d_rot, rot)).T
    return d_t.T @ world(load.force) + jac_w.T @ world(load.moment)


def _applied(robot: Robot, loads: tuple, u: Array, q: Array) -> tuple[Array, Array, Array]:
    """`g − Q_ext − A(q) u`, its force scale `max(|g|, |Q_ext|, |A u|)` (entrywise) and
    `A(q)`."""
    # g = ∂V_g/∂q
    r = jax.grad(lambda x: gravity_energy(robot, x))(q)
    scale = jnp.max(jnp.abs(r))
    if loads:
        ext = sum(_load_force(robot, load, q) for load in loads)
        r = r - ext
        scale = jnp.maximum(scale, jnp.max(jnp.abs(ext)))
    # ν = A(q) u
    a = actuation(robot, q)
    nu = a @ u
    return r - nu, jnp.maximum(scale, jnp.max(jnp.abs(nu))), a


def residual(robot: Robot, loads: tuple, u: Array, q: Array) -> tuple[Array, Array]:
    """`r(q) = g + s(q, 0) − Q_ext − A(q) u` and the force scale `F = max(|g|, |s|, |Q_ext|,
    |A u|)` (entrywise maxima)."""
    applied, scale, _ = _applied(robot, loads, u, q)
    # s(q, 0) = ∂U/∂q (a Rayleigh function has ∂R/∂q̇ = 0 at q̇ = 0)
    elastic = jax.grad(lambda x: total_elastic_energy(robot, x))(q)
    return applied + elastic, jnp.maximum(scale, jnp.max(jnp.abs(elastic)))


def jacobian(robot: Robot, loads: tuple, u: Array, q: Array) -> tuple[Array, Array]:
    """`J = ∂r/∂q = ∂²V_g/∂q² + K(q) − ∂Q_ext/∂q − ∂(A(q) u)/∂q` `(n_q, n_q)`, and `A(q)`
    `(n_q, n_u)` from the same pass: the stiffness `K` block by block (`_energy.stiffness`: no
    body's energy sees another's coordinates), the rest by forward mode over the `n_q`
    coordinates."""

    def applied(x: Array) -> tuple[Array, Array]:
        force, _, a = _applied(robot, loads, u, x)
        return force, a

    d_applied, a = jax.jacfwd(applied, has_aux=True)(q)
    return d_applied + stiffness(robot, q), a
