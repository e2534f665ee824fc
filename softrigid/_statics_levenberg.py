"""Levenberg–Marquardt over the inputs for `inverse_statics` (`softrigid._statics_inverse`):
the loop, its solution type, and its differentiation by the implicit function theorem where
there are at least as many outputs as inputs (`_implicit`; the loop otherwise).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from ._ad import value_and_jacfwd
from ._cache import jit
from ._checks import status_is
from ._entry import trial_evaluations
from ._model import Robot
from ._module import rounding_tolerance
from ._statics_newton import CONVERGED, dense_tangent_solve, newton
from ._statics_residual import jacobian, residual

__all__ = ["InverseStaticSolution", "lm_jit", "lm_plain_jit"]

INNER_TOL = 1e-12
INNER_ITER = 50
_MAX_DAMPING = 1e12

# InverseStaticSolution.status
REACHED, MAX_ITER, MINIMUM, NO_EQUILIBRIUM, NON_FINITE_OUTPUT, SINGULAR, INSENSITIVE = range(7)
_RUNNING = -1


class InverseStaticSolution(NamedTuple):
    """Inputs and equilibrium that reach (or best approach) output targets (a pytree).

    Attributes:
        q: `(n_q,)` equilibrium configuration under `u`.
        u: `(n_u,)` inputs.
        output: `(p,)` outputs `y(q)`.
        output_error: `|W (y(q) − y*)|` (2-norm); zero up to `tol` when the targets are
            reachable, the least-squares minimum otherwise.
        iterations: accepted Levenberg–Marquardt steps.
        status: `0` target reached, `1` no convergence within `max_iter`, `2` a least-squares
            minimum that misses the target (unreachable), `3` no equilibrium under `u0`, `4`
            the output (or the target) is not finite at the equilibrium under `u0`, `5` the
            equilibrium's Jacobian `∂r/∂q` is singular at an iterate (a coordinate nothing
            holds: `∂q/∂u` is undefined; `q`, `u` are that equilibrium), `6` the outputs do
            not move with the inputs there (`G = 0`: an output function of coordinates no
            input moves, or an equilibrium where all their first derivatives vanish).
        stable: the equilibrium's Jacobian `∂r/∂q` at `q` (the stiffness of the static
            balance under `u`) is positive definite, as `StaticSolution.stable`: Newton finds
            unstable equilibria as well (an arm held upright against gravity by weak springs),
            which a simulation started there leaves.
    """

    q: Array
    u: Array
    output: Array
    output_error: Array
    iterations: Array
    status: Array
    stable: Array

    @property
    def converged(self) -> Array:
        """The target is reached (`status == 0`; a NumPy bool for a computed solution,
        `status_is`)."""
        return status_is(self.status, REACHED)


class _Carry(NamedTuple):
    u: Array  # accepted inputs
    q: Array  # their equilibrium
    e: Array  # W (y(q) − y*)
    err: Array  # |e|
    g: Array  # G at (q, u)
    dq: Array  # ∂q/∂u = J⁻¹ A at (q, u)
    jac: Array  # J = ∂r/∂q at (q, u)
    mu: Array  # damping
    du: Array  # step being tried
    it: Array  # accepted steps
    status: Array
    started: Array  # the equilibrium under u0 has been solved


def _damped_step(g: Array, e: Array, mu: Array) -> Array:
    """The damped least-squares step `Δu = −(GᵀG + μ² I)⁻¹ Gᵀ e` for `G` `(p, n_u)`.

    With fewer outputs than inputs it is computed as `Δu = −Gᵀ (G Gᵀ + μ² I)⁻¹ e` (the same
    vector: `Gᵀ (G Gᵀ + μ² I) = (GᵀG + μ² I) Gᵀ`), which lies in the row space of `G` to
    rounding: the step has no component along the inputs that do not move the outputs (e.g.
    two actuators with equal columns), so those keep their values from `u0`. The `n_u × n_u`
    form is singular along them when `μ` is small and turns rounding into large steps there.
    """
    p, n_u = g.shape
    if p < n_u:
        return -g.T @ jnp.linalg.solve(g @ g.T + mu**2 * jnp.eye(p, dtype=g.dtype), e)
    return -jnp.linalg.solve(g.T @ g + mu**2 * jnp.eye(n_u, dtype=g.dtype), g.T @ e)


def _levenberg_marquardt(
    robot: Robot,
    loads: tuple,
    output: Callable[[Array], Array],
    target: Array,
    w: Array,
    q0: Array,
    u0: Array,
    damping: float | Array,
    tol: float | Array,
    max_iter: int,
) -> InverseStaticSolution:
    """The loop: each pass solves the equilibrium under `u + Δu` (from the last accepted `q`;
    the first pass solves it under `u0` from `q0`), accepts the step when that equilibrium
    converged and `|e|` decreased (then `μ /= 10` and the next step is taken from there), else
    `μ *= 10`. Stops when `|e| ≤ tol · max(1, |W y*|)` (reached), when an accepted step is
    below `tol · max(1, |u|)` or no damping up to `10¹² max(|G|, 1)` reduces `|e|` (a
    least-squares minimum), or after `max_iter` accepted steps. `tol` no tighter than 100 units
    of `q`'s rounding (float32: 1.2e-5)."""
    tol = jnp.maximum(tol, rounding_tolerance(q0, 0.0))  # traced: one program for every tol
    goal = tol * jnp.maximum(1.0, jnp.linalg.norm(w * target))

    def body(c: _Carry) -> _Carry:
        u = c.u + c.du
        # from the equilibrium's first-order prediction q + ∂q/∂u Δu (q itself at u0)
        q, inner = newton(robot, loads, u, c.q + c.dq @ c.du, INNER_TOL, INNER_ITER)
        converged = inner.status == CONVERGED
        # the outputs only at an equilibrium: a rejected trial's iterate (e.g. past the range
        # of a body's map) stays out of the user's function, whose own checks would raise
        q = jnp.where(converged, q, c.q)
        with trial_evaluations():  # a non-finite output rejects the trial (status 4 at u0)
            y, dy = value_and_jacfwd(output, q)  # the output traced once
        e = w * (y - target)
        err = jnp.linalg.norm(e)
        ok = converged & jnp.isfinite(err)
        accept = ok & (~c.started | (err < c.err))
        # ∂q/∂u = J⁻¹ A, G = W ∂y/∂q ∂q/∂u: defined where J is regular (Newton's test, at its
        # last iterate); at a singular J (a coordinate no stiffness, gravity or input holds)
        # the solve gives inf/NaN, which would make every later step NaN and the damping
        # test never true
        dq_new = jnp.linalg.solve(inner.jac, inner.actuation)
        g_new = (w[:, None] * dy) @ dq_new
        regular = ~inner.singular & jnp.all(jnp.isfinite(g_new))
        dq = jnp.where(accept, dq_new, c.dq)
        jac = jnp.where(accept, inner.jac, c.jac)
        g = jnp.where(accept, g_new, c.g)
        gnorm = jnp.linalg.norm(g)
        # μ = damping |G| at u0, at least the smallest normal number so that 10 μ grows (a
        # subnormal μ is flushed to zero on CPU); with G = 0 no step moves the outputs
        first = jnp.maximum(damping * gnorm, jnp.finfo(g.dtype).tiny)
        mu = jnp.where(accept, jnp.where(c.started, c.mu / 10.0, first), 10.0 * c.mu)
        e_next = jnp.where(accept, e, c.e)
        du = _damped_step(g, e_next, mu)
        it = c.it + (accept & c.started).astype(c.it.dtype)
        small = jnp.linalg.norm(c.du) <= tol * jnp.maximum(1.0, jnp.linalg.norm(u))
        status = jnp.select(
            [
                ~c.started & converged & ~jnp.isfinite(err),
                ~c.started & ~ok,
                accept & (err <= goal),
                accept & ~regular,
                accept & (gnorm == 0),
                accept & c.started & small,
                accept & (it >= max_iter),
                ~accept & ~(mu <= _MAX_DAMPING * jnp.maximum(gnorm, 1.0)),
            ],
            [
                NON_FINITE_OUTPUT,
                NO_EQUILIBRIUM,
                REACHED,
                SINGULAR,
                INSENSITIVE,
                MINIMUM,
                MAX_ITER,
                MINIMUM,
            ],
            _RUNNING,
        ).astype(c.status.dtype)

        def pick(new: Array, old: Array) -> Array:
            return jnp.where(accept, new, old)

        return _Carry(
            u=pick(u, c.u),
            q=pick(q, c.q),
            e=e_next,
            err=pick(err, c.err),
            g=g,
            dq=dq,
            jac=jac,
            mu=mu,
            du=du,
            it=it,
            status=status,
            started=c.started | ok,
        )

    n_u, p = u0.shape[0], target.shape[0]
    init = _Carry(
        u=u0,
        q=q0,
        e=jnp.zeros(p, q0.dtype),
        err=jnp.asarray(jnp.inf, q0.dtype),
        g=jnp.zeros((p, n_u), q0.dtype),
        dq=jnp.zeros((q0.shape[0], n_u), q0.dtype),
        jac=jnp.zeros((q0.shape[0], q0.shape[0]), q0.dtype),
        mu=jnp.asarray(damping, q0.dtype),
        du=jnp.zeros(n_u, q0.dtype),
        it=jnp.zeros((), jnp.int32),
        status=jnp.asarray(_RUNNING, jnp.int32),
        started=jnp.zeros((), bool),
    )
    c = jax.lax.while_loop(lambda c: c.status == _RUNNING, body, init)
    # stable: the symmetric part of J is positive definite (as the equilibrium's)
    stable = jnp.linalg.eigvalsh(0.5 * (c.jac + c.jac.T))[0] > 0
    return InverseStaticSolution(c.q, c.u, output(c.q), c.err, c.it, c.status, stable)


