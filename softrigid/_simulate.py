"""Fixed-step simulation of `M(q) q̈ + c + g + s − Q_ext = A(q) u` inside `lax.scan`, and the
adaptive Radau and BDF methods on the host.

The driver is separate from the schemes (`softrigid._integrators`, `softrigid._radau`): it
checks the arguments, runs `scheme.step` over the time grid (in pieces across the closed loop's
switch times: `softrigid._switches`), holds the inputs between controller samples
(`control_period`), records `u`, reports progress, and turns a failed step (a Newton iteration
that did not converge) or a non-finite state into an error naming its time: a `ValueError` in an
eager call, a run-time error (`softrigid._fault.fault_if`) under the user's `jit`/`vmap`.

At the start and after every fixed step, joints with a singular chart (the rotation vectors of
`Spherical` and `Free`) are re-charted (`softrigid._charts`): `|φ| > π` becomes the equivalent
`φ (1 − 2π/|φ|)` with its rates mapped by the chart change, so a tumbling body never reaches
`|φ| = 2π`.
Equality constraints (`softrigid.constraints`) enter the explicit schemes' accelerations by
the Udwadia–Kalaba equation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._articulated import choose_solver
from ._batching import chunked, under_vmap
from ._cache import jit
from ._charts import has_charts, rechart
from ._checks import as_flag, check_finite
from ._closed_loop import closed_loop
from ._constraints import Constraint, check_constraints, check_constraints_at
from ._controller import Controller
from ._entry import check_robot, check_states, trial_evaluations
from ._integrators import (
    RK4,
    GeneralizedAlpha,
    ImplicitEuler,
    Integrator,
    SemiImplicitEuler,
    State,
)
from ._loads import check_loads
from ._model import Robot
from ._module import is_concrete, runs_eagerly
from ._radau import BDF, Adaptive, Radau, simulate_adaptive
from ._reports import raise_runtime_errors
from ._run_failures import check_run, raise_failed_step
from ._switches import Assembly, Pieces, assemble, piece_step, plan_pieces
from ._time_grid import time_grid

__all__ = ["METHODS", "Trajectory", "simulate"]

METHODS = {
    "rk4": RK4,
    "semi_implicit_euler": SemiImplicitEuler,
    "implicit_euler": ImplicitEuler,
    "generalized_alpha": GeneralizedAlpha,
    "radau": Radau,
    "bdf": BDF,
}

_DEFAULT_SCHEMES = {name: cls() for name, cls in METHODS.items()}

# Progress is printed about this many times per run.
_REPORTS = 10


class Trajectory(NamedTuple):
    """A simulated trajectory: times `t` `(S + 1,)`, configurations `q` and velocities `qd`
    `(S + 1, n_q)`, and the inputs `u` `(S + 1, n_u)` applied from each time on, the initial
    state first."""

    t: Array
    q: Array
    qd: Array
    u: Array


class _Progress:
    """Host-side progress report: simulated time, wall time and real-time factor."""

    start = 0.0

    @classmethod
    def report(cls, k: Any, n_steps: int, dt: Any, *_after: Any) -> None:
        """Print the report of step `k`; `_after` (ignored) orders the final report after the
        run's last step (a data dependence: unordered callbacks may otherwise run first)."""
        k = int(k)
        now = time.perf_counter()
        t = k * float(dt)
        head = f"simulate: t = {t:.4g} / {n_steps * float(dt):.4g} s"
        if k == 0:  # the program is compiled and runs: the wall clock starts here
            cls.start = now
            print(f"{head}, compiled, stepping", flush=True)
            return
        wall = max(now - cls.start, 1e-12)
        print(f"{head}, wall {wall:.3g} s, real-time factor {t / wall:.3g}", flush=True)


def _rechart(robot: Robot, state: State, implicit: bool) -> State:
    """`state` in the joints' charts away from their singularities (`softrigid._charts`); an
    implicit scheme's accelerations (`q̈`, generalized-α's `a`) change chart with it, and its
    kept iteration matrix, written in the old chart, is dropped when the chart changed."""
    if implicit:
        q, qd, qdd, a = rechart(robot, state.q, state.qd, state.qdd, state.a)
        same = jnp.all(q == state.q)
        matrix = state.matrix._replace(valid=jnp.where(same, state.matrix.valid, 0.0))
        return State(q, qd, qdd, a, matrix)
    q, qd = rechart(robot, state.q, state.qd)
    return state._replace(q=q, qd=qd)


