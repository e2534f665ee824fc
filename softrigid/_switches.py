"""Fixed steps split and restarted at the closed loop's switch times.

A `Phases` switch jumps the inputs, and a `CubicRestToRest`'s or a `Spline`'s end jumps the
reference's `r̈` (`Controller.switch_times`). A fixed step across such a time integrates a
law that is not smooth: its error is `O(h · jump)` whatever the scheme's order (RK4 at 10 ms
on a double pendulum: 0.08 at 0.6 s after a switch at 0.5037 s, and no better at 5 and
2.5 ms). A switch on the time grid `t_k = k dt` (to within `grid_margin`) needs no split: a
step's end is evaluated as its left limit (`_integrators.stage_time`), and the step from
`t_k` starts at the later of `t_k` and the switch (`piece_step`: a switch a rounding above
`k dt` would otherwise meet the earlier law at the step's first stage); a switch inside a
step `(t_k, t_k + h)` is taken as a boundary of the step's pieces,

    t_k → s_1 → … → s_m → t_k + h,     s_j the switches inside the step, in order,

each piece a step of the scheme (its end again a left limit), so the scheme keeps its order
(RK4 on the same run: 1.8e-4, 9.7e-6, 5.2e-7). A scheme that carries accelerations across
steps (generalized-α's `a` and `q̈`) restarts from the new law's accelerations at every
switch, on the grid or inside a step (`Integrator.restart`): stepping on from the earlier
law's is first order (0.21, 0.10, 0.05 at a switch on the grid).

The pieces are planned before the run from the switch times known then (concrete; switch
times traced as arguments of a `jit` are not seen, and a step across one of them stays first
order): the run's scan goes over pieces instead of steps (`Pieces`: each piece's step and
the switches at its ends, whether the scheme restarts there and whether an implicit scheme's
kept iteration matrix, built for another step size, is dropped), so the program holds the
scheme's step once, and each step's record is its last piece's state and its first piece's
inputs (`assemble`). The trajectory keeps its uniform grid. A run without such switches runs
the scan over steps as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._closed_loop import Dynamics
from ._integrators import Integrator, State, grid_margin

__all__ = ["Assembly", "Pieces", "assemble", "piece_step", "plan_pieces"]


class Pieces(NamedTuple):
    """A fixed-step run's pieces, the scan's inputs: each piece is a step of the scheme from
    `a` to `b`, the step `k`'s own ends `k dt`, `(k + 1) dt` or switch times between."""

    k: Array  # (P,) the step of each piece
    start: Array  # (P,) the switch it starts at (index into the times; on the grid: at the
    # later of k dt and the switch), −1: at k dt
    end: Array  # (P,) the switch it ends at, −1: at (k + 1) dt
    restart: Array  # (P,) restart the scheme at the piece's start (a switch there)
    fresh: Array  # (P,) drop a kept iteration matrix (built for another step size)


class Assembly(NamedTuple):
    """Each step's first piece (its `u`) and last piece (its end state), `(n_steps,)`."""

    first: Array
    last: Array


