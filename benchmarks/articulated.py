"""Forward dynamics: the `O(N)` articulated-body recursion against the Cholesky path and peers.

Two chains of `benchmarks/_peers.py` and `_peers_pcs.py`, N = 1 … 100 bodies:

- rigid chain of N revolute joints: softrigid articulated (`solver="articulated"`), softrigid
  Cholesky (`M` by the recursion with `n` unit accelerations, then Cholesky), Pinocchio's ABA
  (`pin.aba`, C++) and SoRoMoX's `ArticulatedSoftRobot.forward_dynamics` (an `O(N)` ABA in JAX);
- planar PCS chain of N segments (3 strains each): softrigid articulated and Cholesky, SoRoMoX's
  `PlanarPCS.forward_dynamics` (dense `M` from the Gauss-point Jacobians, then Cholesky).

Per call: one state, jitted, after the first call (reported separately as `first_s`). Batched:
`jax.vmap` over B states, the time per state. Each record carries the same-run ratios
`articulated / cholesky` and `articulated / <peer>`, and the agreement of the articulated path
with the Cholesky path on the timed state. The process pins itself to one core (before JAX
starts its threads) unless `--cores 0`.

Run: python benchmarks/articulated.py [--sizes 1 2 4 8 16 32 64 100] [--batch 1024]
         [--chains rigid pcs] [--no-peers]
"""

from __future__ import annotations

import argparse
import sys

try:
    from _timing import emit, machine, pin_cores, time_call, time_first_call
except ImportError:  # run as a module
    from benchmarks._timing import emit, machine, pin_cores, time_call, time_first_call

if __name__ == "__main__":
    pin_cores(int(sys.argv[sys.argv.index("--cores") + 1]) if "--cores" in sys.argv else 1)

import jax
import jax.numpy as jnp
import numpy as np

try:
    import _peers as peers
    import _peers_pcs as pcs
except ImportError:  # run as a module
    from benchmarks import _peers as peers
    from benchmarks import _peers_pcs as pcs


def _time(fd, state) -> dict[str, float]:
    first = time_first_call(lambda: fd(*state))
    return {"first_s": first, **time_call(lambda: fd(*state))}


def _batched(fd, states) -> dict[str, float] | None:
    """Per-state time of `vmap(fd)` over the batch; `None` when the batch does not fit in
    memory (the Cholesky paths hold `B` dense mass matrices and their `n_q` tangents)."""
    batched = jax.jit(jax.vmap(fd))
    try:
        first = time_first_call(lambda: batched(*states))
    except jax.errors.JaxRuntimeError as err:
        if "RESOURCE_EXHAUSTED" not in str(err):
            raise
        return None
    timing = time_call(lambda: batched(*states), repeats=5)
    return {"first_s": first, "per_state_s": timing["median_s"] / states[0].shape[0]}


def _candidates(chain: str, n: int, use_peers: bool) -> dict:
    """name -> (q, q̇, τ) -> q̈, for one chain and size."""
    if chain == "rigid":
        robot = peers.rigid_chain(n, seed=n)
    else:
        robot = pcs.planar_pcs_chain(n)
    out = {
        "articulated": peers.softrigid_articulated_fd(robot),
        "cholesky": peers.softrigid_cholesky_fd(robot),
    }
    if not use_peers:
        return out
    if chain == "rigid":
        try:
            model, data = peers.pin_rigid_chain(n, seed=n)
            out["pinocchio"] = lambda q, qd, tau: peers.pin_aba(model, data, q, qd, tau)
        except ImportError:
            pass
    try:
        if chain == "rigid":
            out["soromox"] = peers.soromox_rigid_chain(n, seed=n)
        else:
            out["soromox"] = pcs.soromox_planar_pcs(n)
    except ImportError:
        pass
    return out


def measure(chain: str, n: int, batch: int, use_peers: bool) -> None:
    state_fn = peers.rigid_state if chain == "rigid" else pcs.planar_pcs_state
    state = tuple(jnp.asarray(x) for x in state_fn(n, n))
    states = peers.batch_states(state_fn, n, batch) if batch else None
    fds = _candidates(chain, n, use_peers)
    per_call, per_state = {}, {}
    for name, fd in fds.items():
        per_call[name] = _time(fd, state)
        if states is not None and name != "pinocchio":  # a C++ call per state: not batched
            per_state[name] = _batched(fd, states)
    reference = np.asarray(fds["cholesky"](*state))
    error = float(
        np.max(np.abs(np.asarray(fds["articulated"](*state)) - reference))
        / np.max(np.abs(reference))
    )
    ratios = {
        f"articulated/{name}": per_call["articulated"]["median_s"] / t["median_s"]
        for name, t in per_call.items()
        if name != "articulated"
    }
    batched_ratios = {
        f"articulated/{name}": per_state["articulated"]["per_state_s"] / t["per_state_s"]
        for name, t in per_state.items()
        if name != "articulated" and t is not None and per_state["articulated"] is not None
    }
    emit(
        "articulated.forward_dynamics",
        chain=chain,
        n_bodies=n,
        n_q=int(state[0].shape[0]),
        per_call_us={k: 1e6 * v["median_s"] for k, v in per_call.items()},
        spread_us={k: [1e6 * v["min_s"], 1e6 * v["max_s"]] for k, v in per_call.items()},
        first_call_s={k: v["first_s"] for k, v in per_call.items()},
        ratio=ratios,
        batch=batch,
        batched_per_state_us={
            k: None if v is None else 1e6 * v["per_state_s"] for k, v in per_state.items()
        },
        batched_ratio=batched_ratios,
        articulated_vs_cholesky_rel=error,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64, 100])
    parser.add_argument("--chains", nargs="+", default=["rigid", "pcs"], choices=["rigid", "pcs"])
    parser.add_argument("--batch", type=int, default=1024, help="0: no batched timing")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--cores", type=int, default=1, help="pin to this many cores; 0: no pin")
    args = parser.parse_args()
    emit("articulated.machine", **machine(), cores=args.cores)
    for chain in args.chains:
        for n in args.sizes:
            measure(chain, n, args.batch, not args.no_peers)
            jax.clear_caches()


if __name__ == "__main__":
    main()
