"""How `simulate` reports a failed run.

A step fails because the method could not take it (the state became non-finite, a Newton
iteration did not converge) or because the closed loop is not defined at the step's start: a
singular mass matrix, a body whose terms are not finite there, a controller that returns NaN.
No step size helps with the second. So besides the run-time check of a fixed-step run (also
under `jit`/`vmap`: `check_run`, which names the window of the first failure), an eager run
evaluates the closed loop at the last finite state, the start of the failed step, at the
step's start and at its stages' times, then at the states the step heads for
(`headed_states`: a controller such as `√q` on a pendulum swinging through `q = 0` is defined
at every step's start and fails at the stages of the step that crosses; `raise_failed_step`,
and Radau/BDF's report likewise): where its inputs `u` or
accelerations `q̈` are not finite there, the error names the first bad input or coordinate and
the first link whose terms are not finite (`diagnose`), instead of asking for a smaller `dt`.
A state that had grown a millionfold before the failure is reported as the method's blow-up
(`q̈` overflows there; a smaller `dt` or an implicit method helps). The scipy methods check
each span's first state with the same message (`check_accelerations`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from ._cache import jit
from ._checks import raise_if
from ._closed_loop import closed_loop
from ._constraints import Constraint
from ._controller import Controller
from ._entry import trial_evaluations
from ._model import Robot
from ._reports import PREFIX, describe_coordinate, diagnose

__all__ = [
    "GROWTH",
    "WINDOWS",
    "check_accelerations",
    "check_run",
    "growth_scale",
    "headed_states",
    "raise_failed_step",
]

# A run-time check under jit names one of this many windows of the run.
WINDOWS = 50
# A state this many times larger than the initial one (and than 1) has blown up.
GROWTH = 1e6


def growth_scale(*start: np.ndarray) -> float:
    """`max(1, max |x|)` over the start state's arrays: a run whose state exceeds `GROWTH` times
    this has blown up (the fixed-step methods' failure report and Radau/BDF's guard)."""
    return max(1.0, *(float(np.max(np.abs(x))) for x in start))


def check_run(
    q: Array, qds: Array, us: Array, ok: Array, n_steps: int, method: str, implicit: bool
) -> Array:
    """`q` with a run-time check (also under `jit`/`vmap`) that every step converged and the run
    stayed finite; the message brackets the time of the first failure within one of `WINDOWS`
    equal windows and says whether the controller's inputs `us` (`(n_steps, n_u)`, those of
    each step's start) were not finite there (no smaller `dt` helps) or the state diverged."""
    diverged = ~(jnp.all(jnp.isfinite(q[1:]), 1) & jnp.all(jnp.isfinite(qds), 1))
    bad_u = ~jnp.all(jnp.isfinite(us), 1)
    bad = diverged | ~ok | bad_u
    windows = min(WINDOWS, n_steps)
    edges = np.linspace(0, n_steps, windows + 1).round().astype(int)
    spans = [
        (f"at step {b}" if a + 1 == b else f"between step {a + 1} and step {b}")
        + " (t = step × dt)"
        for a, b in itertools.pairwise(edges)
    ]
    msgs = (
        tuple(PREFIX + _diverged(s, implicit) for s in spans)
        + tuple(PREFIX + _not_converged(method, s) for s in spans)
        + tuple(PREFIX + _inputs_not_finite(s) for s in spans)
    )
    first = jnp.argmax(bad)
    window = jnp.searchsorted(jnp.asarray(edges[1:]), first + 1)
    # the inputs first: a non-finite u makes the state non-finite in the same step
    kind = jnp.where(bad_u[first], 2, jnp.where(~ok[first] & ~diverged[first], 1, 0))
    return raise_if(q, jnp.any(bad), window + windows * kind, msgs)


def check_accelerations(
    where: str, robot: Robot, t: float, q: Any, qd: Any, qdd: Any, u: Any = None, context: str = ""
) -> None:
    """A `ValueError` where the closed loop at `(t, q, q̇)` is not defined: its inputs `u` (when
    given) or its accelerations `q̈` are not finite. The message names the first bad input or
    coordinate, the state, `context` (where in the run), and the first link whose terms are not
    finite there (`diagnose`); nothing happens where both are finite."""
    q, qd = np.asarray(q), np.asarray(qd)
    bad_u = np.flatnonzero(~np.isfinite(np.asarray(u))) if u is not None else np.empty(0, int)
    bad = np.flatnonzero(~np.isfinite(np.asarray(qdd)))
    if bad_u.size:
        what = f"the controller's inputs u are not finite at t = {t:.6g} s (input {bad_u[0]})"
    elif bad.size:
        j = int(bad[0])
        what = (
            f"the closed loop's q̈ is not finite at t = {t:.6g} s at coordinate {j} "
            f"({describe_coordinate(robot, j)})"
        )
    else:
        return
    raise ValueError(
        f"{where}: {what}{context}, state q = {q}, q̇ = {qd}: the model or the controller is not "
        "defined there (forward_dynamics names a singular mass matrix's coordinate)."
        + diagnose(robot, jnp.asarray(q), jnp.asarray(qd))
    )