def plan_pieces(
    times: Sequence[float], dt: float, n_steps: int, dtype: np.dtype
) -> tuple[tuple[float, ...], Pieces, Assembly] | None:
    """The switch times the run acts on, its pieces and their assembly into steps, or `None`
    where no switch falls in the run. A switch within the margin of a step's left limit
    (`grid_margin`) of a grid time `k dt`, `0 < k < n_steps`, is on the grid: step `k`
    starts at the later of `k dt` and the switch (`piece_step`), and a scheme that restarts
    restarts there; one farther from both ends of a step is inside it."""
    eps = float(np.finfo(dtype).eps)
    kept: list[float] = []
    on_grid: dict[int, int] = {}  # the steps that start at a switch → the switch
    inside: dict[int, list[int]] = {}  # step → the switches inside it, in order
    for ts in sorted(set(times)):
        k = round(ts / dt)
        if 0 < k < n_steps and abs(ts - k * dt) <= grid_margin(k * dt, dt, eps):
            on_grid[k] = len(kept)
            kept.append(ts)
            continue
        k = math.floor(ts / dt)
        margin = grid_margin(k * dt + dt, dt, eps)
        if 0 <= k < n_steps and k * dt + margin < ts < k * dt + dt - margin:
            inside.setdefault(k, []).append(len(kept))
            kept.append(ts)
    if not (inside or on_grid):
        return None
    counts = np.ones(n_steps, np.int64)
    for k, cuts in inside.items():
        counts[k] += len(cuts)
    first = np.cumsum(counts) - counts
    k_of = np.repeat(np.arange(n_steps), counts)
    start = np.full(k_of.size, -1, np.int32)
    end = np.full(k_of.size, -1, np.int32)
    starts_at_switch = np.zeros(k_of.size, bool)
    fresh = np.zeros(k_of.size, bool)
    for k, index in on_grid.items():
        start[first[k]] = index  # the step starts at the switch where it lies above k dt
        starts_at_switch[first[k]] = True
    for k, cuts in inside.items():
        pieces = first[k] + np.arange(len(cuts) + 1)
        start[pieces[1:]] = cuts
        end[pieces[:-1]] = cuts
        starts_at_switch[pieces[1:]] = True
        fresh[pieces] = True
        if k + 1 < n_steps:
            fresh[first[k + 1]] = True
    plan = Pieces(
        jnp.asarray(k_of, jnp.int32),
        jnp.asarray(start),
        jnp.asarray(end),
        jnp.asarray(starts_at_switch),
        jnp.asarray(fresh),
    )
    last = first + counts - 1
    return tuple(kept), plan, Assembly(jnp.asarray(first, jnp.int32), jnp.asarray(last, jnp.int32))


def piece_step(
    scheme: Integrator,
    dyn: Dynamics,
    t: Array,
    state: State,
    x: Pieces,
    switches: Array,
    dt: Array,
) -> tuple[State, Array, Array]:
    """The piece `x` of the step from `t` (`scheme.step` from the piece's start to its end,
    the whole step `dt` where it has no switch), from the restarted state where a switch is at
    its start (schemes that restart), and without a kept iteration matrix where it must be
    fresh (implicit schemes); `u` the inputs at its start."""
    # a piece starts at its switch; a step at a switch on the grid at the later of `t` and the
    # switch (a switch a rounding above `k dt`, or a `k dt` rounded below it in the run's
    # dtype, would run the step's first stage with the earlier law)
    a = jnp.where(x.start >= 0, jnp.maximum(t, switches[jnp.maximum(x.start, 0)]), t)
    b = jnp.where(x.end >= 0, switches[jnp.maximum(x.end, 0)], t + dt)
    h = jnp.where((x.start < 0) & (x.end < 0), dt, b - a)
    if scheme.implicit:
        valid = jnp.where(x.fresh, jnp.zeros_like(state.matrix.valid), state.matrix.valid)
        state = state._replace(matrix=state.matrix._replace(valid=valid))
    if scheme.restarts:
        state = jax.lax.cond(x.restart, lambda y: scheme.restart(dyn, a, y), lambda y: y, state)
    return scheme.step(dyn, a, state, h)


def assemble(
    plan: Pieces, assembly: Assembly, ok: Array, q: Array, qd: Array, u: Array
) -> tuple[Array, Array, Array, Array]:
    """The steps' records from the pieces': `ok` where every piece of the step was, the end
    states `q`, `q̇` of their last pieces and the inputs `u` at the start of their first."""
    n_steps = assembly.first.shape[0]
    step_ok = jax.ops.segment_min(ok.astype(jnp.int32), plan.k, n_steps) > 0
    return step_ok, q[assembly.last], qd[assembly.last], u[assembly.first]
