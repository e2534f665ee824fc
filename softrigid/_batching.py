"""Chunked batching: a `jax.vmap` of a public algorithm over many states runs chunk by chunk.

Under `vmap`, XLA evaluates every operation of the recursion over the whole batch before the
next one starts: the working set (link poses, Jacobians, mass moments of every state) grows with
the batch `B` and, past a few dozen states, falls out of the CPU's caches, and the time per
state grows with `B`. Evaluated as a `lax.scan` over chunks of `CHUNK` states, each vectorized,
the working set stays that of one chunk (numbers at `CHUNK` and in `benchmarks/batched.py`).

`chunked(fn)` returns `fn` unchanged for single calls and derivatives; only its batching rule
differs (`jax.custom_batching.custom_vmap`): on CPU and for `B > WHOLE_UP_TO` it pads the batch to a
multiple of `CHUNK` with copies of its first state (harmless work, sliced off) and maps the
vectorized `fn` over the chunks. Arguments not batched stay shared, not copied. On GPU (and
other accelerators) the whole batch is one vectorized call, as a plain `vmap`. Differentiation
goes through a `custom_jvp` whose rule is the JVP of `fn` itself, so `grad`, `jacfwd`, `jacrev`
and their `vmap`s see `fn` (their batches are not chunked). The callers (`_entry.algorithm`,
`simulate`) take the chunked function only when `under_vmap` finds a batched argument.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

try:  # JAX's batching tracer is not public API; without it nothing is chunked
    from jax._src.interpreters.batching import BatchTracer
except ImportError:  # pragma: no cover
    BatchTracer = ()

__all__ = ["CHUNK", "WHOLE_UP_TO", "chunked", "under_vmap"]

# States per chunk on CPU. Forward dynamics at B = 1024, one core, µs per state for chunks of
# 16 / 32 / 64 / 256 / the whole batch (`benchmarks/batched.py --chunks`): planar PCS, 8
# segments 65 / 70 / 71 / 79 / 131; 20-body planar CC 112 / 117 / 127 / 138 / 168; rigid, 30
# joints 43 / 39 / 40 / 44 / 42.
CHUNK = 32
# Batches up to this size run as one vectorized call: at B = 64 one call beat a scan over two
# chunks (20-body CC 90 against 123 µs per state, 30-joint chain 65 against 77).
WHOLE_UP_TO = 256


def _pad(x: jax.Array, size: int) -> jax.Array:
    """`x` (B, …) extended to `size` rows with copies of its first row."""
    extra = size - x.shape[0]
    if extra == 0:
        return x
    return jnp.concatenate([x, jnp.broadcast_to(x[:1], (extra, *x.shape[1:]))])


def _map_chunks(fn: Callable[[Any], Any], size: int, batched: Any, dynamic: Any) -> Any:
    """`vmap(fn)` over the leading axis (`size`) of the leaves flagged in `batched`, evaluated
    as a scan over chunks of `CHUNK` states."""
    leaves, treedef = jax.tree.flatten(dynamic)
    flags = jax.tree.leaves(batched)
    axes = jax.tree.unflatten(treedef, [0 if b else None for b in flags])
    if size == 0:  # no states, nothing to check: the outputs' empty shapes
        shapes = jax.eval_shape(jax.vmap(fn, in_axes=(axes,)), dynamic)
        return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
    if jax.default_backend() != "cpu" or size <= max(CHUNK, WHOLE_UP_TO):
        return jax.vmap(fn, in_axes=(axes,))(dynamic)
    n_chunks = -(-size // CHUNK)
    stacked = [
        _pad(x, n_chunks * CHUNK).reshape(n_chunks, CHUNK, *x.shape[1:])
        for x, b in zip(leaves, flags)
        if b
    ]

    def chunk(xs: list[jax.Array]) -> Any:
        it = iter(xs)
        values = [next(it) if b else x for x, b in zip(leaves, flags)]
        return jax.vmap(fn, in_axes=(axes,))(jax.tree.unflatten(treedef, values))

    out = jax.lax.map(chunk, stacked)
    return jax.tree.map(lambda y: y.reshape(n_chunks * CHUNK, *y.shape[2:])[:size], out)


def under_vmap(tree: Any) -> bool:
    """Whether a leaf of `tree` is batched by a `jax.vmap` (the innermost transformation): the
    callers take `chunked` only then, because its `custom_jvp` makes JAX trace both the batched
    function and its JVP under a `vmap` of derivatives (`vmap(jvp(...))` compiled 1.9× slower in
    the tests)."""
    return any(isinstance(x, BatchTracer) for x in jax.tree.leaves(tree))


def chunked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn(*args, **kwargs)` whose `jax.vmap` over more than `CHUNK` states runs as a scan over
    chunks of `CHUNK` on CPU; values and derivatives are `fn`'s. Leaves that are not arrays
    (options, strings, `None`) are held static."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        dynamic, static = eqx.partition((args, kwargs), eqx.is_array)

        def run(dyn: Any) -> Any:
            a, k = eqx.combine(dyn, static)
            return fn(*a, **k)

        batched_run = custom_vmap(run)

        @batched_run.def_vmap
        def _rule(size: int, in_batched: list[Any], dyn: Any) -> tuple[Any, Any]:
            out = _map_chunks(run, size, in_batched[0], dyn)
            return out, jax.tree.map(lambda _: True, out)

        differentiable = jax.custom_jvp(batched_run)
        differentiable.defjvp(lambda primals, tangents: jax.jvp(run, primals, tangents))
        return differentiable(dynamic)

    return call