@functools.partial(jit, static_argnames=("law", "solver"))
def _closed_loop_at(
    robot: Robot,
    loads: tuple,
    policy: Controller | None,
    law: Callable | None,
    constraints: tuple[Constraint, ...],
    solver: str,
    t: Array,
    q: Array,
    qd: Array,
) -> tuple[Array, Array]:
    """`(q̈, u)` of the closed loop at `(t, q, q̇)`, without run-time checks (non-finite values
    are returned, for `check_accelerations` to name)."""
    with trial_evaluations():
        return closed_loop(robot, loads, policy, law, constraints, solver).evaluate(t, q, qd)


def raise_failed_step(loop: tuple, traj: Any, ok: Array, dt: float, scheme: Any) -> None:
    """A `ValueError` for the first failed step of an eager fixed-step run `traj` (steps whose
    Newton iteration did not converge: `ok` false), if any: the closed loop's cause at the
    step's start where it is not defined there (`check_accelerations`), else what the method
    met. `loop`: `closed_loop`'s `(robot, loads, policy, law, constraints, solver)`; `scheme`
    the fixed-step method (an `Integrator`)."""
    q, qd = np.asarray(traj.q), np.asarray(traj.qd)
    finite = np.all(np.isfinite(q), 1) & np.all(np.isfinite(qd), 1)
    converged = np.concatenate([[True], np.asarray(ok)])
    if finite.all() and converged.all():
        return
    k = int(np.argmin(finite & converged))  # ≥ 1: the initial state is finite
    start = (k - 1) * dt
    size = max(np.max(np.abs(q[k - 1])), np.max(np.abs(qd[k - 1])))
    if size > GROWTH * growth_scale(q[0], qd[0]):
        # the method blew up (q̈ overflows at such a state): not the model's fault
        when = f"at t = {k * dt:.6g} s (step {k}, from |q|, |q̇| ≈ {size:.3g})"
        raise ValueError(_diverged(when, scheme.implicit))
    at_start = []
    for stage in (0.0, 0.5, 1.0):  # the step's start, and its stages' times at the start state
        t = start + stage * dt
        qdd, u = _closed_loop_at(*loop, jnp.asarray(t, q.dtype), q[k - 1], qd[k - 1])
        at_start.append(np.asarray(qdd))
        context = (
            f", the start of step {k}" if stage == 0.0 else f", within step {k} (its start state)"
        ) + " (where the run failed; no smaller dt helps)"
        check_accelerations("simulate", loop[0], t, q[k - 1], qd[k - 1], qdd, u, context)
    for stage, (qs, qds) in headed_states(q[k - 1], qd[k - 1], at_start[0], dt):
        t = start + stage * dt
        qdd, u = _closed_loop_at(*loop, jnp.asarray(t, q.dtype), qs, qds)
        check_accelerations("simulate", loop[0], t, qs, qds, qdd, u, _headed(k, stage))
    if not converged[k]:
        when = (
            f"in the step from t = {start:.6g} s to t = {k * dt:.6g} s (step {k}, max_iter = "
            f"{scheme.max_iter}, tol = {scheme.tol:g})"
        )
        raise ValueError(_not_converged(scheme.name, when))
    raise ValueError(_diverged(f"at t = {k * dt:.6g} s (step {k})", scheme.implicit))


def headed_states(
    q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, h: float
) -> list[tuple[float, tuple[np.ndarray, np.ndarray]]]:
    """The states a step of size `h` from `(q, q̇)` heads for, at its middle and its end
    (`θ = ½, 1`), to second order: where the method's stages and iterates go,

        q(θh) ≈ q + θh q̇ + ½ (θh)² q̈,    q̇(θh) ≈ q̇ + θh q̈.

    A controller or a model not defined there (e.g. `√q` on a pendulum swinging through
    `q = 0`) fails the step from a start where it is defined."""
    out = []
    for theta in (0.5, 1.0):
        s = theta * h
        out.append((theta, (q + s * qd + 0.5 * s * s * qdd, qd + s * qdd)))
    return out


def _headed(k: int, stage: float) -> str:
    where = "middle" if stage < 1.0 else "end"
    return (
        f", the state step {k} heads for at its {where} (q + θh q̇ + ½(θh)² q̈ from its "
        "start, where the method's stages go; if the motion goes there, no smaller dt helps)"
    )


def _diverged(when: str, implicit: bool) -> str:
    remedy = "reduce dt" if implicit else "reduce dt, use an implicit method"
    return (
        f"simulate: the state became non-finite {when}; {remedy}, or check the model and the "
        "controller"
    )


def _inputs_not_finite(when: str) -> str:
    return (
        f"simulate: the controller's inputs u became non-finite {when} (at the step's start): "
        "the controller or the model is not defined there, no smaller dt helps (an eager run "
        "names the input and the state)"
    )


def _not_converged(method: str, when: str) -> str:
    return (
        f"simulate: the Newton iteration of method {method!r} did not converge {when}; reduce dt "
        "or raise max_iter"
    )
