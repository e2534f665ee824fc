"""Arithmetic per forward-dynamics call, softrigid against SoRoMoX, counted in the traced
programs (no timing: the count does not depend on the machine or its load).

For each robot of the peers table (`benchmarks/peers.py`; built alike by `_peers.py` and
`_peers_pcs.py`), the jaxpr of one forward-dynamics call (`q̈` from `(q, q̇, τ)`, float64) is
walked and every arithmetic operation counted as floating-point operations:

- elementwise operations (`add`, `mul`, `sin`, comparisons, `select_n`, …; as XLA's cost
  analysis counts them): one per output element;
- `dot_general`: `2 · |output| · |contracted dimensions|`;
- reductions and cumulative operations (`reduce_sum`, `reduce_max`, `cumsum`, …): one per
  input element;
- a `scan`'s body times its length; a `while_loop`'s body and every branch of a `cond` once
  (their trip counts and the branch taken are not known from the program).

softrigid's count is that of its public `forward_dynamics` (the run-time checks' branches
hold no arithmetic); SoRoMoX's that of its `forward_dynamics`. It is the traced program's,
before XLA simplifies it (constants folded: a closed-over rigid body's inertia terms, say;
common subexpressions merged). XLA's own cost analysis of softrigid's compiled one-segment
program agrees (22.2k against 21.8k here), but it counts a loop's body once, so it cannot
compare chains. The largest contributions by source line
(`jax.extend.source_info_util.summarize`) say where softrigid's count comes from.

One JSON object per line: robot, both counts, their ratio, softrigid's top source lines.
The process runs nothing but the tracing (seconds per robot).

Run: python benchmarks/flops.py [--robots planar_pcs_1 rigid_30 ...] [--top 8]
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Callable
from typing import Any

import jax
import jax.extend.core as jex
import jax.extend.source_info_util as source_info
import jax.numpy as jnp
import numpy as np

import softrigid as sr

ELEMENTWISE = frozenset(
    "abs add add_any and atan2 ceil clamp cos div eq erf exp expm1 floor ge gt integer_pow is_finite le log "
    "log1p lt max min mul ne neg not or pow rem round rsqrt select_n sign sin sqrt square sub "
    "tan tanh".split()
)

REDUCTIONS = frozenset(
    "argmax argmin cummax cummin cumprod cumsum reduce_and reduce_max reduce_min reduce_or "
    "reduce_prod reduce_sum".split()
)


def _size(var: Any) -> int:
    return int(np.prod(var.aval.shape))


def _flops(eqn: Any) -> int:
    """Floating-point operations of one equation without sub-programs (0: not arithmetic)."""
    name = eqn.primitive.name
    if name == "dot_general":
        (contracting, _), _ = eqn.params["dimension_numbers"]
        depth = int(np.prod([eqn.invars[0].aval.shape[d] for d in contracting]))
        return 2 * _size(eqn.outvars[0]) * depth
    if name in REDUCTIONS:
        return _size(eqn.invars[0])
    return _size(eqn.outvars[0]) if name in ELEMENTWISE else 0


def _where(eqn: Any) -> str:
    """`file:line:column (function)` of an equation, the file relative to its package."""
    text = source_info.summarize(eqn.source_info)
    return text.split("/softrigid/", 1)[-1] if "/softrigid/" in text else text or "?"


def count(jaxpr: Any, by_line: collections.Counter, times: int = 1) -> int:
    """Floating-point operations of `jaxpr` (a `Jaxpr`), added by source line to `by_line`."""
    total = 0
    for eqn in jaxpr.eqns:
        inner = list(jex.jaxprs_in_params(eqn.params))
        if inner:
            length = eqn.params["length"] if eqn.primitive.name == "scan" else 1
            for sub in inner:
                total += count(sub, by_line, times * length)
            continue
        flops = times * _flops(eqn)
        if flops:
            total += flops
            by_line[_where(eqn)] += flops
    return total


def flops(fd: Callable[..., Any], state: tuple[np.ndarray, ...]) -> tuple[int, collections.Counter]:
    """The count of one call of `fd` at `state`, and its contributions by source line."""
    by_line: collections.Counter = collections.Counter()
    closed = jax.make_jaxpr(fd)(*(jnp.asarray(x) for x in state))
    return count(closed.jaxpr, by_line), by_line


def _forward_dynamics(robot: sr.Robot) -> Callable[..., Any]:
    """softrigid's public `forward_dynamics` of `robot` (default solver)."""
    return lambda q, qd, tau: sr.forward_dynamics(robot, q, qd, tau)


def main() -> None:
    try:
        import peers
        from _timing import emit
    except ImportError:  # run as a module
        from benchmarks import peers
        from benchmarks._timing import emit

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="+", default=list(peers.TABLE))
    parser.add_argument("--top", type=int, default=8, help="source lines listed per robot")
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", True)
    versions = peers.peer_versions()
    for name in args.robots:
        family, n = peers.parse_robot(name)
        spec = peers.FAMILIES[family]
        state = spec.state(n, 0)
        ours, lines = flops(_forward_dynamics(spec.softrigid(n)), state)
        theirs = None
        if spec.soromox is not None and versions["soromox"]:
            theirs = flops(spec.soromox(n), state)[0]
        emit(
            name,
            softrigid_flops=ours,
            soromox_flops=theirs,
            ratio=None if theirs is None else round(ours / theirs, 3),
            softrigid_top=[[line, f] for line, f in lines.most_common(args.top)],
        )


if __name__ == "__main__":
    main()
