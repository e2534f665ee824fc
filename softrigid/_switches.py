"""Fixed steps split and restarted at the closed loop's switch times.

A `Phases` switch jumps the inputs, and a `CubicRestToRest`'s or a `Spline`'s end jumps the
reference's `r̈` (`Controller.switch_times`). A fixed step across such a time integrates a
law that is not smooth: its error is `O(h · jump)` whatever the scheme's order (RK4 at 10 ms
on a double pendulum: 0.08 at 0.6 s after a switch at 0.5037 s, and no better at 5 and
2.5 ms). A switch on the time grid `t_k = k dt` needs no split (a step's end is evaluated as
its left limit: `_integrators.stage_time`); a switch inside a step `(t_k, t_k + h)` is taken
as a boundary of the step's pieces,

    t_k → s_1 → … → s_m → t_k + h,     s_j the switches inside the step, in order,

each piece a step of the scheme (its end again a left limit), so the scheme keeps its order
(RK4 on the same run: 1.8e-4, 9.7e-6, 5.2e-7). A scheme that carries accelerations across
steps (generalized-α's `a` and `q̈`) restarts from the new law's accelerations at every
switch, on the grid or inside a step (`Integrator.restart`): stepping on from the earlier
law's is first order (0.21, 0.10, 0.05 at a switch on the grid). The trajectory keeps its
uniform grid. Which steps hold a switch is decided in the program (`lax.cond`: the other
steps run the scheme's single step); the most switches inside one step (`n_split`, a
static count) and whether any scheme restarts are decided before the run, from the switch
times known then (concrete; switch times traced as arguments of a `jit` are not seen, and a
step across one of them stays first order).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._closed_loop import Dynamics
from ._integrators import Integrator, State, grid_margin

__all__ = ["SwitchPlan", "plan_switches", "switched_step"]


class SwitchPlan(NamedTuple):
    """The switch times of a fixed-step run that its steps act on (`times`, in order), the
    most of them inside one step (`n_split`; 0: no step is split) and whether the scheme
    restarts at one (`restart`)."""

    times: tuple[float, ...]
    n_split: int
    restart: bool


def plan_switches(
    times: Sequence[float], dt: float, n_steps: int, dtype: np.dtype, scheme: Integrator
) -> SwitchPlan:
    """The `SwitchPlan` of a run of `n_steps` steps of `dt`: a switch within the margin of a
    step's left limit (`grid_margin`) of a grid time `k dt`, `0 < k < n_steps`, is on the
    grid (the scheme restarts there); one farther from both ends of a step is inside it."""
    eps = float(np.finfo(dtype).eps)
    kept: list[float] = []
    per_step: dict[int, int] = {}
    on_grid = False
    for ts in sorted(set(times)):
        k = round(ts / dt)
        if 0 < k < n_steps and abs(ts - k * dt) <= grid_margin(k * dt, dt, eps):
            on_grid = True
            kept.append(ts)
            continue
        k = math.floor(ts / dt)
        t = k * dt
        margin = grid_margin(t + dt, dt, eps)
        if 0 <= k < n_steps and t + margin < ts < t + dt - margin:
            kept.append(ts)
            per_step[k] = per_step.get(k, 0) + 1
    n_split = max(per_step.values(), default=0)
    restart = scheme.restarts and (on_grid or n_split > 0)
    if not (n_split or restart):
        return SwitchPlan((), 0, False)
    return SwitchPlan(tuple(kept), n_split, restart)


def _fresh(scheme: Integrator, state: State) -> State:
    """`state` without the iteration matrix an implicit scheme kept: it was built for another
    step size."""
    if not scheme.implicit:
        return state
    return state._replace(matrix=state.matrix._replace(valid=jnp.zeros_like(state.matrix.valid)))


def switched_step(
    scheme: Integrator,
    dyn: Dynamics,
    t: Array,
    state: State,
    h: Array,
    switches: Array,
    n_split: int,
    restart: bool,
) -> tuple[State, Array, Array]:
    """`scheme.step(dyn, t, state, h)` from the restarted state where a switch is at `t`
    (with `restart`), and where switches lie inside `(t, t + h)` the step in pieces between
    them, each restarted (module docstring); `u` the inputs at `t`."""
    t1 = t + h
    margin = grid_margin(t1, h, jnp.finfo(t1.dtype).eps)
    if restart:
        state = jax.lax.cond(
            jnp.any(jnp.abs(switches - t) <= margin),
            lambda x: scheme.restart(dyn, t, _fresh(scheme, x)),
            lambda x: x,
            state,
        )
    if not n_split:
        return scheme.step(dyn, t, state, h)
    inside = (switches > t + margin) & (switches < t1 - margin)
    # the first n_split switches inside the step in order, the rest t + h (empty pieces)
    cuts = jnp.sort(jnp.where(inside, switches, t1))[:n_split]

    def whole() -> tuple[State, Array, Array]:
        new, ok, u = scheme.step(dyn, t, state, h)
        return new, jnp.asarray(ok, bool), u

    def pieces() -> tuple[State, Array, Array]:
        new, ok, u = scheme.step(dyn, t, _fresh(scheme, state), cuts[0] - t)
        ok = jnp.asarray(ok, bool)
        bounds = [cuts[j] for j in range(n_split)] + [t1]
        for a, b in itertools.pairwise(bounds):

            def piece(x: State, a: Array = a, b: Array = b) -> tuple[State, Array]:
                start = _fresh(scheme, x)
                if restart:
                    start = scheme.restart(dyn, a, start)
                out, piece_ok, _ = scheme.step(dyn, a, start, b - a)
                return out, jnp.asarray(piece_ok, bool)

            def empty(x: State) -> tuple[State, Array]:
                return x, jnp.asarray(True)

            new, piece_ok = jax.lax.cond(b > a, piece, empty, new)
            ok = ok & piece_ok
        return _fresh(scheme, new), ok, u

    return jax.lax.cond(jnp.any(inside), pieces, whole)
