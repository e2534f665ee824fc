"""Sub-rules of a positive rule, shared by `compress` and `empirical`: the checks of the input
rule, a reduction chunk by chunk (which bounds the memory of the least-squares problems) and
the rule on a subset of its nodes, which keeps what the rule knows."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from .._module import is_concrete
from ._rule import QuadratureRule

__all__ = ["check_rule", "chunks", "reduce_in_chunks", "subset_rule"]

_CHUNK_ENTRIES = 2**23  # nodes × equations per least-squares problem (64 MB in float64)
_LIST = 20


def chunks(n_nodes: int, n_eq: int) -> list[np.ndarray]:
    """Consecutive index blocks with about `_CHUNK_ENTRIES / n_eq` nodes each."""
    size = max(4 * n_eq, _CHUNK_ENTRIES // n_eq)
    return np.array_split(np.arange(n_nodes), max(1, math.ceil(n_nodes / size)))


def reduce_in_chunks(
    n_nodes: int, n_eq: int, keep: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """The node indices (increasing) left after `keep(sub) -> the kept part of sub` on
    consecutive chunks of about `_CHUNK_ENTRIES / n_eq` nodes, repeated on the union while it
    shrinks (the union of sub-rules with each chunk's moments has the moments of the whole;
    a final solve on the result is the caller's)."""
    idx = np.arange(n_nodes)
    while True:
        parts = chunks(idx.size, n_eq)
        if len(parts) == 1:
            return idx
        merged = np.concatenate([keep(idx[part]) for part in parts])
        if merged.size >= idx.size:  # nothing more to gain from chunking
            return idx
        idx = merged


def check_rule(
    rule: object, where: str = "compress"
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """`(points, weights, density or None)` of a concrete, non-empty rule with finite points
    and positive weights (`where` names the caller in the errors)."""
    if not isinstance(rule, QuadratureRule):
        raise TypeError(f"{where}: rule must be a QuadratureRule, got {type(rule).__name__}")
    if not is_concrete(rule.points, rule.weights, rule.density):
        raise ValueError(
            f"{where}: rule must be concrete (call {where} once, outside jit, grad or vmap)"
        )
    x = np.asarray(rule.points, dtype=float)
    w = np.asarray(rule.weights, dtype=float)
    if x.shape[0] == 0:
        raise ValueError(f"{where}: rule is empty (it has no nodes)")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{where}: rule has non-finite node coordinates")
    bad = ~(np.isfinite(w) & (w > 0))
    if bad.any():
        idx = np.flatnonzero(bad)
        text = ", ".join(str(i) for i in idx[:_LIST]) + (", ..." if idx.size > _LIST else "")
        raise ValueError(
            f"{where}: rule must have finite positive weights; {idx.size} are not (nodes "
            f"[{text}]): a rule with negative weights has no positive compression"
        )
    rho = None if rule.density is None else np.asarray(rule.density, dtype=float)
    return x, w, rho


def subset_rule(
    rule: QuadratureRule,
    x: np.ndarray,
    density: np.ndarray | None,
    idx: np.ndarray,
    u: np.ndarray,
) -> QuadratureRule:
    """The rule on the nodes `idx` of `rule` (points `x`) with weights `u`, keeping its
    per-node density subset, frame points, geometry and mesh (`n_axial` dropped: a subset has
    no rows)."""
    return QuadratureRule(
        jnp.asarray(x[idx]),
        jnp.asarray(u),
        pivot=rule.pivot,
        contact_a=rule.contact_a,
        contact_b=rule.contact_b,
        density=None if density is None else jnp.asarray(density[idx]),
        n_axial=None,
        geometry=rule.geometry,
        dimensions=rule.dimensions,
        mesh=rule.mesh,
    )
