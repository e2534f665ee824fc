"""Fast start (issue #15 item 5): the first eager call of a 20-body model in a fresh process,
without and with the persistent compilation cache (`softrigid.enable_compilation_cache`).

Each record is one fresh interpreter, pinned to one core (`--core`): seconds to import softrigid,
to build the planar constant-curvature chain of `benchmarks/scaling.py` (N bodies, the
4 × 2 × 3 cylinder rule), and the first eager call of each algorithm (trace, lowering, compile
or cache load, run), then the second call. Modes, in this order, in one run:

- `cold`: no persistent cache (what every first call costs without it);
- `cache-fill`: the cache enabled in an empty temporary directory (a first process: compiles
  and writes);
- `cache-hit`: the same directory, a new process (loads instead of compiling);

and the files the cache holds. With `--fast` every process calls `sr.fast_compilation()`
(XLA:CPU's elemental fusion emitters) right after importing softrigid. The targets: first call
≤ 2 s cold, ≤ 1 s with the cache (robot build and first call; imports reported apart). One
JSON object per line.

Run: python benchmarks/start.py [--bodies 20] [--functions inverse_dynamics forward_dynamics]
         [--fast]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

try:
    from _timing import emit, positive_int
except ImportError:  # run as a module
    from benchmarks._timing import emit, positive_int

_CHILD = """
import json, os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])}) if int(sys.argv[1]) >= 0 else None
start = time.perf_counter()
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import softrigid as sr
from softrigid import joints, kinematics, quadrature
n, fast, cache, names = int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4], sys.argv[5:]
if fast:
    sr.fast_compilation()
imported = time.perf_counter()
if cache:
    sr.enable_compilation_cache(cache)
body = sr.SoftBody(kinematics.PlanarConstantCurvature(0.3),
                   quadrature.cylinder(0.03, 0.3, n_axial=4, n_radial=2, n_angular=3),
                   density=1000.0)
robot = sr.Robot([sr.Link(joints.Fixed(), body) for _ in range(n)], gravity=(0.0, 0.0, -9.81))
built = time.perf_counter()
q, qd, x = jnp.full(n, 0.5), jnp.full(n, 0.2), jnp.full(n, 1.0)
record = {"import_s": imported - start, "build_s": built - imported}
for name in names:
    fn = getattr(sr, name)
    t0 = time.perf_counter()
    jax.block_until_ready(fn(robot, q, qd, x))
    t1 = time.perf_counter()
    jax.block_until_ready(fn(robot, q, qd, x))
    t2 = time.perf_counter()
    record[name] = {"first_s": t1 - t0, "second_s": t2 - t1}
print(json.dumps(record))
"""


def child(core: int, bodies: int, fast: bool, cache: str, functions: list[str]) -> dict[str, Any]:
    """One fresh interpreter's record."""
    argv = [sys.executable, "-c", _CHILD, str(core), str(bodies), str(int(fast)), cache, *functions]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--bodies", type=positive_int, default=20)
    parser.add_argument("--functions", nargs="+", default=["inverse_dynamics", "forward_dynamics"])
    parser.add_argument("--core", type=int, default=1, help="pin to this core (-1: no)")
    parser.add_argument(
        "--fast", action="store_true", help="call sr.fast_compilation() in every process first"
    )
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as cache:
        for mode, directory in (("cold", ""), ("cache-fill", cache), ("cache-hit", cache)):
            record = child(args.core, args.bodies, args.fast, directory, args.functions)
            files = len(os.listdir(cache))
            emit(
                "start.first_call",
                mode=mode,
                bodies=args.bodies,
                fast_compilation=args.fast,
                cache_files=files,
                **record,
                load=round(load, 2),
            )


if __name__ == "__main__":
    main()
