"""Newton's method for a static equilibrium `r(q) = 0` (`softrigid.statics`; the residual is
`_statics_residual`'s), written as one `jax.lax.while_loop` with the exact Jacobian
`J = ∂r/∂q` and a backtracking line search on `max |r|`: it runs under `jit` and `vmap` and
reports how it ended through `StaticSolution.status`.

Gradients of the equilibrium flow by the implicit function theorem (`jax.lax.custom_root`, not
through the iterations): with `r(q*, θ) = 0`,

    ∂q*/∂θ = −J⁻¹ ∂r/∂θ,    e.g. ∂q*/∂u = J⁻¹ A(q*),

for `θ` the inputs or any physical parameter of the robot (stiffness, modulus, mass, length).

Libraries: Optimistix is not used: its `Newton` root finder has no line search, and its
least-squares solvers with a search stop on a relative step (Cauchy) test; neither gives the
residual test against the forces in play, nor the singular-Jacobian, line-search and
non-finite statuses this solver reports. The loop is therefore written here, and the implicit
differentiation comes from `jax.lax.custom_root`, which is what `optimistix.ImplicitAdjoint`
would add.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from ._cache import jit
from ._charts import has_charts, rechart
from ._checks import status_is
from ._entry import trial_evaluations
from ._model import Robot
from ._module import rounding_tolerance
from ._statics_residual import jacobian, residual

__all__ = [
    "CONVERGED",
    "LINE_SEARCH",
    "MAX_ITER",
    "NONFINITE",
    "SINGULAR",
    "SINGULAR_RATIO",
    "StaticSolution",
    "dense_tangent_solve",
    "newton",
    "solve_equilibrium",
    "solve_jit",
    "solve_plain_jit",
]

_ARMIJO = 1e-4
_MIN_STEP = 2.0**-30
# a Jacobian is singular when its smallest singular value is at most this times its largest
SINGULAR_RATIO = 1e-12

# StaticSolution.status
CONVERGED, MAX_ITER, SINGULAR, LINE_SEARCH, NONFINITE = 0, 1, 2, 3, 4
_RUNNING = -1


class StaticSolution(NamedTuple):
    """An equilibrium (a pytree: batched under `vmap`; `q` and `jacobian` differentiable, `q`
    by the implicit function theorem).

    Attributes:
        q: `(n_q,)` equilibrium configuration (the last iterate when `status != 0`).
        u: `(n_u,)` inputs it holds under (generalized forces without actuators).
        iterations: Newton steps taken (integer array).
        residual: final `max |r|` [generalized force units].
        status: `0` converged, `1` no convergence within `max_iter`, `2` singular Jacobian,
            `3` line search failed, `4` non-finite residual or Jacobian (integer array).
        stable: the Jacobian `∂r/∂q` (the stiffness of the static balance) is positive definite
            (its symmetric part: a stability test where every force is conservative, not with
            follower loads or moments fixed in the world on 3D rotations, `equilibrium`).
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
        """`status == 0` (a NumPy bool for a computed solution, `status_is`)."""
        return status_is(self.status, CONVERGED)


class _Carry(NamedTuple):
    """The state of the Newton loop: the accepted iterate and its balance, the step being
    tried, and the bookkeeping."""

    q: Array  # accepted iterate
    r: Array  # r(q)
    jac: Array  # ∂r/∂q at q
    actuation: Array  # A(q), from the same pass as the Jacobian
    norm: Array  # max |r(q)|
    scale: Array  # the largest force scale met so far
    step: Array  # Newton direction Δ at q
    alpha: Array  # line-search fraction of Δ being tried
    it: Array  # Newton steps taken
    status: Array  # _RUNNING until the loop ends
    started: Array  # the initial guess has been evaluated
    singular: Array  # ∂r/∂q at q is singular (what the inverse statics' ∂q/∂u needs)
    balanced: Array  # max |r(q)| ≤ tol · F at the accepted iterate
    history: Array  # max |r| of the accepted iterates, NaN-padded


