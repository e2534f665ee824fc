"""Inverse statics: the inputs whose equilibrium puts outputs `y(q)` on targets `y*`.

Damped least squares (Levenberg–Marquardt) over the inputs `u`, with the equilibrium `q(u)`
solved by Newton (`softrigid._statics_newton`) at every iterate, so every returned pair
`(q, u)` is a true equilibrium; Newton starts from the prediction `q + ∂q/∂u Δu` (a quarter
fewer Newton steps on the helicoid robot's statics; a prediction that fails, e.g. past a
body map's range, is a rejected trial like any other):

    e(u) = W (y(q(u)) − y*),    ∂q/∂u = J⁻¹ A(q)  (implicit function theorem, J = ∂r/∂q),
    G = W ∂y/∂q J⁻¹ A,          Δu = −(GᵀG + μ² I)⁻¹ Gᵀ e  (= −Gᵀ (GGᵀ + μ² I)⁻¹ e).

The iteration is one `jax.lax.while_loop` (the equilibrium's Newton loop nested in it), so it
runs under `jit` and `vmap` (e.g. over targets) and reports through a status.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._cache import jit
from ._checks import as_float, raise_if, status_is, traced_check
from ._entry import PREFIX, trial_evaluations
from ._model import Robot
from ._module import is_concrete, rounding_tolerance, runs_eagerly
from ._statics_equilibrium import check_options, null_coordinates, raise_failure, setup
from ._statics_newton import CONVERGED, newton, solve_jit
from .kinematics._base import trace_user, user_array

__all__ = ["InverseStaticSolution", "inverse_statics"]

_INNER_TOL = 1e-12
_INNER_ITER = 50
_MAX_DAMPING = 1e12

# InverseStaticSolution.status
REACHED, MAX_ITER, MINIMUM, NO_EQUILIBRIUM, NON_FINITE_OUTPUT, SINGULAR, INSENSITIVE = range(7)
_RUNNING = -1
_MESSAGES = (
    "inverse_statics: no convergence within max_iter iterations",
    "inverse_statics: the target is not reached: the iteration ended at a least-squares "
    "minimum (an unreachable target?)",
    "inverse_statics: the equilibrium under the initial inputs u0 could not be solved",
    "inverse_statics: output(q) - target is not finite (NaN or inf) at the equilibrium under "
    "the initial inputs u0: the output function (or the target) produced it",
    "inverse_statics: the equilibrium's Jacobian ∂r/∂q is singular at an iterate, so how the "
    "outputs move with the inputs (∂q/∂u = J⁻¹ A) is undefined: some coordinates have no "
    "restoring force (no stiffness, gravity or actuation holds them)",
    "inverse_statics: the outputs do not move with the inputs at an iterate (G = W ∂y/∂q "
    "∂q/∂u = 0): check the output function and the actuators, or start from another u0",
)


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
    damping: float,
    tol: float,
    max_iter: int,
) -> InverseStaticSolution:
    """The loop: each pass solves the equilibrium under `u + Δu` (from the last accepted `q`;
    the first pass solves it under `u0` from `q0`), accepts the step when that equilibrium
    converged and `|e|` decreased (then `μ /= 10` and the next step is taken from there), else
    `μ *= 10`. Stops when `|e| ≤ tol · max(1, |W y*|)` (reached), when an accepted step is
    below `tol · max(1, |u|)` or no damping up to `10¹² max(|G|, 1)` reduces `|e|` (a
    least-squares minimum), or after `max_iter` accepted steps. `tol` no tighter than 100 units
    of `q`'s rounding (float32: 1.2e-5)."""
    tol = rounding_tolerance(q0, tol)
    goal = tol * jnp.maximum(1.0, jnp.linalg.norm(w * target))

    def twice(x: Array) -> tuple[Array, Array]:
        y = output(x)  # traced once: its value is also the Jacobian's aux
        return y, y

    y_and_dy = jax.jacfwd(twice, has_aux=True)

    def body(c: _Carry) -> _Carry:
        u = c.u + c.du
        # from the equilibrium's first-order prediction q + ∂q/∂u Δu (q itself at u0)
        q, inner = newton(robot, loads, u, c.q + c.dq @ c.du, _INNER_TOL, _INNER_ITER)
        converged = inner.status == CONVERGED
        # the outputs only at an equilibrium: a rejected trial's iterate (e.g. past the range
        # of a body's map) stays out of the user's function, whose own checks would raise
        q = jnp.where(converged, q, c.q)
        with trial_evaluations():  # a non-finite output rejects the trial (status 4 at u0)
            dy, y = y_and_dy(q)
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


