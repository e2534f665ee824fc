"""Sine and cosine: softrigid's vectorizable `sincos` against XLA's `sin`/`cos` (a C library
call per element on XLA:CPU), in the same run, with their accuracy.

Three programs per implementation, each jitted with softrigid's compiler options, float64:

- `values`: `(sin x, cos x)` of `n` seeded angles in [−π, π] (`--n`, default 100,000);
- `shared`: the same values consumed by three reductions of different shapes, which XLA
  fuses separately (each fusion recomputes a value it counts as cheap);
- `hessian`: the second derivative of `Σ sin x cos x` (the derivatives' own trigonometry).

For each: nanoseconds per element (median of batches, the two implementations' batches
interleaved, `_timing.time_interleaved`), the ratio softrigid / XLA, and for `values` the
largest error in ulps of both against the C library in extended precision (`sinl`). One JSON
object per line.

Run: taskset -c 1 python benchmarks/trig.py [--n 100000]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid._trig import sincos  # noqa: E402

try:
    from _timing import emit, machine, positive_int, time_interleaved
except ImportError:  # run as a module
    from benchmarks._timing import emit, machine, positive_int, time_interleaved

Pair = Callable[[jax.Array], tuple[jax.Array, jax.Array]]
IMPLEMENTATIONS: dict[str, Pair] = {
    "softrigid": sincos,
    "xla": lambda x: (jnp.sin(x), jnp.cos(x)),
}


def programs(pair: Pair) -> dict[str, Callable[[jax.Array], jax.Array]]:
    """The timed programs of one implementation (module docstring)."""

    def shared(x: jax.Array) -> jax.Array:
        s, c = pair(x)
        grid = x.reshape(-1, 4)
        rows = jnp.sum(s.reshape(grid.shape) * grid, 1)
        cols = jnp.sum(c.reshape(grid.shape) * grid, 0)
        return jnp.sum(rows) + jnp.sum(cols) + jnp.max(s * c)

    def hessian(x: jax.Array) -> jax.Array:
        def total(t: jax.Array) -> jax.Array:
            s, c = pair(t)
            return jnp.sum(s * c)

        return jax.grad(lambda t: jnp.vdot(jax.grad(total)(t), jnp.ones_like(t)))(x)

    return {"values": lambda x: jnp.stack(pair(x)), "shared": shared, "hessian": hessian}


def max_ulps(values: np.ndarray, x: np.ndarray) -> float:
    """Largest error of `(sin, cos)` rows in units of the last place of the exact float64."""
    exact = np.stack([np.sin(x.astype(np.longdouble)), np.cos(x.astype(np.longdouble))])
    return float(np.max(np.abs(values - exact) / np.spacing(np.abs(exact.astype(np.float64)))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=positive_int, default=100_000, help="angles (a multiple of 4)")
    args = parser.parse_args()
    n = 4 * max(1, args.n // 4)
    x_np = np.random.default_rng(0).uniform(-np.pi, np.pi, n)
    x = jnp.asarray(x_np)
    emit("trig.machine", **machine(), n=n, compiler_options=sr.compiler_options())
    compiled = {
        name: {
            what: jax.jit(fn, compiler_options=sr.compiler_options())
            for what, fn in programs(pair).items()
        }
        for name, pair in IMPLEMENTATIONS.items()
    }
    for what in ("values", "shared", "hessian"):
        calls = {
            name: (lambda f=fns[what]: jax.block_until_ready(f(x)))
            for name, fns in compiled.items()
        }
        for call in calls.values():
            call()
        timing = time_interleaved(calls)
        ns = {name: 1e9 * t["median_s"] / n for name, t in timing.items()}
        record = {"ns_per_element": ns, "ratio_softrigid_over_xla": ns["softrigid"] / ns["xla"]}
        if what == "values":
            record["max_ulps"] = {
                name: max_ulps(np.asarray(fns["values"](x)), x_np) for name, fns in compiled.items()
            }
        emit(f"trig.{what}", **record)


if __name__ == "__main__":
    main()