def newton(
    robot: Robot, loads: tuple, u: Array, q0: Array, tol: float | Array, max_iter: int
) -> tuple[Array, _Carry]:
    """Newton with backtracking from `q0` (its rotation vectors re-charted to `|φ| ≤ π`): the
    last iterate and the loop's final state.

    Each pass evaluates `r` at the trial point `q + α Δ` (the first pass evaluates `q0`
    itself), and `J` (`_statics_residual.jacobian`, traced once) only where the trial is
    accepted. A trial is accepted when
    `max|r(q + αΔ)| ≤ (1 − 10⁻⁴ α) max|r(q)|`, else `α` is halved. At an accepted point the
    loop stops when `max|r| ≤ tol · F`, with `F = max(max|g|, max|s|, max|Q_ext|, max|A u|,
    max|J|)` the largest force met so far; the last term, the force of a unit change of the
    coordinates, keeps the test meaningful where every force vanishes at the solution (a
    hanging arm, zero inputs), and the next Newton correction is below
    `tol · max(1, max|q|)` (entrywise) or its trial no longer reduces `max|r|` (the residual's
    rounding). Otherwise the next direction solves `J Δ = −r`.
    """
    n = q0.shape[0]
    dtype = q0.dtype
    # no tighter than 100 units of the dtype's rounding (float32: 1.2e-5): the default 1e-10,
    # and the inverse statics' inner 1e-12, would never be met in float32 (`tol` is traced:
    # one program serves every tolerance)
    tol = jnp.maximum(tol, rounding_tolerance(q0, 0.0))
    if has_charts(robot):
        # a rotation vector near |φ| = 2π, where ∂r/∂q is nearly singular, starts from the same
        # rotation at |φ| ≤ π (`simulate` re-charts its start too)
        q0 = rechart(robot, q0, jnp.zeros_like(q0))[0]

    def body(c: _Carry) -> _Carry:
        trial = c.q + c.alpha * c.step
        with trial_evaluations():  # a trial past a map's range is rejected, not raised
            r, scale = residual(robot, loads, u, trial)
        norm = jnp.max(jnp.abs(r))
        accept = jnp.isfinite(norm) & (~c.started | (norm <= (1.0 - _ARMIJO * c.alpha) * c.norm))
        # ∂r/∂q only at an accepted trial: a rejected one costs one residual, not n_q
        # directions (under vmap both branches run, as before)
        with trial_evaluations():
            jac, act = jax.lax.cond(
                accept,
                lambda x: jacobian(robot, loads, u, x),
                lambda x: (c.jac, c.actuation),
                trial,
            )
        it = c.it + (accept & c.started).astype(c.it.dtype)
        scale = jnp.maximum(c.scale, jnp.maximum(scale, jnp.max(jnp.abs(jac))))
        balanced = norm <= tol * scale
        jac_finite = jnp.all(jnp.isfinite(jac))
        sv = jnp.linalg.svd(jnp.where(jac_finite, jac, 0.0), compute_uv=False)
        singular = ~(sv[-1] > SINGULAR_RATIO * sv[0])
        # Newton direction: J Δ = −r
        step = jnp.linalg.solve(jnp.where(singular | ~jac_finite, jnp.eye(n, dtype=dtype), jac), -r)
        # the balance alone would stop a coordinate of weak stiffness early (a rod's bending
        # beside its axial stiffness, 2e4 times larger: q off by 3e-7 at tol = 1e-10): also the
        # next correction must be below tol, or must fail to reduce the residual (rounding)
        settled = jnp.max(jnp.abs(step)) <= tol * jnp.maximum(1.0, jnp.max(jnp.abs(trial)))
        converged = balanced & (settled | singular)
        alpha = 0.5 * c.alpha
        status = jnp.select(
            [
                ~c.started & ~accept,
                accept & ~jac_finite,
                accept & converged,
                ~accept & c.balanced,
                accept & (it >= max_iter),
                accept & singular,
                ~accept & (alpha < _MIN_STEP),
            ],
            [NONFINITE, NONFINITE, CONVERGED, CONVERGED, MAX_ITER, SINGULAR, LINE_SEARCH],
            _RUNNING,
        ).astype(c.status.dtype)

        def pick(new: Array, old: Array) -> Array:
            return jnp.where(accept, new, old)

        return _Carry(
            q=pick(trial, c.q),
            r=pick(r, c.r),
            jac=pick(jac, c.jac),
            actuation=pick(act, c.actuation),
            norm=pick(norm, c.norm),
            scale=pick(scale, c.scale),
            step=pick(step, c.step),
            alpha=pick(jnp.ones_like(alpha), alpha),
            it=it,
            status=status,
            started=jnp.ones_like(c.started),
            singular=pick(singular, c.singular),
            balanced=pick(balanced, c.balanced),
            history=pick(c.history.at[it].set(norm), c.history),
        )

    init = _Carry(
        q=q0,
        r=jnp.zeros(n, dtype),
        jac=jnp.zeros((n, n), dtype),
        actuation=jnp.zeros((n, robot.n_u), dtype),
        norm=jnp.asarray(jnp.inf, dtype),
        scale=jnp.zeros((), dtype),
        step=jnp.zeros(n, dtype),
        alpha=jnp.ones((), dtype),
        it=jnp.zeros((), jnp.int32),
        status=jnp.asarray(_RUNNING, jnp.int32),
        started=jnp.zeros((), bool),
        singular=jnp.zeros((), bool),
        balanced=jnp.zeros((), bool),
        history=jnp.full(max_iter + 1, jnp.nan, dtype),
    )
    out = jax.lax.while_loop(lambda c: c.status == _RUNNING, body, init)
    return out.q, out