_lm_jit = jit(
    _levenberg_marquardt, loops=True, static_argnames=("output", "damping", "tol", "max_iter")
)


def _positive_vector(name: str, value: Any, shape: tuple[int, ...]) -> Array:
    arr = jnp.asarray(value, dtype=float)
    if arr.shape != shape:
        raise ValueError(f"inverse_statics: {name} must have shape {shape}, got {arr.shape}")
    msg = f"inverse_statics: {name} must be finite and positive"
    if is_concrete(arr):
        values = np.asarray(arr)
        if not np.all(np.isfinite(values)) or not np.all(values > 0):
            raise ValueError(f"{msg}, got {values}")
        return arr
    # traced (under jit/vmap): a run-time check, whatever `throw` (bad input, not a failure)
    return traced_check(arr, ~(arr > 0), PREFIX + msg)


def inverse_statics(
    robot: Robot,
    output: Callable[[Array], Array],
    target: Any,
    *,
    q0: Any = None,
    u0: Any = None,
    weights: Any = None,
    loads: Any = None,
    damping: float = 1e-3,
    tol: float = 1e-10,
    max_iter: int = 100,
    throw: bool = True,
) -> InverseStaticSolution:
    """Inputs `u` whose equilibrium `q(u)` puts the outputs `y(q)` on the targets `y*`.

    Damped least squares (Levenberg–Marquardt) over the inputs, with the equilibrium solved
    exactly at every iterate (so every returned pair `(q, u)` is a true equilibrium):

        e(u) = W (y(q(u)) − y*),    ∂q/∂u = (∂r/∂q)⁻¹ A(q)  (implicit function theorem),
        G = W ∂y/∂q ∂q/∂u,          Δu = −(GᵀG + μ² I)⁻¹ Gᵀ e,

    with `μ = damping · |G|` multiplied by 10 after a step that does not reduce `|e|` and
    divided by 10 after one that does. With as many inputs as outputs this converges to an
    exact solution when one exists; with more inputs the damped step is minimum-norm
    (computed as `−Gᵀ (GGᵀ + μ² I)⁻¹ e`, in the row space of `G`), so the inputs that do not
    move the outputs keep their values from `u0`; with fewer, the least-squares best fit (see
    `output_error`).
    A target that is not reached (the iteration ends at a least-squares minimum with `|e|`
    above the tolerance, e.g. an unreachable target) gives `status = 2` (`converged` false)
    and, eagerly with `throw`, a `RuntimeWarning` with the error. The inputs are
    unconstrained: a negative tendon tension in the result means the target needs a push (add
    an antagonistic tendon). Runs under `jit`/`vmap` (one `lax.while_loop`), and under
    forward-mode differentiation (`jax.jvp`, `jax.jacfwd`, also of values the output function
    closes over), through the iterations; JAX's reverse mode (`jax.grad`) does not go through
    a `while_loop`.

    Arguments: the outputs and their targets (what is given) are the only positional
    arguments after the robot; the initial guesses `q0`, `u0` and the options are
    keyword-only, as in `equilibrium`.

    Args:
        robot: the robot.
        output: `y(q) -> (p,)`, e.g. the tip position
            `lambda q: softrigid.forward_kinematics(robot, q)[1][-1]` (jit-traceable; it is a
            compile-time argument: pass the same function object to reuse the compilation).
        target: `(p,)` finite targets `y*`.
        q0, u0: initial configuration and inputs (default zeros).
        weights: optional `(p,)` positive output weights `W` (diagonal).
        loads: optional constant external loads.
        damping: initial relative damping `μ / |G|` (positive).
        tol: stop when `|e| ≤ tol · max(1, |W y*|)`, or when the step is below
            `tol · max(1, |u|)` (a least-squares minimum); no tighter than 100 units of `q`'s
            rounding (float32: 1.2e-5; the equilibria solved on the way likewise).
        max_iter: maximum number of accepted steps.
        throw: raise on failure (default): eagerly a `ValueError` (no equilibrium under `u0`,
            a non-finite output there, no convergence within `max_iter`, a singular
            equilibrium, outputs that do not move with the inputs) or a
            `RuntimeWarning` (target not reached); under `jit`/`vmap` a `softrigid._fault`
            runtime error for the failures (status 1, 3, 4, 5 and 6). With `throw=False` read
            `status`/`converged`.

    Raises:
        ValueError: bad input; with `throw`, the failures above.
    """
    tol, max_iter, throw = check_options(tol, max_iter, throw)
    robot, q, u, loads = setup(robot, u0, q0, loads, "u0")
    if not callable(output):
        raise TypeError("inverse_statics: output must be callable y(q) -> (p,)")
    target = as_float(target, "inverse_statics: target").astype(q.dtype)
    if is_concrete(target) and not np.all(np.isfinite(np.asarray(target))):
        raise ValueError(f"inverse_statics: target must be finite, got {np.asarray(target)}")
    if not isinstance(damping, (int, float)) or isinstance(damping, bool):
        raise ValueError(f"inverse_statics: damping must be a positive number, got {damping!r}")
    if not (np.isfinite(damping) and damping > 0):
        raise ValueError(f"inverse_statics: damping must be a positive number, got {damping!r}")
    y = user_array(
        "inverse_statics: output(q)", trace_user("inverse_statics output", "q", output, q)
    )
    if y.shape != target.shape or target.ndim != 1:
        raise ValueError(
            f"inverse_statics: output(q) has shape {y.shape}, target {target.shape}; "
            "both must be the same (p,)"
        )
    w = (
        jnp.ones_like(target)
        if weights is None
        else _positive_vector("weights", weights, target.shape)
    )
    eager = runs_eagerly(robot, q, u, loads, target, w)
    args = (robot, loads, output, target, w, q, u, float(damping), tol, max_iter)
    # the compiled loop also under a transformation (a jit around it inlines it): eagerly under
    # `jax.jacfwd` or `jax.vmap` the loop ran op by op and compiled again at every call
    sol = _lm_jit(*args)
    if not throw:
        return sol
    if not eager:
        failed = (
            (sol.status == MAX_ITER)
            | (sol.status == NO_EQUILIBRIUM)
            | (sol.status == NON_FINITE_OUTPUT)
            | (sol.status == SINGULAR)
            | (sol.status == INSENSITIVE)
        )
        return raise_if(sol, failed, jnp.maximum(sol.status - 1, 0), _MESSAGES)
    status, err = int(sol.status), float(sol.output_error)
    if status == NON_FINITE_OUTPUT:
        raise ValueError(_MESSAGES[3])
    if status == NO_EQUILIBRIUM:
        # solve it again for the equilibrium's own message
        failed = solve_jit(robot, loads, u, q, tol=_INNER_TOL, max_iter=_INNER_ITER)
        try:
            raise_failure(robot, failed, _INNER_ITER)
        except ValueError as err:
            raise ValueError(f"{_MESSAGES[2]}: {err}") from None
        raise ValueError(_MESSAGES[2])
    if status == MAX_ITER:
        raise ValueError(
            f"inverse_statics: no convergence in {max_iter} iterations (|e| = {err:.3g}, u = "
            f"{np.asarray(sol.u)}); beyond reach the error can creep down without a minimum "
            "where inputs act against each other (antagonistic tendons drifting together): "
            "check that the target is reachable, or raise max_iter"
        )
    if status == SINGULAR:
        at = solve_jit(robot, loads, sol.u, sol.q, tol=_INNER_TOL, max_iter=_INNER_ITER)
        coords, cond = null_coordinates(at.jacobian)
        raise ValueError(
            "inverse_statics: the equilibrium's Jacobian ∂r/∂q is singular at q = "
            f"{np.asarray(sol.q)}, u = {np.asarray(sol.u)} (condition number {cond:.3g}), so "
            "how the outputs move with the inputs, ∂q/∂u = J⁻¹ A, is undefined: coordinates "
            f"{coords} have no restoring force there (no stiffness, gravity or actuation "
            "holds them)"
        )
    if status == INSENSITIVE:
        raise ValueError(
            f"{_MESSAGES[5]} (at q = {np.asarray(sol.q)}, u = {np.asarray(sol.u)}, outputs "
            f"{np.asarray(sol.output)})"
        )
    if status == MINIMUM:
        goal = rounding_tolerance(sol.q, tol) * max(1.0, float(jnp.linalg.norm(w * target)))
        warnings.warn(
            f"inverse_statics: the target is not reached: the iteration ended at a least-squares "
            f"minimum with |W (y − y*)| = {err:.3g} (tolerance {goal:.3g}) after "
            f"{int(sol.iterations)} iterations, u = {np.asarray(sol.u)}; the target is likely "
            "unreachable",
            RuntimeWarning,
            stacklevel=2,
        )
    return sol
