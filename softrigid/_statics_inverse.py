"""Inverse statics: the inputs whose equilibrium puts outputs `y(q)` on targets `y*`.

Damped least squares (Levenberg–Marquardt) over the inputs `u`, with the equilibrium `q(u)`
solved by Newton (`softrigid._statics_newton`) at every iterate, so every returned pair
`(q, u)` is a true equilibrium; Newton starts from the prediction `q + ∂q/∂u Δu` (a quarter
fewer Newton steps on the helicoid robot's statics; a prediction that fails, e.g. past a
body map's range, is a rejected trial like any other):

    e(u) = W (y(q(u)) − y*),    ∂q/∂u = J⁻¹ A(q)  (implicit function theorem, J = ∂r/∂q),
    G = W ∂y/∂q J⁻¹ A,          Δu = −(GᵀG + μ² I)⁻¹ Gᵀ e  (= −Gᵀ (GGᵀ + μ² I)⁻¹ e).

The iteration is one `jax.lax.while_loop` (the equilibrium's Newton loop nested in it), so it
runs under `jit` and `vmap` (e.g. over targets) and reports through a status. With at least
as many outputs as inputs its solution is differentiated by the implicit function theorem. The
loop and its differentiation live in `softrigid._statics_levenberg`; here the entry and its
errors.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from ._checks import as_float, is_real_number, raise_if, traced_check
from ._model import Robot
from ._module import is_concrete, rounding_tolerance, runs_eagerly
from ._reports import PREFIX
from ._statics_equilibrium import check_options, null_coordinates, raise_failure, setup
from ._statics_levenberg import (
    INNER_ITER,
    INNER_TOL,
    INSENSITIVE,
    MAX_ITER,
    MINIMUM,
    NO_EQUILIBRIUM,
    NON_FINITE_OUTPUT,
    SINGULAR,
    InverseStaticSolution,
    lm_jit,
    lm_plain_jit,
)
from ._statics_newton import solve_plain_jit
from .kinematics._base import trace_user, user_array

__all__ = ["InverseStaticSolution", "inverse_statics"]

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
    an antagonistic tendon). Runs under `jit`/`vmap` (one `lax.while_loop`). With at least as
    many outputs as inputs the solution is differentiated by the implicit function theorem, in
    forward and reverse mode (`jax.jacfwd`, `jax.grad`: with respect to the target, the
    weights, the robot's parameters and the loads): with as many, of `y(q) = y*` (meaningful
    where the target is reached); with more, of the least-squares optimality `Gᵀ e = 0`
    (the best fit's derivative, also where the target is out of reach, status 2; it
    differentiates `∂r/∂q` and `A`, one order more of the bodies' maps). With fewer outputs
    than inputs, where the solution depends on the iterations' path, forward mode only,
    through the iterations (JAX's reverse mode does not go through a `while_loop`).

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
    if not is_real_number(damping):  # NumPy scalars too, as `tol` and `max_iter`
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
    # `jax.jacfwd` or `jax.vmap` the loop ran op by op and compiled again at every call; an
    # eager call, whose result nothing differentiates, without the implicit function theorem's
    # tracing (`lm_plain_jit`)
    sol = (lm_plain_jit if eager else lm_jit)(*args)
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
        failed = solve_plain_jit(robot, loads, u, q, tol=INNER_TOL, max_iter=INNER_ITER)
        try:
            raise_failure(robot, failed, INNER_ITER)
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
        at = solve_plain_jit(robot, loads, sol.u, sol.q, tol=INNER_TOL, max_iter=INNER_ITER)
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
