"""Static equilibria under actuation (`softrigid.statics.equilibrium`): the entry (checks of
the robot, inputs, initial guess and options), the errors of a failed solve, and `equilibrium`
itself. An equilibrium solves (`algorithm.md`, `forces.md`)

    r(q) = g(q) + s(q, 0) − Q_ext(q) − A(q) u = ID(q, 0, 0) − A(q) u = 0

(the residual: `_statics_residual`) by Newton's method in one `lax.while_loop`, differentiable
by the implicit function theorem (`_statics_newton`).

When every force is conservative (gravity, elasticity, tendons and pressures at fixed `u`, joint
motors, point forces fixed in the world) `r = ∂Π/∂q` for a total potential `Π`, the Jacobian
is its Hessian, and the equilibrium is stable exactly when the Jacobian is positive definite
(`StaticSolution.stable`). Newton finds unstable equilibria too (an arm balanced upright):
check `stable`. Loads given in a distal frame (follower loads) and moments fixed in the world
(whose work depends on the path of finite 3D rotations; planar rotations commute) are not
conservative: their Jacobian is not symmetric (a spatial rod bent to `κL = 2` by a world
moment: `J − Jᵀ` as large as its bending stiffness), and `stable`, from its symmetric part,
is then not a stability test (an equilibrium can have complex eigenvalues: flutter).

The runtime checks under `jit`/`vmap` are `softrigid._fault.fault_if`.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from ._cache import jit
from ._checks import as_flag, is_real_number, raise_if
from ._entry import check_inputs, check_robot, check_states
from ._loads import check_loads
from ._model import Robot
from ._module import runs_eagerly
from ._soft_body import SoftBody
from ._statics_newton import (
    CONVERGED,
    LINE_SEARCH,
    MAX_ITER,
    NONFINITE,
    SINGULAR,
    SINGULAR_RATIO,
    StaticSolution,
    solve_jit,
    solve_plain_jit,
)

__all__ = [
    "StaticSolution",
    "check_options",
    "equilibrium",
    "null_coordinates",
    "raise_failure",
    "setup",
]

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


def setup(
    robot: Any, u: Any, q0: Any, loads: Any, u_name: str = "u"
) -> tuple[Robot, Array, Array, tuple]:
    """Checked robot, initial `q` (default zeros), inputs `u` (default zeros; named `u_name`
    in errors) and loads; shapes always, finiteness when concrete (under `jit` the runtime
    check of the status does it)."""
    robot = check_robot(robot)
    if robot.n_q == 0:
        raise ValueError("the robot has no coordinates: there is nothing to solve for")
    q = jnp.zeros(robot.n_q) if q0 is None else q0
    u = jnp.zeros(robot.n_u) if u is None else u
    (q,) = check_states(robot, q0=q)
    dtype = jnp.result_type(q.dtype, float)
    u = check_inputs(robot, u, dtype, u_name)
    return robot, q.astype(dtype), u, check_loads(robot, loads)


def check_options(tol: Any, max_iter: Any, throw: Any) -> tuple[float, int, bool]:
    """The solvers' options as Python values (NumPy scalars accepted): `tol` in `(0, 1)` (an
    argument of the compiled solve: another tolerance reuses its program), `max_iter` in
    `[1, 2³¹)` (a compile-time constant: it sizes the history), `throw` a boolean (a string
    `"False"` would be read as true)."""
    if not is_real_number(tol) or not 0 < tol < 1:
        raise ValueError(f"tol must be a number in (0, 1), got {tol!r}")
    count = isinstance(max_iter, (int, np.integer)) and not isinstance(max_iter, bool)
    if not count or not 1 <= max_iter < 2**31:
        raise ValueError(f"max_iter must be a positive integer below 2**31, got {max_iter!r}")
    return float(tol), int(max_iter), as_flag("throw", throw)


def null_coordinates(jac: Any) -> tuple[list[int], float]:
    """The coordinates that the null space of a singular Jacobian `(n, n)` moves and the
    Jacobian's condition number: the right singular vectors of the singular values up to
    `SINGULAR_RATIO` of the largest (at least the last one), and the coordinates whose norm
    over them is above a tenth of the largest."""
    _, sv, vt = np.linalg.svd(np.asarray(jac))
    small = sv <= SINGULAR_RATIO * sv[0]
    rows = vt[small] if small[-1] else vt[-1:]
    null = np.linalg.norm(rows, axis=0)
    coords = np.flatnonzero(null > 0.1 * null.max()).tolist()
    return coords, float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf


def _singular_message(robot: Robot, sol: StaticSolution) -> str:
    """Name the coordinates in the Jacobian's null space, and for strain coordinates of soft
    bodies the likely cause: an axial quadrature too coarse for the strain basis."""
    coords, cond = null_coordinates(sol.jacobian)
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


@jit
def _runtime_check(sol: StaticSolution) -> StaticSolution:
    """`softrigid._fault.fault_if`: raise (also under `jit`/`vmap`) when the status is not 0;
    attached to every field, so the check runs whichever field the caller uses. Compiled: an
    eager `jax.vmap` or `jax.grad` runs it as one program instead of op by op."""
    index = jnp.clip(sol.status - 1, 0, len(_MESSAGES) - 1)
    return raise_if(sol, sol.status != CONVERGED, index, _MESSAGES)


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
    iterates (relative to the forces in play; an exact equilibrium as `q0` takes 0 steps), and
    the next Newton correction below `tol · max(1, max|q|)` entrywise, or no longer reducing
    `max|r|` (rounding): a weakly held coordinate beside a stiff one (a rod's bending beside
    its axial stiffness) is resolved to `tol` as well. Below `|q| = 1` both tests are
    absolute: `q` is accurate to about `tol`, not to `tol · |q|` (a load whose deflection is
    below `tol` returns `q0` after 0 steps: pass a smaller `tol` for tiny loads).

    `stable` tests the symmetric part of `J`: a stability test where every force is
    conservative, not with follower loads or moments fixed in the world on 3D rotations (see
    the module docstring).

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
        tol: relative tolerance of the residual and of the Newton correction; no tighter
            than 100 units of `q`'s rounding (float32: 1.2e-5).
        max_iter: maximum number of Newton steps.
        throw: raise when the solve fails (default). Eagerly that is a `ValueError` with the
            details; under `jit`/`vmap` a runtime error (`softrigid._fault`) with the status's
            message. With `throw=False` read `status`/`converged` instead.

    Returns:
        a `StaticSolution(q, u, iterations, residual, status, stable, jacobian, history)`.

    Raises:
        ValueError: bad input; with `throw`: a singular Jacobian (naming the coordinates that
            nothing holds), a failed line search, a non-finite residual, or no convergence
            within `max_iter` (never a silent last iterate).
    """
    tol, max_iter, throw = check_options(tol, max_iter, throw)
    robot, q, u, loads = setup(robot, u, q0, loads)
    # eager: concrete arguments outside every transformation; under one, a user function of
    # the model (a kinematics map, an energy) may close over its tracers, which the arguments
    # do not show (eager `vmap`/`jacfwd` over such a closure read a traced status)
    eager = runs_eagerly(robot, u, q, loads)
    # the compiled solve also under a transformation (a jit around it inlines it): an eager
    # `jax.grad` or `jax.vmap` of a function that builds the robot from its parameter ran the
    # Newton loop op by op and compiled it again at every call (15 s per gradient). Eagerly
    # no derivative of the result can be asked: the solve without the implicit function
    # theorem's tracing (`solve_plain_jit`)
    solve = solve_plain_jit if eager else solve_jit
    sol = solve(robot, loads, u, q, tol=tol, max_iter=max_iter)
    if not throw:
        return sol
    if eager:
        raise_failure(robot, sol, max_iter)
        return sol
    return _runtime_check(sol)
