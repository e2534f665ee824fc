"""What the run-time checks cost on `benchmarks/scaling.py`'s calls (issues 9 and 10: ≤ 5 %).

`scaling.py` times `jax.jit(lambda q, qd, qdd: sr.inertial_inverse_dynamics(robot, q, qd, qdd))`
on planar constant-curvature chains. Inside such a program the public function's run-time check
is one `softrigid._fault.fault_if` (`softrigid._checks.raise_if`): a fused finite-output
reduction and a conditional whose untaken side holds the `softrigid_fault` XLA FFI custom call
(no host callback). This script compiles the call twice in one process, as shipped (`checks`)
and traced inside `softrigid._entry.trial_evaluations()` (`unchecked`: the public function's
program without the check; verified by the absence of a fault call and of a host callback in
its HLO), and times the two interleaved batch by batch (`_timing.time_interleaved`, so a change
of load hits both alike): `M q̈` (IID at `q̇ = 0`) and `c` (IID at `q̈ = 0`) at
`q = q̇ = q̈ = 1`, µs per call, in two modes:

- pipelined (`mqdd`, `c`): a batch of calls waits only for its last result, as
  `scaling.py`'s `_timing.time_call` does, so successive calls may overlap;
- waited (`mqdd_waited`, `c_waited`): every call waits for its result (`block_until_ready`), as
  a simulation or control loop that reads each result does.

XLA:CPU (jaxlib 0.10) runs a program that holds a host callback inline in the calling thread,
and any other program that is not trivially cheap on its thread pool. Until the checks became
an FFI call they were `equinox.branched_error_if`, whose untaken side is a host callback: the
checked program then saved the thread hand-off (waited mode) but could not overlap the next
call (pipelined mode). `--tree` against a checkout of that time shows the difference.

With `--tree DIR` the shipped program's pipelined timing also runs, in alternation with this
tree's, in fresh processes importing softrigid from `DIR` (another checkout, e.g. the tree
before the architecture change: `git worktree add /tmp/old 46052ee`); processes cannot be
interleaved batch by batch, so that comparison takes the minimum over `--processes`
alternations.

The process pins itself to one core (`--core`). One JSON object per line; `overhead.ratio`
lines give `checks / unchecked` per mode and size, `overhead.tree` lines `this tree / DIR`.

Run: python benchmarks/overhead.py [--sizes 1 2 5 10 20 50] [--tree /tmp/old] [--processes 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # pinned before JAX starts its threads
    from _timing import early_int, pin_core

    pin_core(early_int("--core", 1))

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import softrigid as sr  # noqa: E402

try:
    from _timing import emit, machine, positive_int, time_interleaved
    from scaling import build_chain
except ImportError:  # run as a module
    from benchmarks._timing import emit, machine, positive_int, time_interleaved
    from benchmarks.scaling import build_chain

FAULT = "softrigid_fault"  # softrigid._fault.TARGET (a literal: a --tree child may predate it)
QUADRATURE = (4, 2, 3)  # scaling.py's default cylinder rule


def _program(n: int, checks: bool) -> tuple[Any, int]:
    """scaling.py's jitted IID for `n` bodies, compiled: with its run-time check, or
    (`checks=False`) traced inside `softrigid._entry.trial_evaluations()`, which selects the
    public function's program without the output check (a trace-time switch: the compiled
    program keeps it outside the context). With the number of host callbacks and of fault
    calls in its HLO."""
    robot = build_chain(n, *QUADRATURE)
    fn = jax.jit(lambda q, qd, qdd: sr.inertial_inverse_dynamics(robot, q, qd, qdd))
    ones = jnp.ones(n)
    context: Any = contextlib.nullcontext()
    if not checks:
        # imported here: a `--tree` child may run a softrigid that predates it
        from softrigid._entry import trial_evaluations

        context = trial_evaluations()
    with context:
        jax.block_until_ready(fn(ones, ones, ones))
        hlo = fn.lower(ones, ones, ones).as_text()
        return fn, {"host_callbacks": hlo.count("callback"), "fault_calls": hlo.count(FAULT)}


def _calls(fn: Any, n: int, prefix: str, waited: bool = False) -> dict[str, Any]:
    """`M q̈` and `c` calls of `fn`, warmed up (`waited`: each waits for its result)."""
    ones, zeros = jnp.ones(n), jnp.zeros(n)
    if waited:
        return {
            f"{prefix}.mqdd_waited": lambda: jax.block_until_ready(fn(ones, zeros, ones)),
            f"{prefix}.c_waited": lambda: jax.block_until_ready(fn(ones, ones, zeros)),
        }
    fns = {
        f"{prefix}.mqdd": lambda: fn(ones, zeros, ones),
        f"{prefix}.c": lambda: fn(ones, ones, zeros),
    }
    for f in fns.values():
        jax.block_until_ready(f())
    return fns


def interleaved(sizes: list[int], repeats: int) -> list[dict[str, Any]]:
    """Shipped against unchecked programs, both `jax.jit` calls in this process, timed
    interleaved."""
    records = []
    for n in sizes:
        (checked, with_checks), (bare, without) = _program(n, True), _program(n, False)
        checks = {"checks": with_checks, "unchecked": without}
        if any(without.values()) or not any(with_checks.values()):
            raise RuntimeError(f"the variants are not what they claim: {checks}")
        fns = {
            **_calls(checked, n, "checks"),
            **_calls(bare, n, "unchecked"),
            **_calls(checked, n, "checks", waited=True),
            **_calls(bare, n, "unchecked", waited=True),
        }
        t = time_interleaved(fns, repeats=repeats)
        us = {k: round(v["min_s"] * 1e6, 1) for k, v in t.items()}
        records.append(
            emit(
                "overhead.ratio",
                n_bodies=n,
                us_min=us,
                checks_over_unchecked={
                    k: us[f"checks.{k}"] / us[f"unchecked.{k}"]
                    for k in ("mqdd", "c", "mqdd_waited", "c_waited")
                },
                median_us={k: round(v["median_s"] * 1e6, 1) for k, v in t.items()},
                checks=checks,
            )
        )
    return records


def child(sizes: list[int], repeats: int) -> None:
    """One process's shipped-program times (µs, min over batches) as one JSON line."""
    out: dict[str, Any] = {"softrigid": str(Path(sr.__file__).parent)}
    for n in sizes:
        t = time_interleaved(_calls(_program(n, True)[0], n, "jit"), repeats=repeats)
        out[str(n)] = {k.split(".")[1]: round(v["min_s"] * 1e6, 1) for k, v in t.items()}
    print(json.dumps(out), flush=True)


