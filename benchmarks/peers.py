"""The peers table of `performance.md` in one run: forward dynamics against SoRoMoX and Pinocchio.

Robots (built the same in every code by `benchmarks/_peers.py` and `_peers_pcs.py`, whose
self-checks establish the conventions): planar PCS chains of 1, 8 and 16 segments (3
coordinates each), a spatial PCS chain of 4 segments (6 each), rigid chains of 6 and 30
revolute joints. Per robot, `q̈` from `(q, q̇, τ)` in float64:

- per call, one state: softrigid's public `forward_dynamics` under `jax.jit` with softrigid's
  compiler options (`sr.compiler_options()`, as its own programs: pinned to one core they
  include XLA's memory-optimized schedule; the peers keep JAX's defaults; solver `"auto"`;
  the other solver too, for reference, except with `--quick`), SoRoMoX's `forward_dynamics`
  under `jax.jit`, Pinocchio's `aba` (C++ through its Python binding, on NumPy arrays; per
  call only); median and minimum over 9 rounds, the codes of a row interleaved round by
  round (a change of load hits them alike), after the first call, which is reported
  separately (trace + compile + run);
- batched: `jax.jit(jax.vmap(fd))` over B states, the time per state, B = 1, 64, 1024 (and
  16384 with `--large`);
- ratios softrigid / peer, per call and per state at each B (`softrigid/pinocchio` at B is
  softrigid's batched time per state over Pinocchio's single call: the target of the 30-joint
  chain is ≤ 1);
- programs: the size of each jitted code's optimized XLA program for one state
  (`_timing.hlo_counts`: instructions, and kernels outside fusions, with fusions, dots and
  loops apart);
- agreement: the maximum relative difference `|a − b|_∞ / |a|_∞` of each code's `q̈` to
  softrigid's on 3 random states.

Plus the inverse dynamics per call (`inertial_inverse_dynamics` at `q = q̇ = q̈ = 1`) of the
20-body planar constant-curvature chain of `benchmarks/scaling.py` (`build_chain(20, 4, 2, 3)`;
target ≤ 30 µs). A peer that is not installed (extras `soromox`, `pin`) is reported as `null`.
The process pins itself to one core (`--cores`, default 1; 0: no pinning) before JAX starts its
threads. One JSON object per line, each with the load average when it was written.

`--synchronous` runs every code's programs in the calling thread (`sr.synchronous_dispatch`,
for the whole process: the peers too). `--fused-loops` compiles every small loop as one kernel
(`sr.fused_loops`, for the whole process: the peers too).

Run: python benchmarks/peers.py [--quick] [--large] [--robots planar_pcs_1 rigid_30 ...]
         [--cores 1] [--synchronous] [--fused-loops]
"""

from __future__ import annotations

import argparse

try:
    from _timing import (
        early_int,
        emit,
        hlo_counts,
        load,
        machine,
        pin_cores,
        time_call,
        time_first_call,
        time_interleaved,
    )
except ImportError:  # run as a module
    from benchmarks._timing import (
        early_int,
        emit,
        hlo_counts,
        load,
        machine,
        pin_cores,
        time_call,
        time_first_call,
        time_interleaved,
    )

if __name__ == "__main__":
    pin_cores(early_int("--cores", 1))

import functools
import importlib.metadata
import importlib.util
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import softrigid as sr
from softrigid._articulated import choose_solver

try:
    import _peers
    import _peers_pcs
    from scaling import build_chain
except ImportError:  # run as a module
    from benchmarks import _peers, _peers_pcs
    from benchmarks.scaling import build_chain

FD = _peers.FD
State = tuple[np.ndarray, np.ndarray, np.ndarray]

TABLE = ("planar_pcs_1", "planar_pcs_8", "planar_pcs_16", "spatial_pcs_4", "rigid_6", "rigid_30")
QUICK = ("planar_pcs_1", "spatial_pcs_1", "rigid_6")
BATCHES = (1, 64, 1024)
LARGE_BATCH = 16384
AGREEMENT_STATES = 3
IID_TARGET_US = 30.0


class Family(NamedTuple):
    """How to build one family of robots in each code (`None`: the code has no such model)."""

    softrigid: Callable[[int], sr.Robot]
    state: Callable[[int, int], State]
    soromox: Callable[[int], FD] | None
    pinocchio: Callable[[int], FD] | None


def _pin_fd(n: int) -> FD:
    """Pinocchio's `aba` through its binding's cheapest call: contiguous float64 NumPy arrays
    in, a view of `data.ddq` out, valid until the next call (`_peers.pin_aba` converts and
    copies, ~2 µs more per call)."""
    import pinocchio as pin

    model, data = _peers.pin_rigid_chain(n, seed=n)
    return functools.partial(pin.aba, model, data)


