"""The adaptive stiff method of `softrigid.simulate`: scipy's Radau IIA.

`Radau.integrate` runs `scipy.integrate.solve_ivp(method="Radau")` on the host with jitted
callbacks, the closed loop's `ẏ = (q̇, q̈)` and (by default) its exact Jacobian from the
dynamics derivatives; the callbacks are module-level functions of the robot and the controller
(traced arguments), so a repeated run compiles nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from scipy.integrate import solve_ivp

from ._closed_loop import closed_loop
from ._controller import Controller
from ._derivatives import residual_derivatives
from ._dynamics import solve_accelerations, terms
from ._entry import trial_evaluations
from ._model import Robot
from ._module import module, static

__all__ = ["Radau", "simulate_radau"]


@module
class Radau:
    """Adaptive Radau IIA (order 5) with error control: `scipy.integrate.solve_ivp(method=
    "Radau")` on `y = (q, q̇)` with the exact Jacobian of the first-order system,

        ∂q̈/∂q = −M⁻¹ ∂r/∂q,   ∂q̈/∂q̇ = −M⁻¹ ∂r/∂q̇,   r = ν − A u(t, q, q̇)
        (the controller's feedback with the dynamics terms held at their value),

    from jitted callbacks. Runs eagerly on the host: not jittable, not differentiable, not
    `vmap`-able (a `TypeError` with traced inputs); the output is sampled on the fixed grid.

    Args:
        rtol, atol: scipy's error tolerances.
        jacobian: `"exact"` (default) or `"finite_differences"`: scipy's own forward
            differences of the jitted `ẏ` (`2 n_q` evaluations per Jacobian). The Jacobian only
            drives Radau's Newton iteration (scipy keeps it over many steps), not the accuracy,
            so differences serve where the exact Jacobian's program is slow to compile: on the
            seed's helicoid robot (24 coordinates, 3 LVP bodies) a first Radau call took 455 s
            with the exact Jacobian, about 6 minutes of it compiling that program, against
            91 s for `ẏ`'s program, all the differences need.
    """

    rtol: float = static(default=1e-8)
    atol: float = static(default=1e-10)
    jacobian: str = static(default="exact")
    name: ClassVar[str] = "radau"

    def __post_init__(self) -> None:
        if self.jacobian not in ("exact", "finite_differences"):
            raise ValueError(
                f"Radau: jacobian must be 'exact' or 'finite_differences', got {self.jacobian!r}"
            )

    def integrate(
        self,
        robot: Robot,
        loads: tuple,
        policy: Controller | None,
        law: Callable | None,
        solver: str,
        q0: Array,
        qd0: Array,
        times: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """`(q, q̇)` at `times` `(S + 1, n_q)` each, from `(q0, q̇0)` at `times[0]`, under the
        controller split as `closed_loop`'s (the callbacks compile once per robot structure,
        controller and solver, not once per call)."""
        n = robot.n_q
        args = (robot, loads, policy, law, solver)
        y0 = np.concatenate([np.asarray(q0), np.asarray(qd0)])

        def typed(t: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
            # scipy passes `t` as a Python or a NumPy float: one dtype, one compilation
            return np.asarray(t, y0.dtype), np.asarray(y, y0.dtype)

        sol = solve_ivp(
            lambda t, y: np.asarray(_radau_rhs(*args, *typed(t, y))),
            (float(times[0]), float(times[-1])),
            y0,
            method="Radau",
            t_eval=times,
            jac=(
                (lambda t, y: np.asarray(_radau_jacobian(*args, *typed(t, y))))
                if self.jacobian == "exact"
                else None
            ),
            rtol=self.rtol,
            atol=self.atol,
        )
        if not sol.success or sol.y.shape[1] != len(times) or not np.isfinite(sol.y).all():
            raise ValueError(
                f"simulate: method 'radau' failed at t = {float(sol.t[-1]):.6g} s: {sol.message}"
            )
        return sol.y[:n].T, sol.y[n:].T


@functools.partial(jax.jit, static_argnames=("law", "solver"))
def _radau_rhs(
    robot: Robot,
    loads: tuple,
    policy: Controller | None,
    law: Callable | None,
    solver: str,
    t: Array,
    y: Array,
) -> Array:
    """`ẏ = (q̇, q̈)` of the closed loop at `y = (q, q̇)`."""
    dyn = closed_loop(robot, loads, policy, law, solver=solver)
    n = robot.n_q
    q, qd = y[:n], y[n:]
    with trial_evaluations():  # scipy's stages: a non-finite one shortens the step
        return jnp.concatenate([qd, dyn.accel(t, q, qd)])


@functools.partial(jax.jit, static_argnames=("law", "solver"))
def _radau_jacobian(
    robot: Robot,
    loads: tuple,
    policy: Controller | None,
    law: Callable | None,
    solver: str,
    t: Array,
    y: Array,
) -> Array:
    """`∂ẏ/∂y` of `_radau_rhs`, the controller's feedback with the dynamics terms held at their
    value (`Dynamics.feedback`)."""
    dyn = closed_loop(robot, loads, policy, law, solver=solver)
    n = robot.n_q
    q, qd = y[:n], y[n:]
    tm = terms(robot, q, qd, loads)
    u, fb_q, fb_qd = dyn.feedback(t, q, qd, tm)
    qdd = solve_accelerations(robot, tm, u, check=False)
    d = residual_derivatives(robot, q, qd, qdd, loads, u)
    # ∂q̈/∂y = −M⁻¹ ∂r/∂y, r = ν − A u(t, q, q̇) (the law's feedback with the terms held)
    jac = jnp.concatenate([d.d_q - fb_q, d.d_qd - fb_qd], axis=1)
    lower = -jnp.linalg.solve(d.mass_matrix, jac)
    upper = jnp.concatenate([jnp.zeros((n, n), y.dtype), jnp.eye(n, dtype=y.dtype)], axis=1)
    return jnp.concatenate([upper, lower])


@functools.partial(jax.jit, static_argnames=("law",))
def _recorded_inputs(
    robot: Robot,
    loads: tuple,
    policy: Controller | None,
    law: Callable | None,
    t: Array,
    q: Array,
    qd: Array,
) -> Array:
    """The inputs `u(t, q, q̇)` `(S + 1, n_u)` along a trajectory."""
    return jax.vmap(closed_loop(robot, loads, policy, law).inputs)(t, q, qd)


def simulate_radau(
    robot: Robot,
    q0: Array,
    qd0: Array,
    dt: float,
    n_steps: int,
    scheme: Radau,
    policy: Controller | None,
    law: Callable | None,
    loads: tuple,
    period: int | None,
    eager: bool,
    solver: str,
) -> tuple[Array, Array, Array, Array]:
    """`simulate(..., method=Radau(...))`: `(t, q, q̇, u)` on the grid `dt · k`, eager only."""
    if not eager:
        raise TypeError(
            "simulate: method 'radau' runs scipy.integrate.solve_ivp on the host and is not "
            "jittable: call it outside jit/vmap/grad, or use a fixed-step method"
        )
    if period is not None:
        raise ValueError("simulate: control_period is not supported by method 'radau'")
    times = dt * np.arange(n_steps + 1)
    q, qd = scheme.integrate(robot, loads, policy, law, solver, q0, qd0, times)
    t, q, qd = (jnp.asarray(x, q0.dtype) for x in (times, q, qd))
    return t, q, qd, _recorded_inputs(robot, loads, policy, law, t, q, qd)