def _run(
    robot: Robot,
    q0: Array,
    qd0: Array,
    dt: Array,
    policy: Controller | None,
    loads: tuple,
    constraints: tuple[Constraint, ...],
    n_steps: int,
    scheme: Integrator,
    controller: Callable | None,
    period: int | None,
    check: bool,
    progress: bool,
    solver: str,
    switches: Array,
    pieces: tuple[Pieces, Assembly] | None,
    differentiable: bool = True,
) -> tuple[Trajectory, Array]:
    # the public functions a controller, policy or constraint calls run without their own
    # run-time checks here (`trial_evaluations`): a run that diverges reaches them with a
    # non-finite state, and `check_run` / `raise_failed_step` name the step instead
    with trial_evaluations():
        dyn = closed_loop(robot, loads, policy, controller, constraints, solver)
        dyn = dyn._replace(differentiable=differentiable)
        charts = has_charts(robot)
        every = max(1, n_steps // _REPORTS)

        def body(carry: tuple[Any, Array], x: Array | Pieces) -> Any:
            state, u_held = carry
            k = x if pieces is None else x.k
            t = k * dt
            if progress:  # once per step: at its last piece (which ends at (k + 1) dt)
                jax.lax.cond(
                    (k % every == 0) & (True if pieces is None else x.end < 0),
                    lambda: jax.debug.callback(_Progress.report, k, n_steps, dt),
                    lambda: None,
                )
            stage = dyn
            if period is not None:
                # zero-order hold: sample u every `period` steps, hold it in between
                sample = k % period == 0
                u_held = jax.lax.cond(
                    sample, lambda: dyn.inputs(t, state.q, state.qd), lambda: u_held
                )
                stage = dyn.hold(u_held)
                if scheme.restarts:  # each sample jumps u: from its accelerations (_switches)
                    state = jax.lax.cond(
                        sample & (k > 0), lambda y: scheme.restart(stage, t, y), lambda y: y, state
                    )
            if pieces is None:
                new, ok, u = scheme.step(stage, t, state, dt)
            else:  # steps in pieces at the switches (`softrigid._switches`)
                new, ok, u = piece_step(scheme, stage, t, state, x, switches, dt)
            if charts:
                new = _rechart(robot, new, scheme.implicit)
            return (new, u_held), (new.q, new.qd, ok, u)

        state0 = scheme.init(dyn, jnp.zeros((), q0.dtype), q0, qd0)
        u0 = jnp.zeros(robot.n_u, q0.dtype)
        steps = jnp.arange(n_steps) if pieces is None else pieces[0]
        (_, u_last), (qs, qds, ok, us) = jax.lax.scan(body, (state0, u0), steps)
        if pieces is not None:
            ok, qs, qds, us = assemble(*pieces, ok, qs, qds, us)
        t = dt * jnp.arange(n_steps + 1, dtype=q0.dtype)
        q = jnp.concatenate([q0[None], qs])
        qd = jnp.concatenate([qd0[None], qds])
        # the steps gave u at their start; the last time's: a new sample, or the one held
        sampled = period is None or n_steps % period == 0
        last = dyn.inputs(t[-1], q[-1], qd[-1]) if sampled else u_last
        u = jnp.concatenate([us, last[None]])
        if progress:
            jax.debug.callback(_Progress.report, n_steps, n_steps, dt, qs[-1])
    if check:
        q = check_run(q, qds, us, ok, n_steps, scheme.name, scheme.implicit)
    return Trajectory(t, q, qd, u), ok


# the scheme is a traced pytree: its static options (`max_iter`, `newton`, `rho_inf`) key the
# program by value, its leaves (Newton's `tol`, `theta_max`) are arguments
_STATIC = (
    "n_steps",
    "controller",
    "period",
    "check",
    "progress",
    "solver",
    "differentiable",
)
_run_jit = jit(_run, static_argnames=_STATIC)
# under a `vmap`: many initial states run chunk by chunk on CPU (softrigid._batching)
_run_jit_batched = jit(chunked(_run), static_argnames=_STATIC)


def _scheme(method: Any) -> Integrator | Adaptive:
    if isinstance(method, (Integrator, Adaptive)):
        return method
    if isinstance(method, str) and method in METHODS:
        return _DEFAULT_SCHEMES[method]
    raise ValueError(
        f"simulate: method must be one of {tuple(METHODS)} or a scheme instance (e.g. "
        f"GeneralizedAlpha(rho_inf=0.5)), got {method!r}"
    )


def simulate(
    robot: Robot,
    q0: Array,
    qd0: Array,
    t_final: float,
    dt: float,
    controller: Controller | Callable[[Array, Array, Array], Array] | None = None,
    method: str | Integrator | Adaptive = "rk4",
    loads: Any = None,
    control_period: float | None = None,
    progress: bool = False,
    constraints: Constraint | Sequence[Constraint] | None = None,
    solver: str = "auto",
) -> Trajectory:
    """Integrate the forward dynamics from `(q0, qd0)` over `[0, t_final]` on a fixed grid.

    Args:
        robot: the robot.
        q0, qd0: `(n_q,)` initial state (for a batch of initial states use `jax.vmap`).
        t_final: final time [s] (> 0); the number of steps is `ceil(t_final / dt)`, so the last
            time is `t_final` rounded up to a multiple of `dt`.
        dt: step [s] (> 0); for `"radau"` and `"bdf"` the output grid (their own steps are
            adaptive).
        controller: the robot's inputs `u` `(n_u,)` (generalized forces for a robot without
            actuators, actuator inputs otherwise): a `softrigid._controller.Controller` (a
            pytree passed as a traced argument, so new gains do not recompile; called as
            `controller(t, q, qd, terms)` with the stage's `DynamicsTerms`, evaluated once and
            shared with the acceleration solve), a jit-traceable callable `controller(t, q, qd)`
            (static), or `None` for no input. A fixed step across a `Controller`'s switch time
            (`switch_times`) is taken in pieces, keeping the scheme's order (`_switches`).
        method: `"rk4"`, `"semi_implicit_euler"`, `"implicit_euler"`, `"generalized_alpha"`
            (`rho_inf = 0.9`), `"radau"`, `"bdf"` (adaptive, eager only), or an instance of a
            scheme of `softrigid.integrators` with options, e.g. `GeneralizedAlpha(rho_inf=1.0,
            tol=1e-12, max_iter=10)`, `Radau(rtol=1e-10, atol=1e-12)`,
            `BDF(rtol=1e-6, atol=1e-8, jacobian="finite_differences")`.
        loads: constant external loads (`PointLoad`/`Wrench`).
        control_period: zero-order hold: sample `u` every `control_period` seconds (a multiple
            of `dt`) and hold it in between; `None` (default) evaluates `u` at every stage.
        progress: print the simulated time, the wall time and the real-time factor about ten
            times during the run. Fixed-step methods print a first line when their compiled
            program starts stepping, and their wall time excludes its compilation; the
            adaptive methods' first line comes after a tenth of the run, and their wall time
            includes the compilation of their first evaluations.
        constraints: equality constraints (`softrigid.constraints`: `Holonomic`,
            `Nonholonomic`, `AccelerationForm`, or a sequence of them), imposed by the
            Udwadia–Kalaba equation; the explicit methods (`"rk4"`, `"semi_implicit_euler"`)
            support them.
        solver: how the accelerations are computed, as `softrigid.forward_dynamics`:
            `"auto"` (default), `"articulated"` (`O(N)`) or `"cholesky"`. A `Controller`
            (which reads `M`) or constraints use the Cholesky solve of the `M` they build.

    Returns:
        a `Trajectory(t, q, qd, u)`. Rotation vectors of `Spherical` and `Free` joints are
        re-charted at the start and after each fixed step (`|φ| > π` → `φ (1 − 2π/|φ|)`, the
        same rotation; the trajectory starts from the re-charted `q0`), so `q` jumps there
        while the pose is continuous (the run is piecewise smooth in its inputs: `jax.grad` is
        exact except where the step of a re-chart changes); `"radau"` and `"bdf"` re-chart
        only the start.

    Raises:
        ValueError: bad arguments, a run too long to record, a Newton iteration that did not
            converge or a non-finite state during the run (with its time).
        TypeError: `"radau"` or `"bdf"` with traced inputs (inside `jit`, `vmap` or `grad`).
    """
    robot = check_robot(robot)
    for name, value in (("q0", q0), ("qd0", qd0)):
        # np.shape: a list is a shape too (JAX's jnp.shape of a list is deprecated)
        shape = value.shape if isinstance(value, jax.Array) else np.shape(value)
        if len(shape) > 1:
            raise ValueError(
                f"simulate: {name} must have shape ({robot.n_q},), got {shape}; "
                "for a batch of initial states use jax.vmap"
            )
    q0, qd0 = check_states(robot, q0=q0, qd0=qd0)
    scheme = _scheme(method)
    solver = choose_solver("simulate", robot, solver)
    if controller is not None and not callable(controller):
        raise TypeError(
            "simulate: controller must be a Controller, a callable u(t, q, qd), or None"
        )
    progress = as_flag("simulate: progress", progress)
    record = (2 * robot.n_q + robot.n_u) * q0.dtype.itemsize
    t_final, dt, n_steps, period = time_grid(t_final, dt, control_period, record)
    loads = check_loads(robot, loads)
    constraints = check_constraints(constraints)
    if constraints and (isinstance(scheme, Adaptive) or scheme.implicit):
        raise ValueError(
            f"simulate: constraints are supported by the explicit methods 'rk4' and "
            f"'semi_implicit_euler', not by method {scheme.name!r}"
        )
    policy = controller if isinstance(controller, Controller) else None
    if policy is not None and jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(policy)):
        raise TypeError(
            f"simulate: controller: {type(policy).__name__} is a Controller but not a pytree "
            "(simulate passes a Controller's gains as traced arguments): declare it as "
            "softrigid's controllers are, an equinox.Module subclass or a dataclass registered "
            "with jax.tree_util, or pass a plain callable u(t, q, qd)"
        )
    static_law = None if policy is not None else controller
    eager = runs_eagerly(q0, qd0, robot, loads, policy, constraints)
    if not is_concrete(q0, qd0):  # checked at the entry when concrete; else when the run starts
        q0, qd0 = check_finite("simulate: q0", q0), check_finite("simulate: qd0", qd0)
    if has_charts(robot):
        # the start in the joints' charts away from their singularities, as after every step
        # (a rotation vector at |φ| = 2π leaves M singular there: no step could start)
        q0, qd0 = rechart(robot, q0, qd0)
    if constraints and eager:
        check_constraints_at("simulate", constraints, jnp.zeros((), q0.dtype), q0, qd0)
    if isinstance(scheme, Adaptive):
        return Trajectory(
            *simulate_adaptive(
                robot,
                q0,
                qd0,
                dt,
                n_steps,
                scheme,
                policy,
                static_law,
                loads,
                period,
                eager,
                solver,
                progress,
            )
        )
    # traced (inside the user's jit/vmap/grad): the run-time check inside the program reports a
    # failure; eager: the trajectory is checked here, naming the exact time
    batched = under_vmap((robot, q0, qd0, policy, loads, constraints))
    program = _run_jit_batched if batched else _run_jit
    # eagerly, a run-time check that fires inside (e.g. a controller's singular A) is raised as
    # the ValueError it names; traced, it stays in the user's program
    run = (lambda *a: raise_runtime_errors(lambda: program(*a))) if eager else program
    # switches known now: a step across one is taken in pieces, generalized-α restarts at
    # them (zero-order hold: the inputs are held over steps, a switch acts at the next sample)
    times = policy.switch_times() if policy is not None and period is None else ()
    plan = plan_pieces(times, dt, n_steps, q0.dtype)
    traj, ok = run(
        robot,
        q0,
        qd0,
        jnp.asarray(dt, q0.dtype),
        policy,
        loads,
        constraints,
        n_steps,
        scheme,
        static_law,
        period,
        not eager,
        progress,
        solver,
        jnp.asarray(() if plan is None else plan[0], q0.dtype),
        None if plan is None else plan[1:],
        not eager,  # differentiable: eager, nothing can be (the steps without custom_root)
    )
    if eager and progress:
        jax.effects_barrier()
    if eager:
        loop = (robot, loads, policy, static_law, constraints, solver)
        raise_failed_step(loop, traj, ok, float(dt), scheme)
    return traj
