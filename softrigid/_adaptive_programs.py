"""The compiled callbacks of the adaptive stiff methods (`softrigid._radau`): the closed loop's
`ẏ = (q̇, q̈)` with its inputs `u`, and the Jacobians `∂ẏ/∂y` they step with (exact, with the
controller's feedback linearized, or by central differences of `ẏ`). Module-level functions
of the robot and the controller (traced arguments), so a repeated run compiles nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._cache import jit
from ._closed_loop import closed_loop
from ._controller import Controller
from ._dynamics import solve_accelerations, terms
from ._entry import trial_evaluations
from ._model import Robot

__all__ = ["central_differences", "closed_loop_jacobian", "linearized_jacobian", "radau_rhs"]


def central_differences(
    f: Callable[[Any, np.ndarray], np.ndarray], t: Any, y: np.ndarray
) -> np.ndarray:
    """`∂f/∂y` at `(t, y)` by central differences, column by column:

        J[:, j] = (f(t, y + h_j e_j) − f(t, y − h_j e_j)) / (2 h_j),
        h_j = ∛ε · max(|y_j|, 1),

    second order: truncation `O(h²)` and rounding `O(ε/h)` both `O(ε^⅔)` relative (`h_j` taken
    as the difference of the rounded points, so the quotient divides by the step actually
    made). `f` may return JAX arrays not yet computed: all `2 n` evaluations are dispatched
    first, and the differences are taken once they are all in."""
    step = np.cbrt(np.finfo(y.dtype).eps) * np.maximum(np.abs(y), 1.0)
    up, down = y + np.diag(step), y - np.diag(step)
    values = [(f(t, p), f(t, m)) for p, m in zip(up, down)]
    columns = [np.asarray(fp) - np.asarray(fm) for fp, fm in values]
    return np.stack(columns, axis=1) / (np.diagonal(up) - np.diagonal(down))


def _rhs(
    robot: Robot, loads: tuple, policy: Controller | None, law: Callable | None, solver: str
) -> Callable[[Array, Array], tuple[Array, Array]]:
    """`(t, y) ↦ (ẏ, u)` of the closed loop, `ẏ = (q̇, q̈)` at `y = (q, q̇)`."""
    dyn = closed_loop(robot, loads, policy, law, solver=solver)
    n = robot.n_q

    def rhs(t: Array, y: Array) -> tuple[Array, Array]:
        q, qd = y[:n], y[n:]
        with trial_evaluations():  # scipy's stages: a non-finite one shortens the step
            qdd, u = dyn.evaluate(t, q, qd)
        return jnp.concatenate([qd, qdd]), u

    return rhs


_PROGRAM = functools.partial(jit, static_argnames=("law", "solver"))


@_PROGRAM
def radau_rhs(
    robot: Robot,
    loads: tuple,
    policy: Controller | None,
    law: Callable | None,
    solver: str,
    t: Array,
    y: Array,
) -> tuple[Array, Array]:
    """`(ẏ, u)` of the closed loop at `y = (q, q̇)`, the inputs `u` there too (the recorded
    inputs come from this program: no second compilation)."""
    return _rhs(robot, loads, policy, law, solver)(t, y)


def _first_order(lower: Array) -> Array:
    """`∂ẏ/∂y = [[0, I], [∂q̈/∂q, ∂q̈/∂q̇]]` of `y = (q, q̇)` from its lower rows `(n, 2n)`."""
    n = lower.shape[0]
    upper = jnp.concatenate([jnp.zeros((n, n), lower.dtype), jnp.eye(n, dtype=lower.dtype)], 1)
    return jnp.concatenate([upper, lower])


@_PROGRAM
def closed_loop_jacobian(
    robot: Robot,
    loads: tuple,
    policy: Controller | None,
    law: Callable | None,
    solver: str,
    t: Array,
    y: Array,
) -> Array:
    """`∂ẏ/∂y` of the whole closed loop, exact (the law's dependence on `M`, the bias and `A`
    included): `Dynamics.jacobian` (link-local derivatives of the model), or forward mode
    through the loop under constraints."""
    dyn = closed_loop(robot, loads, policy, law, solver=solver)
    n = robot.n_q
    if dyn.constraints:
        rhs = _rhs(robot, loads, policy, law, solver)
        return jax.jacfwd(lambda x: rhs(t, x)[0])(y)
    return _first_order(dyn.jacobian(t, y[:n], y[n:]))


@_PROGRAM
def linearized_jacobian(
    robot: Robot,
    loads: tuple,
    policy: Controller | None,
    law: Callable | None,
    solver: str,
    t: Array,
    y: Array,
) -> Array:
    """`∂ẏ/∂y` with the controller's feedback taken with `M` and `A` held at their value
    (`Dynamics.linearized`)."""
    dyn = closed_loop(robot, loads, policy, law, solver=solver)
    n = robot.n_q
    q, qd = y[:n], y[n:]
    tm = terms(robot, q, qd, loads)
    u = dyn.checked(dyn.law(t, q, qd, tm if dyn.needs_terms else None), q)
    qdd = solve_accelerations(robot, tm, u, check=False)
    _, mass, d_q, d_qd = dyn.linearized(t, q, qd, qdd, tm)
    # ∂q̈/∂y = −M⁻¹ ∂r/∂y, r = ν − A u(t, q, q̇)
    return _first_order(-jnp.linalg.solve(mass, jnp.concatenate([d_q, d_qd], axis=1)))
