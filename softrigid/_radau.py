"""The adaptive stiff methods of `softrigid.simulate`: scipy's Radau IIA and BDF.

`Radau.integrate` / `BDF.integrate` step `scipy.integrate.Radau` / `scipy.integrate.BDF` on
the host with jitted callbacks, the closed loop's `ẏ = (q̇, q̈)` and (by default) its Jacobian
from the dynamics derivatives; the callbacks are module-level functions of the robot and the
controller (traced arguments), so a repeated run compiles nothing. Their run-time checks are
`softrigid._fault` calls, not host callbacks, so JAX's persistent compilation cache stores the
programs and a later process loads them; a check that fires raises its own error as a
`ValueError` (`_reports.raise_runtime_errors`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ClassVar

import jax.numpy as jnp
import numpy as np
import scipy.integrate
from jax import Array

from ._adaptive_programs import (
    central_differences,
    closed_loop_jacobian,
    linearized_jacobian,
    radau_rhs,
)
from ._checks import is_real_number
from ._controller import Controller
from ._model import Robot
from ._module import module, static
from ._reports import raise_runtime_errors
from ._run_failures import GROWTH, check_accelerations, growth_scale, headed_states

__all__ = ["BDF", "Adaptive", "Radau", "simulate_adaptive"]

JACOBIANS = ("exact", "autodiff", "finite_differences", "central_differences")
_REPORTS = 10  # progress lines per run
_QUIET = 60.0  # s of wall time without a progress line, at most
# scipy's smallest relative tolerance (100 ε)
_MIN_RTOL = 100 * float(np.finfo(float).eps)


@module
class Adaptive:
    """An adaptive stiff method of scipy with error control on `y = (q, q̇)` (base of `Radau`
    and `BDF`): the Jacobian of the first-order system is

        ∂q̈/∂q = −M⁻¹ ∂r/∂q,   ∂q̈/∂q̇ = −M⁻¹ ∂r/∂q̇,   r = ν − A u(t, q, q̇)
        (the controller's feedback with `M` and `A` held at their value and its response to
        the bias's derivatives, `Dynamics.linearized`),

    from jitted callbacks (`jacobian="exact"`); or the closed loop's exact Jacobian, the law's
    dependence on `M`, the bias and `A` included (`jacobian="autodiff"`: what a law that
    cancels the model's dynamics, a PFBL, needs; `Dynamics.jacobian`, from the link-local
    linearization of the model, forward mode through the whole loop under constraints); or
    scipy's forward differences of the jitted `ẏ` (`jacobian="finite_differences"`, `2 n_q`
    evaluations per Jacobian); or central differences of the jitted `ẏ`
    (`jacobian="central_differences"`, `4 n_q` evaluations per Jacobian,
    `central_differences`). The Jacobian only drives the Newton iteration of the steps, not
    the accuracy. The integration restarts at the controller's jumps in time
    (`Controller.switch_times`: a `Phases`' switching times, a `CubicRestToRest`'s and a `Spline`'s ends): a
    step across a jump of `ẏ` leaves error control to find it, which costs many rejected
    steps and, at tight tolerances, fails. Each span runs in its own time `τ = t − a`: the
    stiff layer a jump sets off may need first steps below the rounding of `t` itself (scipy
    refuses steps under ten roundings of `t`: 9e-15 s at t = 5 s), which in `τ` are fine.
    Differences need no second program (the Jacobian's is traced first, then compiles, or
    loads from the persistent cache, in a second thread while the first steps trace and
    compile `ẏ`'s: `_compile_ahead`), but on a stiff, badly scaled closed loop scipy's
    forward differences can stall the steps: on the seed's helicoid robot under PFBL,
    columns off by up to 37 % gave the differenced Jacobian eigenvalues of +120 1/s where
    the closed loop's own are all stable, and the steps fell to 1e-5 s. Central
    differences are second order, with a fixed relative step (no step adaptation from stale
    columns).
    Runs eagerly on the host: not jittable, not differentiable, not `vmap`-able (a
    `TypeError` with traced inputs); the output is the dense output sampled on the fixed grid.

    Args:
        rtol, atol: scipy's error tolerances, positive (the error scale `atol + rtol |y|`
            must not vanish where a component of the state does, e.g. a start at rest);
            `rtol` at least `100 ε` = 2.2e-14, scipy's floor.
        jacobian: `"exact"` (default), `"autodiff"`, `"finite_differences"` or
            `"central_differences"`.
    """

    rtol: float = static(default=1e-8)
    atol: float = static(default=1e-10)
    jacobian: str = static(default="exact")
    name: ClassVar[str] = "adaptive"
    scipy_method: ClassVar[str] = ""

    def __post_init__(self) -> None:
        name = type(self).__name__
        if not self.scipy_method:
            raise TypeError(
                f"{name} is the base of the adaptive methods, not one of them: use "
                "integrators.Radau(...) or integrators.BDF(...)"
            )
        for field in ("rtol", "atol"):
            value = getattr(self, field)
            if not is_real_number(value):
                raise TypeError(f"{name}: {field} must be a real number, got {value!r}")
            try:  # an integer past float's range (10**400) overflows, as an infinity would
                number = float(value)
            except OverflowError:
                number = np.inf
            if not (np.isfinite(number) and number > 0):
                raise ValueError(f"{name}: {field} must be a finite positive number, got {value!r}")
            object.__setattr__(self, field, number)
        if self.rtol < _MIN_RTOL:
            # scipy raises it to this (with a warning) and derives its Newton tolerance from the
            # value given: infinite for rtol = 0
            raise ValueError(f"{name}: rtol must be at least {_MIN_RTOL:.3g}, got {self.rtol!r}")
        if self.jacobian not in JACOBIANS:
            raise ValueError(
                f"{type(self).__name__}: jacobian must be one of {JACOBIANS}, got {self.jacobian!r}"
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
        progress: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """`(q, q̇)` at `times` `(S + 1, n_q)` each, from `(q0, q̇0)` at `times[0]`, under the
        controller split as `closed_loop`'s (the callbacks compile once per robot structure,
        controller and solver, not once per call). With `progress`, a line reports the
        simulated time, the wall time, the steps and the Jacobians every tenth of the run's
        time span, and at least once a minute."""
        args = (robot, loads, policy, law, solver)
        y0 = np.concatenate([np.asarray(q0), np.asarray(qd0)])
        program = {"exact": linearized_jacobian, "autodiff": closed_loop_jacobian}.get(
            self.jacobian
        )
        ahead = _compile_ahead(program, *args, np.asarray(times[0], y0.dtype), y0)
        try:
            return self._steps(args, y0, times, program, ahead, progress)
        finally:
            ahead.exception()  # no compilation left running past the call (e.g. after an error)

    def _steps(
        self,
        args: tuple,
        y0: np.ndarray,
        times: np.ndarray,
        program: Any,
        ahead: Future[Any],
        progress: bool,
    ) -> tuple[np.ndarray, np.ndarray]:
        """`integrate`'s stepping, with the Jacobian's `program` (`None` for differences)
        compiled beside it (`ahead`, waited for before its first call)."""
        n, policy = args[0].n_q, args[2]

        def span(a: float, b: float) -> tuple[Callable[..., Any], Callable[..., Any]]:
            """`ẏ` and its Jacobian on `[a, b]` in the span's own time `τ = t − a`, with the
            law's values inside the span: `t` held within one rounding step inside its ends
            (at a switch time the law takes the next span's value)."""
            lo, hi = np.nextafter(a, np.inf), np.nextafter(b, -np.inf)

            def typed(tau: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
                # scipy passes `τ` as a Python or a NumPy float: one dtype, one compilation
                return np.asarray(np.clip(a + tau, lo, hi), y0.dtype), np.asarray(y, y0.dtype)

            def dispatched(t: Any, y: Any) -> Array:
                """`ẏ`, not waited for."""
                return radau_rhs(*args, *typed(t, y))[0]

            def rhs(t: Any, y: Any) -> np.ndarray:
                return np.asarray(_checked(dispatched, t, y))

            def jac(t: Any, y: Any) -> np.ndarray:
                if self.jacobian == "central_differences":
                    # every evaluation dispatched before the first is waited for
                    y = np.asarray(y, y0.dtype)
                    return np.asarray(_checked(central_differences, dispatched, t, y))
                ahead.exception()  # compiled (an error is raised by the call)
                return np.asarray(_checked(program, *args, *typed(t, y)))

            return rhs, jac

        t0, t1 = float(times[0]), float(times[-1])
        # restart at the controller's jumps in time: one stepper per smooth span
        # (sorted and distinct: a controller of the user's may give them in any order)
        switches = policy.switch_times() if policy is not None else ()
        cuts = sorted({float(t) for t in switches if t0 < t < t1})
        spans, y, steps, jacobians = [], y0, 0, 0
        scale = growth_scale(y0)
        # the first line after a tenth of the run, not after the first step (whose wall time
        # is mostly the first call's compilation: a real-time factor of nothing)
        start, mark, last = time.perf_counter(), t0 + (t1 - t0) / _REPORTS, time.perf_counter()
        for a, b in itertools.pairwise([t0, *cuts, t1]):
            rhs, jac = span(a, b)
            # a span's first q̈ checked: scipy would stop on its own array check, naming nothing
            qdd = rhs(0.0, y)[n:]
            check_accelerations(f"simulate: method {self.name!r}", args[0], a, y[:n], y[n:], qdd)
            # in the span's own time (see the class docstring: scipy's floor on the step)
            stepper = getattr(scipy.integrate, self.scipy_method)(
                rhs,
                0.0,
                y,
                b - a,
                jac=None if self.jacobian == "finite_differences" else jac,
                rtol=self.rtol,
                atol=self.atol,
            )
            taus, pieces = [0.0], []
            while stepper.status == "running":
                try:
                    stepper.step()
                except ValueError as err:  # scipy's own check of its arrays (an LU of NaN)
                    _name_the_closed_loop(self.name, args[0], rhs, a, stepper, n)
                    raise ValueError(
                        f"simulate: method {self.name!r} failed at t = {a + stepper.t:.6g} s: "
                        f"scipy's {self.scipy_method} met a non-finite iteration matrix or "
                        f"stage ({err}); check the model and the controller there"
                    ) from err
                t = b if stepper.status == "finished" else a + stepper.t
                if stepper.status == "failed" or not np.isfinite(stepper.y).all():
                    _name_the_closed_loop(self.name, args[0], rhs, a, stepper, n)
                    raise ValueError(
                        f"simulate: method {self.name!r} failed at t = {t:.6g} s: "
                        "the step size became too small or the state non-finite"
                    )
                size = float(np.max(np.abs(stepper.y)))
                if size > GROWTH * scale:
                    # an unstable closed loop: error control would follow the growth with ever
                    # shorter steps (a crawl, not an answer)
                    raise ValueError(
                        f"simulate: method {self.name!r}: the state grew more than a millionfold "
                        f"by t = {t:.6g} s (max |q|, |q̇| = {size:.3g}; at the start "
                        f"max(1, |q|, |q̇|) = {scale:.3g}): the closed loop is unstable there; "
                        "check the controller's gains and signs and the model"
                    )
                taus.append(stepper.t)
                pieces.append(stepper.dense_output())
                steps += 1
                now = time.perf_counter()
                done = stepper.status != "running" and b == t1
                if progress and (t >= mark or now - last > _QUIET or done):
                    if t >= mark:
                        mark = t + (t1 - t0) / _REPORTS
                    last = now
                    wall = max(now - start, 1e-12)
                    print(
                        f"simulate: t = {t:.4g} / {t1:.4g} s, wall {wall:.3g} s, "
                        f"real-time factor {(t - t0) / wall:.3g}, "
                        f"{steps} steps, {jacobians + stepper.njev} Jacobians",
                        flush=True,
                    )
            y, jacobians = stepper.y, jacobians + stepper.njev
            spans.append((a, b, scipy.integrate.OdeSolution(taus, pieces)))
        # each grid time from its span's dense output, in the span's time (a switch time from
        # the later span: the state is continuous there)
        out = np.empty((2 * n, len(times)), y0.dtype)
        for a, b, solution in spans:
            inside = (times >= a) & (times <= b)
            if inside.any():  # (two switches between grid times leave a span without one)
                out[:, inside] = solution(times[inside] - a)
        out[:, 0] = y0  # the dense output at the start is `y0` to rounding
        return out[:n].T, out[n:].T


@module
class Radau(Adaptive):
    """Adaptive Radau IIA (order 5, L-stable) with error control: `scipy.integrate.Radau`
    (see `integrators.Adaptive` for the Jacobian, the options and what it cannot do). It
    updates the Jacobian after every step whose Newton iteration was slow, so it suits robots
    whose Jacobian is cheap; `BDF` keeps it much longer."""

    name: ClassVar[str] = "radau"
    scipy_method: ClassVar[str] = "Radau"


@module
class BDF(Adaptive):
    """Adaptive variable-order (1–5) backward differentiation formulas with error control:
    `scipy.integrate.BDF` (numerical differentiation formulas; see `integrators.Adaptive` for
    the Jacobian, the options and what it cannot do). Orders 1–2 are A-stable and higher orders are stable
    on the negative real axis, where a soft body's overdamped Kelvin–Voigt modes lie. It
    evaluates a new Jacobian only when the Newton iteration with the kept one fails, so it
    suits robots whose Jacobian is expensive (on the seed's helicoid robot under the seed's
    PFBL the closed loop's exact Jacobian costs 83 ms, central differences 96 evaluations of
    `ẏ`, about 0.35 s; the robot's 6 s take 609 steps and 326 Jacobians, 37–41 s, measured
    2026-11-27)."""

    name: ClassVar[str] = "bdf"
    scipy_method: ClassVar[str] = "BDF"


def _compile_ahead(program: Any, *args: Any) -> Future[Any]:
    """The Jacobian's `program` traced and lowered for `args`, then compiled (or loaded from
    the persistent cache) in a second thread while the first steps trace and compile `ẏ`'s:
    compiling and loading release Python's lock, tracing does not, so the Jacobian's (the
    longer) goes first. Its first call then finds it compiled (`lower` shares JAX's caches).
    Errors are left to that call, which raises them as it would without this. `None`
    (differences): nothing to compile, a future already done."""
    try:
        lowered = None if program is None else program.lower(*args)
    except Exception:  # raised again, with its message, by the program's first call
        lowered = None
    if lowered is None:
        done: Future[Any] = Future()
        done.set_result(None)
        return done
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(lowered.compile)
    pool.shutdown(wait=False)
    return future


def _grid_inputs(args: tuple, times: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`u` `(S, n_u)` at the grid's states `y` `(S, 2 n_q)` from the callback's own program, the
    grid's halves dispatched from two threads, whose calls run side by side (600 states of the
    helicoid robot under PFBL: 1.07-1.15 instead of 1.38-1.63 s on two cores, measured)."""

    def half(rows: range) -> list[Array]:
        return _checked(lambda: [radau_rhs(*args, np.asarray(times[k]), y[k])[1] for k in rows])

    middle = len(times) // 2
    with ThreadPoolExecutor(max_workers=2) as pool:
        parts = list(pool.map(half, (range(middle), range(middle, len(times)))))
    return np.stack([np.asarray(v) for part in parts for v in part])


def _checked(fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)`'s values, waited for; a run-time check that fired raises its error as a
    `ValueError`."""
    return raise_runtime_errors(lambda: fn(*args))


def simulate_adaptive(
    robot: Robot,
    q0: Array,
    qd0: Array,
    dt: float,
    n_steps: int,
    scheme: Adaptive,
    policy: Controller | None,
    law: Callable | None,
    loads: tuple,
    period: int | None,
    eager: bool,
    solver: str,
    progress: bool = False,
) -> tuple[Array, Array, Array, Array]:
    """`simulate(..., method=Radau(...) or BDF(...))`: `(t, q, q̇, u)` on the grid `dt · k`,
    eager only."""
    if not eager:
        raise TypeError(
            f"simulate: method {scheme.name!r} runs scipy's {scheme.scipy_method} on the host "
            "and is not jittable: call it outside jit/vmap/grad, or use a fixed-step method"
        )
    if period is not None:
        raise ValueError(f"simulate: control_period is not supported by method {scheme.name!r}")
    times = dt * np.arange(n_steps + 1)
    q, qd = scheme.integrate(robot, loads, policy, law, solver, q0, qd0, times, progress)
    if policy is None and law is None:  # no controller: u ≡ 0, nothing to evaluate
        u = np.zeros((len(times), robot.n_u), q.dtype)
    else:
        y = np.concatenate([q, qd], axis=1).astype(q.dtype)
        u = _grid_inputs((robot, loads, policy, law, solver), times.astype(q.dtype), y)
    t, q, qd = (jnp.asarray(x, q0.dtype) for x in (times, q, qd))
    return t, q, qd, jnp.asarray(u, q0.dtype)


def _name_the_closed_loop(
    method: str, robot: Any, rhs: Callable[[float, Any], Any], a: float, stepper: Any, n: int
) -> None:
    """Where a scipy stepper failed inside a span: the closed loop at its last accepted state
    and the times of the step it was trying (`check_accelerations`), so that a controller or a
    model that is not defined there is named instead of the step size (no smaller step helps)."""
    y = np.asarray(stepper.y)
    if not np.isfinite(y).all():  # a non-finite state: the method's own failure
        return
    tau, h = float(stepper.t), float(getattr(stepper, "step_size", None) or 0.0)
    where = f"simulate: method {method!r}"
    at_start = []
    for step in dict.fromkeys((0.0, 0.5 * h, h)):
        at_start.append(np.asarray(rhs(tau + step, y))[n:])
        context = ", at the last accepted state of the failed step (no smaller step helps)"
        check_accelerations(
            where, robot, a + tau + step, y[:n], y[n:], at_start[-1], context=context
        )
    for theta, (qs, qds) in headed_states(y[:n], y[n:], at_start[0], h):
        qdd = np.asarray(rhs(tau + theta * h, np.concatenate([qs, qds])))[n:]
        context = (
            f", the state the failed step (h = {h:.3g} s) heads for (q + θh q̇ + ½(θh)² q̈, "
            f"θ = {theta:g}, from the last accepted state; if the motion goes there, no smaller "
            "step helps)"
        )
        check_accelerations(where, robot, a + tau + theta * h, qs, qds, qdd, context=context)
