"""Forward-mode derivative helpers used at the position and velocity levels."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

__all__ = ["directional_pair", "second_directional", "value_and_jacfwd"]


def value_and_jacfwd(
    fn: Callable[[Array], Any], q: Array, tangent_axis: int = -1
) -> tuple[Any, Any]:
    """`(fn(q), ∂fn/∂q)` for a pytree-valued `fn`, one forward pass per coordinate
    (vectorized); the tangent dimension last, or first with `tangent_axis=0` (the layout the
    vectorized passes produce, cheaper to consume for per-node arrays)."""
    n = q.shape[0]
    if n == 0:
        value = fn(q)
        return value, jax.tree_util.tree_map(
            lambda v: jnp.zeros((0, *v.shape) if tangent_axis == 0 else (*v.shape, 0), v.dtype),
            value,
        )

    def push(v: Array) -> tuple[Any, Any]:
        return jax.jvp(fn, (q,), (v,))

    # the primal does not depend on the tangent: traced once, unbatched
    return jax.vmap(push, out_axes=(None, tangent_axis))(jnp.eye(n, dtype=q.dtype))


def second_directional(fn: Callable[[Array], Any], q: Array, qd: Array) -> Any:
    """`∂²fn/∂q²[q̇, q̇]` for a pytree-valued `fn`, by a jvp of a jvp."""
    return directional_pair(fn, q, qd)[1]


def directional_pair(fn: Callable[[Array], Any], q: Array, qd: Array) -> tuple[Any, Any]:
    """`(∂fn/∂q[q̇], ∂²fn/∂q²[q̇, q̇])` for a pytree-valued `fn`, from one jvp of a jvp (the
    outer jvp's primal is the inner tangent)."""
    if q.shape[0] == 0:
        zeros = jax.tree_util.tree_map(jnp.zeros_like, fn(q))
        return zeros, zeros
    return jax.jvp(lambda x: jax.jvp(fn, (x,), (qd,))[1], (q,), (qd,))
