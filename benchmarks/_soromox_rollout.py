"""Issue 12's same-run rollout comparison with SoRoMoX (`benchmarks/simulate.py`).

The planar PCS chain of `_peers_pcs` (n segments, bend, axial and shear strains), built the
same in both libraries, from the same bent configuration at rest, no input, over `t_final`:

- SoRoMoX: `PlanarPCS.rollout_to` (diffrax `Tsit5` at the constant step `dt`, its default);
- softrigid: `softrigid.vector_field(robot)` in the same diffrax `Tsit5` at `dt` (the same
  integrator: the difference is the model's cost per evaluation), and `softrigid.simulate`
  with its own RK4 at `dt`.

Each rollout is one jitted program: first call (trace + compile + run) and the minimum over
`repeats` rounds of the whole rollouts, called in turn (`_runs.timed_runs`), on the grid
`save_dt`; the agreement is the largest `|q − q_SoRoMoX|` on that grid (float64; SoRoMoX with
exact Gauss nodes).
"""

from __future__ import annotations

from typing import Any

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

import softrigid as sr

try:
    from _peers_pcs import planar_pcs_chain, planar_pcs_state, soromox_planar_pcs_model
    from _runs import timed_runs
    from _timing import emit, machine
except ImportError:  # run as a module
    from benchmarks._peers_pcs import (
        planar_pcs_chain,
        planar_pcs_state,
        soromox_planar_pcs_model,
    )
    from benchmarks._runs import timed_runs
    from benchmarks._timing import emit, machine

DT = 1e-4  # s: SoRoMoX's default solver step
SAVE_DT = 0.01  # s: the compared grid


def compare(n: int, t_final: float, dt: float, save_dt: float, repeats: int) -> dict[str, Any]:
    """The three rollouts of the `n`-segment chain: per rollout its first call, its minimum
    wall time, its real-time factor and its deviation from SoRoMoX's."""
    import soromox as sx

    robot, model = planar_pcs_chain(n), soromox_planar_pcs_model(n)
    q0 = jnp.asarray(planar_pcs_state(n, seed=0)[0])
    zero = jnp.zeros_like(q0)
    ts = jnp.arange(round(t_final / save_dt) + 1) * save_dt

    @jax.jit
    def soromox_rollout(y0: jax.Array) -> jax.Array:
        out = model.rollout_to(
            sx.SystemState(t=jnp.asarray(0.0), y=y0), t1=t_final, solver_dt=dt, save_ts=ts
        )
        return out.y[:, : n * 3]

    field = sr.vector_field(robot)

    @jax.jit
    def softrigid_tsit5(y0: jax.Array) -> jax.Array:
        term = diffrax.ODETerm(lambda t, y, args: field(t, y))
        sol = diffrax.diffeqsolve(
            term,
            diffrax.Tsit5(),
            0.0,
            t_final,
            dt,
            (y0[: 3 * n], y0[3 * n :]),
            saveat=diffrax.SaveAt(ts=ts),
            max_steps=round(t_final / dt) + 8,
        )
        return sol.ys[0]

    stride = round(save_dt / dt)

    def softrigid_rk4() -> jax.Array:
        return sr.simulate(robot, q0, zero, t_final, dt, method="rk4").q[::stride]

    y0 = jnp.concatenate([q0, zero])
    runs = {
        "soromox_tsit5": lambda: soromox_rollout(y0),
        "softrigid_tsit5": lambda: softrigid_tsit5(y0),
        "softrigid_rk4": softrigid_rk4,
    }
    timings = timed_runs(runs, repeats)  # in alternation: the runs see the same load
    reference = np.asarray(timings["soromox_tsit5"]["traj"])
    return {
        name: {
            "first_call_s": t["first_call_s"],
            "min_s": t["min_s"],
            "median_s": t["median_s"],
            "cpu_min_s": t["cpu_min_s"],
            "real_time_factor": t_final / t["min_s"],
            "per_step_us": 1e6 * t["min_s"] * dt / t_final,
            "max_abs_dev_q_from_soromox": float(np.max(np.abs(np.asarray(t["traj"]) - reference))),
        }
        for name, t in timings.items()
    }


def bench(n: int, t_final: float, repeats: int) -> None:
    """One JSON line per rollout of `compare(n, t_final, DT, SAVE_DT, repeats)`."""
    for rollout, record in compare(n, t_final, DT, SAVE_DT, repeats).items():
        emit(
            "simulate.soromox",
            robot=f"planar_pcs_{n}",
            rollout=rollout,
            dt=DT,
            t_final=t_final,
            **record,
            **machine(),
        )