def _implicit(
    robot: Robot,
    loads: tuple,
    output: Callable[[Array], Array],
    target: Array,
    w: Array,
    q0: Array,
    u0: Array,
    damping: float | Array,
    tol: float | Array,
    max_iter: int,
) -> InverseStaticSolution:
    """`_levenberg_marquardt`, differentiable by the implicit function theorem where there are
    at least as many outputs as inputs: its solution `z = (q, u)` is a root of

        F(z) = (r(q, u), W (y(q) − y*))          (as many outputs as inputs: y = y*),
        F(z) = (r(q, u), Gᵀ e),  e = W (y(q) − y*),  G = W ∂y/∂q J⁻¹ A
                                                  (more: the least-squares optimality),

    so `∂z/∂θ = −(∂F/∂z)⁻¹ ∂F/∂θ` for everything `F` closes over (the target, the weights,
    the robot's parameters, the loads), in reverse mode too (`jax.lax.custom_root`, as
    `equilibrium`); the second form differentiates `J` and `A`, one order more of the bodies'
    maps. With fewer outputs than inputs the solution depends on the iterations' path (the
    inputs that do not move the outputs keep their values from `u0`): the loop itself,
    forward mode only."""
    n_q, p, n_u = q0.shape[0], target.shape[0], u0.shape[0]
    if p < n_u:
        return _levenberg_marquardt(robot, loads, output, target, w, q0, u0, damping, tol, max_iter)

    def roots(z: Array) -> Array:
        q, u = z[:n_q], z[n_q:]
        if p == n_u:
            return jnp.concatenate([residual(robot, loads, u, q)[0], w * (output(q) - target)])
        # Gᵀ e = 0, the gradient of |e|²/2 over the inputs, with G = W ∂y/∂q J⁻¹ A
        y, dy = value_and_jacfwd(output, q)  # the output traced once for both
        jac, act = jacobian(robot, loads, u, q)
        g = (w[:, None] * dy) @ jnp.linalg.solve(jac, act)
        return jnp.concatenate([residual(robot, loads, u, q)[0], g.T @ (w * (y - target))])

    def solve(_: Callable, guess: Array) -> tuple[Array, tuple[Array, ...]]:
        args = (target, w, guess[:n_q], guess[n_q:], damping, tol, max_iter)
        sol = _levenberg_marquardt(robot, loads, output, *args)
        # custom_root gives integer and boolean aux outputs integer tangents: they travel as
        # floats (as the equilibrium's)
        aux = (sol.output_error, sol.iterations, sol.status, sol.stable)
        return jnp.concatenate([sol.q, sol.u]), tuple(a.astype(q0.dtype) for a in aux)

    z0 = jnp.concatenate([q0, u0])
    z, (err, it, status, stable) = jax.lax.custom_root(roots, z0, solve, dense_tangent_solve, True)
    q, u = z[:n_q], z[n_q:]
    it, status = it.astype(jnp.int32), status.astype(jnp.int32)
    return InverseStaticSolution(q, u, output(q), err, it, status, stable > 0.5)


# `damping` and `tol` are arguments of the programs (new values do not compile again); the
# output function and `max_iter` are compile-time constants
_STATIC = ("output", "max_iter")
lm_jit = jit(_implicit, loops=True, static_argnames=_STATIC)
# for arguments that nothing traces (an eager call): `_implicit`'s `custom_root` traces the
# roots `F` and their linearization at every call, differentiated or not (the helicoid robot of
# `examples/helicoid_tracking.py`: about half of the program's tracing, which a filled
# compilation cache cannot skip); the same loop and solution without it
lm_plain_jit = jit(_levenberg_marquardt, loops=True, static_argnames=_STATIC)