FAMILIES = {
    "planar_pcs": Family(
        _peers_pcs.planar_pcs_chain,
        _peers_pcs.planar_pcs_state,
        _peers_pcs.soromox_planar_pcs,
        None,
    ),
    "spatial_pcs": Family(
        _peers_pcs.spatial_pcs_chain,
        _peers_pcs.spatial_pcs_state,
        _peers_pcs.soromox_spatial_pcs,
        None,
    ),
    "rigid": Family(
        lambda n: _peers.rigid_chain(n, seed=n),
        _peers.rigid_state,
        lambda n: _peers.soromox_rigid_chain(n, seed=n),
        _pin_fd,
    ),
}


def parse_robot(name: str) -> tuple[str, int]:
    """`"planar_pcs_8"` -> `("planar_pcs", 8)`."""
    family, _, n = name.rpartition("_")
    if family not in FAMILIES or not n.isdigit() or int(n) < 1:
        raise ValueError(f"robot {name!r}: use <family>_<n> with family in {sorted(FAMILIES)}")
    return family, int(n)


def peer_versions() -> dict[str, str | None]:
    """The installed version of each peer (`None`: not installed)."""
    out: dict[str, str | None] = {}
    for module, dist in (("soromox", "soromox"), ("pinocchio", "pin")):
        out[module] = importlib.metadata.version(dist) if importlib.util.find_spec(module) else None
    return out


def candidates(family: str, n: int, other_solver: bool) -> tuple[dict[str, FD | None], str]:
    """name -> forward dynamics for one robot (`None` for an absent peer), and the solver that
    softrigid's `"auto"` chose."""
    spec = FAMILIES[family]
    robot = spec.softrigid(n)
    solver = choose_solver("forward_dynamics", robot, "auto")
    fds: dict[str, FD | None] = {"softrigid": _peers.softrigid_fd(robot)}
    if other_solver:
        other = "cholesky" if solver == "articulated" else "articulated"
        fds[f"softrigid.{other}"] = _peers.softrigid_fd(robot, other)
    versions = peer_versions()
    if spec.soromox is not None:
        fds["soromox"] = spec.soromox(n) if versions["soromox"] else None
    if spec.pinocchio is not None:
        fds["pinocchio"] = spec.pinocchio(n) if versions["pinocchio"] else None
    return fds, solver


def _rounds(quick: bool) -> tuple[int, float]:
    """`(repeats, min_time)` of the timing: 9 rounds of at least 0.1 s each, fewer with `--quick`."""
    return (3, 0.02) if quick else (9, 0.1)


def timed(
    calls: dict[str, Callable[[], Any] | None], quick: bool, size: int = 1
) -> dict[str, dict[str, float] | None]:
    """The first call of each (trace + compile + run), then seconds per call, divided by the
    batch `size` (per state), with the codes interleaved round by round (`time_interleaved`:
    a change of load hits them alike); `None` for an absent peer."""
    present = {code: call for code, call in calls.items() if call is not None}
    first = {code: time_first_call(call) for code, call in present.items()}
    timing = time_interleaved(present, *_rounds(quick))
    return {
        code: None
        if code not in present
        else {
            "first_s": first[code],
            "median_s": timing[code]["median_s"] / size,
            "min_s": timing[code]["min_s"] / size,
        }
        for code in calls
    }


def _pick(
    entries: dict[str, dict[str, float] | None], key: str, scale: float = 1.0
) -> dict[str, float | None]:
    """`entries[code][key] * scale` per code (`None` for an absent peer)."""
    return {code: None if e is None else scale * e[key] for code, e in entries.items()}


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a / b


