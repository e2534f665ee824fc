"""Fixed-step simulation of `M q̈ + c + g + s = ν` inside `lax.scan`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._checks import check_state
from ._dynamics import _fd_jit, _robot
from ._loads import check_loads
from ._model import Robot
from ._module import is_concrete

__all__ = ["METHODS", "Trajectory", "simulate"]

METHODS = ("rk4", "semi_implicit_euler")


class Trajectory(NamedTuple):
    """A simulated trajectory: times `t` `(S + 1,)`, configurations `q` and velocities `qd`
    `(S + 1, n_q)`, the initial state first."""

    t: Array
    q: Array
    qd: Array


def _accel(
    robot: Robot, control: Callable | None, loads: tuple, t: Array, q: Array, qd: Array
) -> Array:
    nu = jnp.zeros_like(q) if control is None else jnp.asarray(control(t, q, qd), dtype=q.dtype)
    if nu.shape != q.shape:
        raise ValueError(f"control(t, q, qd) must return shape {q.shape}, got {nu.shape}")
    return _fd_jit(robot, q, qd, nu, loads)


def _step_rk4(
    robot: Robot, control: Any, loads: tuple, t: Array, q: Array, qd: Array, dt: Array
) -> tuple[Array, Array]:
    def f(tt: Array, x: Array, xd: Array) -> tuple[Array, Array]:
        return xd, _accel(robot, control, loads, tt, x, xd)

    k1 = f(t, q, qd)
    k2 = f(t + dt / 2, q + dt / 2 * k1[0], qd + dt / 2 * k1[1])
    k3 = f(t + dt / 2, q + dt / 2 * k2[0], qd + dt / 2 * k2[1])
    k4 = f(t + dt, q + dt * k3[0], qd + dt * k3[1])
    return (
        q + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]),
        qd + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]),
    )


def _step_semi_implicit(
    robot: Robot, control: Any, loads: tuple, t: Array, q: Array, qd: Array, dt: Array
) -> tuple[Array, Array]:
    # q̇_{n+1} = q̇_n + h q̈(q_n, q̇_n),  q_{n+1} = q_n + h q̇_{n+1}
    qd_new = qd + dt * _accel(robot, control, loads, t, q, qd)
    return q + dt * qd_new, qd_new


def _run(
    robot: Robot,
    q0: Array,
    qd0: Array,
    dt: Array,
    n_steps: int,
    method: str,
    control: Any,
    loads: tuple,
) -> Trajectory:
    step = _step_rk4 if method == "rk4" else _step_semi_implicit

    def body(carry: tuple[Array, Array], k: Array) -> Any:
        q, qd = carry
        new = step(robot, control, loads, k * dt, q, qd, dt)
        return new, new

    _, (qs, qds) = jax.lax.scan(body, (q0, qd0), jnp.arange(n_steps, dtype=q0.dtype))
    t = dt * jnp.arange(n_steps + 1, dtype=q0.dtype)
    return Trajectory(t, jnp.concatenate([q0[None], qs]), jnp.concatenate([qd0[None], qds]))


_run_jit = jax.jit(_run, static_argnames=("n_steps", "method", "control"))


def simulate(
    robot: Robot,
    q0: Array,
    qd0: Array,
    t_final: float,
    dt: float,
    control: Callable[[Array, Array, Array], Array] | None = None,
    method: str = "rk4",
    loads: Any = None,
) -> Trajectory:
    """Integrate the forward dynamics from `(q0, qd0)` over `[0, t_final]` with a fixed step.

    Args:
        robot: the robot.
        q0, qd0: `(n_q,)` initial state.
        t_final: final time [s] (> 0); the number of steps is `ceil(t_final / dt)`, so the last
            time is `t_final` rounded up to a multiple of `dt`.
        dt: step [s] (> 0).
        control: `control(t, q, qd) -> ν` `(n_q,)` generalized actuation force (jit-traceable);
            `None` for no actuation.
        method: `"rk4"` (classical 4th-order Runge–Kutta) or `"semi_implicit_euler"`
            (symplectic Euler: velocity first, then position).
        loads: constant external loads (`PointLoad`/`Wrench`).

    Returns:
        a `Trajectory(t, q, qd)`.

    Raises:
        ValueError: bad arguments, or a non-finite state during the run (with its time).
    """
    robot = _robot(robot)
    q0 = check_state("q0", q0, robot.n_q)
    qd0 = check_state("qd0", qd0, robot.n_q)
    if method not in METHODS:
        raise ValueError(f"simulate: method must be one of {METHODS}, got {method!r}")
    if control is not None and not callable(control):
        raise TypeError("simulate: control must be a callable control(t, q, qd) -> nu, or None")
    for name, value in (("t_final", t_final), ("dt", dt)):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"simulate: {name} must be a finite positive number, got {value!r}")
    n_steps = max(1, math.ceil(t_final / dt - 1e-9))
    traj = _run_jit(
        robot,
        q0,
        qd0,
        jnp.asarray(dt, dtype=q0.dtype),
        n_steps,
        method,
        control,
        check_loads(robot, loads),
    )
    if is_concrete(traj.q):
        finite = np.all(np.isfinite(np.asarray(traj.q)), axis=1) & np.all(
            np.isfinite(np.asarray(traj.qd)), axis=1
        )
        if not finite.all():
            k = int(np.argmin(finite))
            raise ValueError(
                f"simulate: the state became non-finite at t = {k * dt:.6g} s (step {k}); "
                "reduce dt, use method='rk4', or check the model and the control"
            )
    return traj
