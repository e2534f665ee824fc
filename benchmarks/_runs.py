"""Timed `simulate` runs for `benchmarks/simulate.py`: whole calls timed in alternation, their
error against an adaptive reference, one JSON line per run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import softrigid as sr
from softrigid.integrators import GeneralizedAlpha, Radau

try:
    from _timing import emit, machine
except ImportError:  # run as a module
    from benchmarks._timing import emit, machine


def timed_runs(runs: dict[str, Callable[[], sr.Trajectory]], repeats: int) -> dict[str, Any]:
    """Per run: the first call (trace + compile + run), then `repeats` rounds that call every
    run once in turn (runs compared with each other see the same load), timed by the wall clock
    and by the process's CPU time (which leaves out the time other processes hold the core)."""
    first, trajs = {}, {}
    for key, run in runs.items():
        start = time.perf_counter()
        trajs[key] = jax.block_until_ready(run())
        first[key] = time.perf_counter() - start
    wall: dict[str, list[float]] = {key: [] for key in runs}
    cpu: dict[str, list[float]] = {key: [] for key in runs}
    for _ in range(repeats):
        for key, run in runs.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            jax.block_until_ready(run())
            wall[key].append(time.perf_counter() - start)
            cpu[key].append(time.process_time() - start_cpu)
    return {
        key: {
            "traj": trajs[key],
            "first_call_s": first[key],
            "min_s": min(wall[key]),
            "median_s": statistics.median(wall[key]),
            "max_s": max(wall[key]),
            "cpu_min_s": min(cpu[key]),
            "cpu_median_s": statistics.median(cpu[key]),
            "repeats": repeats,
        }
        for key in runs
    }


def reference(
    robot: sr.Robot, q0: jax.Array, t_final: float, dt: float, method: Any = None
) -> np.ndarray:
    """`q` on the grid `dt` by `method`, by default Radau at `rtol = 1e-10` (eager,
    adaptive)."""
    qd0 = jnp.zeros(robot.n_q)
    method = Radau(rtol=1e-10, atol=1e-12) if method is None else method
    return np.asarray(sr.simulate(robot, q0, qd0, t_final, dt, method=method).q)


def deviation(traj: sr.Trajectory, ref: np.ndarray, ref_dt: float, dt: float) -> float:
    """Largest `|q − q_ref|` at the times both grids hold (`dt` a multiple of `ref_dt`)."""
    stride = round(dt / ref_dt)
    n = min(len(traj.t), (len(ref) - 1) // stride + 1)
    return float(np.max(np.abs(np.asarray(traj.q[:n]) - ref[: n * stride : stride])))


def measure_loops(
    name: str,
    robot: sr.Robot,
    q0: jax.Array,
    t_final: float,
    method: Any,
    dt: float,
    repeats: int,
    loops: dict[str, Any],
    ref: tuple[np.ndarray, float] | None = None,
    **extra: Any,
) -> dict[str, dict[str, Any]] | None:
    """Time one configuration under each of the controllers `loops` (a label: `None` or a
    controller) in alternation and emit one line per controller; `None` (with a line) when a
    run fails."""
    qd0 = jnp.zeros(robot.n_q)
    params = {"robot": name, "method": method.name, "dt": dt, "t_final": t_final, **extra}
    if isinstance(method, GeneralizedAlpha):
        params["rho_inf"] = method.rho_inf
    if getattr(method, "implicit", False):
        params["newton"] = method.newton

    def runner(controller: Any) -> Callable[[], sr.Trajectory]:
        return lambda: sr.simulate(
            robot, q0, qd0, t_final, dt, controller=controller, method=method
        )

    try:
        timings = timed_runs({label: runner(c) for label, c in loops.items()}, repeats)
    except ValueError as err:  # a diverged run or a Newton step that did not converge
        emit("simulate.failed", **params, loops=list(loops), error=str(err).splitlines()[0][:200])
        return None
    records = {}
    for label, timing in timings.items():
        traj = timing.pop("traj")
        errors = {} if ref is None else {"max_abs_error_q": deviation(traj, *ref, dt)}
        steps = len(traj.t) - 1
        records[label] = emit(
            "simulate.run",
            **params,
            loop=label,
            **errors,
            n_q=robot.n_q,
            steps=steps,
            **timing,
            per_step_us=1e6 * timing["min_s"] / steps,
            real_time_factor=float(traj.t[-1]) / timing["min_s"],
            **machine(),
        )
    return records


def measure(
    name: str,
    robot: sr.Robot,
    q0: jax.Array,
    t_final: float,
    method: Any,
    dt: float,
    repeats: int,
    ref: tuple[np.ndarray, float] | None = None,
    **extra: Any,
) -> dict[str, Any] | None:
    """`measure_loops` of the open loop alone: its record."""
    records = measure_loops(
        name, robot, q0, t_final, method, dt, repeats, {"open": None}, ref, **extra
    )
    return None if records is None else records["open"]
