"""Build-time checks of a user's own `Kinematics` subclass beyond its `__call__` (which
`check_map` traces): that it is a pytree, and the shapes and dtypes of the methods it overrides
(`map_points`, `distal_pose`), with the distal rotation orthonormal at `q = 0` where the map's
data are concrete. Without them a subclass that is not a pytree, or a `map_points` returning
`(3, K)` or integers, failed at the first dynamics call with JAX's message, and a distal
rotation `2 I` gave dynamics that disagreed with the Euler–Lagrange baseline, silently.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from .._checks import as_placement
from .._module import is_concrete
from ._base import (
    Kinematics,
    _outside_transformations,
    check_map,
    kinematics_name,
    trace_user,
)

__all__ = ["check_kinematics", "check_subclass"]


def _floating(what: str, value: Any, shape: tuple[int, ...]) -> None:
    """A `ValueError` for a wrong shape, a `TypeError` for a non-floating dtype."""
    got = getattr(value, "shape", None)
    if got != shape:
        named = got if got is not None else type(value).__name__  # a scalar's shape is ()
        raise ValueError(f"{what} must return shape {shape}, got {named}")
    if not jnp.issubdtype(value.dtype, jnp.floating):
        raise TypeError(f"{what} must return real floating-point values, got dtype {value.dtype}")


def check_subclass(kin: Kinematics, dtype: Any = float) -> None:
    """Check a `Kinematics` subclass defined outside softrigid (its own families are tested):
    a pytree (the map is an argument of compiled programs), `map_points` `(K, 3)` floating
    where overridden, and with `exact_distal` a `distal_pose` `(R (3, 3), t (3,))` floating,
    `R` orthonormal with determinant +1 at `q = 0`."""
    if type(kin).__module__.startswith("softrigid."):
        return
    name = f"kinematics {kinematics_name(kin)!r}"
    if any(leaf is kin for leaf in jax.tree_util.tree_leaves(kin)):  # not registered
        raise TypeError(
            f"{name} ({type(kin).__name__}) is not a JAX pytree: a body's map is an argument "
            "of compiled programs. Write the map as kinematics.FunctionKinematics(f, n_q=...), "
            "or register the class as a pytree (e.g. a dataclass under "
            "jax.tree_util.register_dataclass, with n_q a static field)"
        )
    q = jax.ShapeDtypeStruct((kin.n_q,), jnp.dtype(dtype))
    if type(kin).map_points is not Kinematics.map_points:
        points = jax.ShapeDtypeStruct((2, 3), jnp.dtype(dtype))
        out = trace_user(f"{name}.map_points", "points or q", kin.map_points, points, q)
        _floating(f"{name}.map_points for points (2, 3)", out, (2, 3))
    if not kin.exact_distal:
        return
    pose = trace_user(f"{name}.distal_pose", "q", kin.distal_pose, q)
    if not (isinstance(pose, (tuple, list)) and len(pose) == 2):
        raise ValueError(f"{name}.distal_pose must return a pair (R (3, 3), t (3,))")
    _floating(f"{name}.distal_pose's R", pose[0], (3, 3))
    _floating(f"{name}.distal_pose's t", pose[1], (3,))
    if is_concrete(kin):
        rot, trans = _outside_transformations(lambda: kin.distal_pose(jnp.zeros(q.shape, q.dtype)))
        as_placement(f"{name}.distal_pose at q = 0", (jnp.asarray(rot), jnp.asarray(trans)))


def check_kinematics(kin: Kinematics, dtype: Any = float) -> None:
    """`check_map` of the body map, then `check_subclass` (a body's checks at build time)."""
    check_map(kin, dtype)
    check_subclass(kin, dtype)