def dense_tangent_solve(linear: Callable[[Array], Array], rhs: Array) -> Array:
    """`custom_root`'s tangent solve: `x` with `linear(x) = rhs`, the matrix of the linearized
    root function assembled by forward mode (`J` of the equilibrium; `[[J, −A], [W ∂y/∂q, 0]]`
    of the square inverse statics)."""
    return jnp.linalg.solve(jax.jacfwd(linear)(rhs), rhs)


def solve_equilibrium(
    robot: Robot, loads: tuple, u: Array, q0: Array, tol: float | Array, max_iter: int
) -> StaticSolution:
    """The equilibrium as a `StaticSolution`, differentiable by the implicit function theorem:
    `jax.lax.custom_root` differentiates `r(q*, θ) = 0` (`∂q*/∂θ = −J⁻¹ ∂r/∂θ`) with respect to
    everything `r` closes over (`u`, the robot's parameters, the loads)."""

    def balance(q: Array) -> Array:
        return residual(robot, loads, u, q)[0]

    def solve(_: Callable, guess: Array) -> tuple[Array, _Carry]:
        q, c = newton(robot, loads, u, guess, tol, max_iter)
        # custom_root gives integer and boolean aux outputs integer tangents (not float0):
        # they travel as floats, or not at all where `solution` does not read them
        return q, c._replace(
            it=c.it.astype(q.dtype),
            status=c.status.astype(q.dtype),
            started=None,
            singular=None,
            balanced=None,
        )

    q, c = jax.lax.custom_root(balance, q0, solve, dense_tangent_solve, has_aux=True)
    # custom_root's auxiliary outputs carry no derivative: J's is that of ∂r/∂q at q*
    return solution(q, u, c._replace(jac=_differentiable_jacobian(robot, loads, u, q, c.jac)))


def _differentiable_jacobian(robot: Robot, loads: tuple, u: Array, q: Array, value: Array) -> Array:
    """`value`, the Jacobian `J = ∂r/∂q` the Newton loop evaluated at `q`, with the derivative
    of `jacobian(robot, loads, u, q)` (`StaticSolution.jacobian` under `jax.grad`: zero before,
    silently, as an auxiliary output of `custom_root`). `J` is not evaluated again unless
    differentiated; its closure (a user map closing over a tracer of the caller's
    transformation, say) becomes explicit arguments, as `custom_root` does with its own."""
    fn, consts = jax.closure_convert(lambda x: jacobian(robot, loads, u, x)[0], q)
    return _held(fn, value, q, *consts)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _held(fn: Callable[..., Array], value: Array, q: Array, *consts: Array) -> Array:
    del fn, q, consts
    return value


@_held.defjvp
def _held_jvp(fn: Callable[..., Array], primals: tuple, tangents: tuple) -> tuple[Array, Array]:
    value, *args = primals
    _, d_jac = jax.jvp(fn, tuple(args), tuple(tangents[1:]))
    return value, d_jac


def solution(q: Array, u: Array, c: _Carry) -> StaticSolution:
    """The `StaticSolution` of the final state `c` of the Newton loop."""
    # stable: the symmetric part of J is positive definite
    stable = jnp.linalg.eigvalsh(0.5 * (c.jac + c.jac.T))[0] > 0
    it, status = c.it.astype(jnp.int32), c.status.astype(jnp.int32)
    return StaticSolution(q, u, it, c.norm, status, stable, c.jac, c.history)


def solve_plain(
    robot: Robot, loads: tuple, u: Array, q0: Array, tol: float | Array, max_iter: int
) -> StaticSolution:
    """`solve_equilibrium` without its implicit differentiation, for arguments that nothing
    traces (no derivative can be asked of the result): `jax.lax.custom_root` traces the
    residual and its linearization at every call, differentiated or not, which on the helicoid
    robot of `examples/helicoid_tracking.py` was about half of the inverse statics' tracing
    (`inverse_statics`, `lm_plain_jit`). The same loop, the same solution."""
    q, c = newton(robot, loads, u, q0, tol, max_iter)
    return solution(q, u, c)


# `tol` is an argument of the programs (a new tolerance does not compile again); `max_iter`
# sizes the history, a compile-time constant
solve_jit = jit(solve_equilibrium, loops=True, static_argnames=("max_iter",))
solve_plain_jit = jit(solve_plain, loops=True, static_argnames=("max_iter",))
