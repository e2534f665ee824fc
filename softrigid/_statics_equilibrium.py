"""Static equilibria under actuation (`softrigid.statics.equilibrium`).

An equilibrium solves (`algorithm.md`, `forces.md`; the seed's eq. 55 has the opposite sign)

    r(q) = g(q) + s(q, 0) − Q_ext(q) − A(q) u = ID(q, 0, 0) − A(q) u = 0

by Newton's method with the exact Jacobian `J = ∂r/∂q` and a backtracking line search on
`max |r|`, written as one `jax.lax.while_loop`: it runs under `jit` and `vmap` and reports how it
ended through `StaticSolution.status`. `g + s(q, 0)` is evaluated as `∂V/∂q` with
`V = V_gravity + U` (gravity by quadrature over the bodies): the same vector as `ID(q, 0, 0)`
(`g = ∂V_g/∂q`, and `∂R/∂q̇ = 0` at rest for a Rayleigh function), whose Jacobian (a Hessian)
compiles about twice as fast as the derivative of the recursion. External loads enter by
virtual power, `Q_ext = J_pᵀ f` (point loads) and `J_tᵀ F + J_ωᵀ M` (wrenches on distal
frames), as in the recursion; loads given in a distal frame follow it (and make the Jacobian
non-symmetric).

Gradients of the equilibrium flow by the implicit function theorem (`jax.lax.custom_root`, not
through the iterations): with `r(q*, θ) = 0`,

    ∂q*/∂θ = −J⁻¹ ∂r/∂θ,    e.g. ∂q*/∂u = J⁻¹ A(q*),

for `θ` the inputs or any physical parameter of the robot (stiffness, modulus, mass, length).

When every force is conservative (gravity, elasticity, tendons and pressures at fixed `u`, joint
motors, loads fixed in the world) `r = ∂Π/∂q` for a total potential `Π`, the Jacobian is its
Hessian, and the equilibrium is stable exactly when the Jacobian is positive definite
(`StaticSolution.stable`). Newton finds unstable equilibria too (an arm balanced upright):
check `stable`.

Libraries: the runtime checks under `jit`/`vmap` are `equinox.branched_error_if`. Optimistix
is not used: its `Newton` root finder has no line search, and its least-squares solvers with a
search stop on a relative step (Cauchy) test; neither gives the residual test against the
forces in play, nor the singular-Jacobian, line-search and non-finite statuses this solver
reports. The loop is therefore written here, and the implicit differentiation comes from
`jax.lax.custom_root`, which is what `optimistix.ImplicitAdjoint` would add.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._chain import distal_poses, proximal_poses
from ._dynamics import actuation
from ._energy import gravity_energy, total_elastic_energy
from ._entry import check_inputs, check_robot, check_states
from ._loads import PointLoad, check_loads
from ._math import vee
from ._model import Robot
from ._module import is_concrete
from ._soft_body import SoftBody

__all__ = [
    "CONVERGED",
    "StaticSolution",
    "check_options",
    "equilibrium",
    "newton",
    "raise_failure",
    "setup",
    "solve_jit",
]

_ARMIJO = 1e-4
_MIN_STEP = 2.0**-30
_SINGULAR = 1e-12

# StaticSolution.status
CONVERGED, MAX_ITER, SINGULAR, LINE_SEARCH, NONFINITE = 0, 1, 2, 3, 4
_RUNNING = -1
# the messages of the runtime checks under jit/vmap (eager calls raise with more detail)
_MESSAGES = (
    "equilibrium: Newton did not converge within max_iter iterations; increase max_iter or "
    "give a closer q0",
    "equilibrium: singular Newton step: the Jacobian ∂r/∂q is singular, some coordinates have "
    "no restoring force (no stiffness, gravity or actuation holds them; for a soft body, an "
    "axial quadrature too coarse for its strain basis); call equilibrium outside jit for details",
    "equilibrium: the line search failed: no step along the Newton direction reduces the "
    "residual; try another q0, smaller inputs, or check the model",
    "equilibrium: the residual or its Jacobian is not finite (a non-finite q0, u or model "
    "parameter?)",
)


class StaticSolution(NamedTuple):
    """An equilibrium (a pytree: batched under `vmap`, differentiable in `q`).

    Attributes:
        q: `(n_q,)` equilibrium configuration (the last iterate when `status != 0`).
        u: `(n_u,)` inputs it holds under (generalized forces without actuators).
        iterations: Newton steps taken (integer array).
        residual: final `max |r|` [generalized force units].
        status: `0` converged, `1` no convergence within `max_iter`, `2` singular Jacobian,
            `3` line search failed, `4` non-finite residual or Jacobian (integer array).
        stable: the Jacobian `∂r/∂q` (the stiffness of the static balance) is positive definite.
        jacobian: `(n_q, n_q)` `∂r/∂q` at `q`.
        history: `(max_iter + 1,)` `max |r|` before each step and at the end, padded with NaN
            after entry `iterations`.
    """

    q: Array
    u: Array
    iterations: Array
    residual: Array
    status: Array
    stable: Array
    jacobian: Array
    history: Array

    @property
    def converged(self) -> Array:
        """`status == 0`."""
        return self.status == CONVERGED


# ---------------------------------------------------------------------------------------------
# The residual


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


def _residual(robot: Robot, loads: tuple, u: Array, q: Array) -> tuple[Array, Array]:
    """`r(q) = g + s(q, 0) − Q_ext − A(q) u` and the force scale `F = max(|g|, |s|, |Q_ext|,
    |A u|)` (entrywise maxima)."""
    # g = ∂V_g/∂q and s(q, 0) = ∂U/∂q (a Rayleigh function has ∂R/∂q̇ = 0 at q̇ = 0)
    grav = jax.grad(lambda x: gravity_energy(robot, x))(q)
    elastic = jax.grad(lambda x: total_elastic_energy(robot, x))(q)
    r = grav + elastic
    scale = jnp.maximum(jnp.max(jnp.abs(grav)), jnp.max(jnp.abs(elastic)))
    if loads:
        ext = sum(_load_force(robot, load, q) for load in loads)
        r = r - ext
        scale = jnp.maximum(scale, jnp.max(jnp.abs(ext)))
    # ν = A(q) u
    nu = actuation(robot, q) @ u
    r = r - nu
    return r, jnp.maximum(scale, jnp.max(jnp.abs(nu)))


# ---------------------------------------------------------------------------------------------
# Newton's method in one while loop


class _Carry(NamedTuple):
    """The state of the Newton loop: the accepted iterate and its balance, the step being
    tried, and the bookkeeping."""

    q: Array  # accepted iterate
    r: Array  # r(q)
    jac: Array  # ∂r/∂q at q
    norm: Array  # max |r(q)|
    scale: Array  # the largest force scale met so far
    step: Array  # Newton direction Δ at q
    alpha: Array  # line-search fraction of Δ being tried
    it: Array  # Newton steps taken
    status: Array  # _RUNNING until the loop ends
    started: Array  # the initial guess has been evaluated
    history: Array  # max |r| of the accepted iterates, NaN-padded


def newton(
    robot: Robot, loads: tuple, u: Array, q0: Array, tol: float, max_iter: int
) -> tuple[Array, _Carry]:
    """Newton with backtracking from `q0`: the last iterate and the loop's final state.

    Each pass evaluates `(r, J)` at the trial point `q + α Δ` (one forward-mode Jacobian, traced
    once; the first pass evaluates `q0` itself). A trial is accepted when
    `max|r(q + αΔ)| ≤ (1 − 10⁻⁴ α) max|r(q)|`, else `α` is halved. At an accepted point the
    loop stops when `max|r| ≤ tol · F`, with `F = max(max|g|, max|s|, max|Q_ext|, max|A u|,
    max|J|)` the largest force met so far; the last term, the force of a unit change of the
    coordinates, keeps the test meaningful where every force vanishes at the solution (a
    hanging arm, zero inputs). Otherwise the next direction solves `J Δ = −r`.
    """
    n = q0.shape[0]
    dtype = q0.dtype

    def with_aux(x: Array) -> tuple[Array, tuple[Array, Array]]:
        r, scale = _residual(robot, loads, u, x)
        return r, (r, scale)

    system = jax.jacfwd(with_aux, has_aux=True)

    def body(c: _Carry) -> _Carry:
        trial = c.q + c.alpha * c.step
        jac, (r, scale) = system(trial)
        norm = jnp.max(jnp.abs(r))
        accept = jnp.isfinite(norm) & (~c.started | (norm <= (1.0 - _ARMIJO * c.alpha) * c.norm))
        it = c.it + (accept & c.started).astype(c.it.dtype)
        scale = jnp.maximum(c.scale, jnp.maximum(scale, jnp.max(jnp.abs(jac))))
        converged = norm <= tol * scale
        jac_finite = jnp.all(jnp.isfinite(jac))
        sv = jnp.linalg.svd(jnp.where(jac_finite, jac, 0.0), compute_uv=False)
        singular = ~(sv[-1] > _SINGULAR * sv[0])
        # Newton direction: J Δ = −r
        step = jnp.linalg.solve(jnp.where(singular | ~jac_finite, jnp.eye(n, dtype=dtype), jac), -r)
        alpha = 0.5 * c.alpha
        status = jnp.select(
            [
                ~c.started & ~accept,
                accept & ~jac_finite,
                accept & converged,
                accept & (it >= max_iter),
                accept & singular,
                ~accept & (alpha < _MIN_STEP),
            ],
            [NONFINITE, NONFINITE, CONVERGED, MAX_ITER, SINGULAR, LINE_SEARCH],
            _RUNNING,
        ).astype(c.status.dtype)

        def pick(new: Array, old: Array) -> Array:
            return jnp.where(accept, new, old)

        return _Carry(
            q=pick(trial, c.q),
            r=pick(r, c.r),
            jac=pick(jac, c.jac),
            norm=pick(norm, c.norm),
            scale=pick(scale, c.scale),
            step=pick(step, c.step),
            alpha=pick(jnp.ones_like(alpha), alpha),
            it=it,
            status=status,
            started=jnp.ones_like(c.started),
            history=pick(c.history.at[it].set(norm), c.history),
        )

    init = _Carry(
        q=q0,
        r=jnp.zeros(n, dtype),
        jac=jnp.zeros((n, n), dtype),
        norm=jnp.asarray(jnp.inf, dtype),
        scale=jnp.zeros((), dtype),
        step=jnp.zeros(n, dtype),
        alpha=jnp.ones((), dtype),
        it=jnp.zeros((), jnp.int32),
        status=jnp.asarray(_RUNNING, jnp.int32),
        started=jnp.zeros((), bool),
        history=jnp.full(max_iter + 1, jnp.nan, dtype),
    )
    out = jax.lax.while_loop(lambda c: c.status == _RUNNING, body, init)
    return out.q, out


def _solve(
    robot: Robot, loads: tuple, u: Array, q0: Array, tol: float, max_iter: int
) -> StaticSolution:
    """The equilibrium as a `StaticSolution`, differentiable by the implicit function theorem:
    `jax.lax.custom_root` differentiates `r(q*, θ) = 0` (`∂q*/∂θ = −J⁻¹ ∂r/∂θ`) with respect to
    everything `r` closes over (`u`, the robot's parameters, the loads)."""

    def residual(q: Array) -> Array:
        return _residual(robot, loads, u, q)[0]

    def solve(_: Callable, guess: Array) -> tuple[Array, _Carry]:
        q, c = newton(robot, loads, u, guess, tol, max_iter)
        # custom_root gives integer and boolean aux outputs integer tangents (not float0):
        # they travel as floats
        return q, c._replace(it=c.it.astype(q.dtype), status=c.status.astype(q.dtype), started=None)

    def tangent_solve(linear: Callable[[Array], Array], rhs: Array) -> Array:
        # J x = rhs, with J assembled from the linearized residual
        return jnp.linalg.solve(jax.jacfwd(linear)(rhs), rhs)

    q, c = jax.lax.custom_root(residual, q0, solve, tangent_solve, has_aux=True)
    return solution(q, u, c)


def solution(q: Array, u: Array, c: _Carry) -> StaticSolution:
    """The `StaticSolution` of the final state `c` of the Newton loop."""
    # stable: the symmetric part of J is positive definite
    stable = jnp.linalg.eigvalsh(0.5 * (c.jac + c.jac.T))[0] > 0
    it, status = c.it.astype(jnp.int32), c.status.astype(jnp.int32)
    return StaticSolution(q, u, it, c.norm, status, stable, c.jac, c.history)


solve_jit = jax.jit(_solve, static_argnames=("tol", "max_iter"))


# ---------------------------------------------------------------------------------------------
# Entry checks and errors


def setup(robot: Any, u: Any, q0: Any, loads: Any) -> tuple[Robot, Array, Array, tuple]:
    """Checked robot, initial `q` (default zeros), inputs `u` (default zeros) and loads; shapes
    always, finiteness when concrete (under `jit` the runtime check of the status does it)."""
    robot = check_robot(robot)
    if robot.n_q == 0:
        raise ValueError("the robot has no coordinates: there is nothing to solve for")
    q = jnp.zeros(robot.n_q) if q0 is None else q0
    u = jnp.zeros(robot.n_u) if u is None else u
    (q,) = check_states(robot, q0=q)
    dtype = jnp.result_type(q.dtype, float)
    return robot, q.astype(dtype), check_inputs(robot, u, dtype), check_loads(robot, loads)


def check_options(tol: float, max_iter: int) -> None:
    if not isinstance(tol, (int, float)) or isinstance(tol, bool) or not 0 < tol < 1:
        raise ValueError(f"tol must be a number in (0, 1), got {tol!r}")
    if not isinstance(max_iter, int) or isinstance(max_iter, bool) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")


def _singular_message(robot: Robot, sol: StaticSolution) -> str:
    """Name the coordinates in the Jacobian's null space, and for strain coordinates of soft
    bodies the likely cause: an axial quadrature too coarse for the strain basis."""
    jac = np.asarray(sol.jacobian)
    _, sv, vt = np.linalg.svd(jac)
    null = np.abs(vt[-1])
    coords = np.flatnonzero(null > 0.1 * null.max()).tolist()
    cond = sv[0] / sv[-1] if sv[-1] > 0 else np.inf
    text = (
        f"equilibrium: singular Newton step at iteration {int(sol.iterations)}: the Jacobian "
        f"∂r/∂q has condition number {cond:.3g}; coordinates {coords} have no restoring force "
        "there (no stiffness, gravity or actuation holds them), so the equilibrium is not isolated"
    )
    soft = sorted(
        {
            i
            for i, link in enumerate(robot.links)
            if isinstance(link.body, SoftBody)
            and any(robot.body_slice(i).start <= j < robot.body_slice(i).stop for j in coords)
        }
    )
    if soft:
        text += (
            f". Coordinates of the soft bodies of links {soft} are among them: the likely cause is "
            "a strain basis with more modes than the body's axial quadrature resolves (the "
            "elastic energy is blind to the extra modes); use more axial quadrature points "
            "(e.g. n_axial of the volume) or fewer modes"
        )
    return text


def raise_failure(robot: Robot, sol: StaticSolution, max_iter: int) -> None:
    """The `ValueError` of a failed eager solve, with the details the status alone lacks."""
    status, it, norm = int(sol.status), int(sol.iterations), float(sol.residual)
    if status == MAX_ITER:
        raise ValueError(
            f"equilibrium: Newton did not converge in {max_iter} iterations (max |r| = "
            f"{norm:.3g}); increase max_iter or give a closer q0"
        )
    if status == SINGULAR:
        raise ValueError(_singular_message(robot, sol))
    if status == LINE_SEARCH:
        raise ValueError(
            f"equilibrium: the line search failed at iteration {it} (max |r| = {norm:.3g}): no "
            "step along the Newton direction reduces the residual. Try another q0, smaller "
            "inputs, or check the model."
        )
    if status == NONFINITE:
        where = (
            "at the initial guess" if it == 0 and not np.isfinite(norm) else f"at iteration {it}"
        )
        raise ValueError(
            f"equilibrium: the residual or its Jacobian is not finite {where} (q = "
            f"{np.asarray(sol.q)}); check the model's parameters"
        )


def _runtime_check(sol: StaticSolution) -> StaticSolution:
    """`equinox.branched_error_if`: raise (also under `jit`/`vmap`) when the status is not 0;
    attached to every field, so the check runs whichever field the caller uses."""
    index = jnp.clip(sol.status - 1, 0, len(_MESSAGES) - 1)
    return eqx.branched_error_if(sol, sol.status != CONVERGED, index, _MESSAGES)


def equilibrium(
    robot: Robot,
    u: Any = None,
    *,
    q0: Any = None,
    loads: Any = None,
    tol: float = 1e-10,
    max_iter: int = 50,
    throw: bool = True,
) -> StaticSolution:
    """Static equilibrium `g(q) + s(q, 0) − Q_ext(q) = A(q) u` by Newton's method.

    Newton on `r(q) = ID(q, 0, 0) − A(q) u` with the exact Jacobian `J = ∂r/∂q` and a
    backtracking line search (halving `α` until `max|r(q + αΔ)| ≤ (1 − 10⁻⁴ α) max|r(q)|`),
    in one `lax.while_loop`. Converged when `max|r| ≤ tol · F`, with `F` the largest entry of
    the separate terms `g`, `s`, `Q_ext`, `A u` and of `J` met at the initial guess and the
    iterates (relative to the forces in play; an exact equilibrium as `q0` takes 0 steps).

    Works under `jax.jit` and `jax.vmap` (e.g. over `u`); `jax.grad`/`jax.jacfwd` of the result
    with respect to `u` or the robot's parameters use the implicit function theorem,
    `∂q/∂θ = −J⁻¹ ∂r/∂θ` (`∂q/∂u = J⁻¹ A`).

    Arguments: the inputs `u` are the only positional argument after the robot (the data
    the equilibrium is solved under; there is no state to come first), everything else,
    the initial guess `q0` included, is keyword-only, as in `inverse_statics`.

    Args:
        robot: the robot.
        u: `(n_u,)` the robot's inputs (tendon tensions, pressures, joint efforts of
            `robot.actuators`, or generalized forces for a robot without actuators); default
            zeros.
        q0: `(n_q,)` initial guess (default zeros, the reference configuration).
        loads: optional constant external loads (`PointLoad`/`Wrench`).
        tol: relative residual tolerance.
        max_iter: maximum number of Newton steps.
        throw: raise when the solve fails (default). Eagerly that is a `ValueError` with the
            details; under `jit`/`vmap` an `equinox.error_if` runtime error with the status's
            message. With `throw=False` read `status`/`converged` instead.

    Returns:
        a `StaticSolution(q, u, iterations, residual, status, stable, jacobian, history)`.

    Raises:
        ValueError: bad input; with `throw`: a singular Jacobian (naming the coordinates that
            nothing holds), a failed line search, a non-finite residual, or no convergence
            within `max_iter` (never a silent last iterate).
    """
    check_options(tol, max_iter)
    robot, q, u, loads = setup(robot, u, q0, loads)
    eager = is_concrete(robot, u, q, loads)
    sol = (solve_jit if eager else _solve)(robot, loads, u, q, tol=tol, max_iter=max_iter)
    if not throw:
        return sol
    if eager:
        raise_failure(robot, sol, max_iter)
        return sol
    return _runtime_check(sol)