def against_tree(args: argparse.Namespace) -> None:
    """This tree's shipped program against `args.tree`'s, in alternating fresh processes."""
    here = Path(__file__).resolve()
    cmd = [
        sys.executable,
        str(here),
        "--child",
        "--core",
        str(args.core),
        "--repeats",
        str(args.repeats),
        "--sizes",
        *map(str, args.sizes),
    ]
    best: dict[str, dict[str, dict[str, float]]] = {"this": {}, "tree": {}}
    for _ in range(args.processes):
        for which, path in (("tree", args.tree), ("this", None)):
            env = dict(os.environ)
            if path:
                env["PYTHONPATH"] = os.pathsep.join(
                    [str(Path(path).resolve()), env.get("PYTHONPATH", "")]
                )
            line = (
                subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
                .stdout.strip()
                .splitlines()[-1]
            )
            rec = json.loads(line)
            emit("overhead.process", which=which, **rec)
            for n in map(str, args.sizes):
                cur = best[which].setdefault(n, dict(rec[n]))
                for k, v in rec[n].items():
                    cur[k] = min(cur[k], v)
    for n in map(str, args.sizes):
        this, tree = best["this"][n], best["tree"][n]
        emit(
            "overhead.tree",
            n_bodies=int(n),
            this_us=this,
            tree_us=tree,
            tree=args.tree,
            this_over_tree={k: this[k] / tree[k] for k in this},
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=positive_int, nargs="+", default=[1, 2, 5, 10, 20, 50])
    parser.add_argument(
        "--repeats", type=positive_int, default=15, help="interleaved batches per variant"
    )
    parser.add_argument("--core", type=int, default=1, help="pin to this core (-1: no)")
    parser.add_argument("--tree", help="another checkout to compare the shipped program against")
    parser.add_argument(
        "--processes", type=positive_int, default=3, help="alternations with --tree"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.sizes, args.repeats)
        return
    emit("machine", **machine())
    interleaved(args.sizes, args.repeats)
    if args.tree:
        against_tree(args)
    emit("machine.after", **machine())


if __name__ == "__main__":
    main()
