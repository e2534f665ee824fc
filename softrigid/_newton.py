"""Newton's method for the implicit schemes' step equations, keeping the iteration matrix while
it converges (modified Newton).

An implicit step solves for the new acceleration `x = q̈₁` the residual

    r(x) = ν(t₁, q₁(x), q̇₁(x), x) = M(q₁) x + bias(q₁, q̇₁) − A(q₁) u,

with `q₁`, `q̇₁` affine in `x` (`∂q₁/∂x = h_q`, `∂q̇₁/∂x = h_v`). Its Jacobian, the iteration
matrix

    K = ∂r/∂x = M + h_v ∂r/∂q̇ + h_q ∂r/∂q,

needs the derivatives of the dynamics (`softrigid._derivatives.residual_derivatives`, and the
controller's feedback `A ∂u/∂(q, q̇)` with `M` and `A` held, `Dynamics.linearized`), which cost
many residuals on a heavy body (about 30 on the meshed helicoid). The iteration

    x_{k+1} = x_k − K⁻¹ r(x_k)

therefore uses a `K` evaluated at an earlier iterate, of this step or of an earlier one (the step
`h` is fixed, so `K` changes only with the state), and evaluates a new one only when the
iteration contracts too slowly. With the contraction rate `θ_k = ‖Δx_k‖ / ‖Δx_{k−1}‖` under one
matrix:

* `θ_k > θ_max`, or a non-finite iterate, marks `K` stale: the next iteration evaluates it at the
  current iterate (from there the iteration is Newton's, quadratic);
* `θ_k ≥ 1` (diverging) or a non-finite iterate under an old matrix is not taken: the iterate is
  kept and the matrix refreshed there;
* an iteration that has not converged after half of `max_iter`, and whose last step was no
  shorter than the one before (not converging), starts again, once, from `x = 0` (the
  previous acceleration, the usual start, can be far from the step's root where the implicit
  step damps a stiff mode: a body released from a strained state, whose first `h² q̈₀` lies
  far outside the region where the step equation is nearly linear);
* a linearly converging iterate is within `θ_k/(1 − θ_k) ‖Δx_k‖` of the root, so the iteration
  stops when `η_k ‖Δx_k‖∞ ≤ tol (1 + ‖x_{k+1}‖∞)`, with `η_k = θ_k/(1 − θ_k)`, and `η = 1` for
  the first iteration under a matrix (Newton's own increment test).

`full=True` evaluates `K` at every iterate (Newton's method). Under `vmap` the branch between a
new and a kept matrix is taken on the whole batch's flag (`unvmap_any`): an iteration where
some member's matrix is stale evaluates the matrix for all and each member keeps its own unless
stale, so every member iterates as it would alone (a batched predicate would make the branch a
select that evaluated the matrix at every iteration, full Newton's price). The solve is
wrapped in `lax.custom_root`, so `jax.grad` differentiates the converged step by the implicit
function theorem (the matrix is not differentiated: it only steers the iteration).
`custom_root` traces the linearized residual and its tangent solve at every step's trace,
differentiated or not; a run that nothing can differentiate (an eager `simulate`,
`Dynamics.differentiable` false) solves without it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from equinox.internal import unvmap_any
from jax import Array

from ._closed_loop import Dynamics
from ._module import rounding_tolerance

__all__ = ["IterationMatrix", "newton"]


class IterationMatrix(NamedTuple):
    """The iteration matrix `K` `(n_q, n_q)` an implicit scheme carries from step to step,
    whether it may be used (`valid`, a float flag: 1 kept from the last step, 0 to evaluate),
    and how many matrices the run has evaluated so far (`evaluations`, a float count)."""

    matrix: Array
    valid: Array
    evaluations: Array

    @classmethod
    def empty(cls, n: int, dtype: Any) -> IterationMatrix:
        """No matrix yet: the first iteration evaluates one."""
        zero = jnp.zeros((), dtype)
        return cls(jnp.zeros((n, n), dtype), zero, zero)


def newton(
    dyn: Dynamics,
    t1: Array,
    kin: Callable[[Array], tuple[Array, Array]],
    h_q: Array,
    h_v: Array,
    x0: Array,
    kept: IterationMatrix,
    tol: float | Array,
    max_iter: int,
    theta_max: float | Array,
    full: bool,
) -> tuple[Array, Array, IterationMatrix]:
    """Solve `r(x) = ν(t₁, q₁(x), q̇₁(x), x) = 0` from `x0` (module docstring).

    Args:
        dyn: the closed-loop dynamics; `kin(x) = (q₁, q̇₁)` with `∂q₁/∂x = h_q`,
            `∂q̇₁/∂x = h_v`.
        kept: the matrix of an earlier step (used while it converges unless `full`).
        tol, max_iter: the stopping test and the number of residual evaluations allowed.
        theta_max: the contraction rate above which the matrix is evaluated anew.
        full: evaluate the matrix at every iterate (Newton's method).

    Returns:
        `(x, ok, matrix)`: the root, whether the iteration converged, and the matrix to keep.
    """

    # no tighter than 100 units of the dtype's rounding (float32: 1.2e-5), which the
    # increments cannot go below: the default 1e-10 would never be met in float32
    tol = jnp.maximum(tol, rounding_tolerance(x0, 0.0))  # traced: another tol, same program

    def residual(x: Array) -> Array:
        q1, qd1 = kin(x)
        return dyn.residual(t1, q1, qd1, x)

    def evaluated(x: Array, _: Array) -> tuple[Array, Array]:
        # r and K = M + h_v ∂r/∂q̇ + h_q ∂r/∂q at x, with r = ν − A u(t, q, q̇): the derivatives
        # of ν − A u at fixed u, minus the law's feedback A ∂u/∂(q, q̇)
        q1, qd1 = kin(x)
        r, mass, d_q, d_qd = dyn.linearized(t1, q1, qd1, x)
        return r, mass + h_v * d_qd + h_q * d_q

    def refreshed(x: Array, matrix: Array, stale: Array) -> tuple[Array, Array]:
        r, fresh = evaluated(x, matrix)
        return r, jnp.where(stale, fresh, matrix)

    def reused(x: Array, matrix: Array, stale: Array) -> tuple[Array, Array]:
        del stale
        return residual(x), matrix

    restart_at = max_iter // 2 if max_iter >= 4 else -1

    def solve(_: Any, guess: Array) -> tuple[Array, tuple[Array, Array]]:
        def cond(c: tuple[Array, ...]) -> Array:
            x, _, _, _, it, done, _, _ = c
            return ~done & (it < max_iter) & jnp.all(jnp.isfinite(x))

        def body(c: tuple[Array, ...]) -> tuple[Array, ...]:
            x, matrix, stale, previous, it, _, evaluations, last = c
            # half the iterations spent and the last step no shorter than the one before (not
            # converging): restart once from x = 0 with a matrix evaluated there
            restart = (it == restart_at) & jnp.any(guess != 0) & ~(last[1] < last[0])
            x = jnp.where(restart, jnp.zeros_like(x), x)
            stale = stale | restart
            previous = jnp.where(restart, jnp.inf, previous)
            if full:
                r, matrix = evaluated(x, matrix)
            else:
                # on the whole batch's flag (`unvmap_any`): under `vmap` a batched predicate
                # made the branch a select that evaluated the matrix at every iteration; now
                # one member's stale matrix evaluates all, and each keeps its own unless stale
                r, matrix = jax.lax.cond(unvmap_any(stale), refreshed, reused, x, matrix, stale)
            dx = jnp.linalg.solve(matrix, r)
            step = jnp.max(jnp.abs(dx))
            # θ_k = ‖Δx_k‖ / ‖Δx_{k−1}‖ under one matrix (0 for the first: `previous` is inf)
            theta = step / previous
            new = x - dx
            bad = ~jnp.all(jnp.isfinite(new)) | (theta >= 1)
            # an old matrix that diverges is not followed: keep x, evaluate K there
            x_next = jnp.where(bad & ~stale, x, new)
            eta = jnp.where(jnp.isfinite(previous), theta / (1 - theta), 1.0)
            done = ~bad & (eta * step <= tol * (1 + jnp.max(jnp.abs(new))))
            refresh = full | (~done & (bad | (theta > theta_max)))
            previous = jnp.where(refresh, jnp.inf, step)
            evaluations = evaluations + stale.astype(evaluations.dtype)
            last = jnp.where(restart, jnp.inf, jnp.stack([last[1], step]))
            return x_next, matrix, refresh, previous, it + 1, done, evaluations, last

        start = (
            guess,
            jax.lax.stop_gradient(kept.matrix),
            full | (kept.valid < 0.5),
            jnp.asarray(jnp.inf, guess.dtype),
            jnp.asarray(0),
            jnp.asarray(False),
            jax.lax.stop_gradient(kept.evaluations),
            jnp.full(2, jnp.inf, guess.dtype),  # the last two step sizes
        )
        x, matrix, _, _, _, done, evaluations, _ = jax.lax.while_loop(cond, body, start)
        # float flags and counts: custom_root gives its auxiliary outputs (zero) tangents
        ok = (done & jnp.all(jnp.isfinite(x))).astype(x.dtype)
        return x, (ok, matrix, evaluations)

    def tangent_solve(g: Callable[[Array], Array], y: Array) -> Array:
        # g is the linearized residual, x ↦ (∂r/∂x) x: its forward-mode Jacobian is the exact
        # matrix, and traces far less than reverse mode (traced with every implicit step, also
        # when nothing is differentiated)
        return jnp.linalg.solve(jax.jacfwd(g)(y), y)

    if dyn.differentiable:
        x, aux = jax.lax.custom_root(residual, x0, solve, tangent_solve, has_aux=True)
    else:  # nothing differentiates the run: the loop alone, without custom_root's tracing
        x, aux = solve(residual, x0)
    ok, matrix, evaluations = jax.lax.stop_gradient(aux)
    return x, ok > 0.5, IterationMatrix(matrix, ok, evaluations)
