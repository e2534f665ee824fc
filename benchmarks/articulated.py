"""Forward dynamics: the `O(N)` articulated-body recursion against the Cholesky path and peers.

Chains of `benchmarks/_peers.py`, `_peers_pcs.py` and `scaling.py`, N = 1 … 100 bodies:

- rigid chain of N revolute joints: softrigid articulated (`solver="articulated"`), softrigid
  Cholesky (`M` by the recursion with `n` unit accelerations, then Cholesky), Pinocchio's ABA
  (`pin.aba`, C++) and SoRoMoX's `ArticulatedSoftRobot.forward_dynamics` (an `O(N)` ABA in JAX);
- planar PCS chain of N segments (3 strains each): softrigid articulated and Cholesky, SoRoMoX's
  `PlanarPCS.forward_dynamics` (dense `M` from the Gauss-point Jacobians, then Cholesky);
- `--chains spatial`: spatial PCS chain of N segments (6 strains each), peer SoRoMoX's `PCS`;
- `--chains cc`: the planar constant-curvature chain of `scaling.py` (one coordinate per soft
  body; no peer).

Per call: one state, jitted, after the first call (reported separately as `first_s`), the codes
timed interleaved batch by batch (`_timing.time_interleaved`). Batched:
`jax.vmap` over B states, the time per state. Each record carries the same-run ratios
`articulated / cholesky` and `articulated / <peer>`, and the agreement of the articulated path
with the Cholesky path on the timed state, and `auto`: the solver `forward_dynamics` picks
for the robot by default (`softrigid._articulated.choose_solver`). The process pins itself to
one core (before JAX starts its threads) unless `--cores 0`.

Run: python benchmarks/articulated.py [--sizes 1 2 4 8 16 32 64 100] [--batch 1024]
         [--chains rigid pcs spatial cc] [--no-peers]
"""

from __future__ import annotations

import argparse

try:
    from _timing import (
        early_int,
        emit,
        machine,
        pin_cores,
        positive_int,
        time_call,
        time_first_call,
        time_interleaved,
    )
except ImportError:  # run as a module
    from benchmarks._timing import (
        early_int,
        emit,
        machine,
        pin_cores,
        positive_int,
        time_call,
        time_first_call,
        time_interleaved,
    )

if __name__ == "__main__":
    pin_cores(early_int("--cores", 1))

import functools

import jax
import jax.numpy as jnp
import numpy as np

import softrigid as sr
from softrigid._articulated import choose_solver

try:
    import _peers as peers
    from peers import FAMILIES, Family
    from scaling import build_chain
except ImportError:  # run as a module
    from benchmarks import _peers as peers
    from benchmarks.peers import FAMILIES, Family
    from benchmarks.scaling import build_chain


def _batched(fd, states) -> dict[str, float] | None:
    """Per-state time of `vmap(fd)` over the batch; `None` when the batch does not fit in
    memory (the Cholesky paths hold `B` dense mass matrices and their `n_q` tangents)."""
    batched = peers.vmapped(fd)
    try:
        first = time_first_call(lambda: batched(*states))
    except jax.errors.JaxRuntimeError as err:
        if "RESOURCE_EXHAUSTED" not in str(err):
            raise
        return None
    timing = time_call(lambda: batched(*states), repeats=5)
    return {"first_s": first, "per_state_s": timing["median_s"] / states[0].shape[0]}


def _cc_state(n: int, seed: int) -> tuple[np.ndarray, ...]:
    """The CC chain's state: bending angles within ±1 rad, unit-size velocities and torques."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, n), rng.normal(size=n), rng.normal(size=n)


# the chains by their command-line names: `peers.py`'s families and the CC chain of `scaling.py`
CHAINS = {
    "rigid": FAMILIES["rigid"],
    "pcs": FAMILIES["planar_pcs"],
    "spatial": FAMILIES["spatial_pcs"],
    "cc": Family(lambda n: build_chain(n, 4, 2, 3), _cc_state, None, None),
}


def _candidates(chain: str, robot: sr.Robot, n: int, use_peers: bool) -> dict:
    """name -> (q, q̇, τ) -> q̈, for one chain and size."""
    out = {
        "articulated": peers.softrigid_articulated_fd(robot),
        "cholesky": peers.softrigid_cholesky_fd(robot),
    }
    family = CHAINS[chain]
    if not use_peers:
        return out
    if family.pinocchio is not None:
        try:  # on the JAX arrays of the other codes, converted (`pin_aba`)
            model, data = peers.pin_rigid_chain(n, seed=n)
            out["pinocchio"] = lambda q, qd, tau: peers.pin_aba(model, data, q, qd, tau)
        except ImportError:
            pass
    if family.soromox is not None:
        try:
            out["soromox"] = family.soromox(n)
        except ImportError:
            pass
    return out


def measure(chain: str, n: int, batch: int, use_peers: bool) -> None:
    family = CHAINS[chain]
    robot = family.softrigid(n)
    state = tuple(jnp.asarray(x) for x in family.state(n, n))
    states = peers.batch_states(family.state, n, batch) if batch else None
    fds = _candidates(chain, robot, n, use_peers)
    first = {name: time_first_call(lambda fd=fd: fd(*state)) for name, fd in fds.items()}
    # the codes interleaved batch by batch: a change of load hits them alike
    timed = time_interleaved({name: functools.partial(fd, *state) for name, fd in fds.items()})
    per_call = {name: {"first_s": first[name], **timed[name]} for name in fds}
    per_state = {}
    for name, fd in fds.items():
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
        auto=choose_solver("forward_dynamics", robot, "auto"),
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
    parser.add_argument(
        "--sizes", type=positive_int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64, 100]
    )
    parser.add_argument("--chains", nargs="+", default=["rigid", "pcs"], choices=list(CHAINS))
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
