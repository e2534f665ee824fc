"""Statics: equilibria under actuation, and inverse statics for output targets.

An equilibrium solves (`algorithm.md`, `forces.md`; the seed's eq. 55 has the opposite sign)

    r(q) = g(q) + s(q, 0) − Q_ext(q) − A(q) u = ID(q, 0, 0) − A(q) u = 0

by Newton's method with the exact Jacobian `∂r/∂q` and a backtracking line search on `|r|`.
`g + s(q, 0)` is evaluated as `∂V/∂q` with `V = V_gravity + U` (`softrigid.potential_energy`,
gravity by quadrature over the bodies): the same vector as `ID(q, 0, 0)` (the identity
`g = ∂V_g/∂q`, and `∂R/∂q̇ = 0` at rest for a Rayleigh function), whose Jacobian (a Hessian)
compiles several times faster than the derivative of the recursion. External loads enter by
virtual power, `Q_ext = J_pᵀ f` (point loads) and `J_tᵀ F + J_ωᵀ M` (wrenches on distal
frames), as in the recursion; loads given in a distal frame follow it (and make the Jacobian
non-symmetric). When every force
is conservative (gravity, elasticity, tendons and pressures at fixed `u`, joint motors, loads
fixed in the world) `r = ∂Π/∂q` for a total potential `Π`, the Jacobian is its Hessian, and the
equilibrium is stable exactly when the Jacobian is positive definite (`StaticSolution.stable`).
Newton finds unstable equilibria too (an arm balanced upright): check `stable`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._dynamics import (
    _elastic_energy,
    _gravity_energy,
    _proximal_pose,
    _robot,
    world_points,
)
from ._loads import PointLoad, check_loads
from ._math import vee
from ._model import Robot
from .actuators import check_actuators, n_inputs

__all__ = ["InverseStaticSolution", "StaticSolution", "equilibrium", "inverse_statics"]

_ARMIJO = 1e-4
_MIN_STEP = 2.0**-30
_SINGULAR = 1e-12
_INNER_TOL = 1e-12
_INNER_ITER = 50
_MAX_DAMPING = 1e12


class StaticSolution(NamedTuple):
    """An equilibrium.

    Attributes:
        q: `(n_q,)` equilibrium configuration.
        u: `(m,)` inputs it holds under (`(0,)` without actuators).
        iterations: Newton steps taken.
        residual: final `max |r|` [generalized force units].
        stable: the Jacobian `∂r/∂q` (the stiffness of the static balance) is positive definite.
        history: `max |r|` before each step and at the end (`iterations + 1` values).
    """

    q: Array
    u: Array
    iterations: int
    residual: float
    stable: bool
    history: tuple[float, ...]


class InverseStaticSolution(NamedTuple):
    """Inputs and equilibrium that reach (or best approach) output targets.

    Attributes:
        q: `(n_q,)` equilibrium configuration under `u`.
        u: `(m,)` inputs.
        output: `(p,)` outputs `y(q)`.
        output_error: `|W (y(q) − y*)|` (2-norm); zero up to `tol` when the targets are
            reachable, the least-squares minimum otherwise.
        iterations: outer (Gauss–Newton) iterations.
    """

    q: Array
    u: Array
    output: Array
    output_error: float
    iterations: int


def _distal_frame(robot: Robot, q: Array, i: int) -> tuple[Array, Array]:
    """World pose `(R, t)` of the distal frame `S_i` of link `i`."""
    rot, trans = _proximal_pose(robot, q, i)
    link = robot.links[i]
    rb, tb = link.body.distal_pose(robot.split(q)[i][link.joint.n_q :])
    return rot @ rb, trans + rot @ tb


def _load_force(robot: Robot, load: Any, q: Array) -> Array:
    """Generalized force `Q_ext` `(n_q,)` of one external load, by virtual power:
    `J_pᵀ f` for a `PointLoad` at `p(q)`, `J_tᵀ F + J_ωᵀ M` for a `Wrench` on `S_i`, with
    forces given in `S_i` (`frame="distal"`) rotated to the world (follower loads)."""
    rot = _distal_frame(robot, q, load.link)[0]

    def world(v: Array) -> Array:
        return rot @ v if load.frame == "distal" else v

    if isinstance(load, PointLoad):
        jac = jax.jacfwd(lambda x: world_points(robot, x, load.link, load.point[None])[0])(q)
        return jac.T @ world(load.force)
    (d_rot, d_t) = jax.jacfwd(lambda x: _distal_frame(robot, x, load.link))(q)
    # J_ω columns: vee(∂R/∂q_j Rᵀ)
    jac_w = vee(jnp.einsum("abj,cb->jac", d_rot, rot)).T
    return d_t.T @ world(load.force) + jac_w.T @ world(load.moment)


class _System(NamedTuple):
    """The static balance at one configuration."""

    residual: Array  # r(q) (n_q,)
    scale: Array  # force scale of the relative tolerance
    jacobian: Array  # ∂r/∂q (n_q, n_q)
    actuation: Array  # A(q) (n_q, m)


def _residual(
    robot: Robot, acts: tuple, loads: tuple, q: Array, u: Array
) -> tuple[Array, tuple[Array, Array]]:
    """`r(q) = g + s(q, 0) − Q_ext − A(q) u`, with the force scale and `A(q)`."""
    # g = ∂V_g/∂q and s(q, 0) = ∂U/∂q (a Rayleigh function has ∂R/∂q̇ = 0 at q̇ = 0)
    grav = jax.grad(lambda x: _gravity_energy(robot, x))(q)
    elastic = jax.grad(lambda x: _elastic_energy(robot, x))(q)
    r = grav + elastic
    scale = jnp.maximum(jnp.max(jnp.abs(grav)), jnp.max(jnp.abs(elastic)))
    if loads:
        ext = sum(_load_force(robot, load, q) for load in loads)
        r = r - ext
        scale = jnp.maximum(scale, jnp.max(jnp.abs(ext)))
    a = jnp.zeros((q.shape[0], 0), q.dtype)
    if acts:
        # ν = A(q) u
        a = jnp.concatenate([act.columns(robot, q) for act in acts], axis=1)
        nu = a @ u
        r = r - nu
        scale = jnp.maximum(scale, jnp.max(jnp.abs(nu)))
    return r, (r, scale, a)


@jax.jit
def _newton_system(robot: Robot, acts: tuple, loads: tuple, q: Array, u: Array) -> _System:
    """The residual, its exact Jacobian (forward mode) and `A(q)` at `q`."""
    jac, (r, scale, a) = jax.jacfwd(lambda x: _residual(robot, acts, loads, x, u), has_aux=True)(q)
    return _System(r, scale, jac, a)


def _setup(
    robot: Any, u: Any, actuators: Any, q0: Any, loads: Any
) -> tuple[Robot, tuple, Array, Array, tuple]:
    """Checked robot, actuators, initial `q` (default zeros), inputs `u` (default zeros) and
    loads."""
    robot = _robot(robot)
    if robot.n_q == 0:
        raise ValueError("the robot has no coordinates: there is nothing to solve for")
    acts = () if actuators is None else check_actuators(robot, actuators)
    m = n_inputs(robot, acts) if acts else 0
    q = jnp.zeros(robot.n_q) if q0 is None else jnp.asarray(q0, dtype=float)
    if q.shape != (robot.n_q,):
        raise ValueError(f"q0 must have shape ({robot.n_q},), got {q.shape}")
    if not np.all(np.isfinite(np.asarray(q))):
        raise ValueError("q0 must be finite")
    u = jnp.zeros(m) if u is None else jnp.asarray(u, dtype=float)
    if u.shape != (m,):
        raise ValueError(f"u must have shape ({m},) for these actuators, got {u.shape}")
    if not np.all(np.isfinite(np.asarray(u))):
        raise ValueError("u must be finite")
    return robot, acts, q, u, check_loads(robot, loads)


def _check_options(tol: float, max_iter: int) -> None:
    if not isinstance(tol, (int, float)) or not 0 < tol < 1:
        raise ValueError(f"tol must be a number in (0, 1), got {tol!r}")
    if not isinstance(max_iter, int) or isinstance(max_iter, bool) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")


def _newton(
    robot: Robot, acts: tuple, loads: tuple, q: Array, u: Array, tol: float, max_iter: int
) -> tuple[StaticSolution, _System]:
    """Newton with backtracking from `q`; the solution and the balance there."""
    system = _newton_system(robot, acts, loads, q, u)
    norm = float(jnp.max(jnp.abs(system.residual)))
    history = [norm]
    if not np.isfinite(norm):
        raise ValueError(f"equilibrium: the residual is not finite at the initial guess {q}")
    # the largest force met so far (at an equilibrium the forces themselves may vanish)
    force_scale = float(system.scale)
    for it in range(max_iter + 1):
        if norm <= tol * force_scale:
            jac = np.asarray(system.jacobian)
            stable = bool(np.linalg.eigvalsh(0.5 * (jac + jac.T)).min() > 0)
            return StaticSolution(q, u, it, norm, stable, tuple(history)), system
        if it == max_iter:
            break
        jac = np.asarray(system.jacobian)
        if not np.all(np.isfinite(jac)):
            raise ValueError(f"equilibrium: the Jacobian is not finite at iteration {it}")
        sv = np.linalg.svd(jac, compute_uv=False)
        if sv[-1] <= _SINGULAR * sv[0]:
            _raise_singular(jac, it)
        # Newton step: J Δ = −r
        step = jnp.asarray(np.linalg.solve(jac, -np.asarray(system.residual)))
        # backtracking on max |r|: accept |r(q + α Δ)| ≤ (1 − c α) |r(q)|; the Jacobian comes
        # with the trial residual (one compiled function) and serves the next step
        alpha = 1.0
        while True:
            trial = q + alpha * step
            candidate = _newton_system(robot, acts, loads, trial, u)
            n_trial = float(jnp.max(jnp.abs(candidate.residual)))
            if np.isfinite(n_trial) and n_trial <= (1.0 - _ARMIJO * alpha) * norm:
                break
            alpha *= 0.5
            if alpha < _MIN_STEP:
                raise ValueError(
                    f"equilibrium: the line search failed at iteration {it} (max |r| = "
                    f"{norm:.3g}): no step along the Newton direction reduces the residual. "
                    "Try another q0, smaller inputs, or check the model."
                )
        q, system, norm = trial, candidate, n_trial
        force_scale = max(force_scale, float(system.scale))
        history.append(norm)
    raise ValueError(
        f"equilibrium: Newton did not converge in {max_iter} iterations "
        f"(max |r| = {norm:.3g}, target {tol:.1g} × {force_scale:.3g}); "
        "increase max_iter or give a closer q0"
    )


def _raise_singular(jac: np.ndarray, it: int) -> None:
    _, sv, vt = np.linalg.svd(jac)
    null = np.abs(vt[-1])
    coords = np.flatnonzero(null > 0.1 * null.max()).tolist()
    cond = sv[0] / sv[-1] if sv[-1] > 0 else np.inf
    raise ValueError(
        f"equilibrium: singular Newton step at iteration {it}: the Jacobian ∂r/∂q has "
        f"condition number {cond:.3g}; coordinates {coords} have no restoring force there "
        "(no stiffness, gravity or actuation holds them), so the equilibrium is not isolated"
    )


def equilibrium(
    robot: Robot,
    u: Any = None,
    actuators: Any = None,
    q0: Any = None,
    *,
    loads: Any = None,
    tol: float = 1e-10,
    max_iter: int = 50,
) -> StaticSolution:
    """Static equilibrium `g(q) + s(q, 0) − Q_ext(q) = A(q) u` by Newton's method.

    Newton on `r(q) = ID(q, 0, 0) − A(q) u` with the exact Jacobian and a backtracking line
    search (halving `α` until `max|r(q + αΔ)| ≤ (1 − 10⁻⁴ α) max|r(q)|`). Converged when
    `max|r| ≤ tol · F`, with `F` the largest entry of the separate terms `g`, `s`, `Q_ext`,
    `A u` met at the initial guess and the iterates (relative to the forces in play).

    Args:
        robot: the robot.
        u: `(m,)` inputs (tendon tensions, pressures, joint efforts), with
        actuators: an actuator or a sequence of them (`softrigid.actuators`); both or neither.
        q0: `(n_q,)` initial guess (default zeros, the reference configuration).
        loads: optional constant external loads (`PointLoad`/`Wrench`).
        tol: relative residual tolerance.
        max_iter: maximum number of Newton steps.

    Returns:
        a `StaticSolution(q, u, iterations, residual, stable, history)`.

    Raises:
        ValueError: bad input; a singular Jacobian (a coordinate that nothing holds); a failed
            line search; no convergence within `max_iter` (never a silent last iterate).
    """
    _check_options(tol, max_iter)
    if (u is None) != (actuators is None):
        raise ValueError("equilibrium: give both u and actuators, or neither")
    robot, acts, q, u, loads = _setup(robot, u, actuators, q0, loads)
    return _newton(robot, acts, loads, q, u, tol, max_iter)[0]


def inverse_statics(
    robot: Robot,
    actuators: Any,
    output: Callable[[Array], Array],
    target: Any,
    q0: Any = None,
    u0: Any = None,
    *,
    weights: Any = None,
    loads: Any = None,
    damping: float = 1e-3,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> InverseStaticSolution:
    """Inputs `u` whose equilibrium `q(u)` puts the outputs `y(q)` on the targets `y*`.

    Damped least squares (Levenberg–Marquardt) over the inputs, with the equilibrium solved
    exactly at every iterate (so every returned pair `(q, u)` is a true equilibrium):

        e(u) = W (y(q(u)) − y*),    ∂q/∂u = (∂r/∂q)⁻¹ A(q)  (implicit function theorem),
        G = W ∂y/∂q ∂q/∂u,          Δu = −(GᵀG + μ² I)⁻¹ Gᵀ e,

    with `μ = damping · |G|` multiplied by 10 after a step that does not reduce `|e|` and
    divided by 10 after one that does. With as many inputs as outputs this converges to an
    exact solution when one exists; with more inputs the damped step is minimum-norm, so it
    finds a solution near `u0`; with fewer, the least-squares best fit (see `output_error`).
    The inputs are unconstrained: a negative tendon tension in the result means the target
    needs a push (add an antagonistic tendon).

    Args:
        robot: the robot.
        actuators: the actuators (`m` inputs in total).
        output: `y(q) -> (p,)`, e.g. the tip position
            `lambda q: softrigid.forward_kinematics(robot, q)[1][-1]` (jit-traceable).
        target: `(p,)` targets `y*`.
        q0, u0: initial configuration and inputs (default zeros).
        weights: optional `(p,)` output weights `W` (diagonal).
        loads: optional constant external loads.
        damping: initial relative damping `μ / |G|`.
        tol: stop when `|e| ≤ tol · max(1, |W y*|)`, or when the step is below
            `tol · max(1, |u|)` (a least-squares minimum).
        max_iter: maximum outer iterations.

    Raises:
        ValueError: bad input, an equilibrium that cannot be solved along the way, or no
            convergence within `max_iter`.
    """
    _check_options(tol, max_iter)
    if actuators is None:
        raise ValueError("inverse_statics: give the actuators whose inputs are solved for")
    robot, acts, q, u, loads = _setup(robot, u0, actuators, q0, loads)
    if not callable(output):
        raise TypeError("inverse_statics: output must be callable y(q) -> (p,)")
    target = jnp.asarray(target, dtype=float)
    y_fn = jax.jit(lambda x: (output(x), jax.jacfwd(output)(x)))
    y, _ = y_fn(q)
    if jnp.shape(y) != target.shape or target.ndim != 1:
        raise ValueError(
            f"inverse_statics: output(q) has shape {jnp.shape(y)}, target {target.shape}; "
            "both must be the same (p,)"
        )
    w = jnp.ones_like(target) if weights is None else jnp.asarray(weights, dtype=float)
    if w.shape != target.shape:
        raise ValueError(f"inverse_statics: weights must have shape {target.shape}, got {w.shape}")
    goal = tol * max(1.0, float(jnp.linalg.norm(w * target)))

    def solve(u_new: Array, q_start: Array) -> tuple[StaticSolution, _System, Array, Array]:
        # the equilibrium under u_new and the weighted output error there
        sol, system = _newton(robot, acts, loads, q_start, u_new, _INNER_TOL, _INNER_ITER)
        y_new, dy = y_fn(sol.q)
        return sol, system, w * (y_new - target), w[:, None] * dy

    current = solve(u, q)
    err = float(jnp.linalg.norm(current[2]))
    mu = None
    it = 0
    while err > goal:
        if it == max_iter:
            raise ValueError(
                f"inverse_statics: no convergence in {max_iter} iterations (|e| = {err:.3g})"
            )
        it += 1
        sol, system, e, dy = current
        # G = W ∂y/∂q (∂r/∂q)⁻¹ A
        g = dy @ jnp.linalg.solve(system.jacobian, system.actuation)
        gnorm = float(jnp.linalg.norm(g))
        mu = damping * gnorm if mu is None else mu
        improved = False
        while mu <= _MAX_DAMPING * max(gnorm, 1.0):
            # Δu = −(GᵀG + μ² I)⁻¹ Gᵀ e
            du = -jnp.linalg.solve(g.T @ g + mu**2 * jnp.eye(g.shape[1]), g.T @ e)
            try:
                trial = solve(sol.u + du, sol.q)
            except ValueError:
                mu *= 10.0
                continue
            err_trial = float(jnp.linalg.norm(trial[2]))
            if err_trial < err:
                improved = True
                break
            mu *= 10.0
        if not improved:
            break  # a least-squares minimum: no damped step reduces |e|
        mu /= 10.0
        current, err = trial, err_trial
        if float(jnp.linalg.norm(du)) <= tol * max(1.0, float(jnp.linalg.norm(current[0].u))):
            break
    sol = current[0]
    return InverseStaticSolution(sol.q, sol.u, y_fn(sol.q)[0], err, it)