def measure(name: str, batches: tuple[int, ...], quick: bool) -> dict[str, Any]:
    """One row of the table: per call, batched, ratios and agreement for the robot `name`."""
    family, n = parse_robot(name)
    spec = FAMILIES[family]
    fds, solver = candidates(family, n, other_solver=not quick)
    state_np = spec.state(n, n)
    state_jax = tuple(jnp.asarray(x) for x in state_np)

    # Pinocchio takes NumPy arrays (a JAX array would be converted on every call)
    calls = timed(
        {
            code: None
            if fd is None
            else functools.partial(fd, *(state_np if code == "pinocchio" else state_jax))
            for code, fd in fds.items()
        },
        quick,
    )
    batched = {}
    for size in batches:
        states = _peers.batch_states(spec.state, n, size)
        vmapped = {
            code: None
            if fds[code] is None
            else functools.partial(_peers.vmapped(fds[code], code == "softrigid"), *states)
            for code in ("softrigid", "soromox")
            if code in fds
        }
        batched[str(size)] = timed(vmapped, quick, size)

    checks = [spec.state(n, 1000 + k) for k in range(AGREEMENT_STATES)]
    agreement = {
        code: None if fd is None else _peers.max_relative(fds["softrigid"], fd, checks)
        for code, fd in fds.items()
        if code != "softrigid"
    }

    # the compiled programs' size (Pinocchio's C++ has none)
    programs = {
        code: hlo_counts(fd, *state_jax)
        for code, fd in fds.items()
        if fd is not None and hasattr(fd, "lower")
    }
    per_call_us = _pick(calls, "median_s", 1e6)
    batched_us = {size: _pick(row, "median_s", 1e6) for size, row in batched.items()}
    peers_here = [code for code in ("soromox", "pinocchio") if code in fds]
    batched_ratio = {}
    for size, row in batched_us.items():
        ratios = {"softrigid/soromox": _ratio(row["softrigid"], row.get("soromox"))}
        if "pinocchio" in fds:  # the target: batched per state <= Pinocchio's single call
            ratios["softrigid/pinocchio_call"] = _ratio(row["softrigid"], per_call_us["pinocchio"])
        batched_ratio[size] = ratios
    record = emit(
        "peers.forward_dynamics",
        robot=name,
        family=family,
        n_bodies=n,
        n_q=int(state_np[0].shape[0]),
        solver=solver,
        per_call_us=per_call_us,
        min_us=_pick(calls, "min_s", 1e6),
        first_call_s=_pick(calls, "first_s"),
        ratio={
            f"softrigid/{p}": _ratio(per_call_us["softrigid"], per_call_us[p]) for p in peers_here
        },
        batched_per_state_us=batched_us,
        batched_min_per_state_us={size: _pick(row, "min_s", 1e6) for size, row in batched.items()},
        batched_first_call_s={size: _pick(row, "first_s") for size, row in batched.items()},
        batched_ratio=batched_ratio,
        agreement=agreement,
        programs=programs,
        load=load(),
    )
    jax.clear_caches()
    return record


def measure_iid(quick: bool) -> dict[str, Any]:
    """Inverse dynamics per call of the 20-body planar constant-curvature chain."""
    n, rule = 20, (4, 2, 3)
    robot = build_chain(n, *rule)
    iid = _peers.softrigid_jit(lambda q, qd, qdd: sr.inertial_inverse_dynamics(robot, q, qd, qdd))
    ones = jnp.ones(n)
    call = functools.partial(iid, ones, ones, ones)
    first = time_first_call(call)
    timing = time_call(call, *_rounds(quick))
    return emit(
        "peers.iid_planar_cc",
        n_bodies=n,
        quadrature=list(rule),
        per_call_us=1e6 * timing["median_s"],
        min_us=1e6 * timing["min_s"],
        first_call_s=first,
        target_us=IID_TARGET_US,
        ratio_to_target=1e6 * timing["median_s"] / IID_TARGET_US,
        load=load(),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="+", help=f"default: {' '.join(TABLE)}")
    parser.add_argument("--quick", action="store_true", help="smoke run: small robots, B ≤ 64")
    parser.add_argument("--large", action="store_true", help=f"also B = {LARGE_BATCH} (slow)")
    parser.add_argument("--no-iid", action="store_true", help="skip the 20-body IID figure")
    parser.add_argument("--cores", type=int, default=1, help="pin to this many cores; 0: no pin")
    parser.add_argument(
        "--synchronous",
        action="store_true",
        help="run every code's programs in the calling thread (sr.synchronous_dispatch)",
    )
    parser.add_argument(
        "--fused-loops",
        action="store_true",
        help="compile every code's small loops as one kernel each (sr.fused_loops)",
    )
    args = parser.parse_args()
    synchronous = sr.synchronous_dispatch() if args.synchronous else False
    fused = sr.fused_loops() if args.fused_loops else False
    robots = args.robots or (QUICK if args.quick else TABLE)
    for name in robots:
        parse_robot(name)
    batches = BATCHES[:2] if args.quick else BATCHES
    if args.large:
        batches = (*batches, LARGE_BATCH)
    emit(
        "peers.machine",
        **machine(),
        cores=args.cores,
        peers=peer_versions(),
        quick=args.quick,
        softrigid_compiler_options=sr.compiler_options(),
        synchronous_dispatch=synchronous,
        fused_loops=fused,
    )
    for name in robots:
        measure(name, batches, args.quick)
    if not args.no_iid:
        measure_iid(args.quick)


if __name__ == "__main__":
    main()
