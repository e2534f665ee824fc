"""Where a compiled XLA:CPU program's code comes from, by source line.

Reads the text of an optimized HLO module (`jax.jit(f).lower(...).compile().as_text()`, or a
`*.cpu_after_optimizations.txt` file of `XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text`)
and attributes each kernel of the program (every fusion, dot, copy and custom call outside the
fused computations) to the source frames that made it: the module's `FileNames`,
`FunctionNames`, `FileLocations` and `StackFrames` tables resolve each instruction's
`stack_frame_id`. Per group of innermost frames it prints one JSON line with the kernels and
the lines of their fused computations (a proxy for what XLA compiles: code generation time
grows with it), largest first, then a total. Frames of JAX's own files are skipped.

Used to find code that a derivative repeats (session 69: the tendons' routes, 31k of the
closed loop's Jacobian's 268k lines; the bend's Chebyshev recurrence, 12k of the helicoid
derivatives' 110k).

Run: python benchmarks/hlo_sources.py PROGRAM.txt [--depth 2] [--top 30] [--only _tendon]
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter

_KERNEL = re.compile(r"= \S+ (fusion|dot|copy|custom-call)\(")
_SKIP = ("api.py", "traceback_util.py", "pjit.py", "linear_util.py")


def _table(text: str, name: str, after: str) -> list[str]:
    start = text.index(f"\n{name}\n") + len(name) + 2
    end = text.index(f"\n{after}\n", start) if after else len(text)
    return text[start:end].splitlines()


def frames(text: str) -> dict[int, list[str]]:
    """Each stack frame's chain `file:function:line`, innermost first."""
    files = {
        int(x.split()[0]): x.split('"')[1].split("/")[-1]
        for x in _table(text, "FileNames", "FunctionNames")
        if x.strip()
    }
    funcs = {
        int(x.split()[0]): x.split('"')[1]
        for x in _table(text, "FunctionNames", "FileLocations")
        if x.strip()
    }
    locs = {}
    for line in _table(text, "FileLocations", "StackFrames"):
        m = re.match(r"(\d+) \{file_name_id=(\d+) function_name_id=(\d+) line=(\d+)", line)
        if m:
            locs[int(m[1])] = f"{files[int(m[2])]}:{funcs[int(m[3])]}:{m[4]}"
    parent = {}
    for line in _table(text, "StackFrames", ""):
        m = re.match(r"(\d+) \{file_location_id=(\d+) parent_frame_id=(\d+)", line)
        if not m:
            break
        parent[int(m[1])] = (int(m[2]), int(m[3]))
    chains: dict[int, list[str]] = {}
    for fid in parent:
        chain, seen, f = [], set(), fid
        while f in parent and f not in seen:
            seen.add(f)
            loc, up = parent[f]
            if loc in locs and not locs[loc].startswith(_SKIP):
                chain.append(locs[loc])
            f = up
        chains[fid] = chain
    return chains


def attribute(text: str, depth: int = 2, only: str = "") -> tuple[Counter, Counter]:
    """Kernels and fused-computation lines per chain of `depth` innermost frames."""
    comps = re.split(r"\n(?=\S.*\{\s*$)", text, flags=re.M)
    size = {c.splitlines()[0].split()[0].lstrip("%"): len(c.splitlines()) for c in comps if c}
    chains = frames(text)
    kernels: Counter = Counter()
    lines: Counter = Counter()
    for comp in comps:
        head = comp.splitlines()[0] if comp else ""
        if "fused" in head.split("(")[0] or head.startswith("HloModule"):
            continue
        for line in comp.splitlines()[1:]:
            if not _KERNEL.search(line):
                continue
            sf = re.search(r"stack_frame_id=(\d+)", line)
            chain = chains.get(int(sf[1]), []) if sf else []
            if only and not any(only in f for f in chain):
                continue
            key = " < ".join(chain[:depth]) or "?"
            called = re.search(r"calls=%([\w.\-]+)", line)
            kernels[key] += 1
            lines[key] += size.get(called[1], 1) if called else 1
    return kernels, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("program", help="optimized HLO text")
    parser.add_argument("--depth", type=int, default=2, help="innermost frames per group")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--only", default="", help="kernels with a frame containing this")
    args = parser.parse_args()
    with open(args.program) as f:
        text = f.read()
    kernels, lines = attribute(text, args.depth, args.only)
    for key, n in lines.most_common(args.top):
        print(json.dumps({"frames": key, "kernels": kernels[key], "lines": n}))
    print(json.dumps({"total_kernels": sum(kernels.values()), "total_lines": sum(lines.values())}))


if __name__ == "__main__":
    main()
