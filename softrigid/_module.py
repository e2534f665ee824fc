"""Immutable pytree dataclasses (the model objects of softrigid).

`module` turns a class into a frozen dataclass registered as a JAX pytree. Fields declared with
`static()` are part of the tree structure (hashed into jit cache keys: counts, flags, user
callables); every other field is a leaf (traced arrays: masses, lengths, quadrature points), so
`jax.grad` with respect to physical parameters works.

Unflattening bypasses `__init__`/`__post_init__`: validation and conversion run once, when a user
builds the object, never on tracers created by `jit`, `vmap` or `grad`.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any, TypeVar

import jax
import numpy as np
from jax._src import core as jax_core  # trace_state_clean: no public equivalent

__all__ = ["is_concrete", "module", "rounding_tolerance", "static"]

T = TypeVar("T")


def static(**kwargs: Any) -> Any:
    """A dataclass field that belongs to the pytree structure, not to its leaves."""
    metadata = dict(kwargs.pop("metadata", {}))
    metadata["static"] = True
    return dataclasses.field(metadata=metadata, **kwargs)


def module(cls: type[T]) -> type[T]:
    """Make `cls` a frozen dataclass and register it as a pytree."""
    # A hand-written __init__ (on the class or inherited from a module base) is kept.
    custom_init = "__init__" in cls.__dict__ or getattr(cls, "_module_custom_init", False)
    cls = dataclasses.dataclass(frozen=True, eq=False, repr=False, init=not custom_init)(cls)
    cls._module_custom_init = custom_init
    fields = dataclasses.fields(cls)
    data = tuple(f.name for f in fields if not f.metadata.get("static", False))
    meta = tuple(f.name for f in fields if f.metadata.get("static", False))

    def flatten_with_keys(obj: Any) -> tuple[Any, Any]:
        children = tuple((jax.tree_util.GetAttrKey(n), getattr(obj, n)) for n in data)
        return children, tuple(getattr(obj, n) for n in meta)

    get_data, get_meta = _getter(data), _getter(meta)

    def flatten(obj: Any) -> tuple[Any, Any]:
        return get_data(obj), get_meta(obj)

    def unflatten(aux: Any, children: Any) -> Any:
        obj = object.__new__(cls)
        for name, value in zip(meta, aux):
            object.__setattr__(obj, name, value)
        for name, value in zip(data, children):
            object.__setattr__(obj, name, value)
        return obj

    def __repr__(self: Any) -> str:  # noqa: N807
        parts = []
        for f in fields:
            value = getattr(self, f.name)
            shape = getattr(value, "shape", None)
            text = f"array{tuple(shape)}" if shape is not None else repr(value)
            parts.append(f"{f.name}={text}")
        return f"{cls.__name__}({', '.join(parts)})"

    cls.__repr__ = __repr__  # type: ignore[assignment]
    jax.tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)
    return cls


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """`obj -> (obj.a, obj.b, …)` for `names`: `operator.attrgetter`, whose tuple is built in C.
    JAX calls a node's flatten on every call of a jitted function that takes it (the robot
    with its links, bodies, rules and materials), and the generator of `getattr`s took half
    of such a call's overhead: a trivial jitted function of the 3-segment helicoid robot
    58–59 → 32 µs, of the 30-joint rigid chain 135–138 → 81–82 µs per call."""
    if len(names) == 0:
        return lambda obj: ()
    if len(names) == 1:
        name = names[0]
        return lambda obj: (getattr(obj, name),)
    return operator.attrgetter(*names)


def is_concrete(*values: Any) -> bool:
    """True when none of `values` is a JAX tracer (so Python-level checks can read them)."""
    leaves = jax.tree_util.tree_leaves(values)
    return not any(isinstance(v, jax.core.Tracer) for v in leaves)


def runs_eagerly(*values: Any) -> bool:
    """True when `values` are concrete and the call is outside every JAX transformation: a
    user function (a controller, an output) may close over a tracer of a `grad` or `vmap`
    around the call, which `is_concrete` of the arguments cannot see."""
    return jax_core.trace_state_clean() and is_concrete(*values)


def rounding_tolerance(value: Any, floor: float) -> float:
    """A relative tolerance for a geometric check of `value`: `floor`, or 100 units of
    rounding of its floating dtype where that is coarser (float32 data is good to ~1e-7, so a
    point on a boundary given in float64 may lie 1e-8 outside once rounded)."""
    dtype = np.dtype(value.dtype if hasattr(value, "dtype") else np.result_type(value))
    eps = float(np.finfo(dtype).eps) if np.issubdtype(dtype, np.floating) else 0.0
    return max(floor, 100.0 * eps)
