"""Input validation shared by the model and the algorithms (clear messages, no asserts)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._fault import fault_if
from ._module import is_concrete, rounding_tolerance

__all__ = [
    "as_count",
    "as_flag",
    "as_float",
    "as_index",
    "as_placement",
    "as_scalar",
    "as_tuple_of",
    "as_vector",
    "check_density",
    "check_finite",
    "check_index",
    "check_material_point",
    "check_state",
    "copy_params",
    "flagging",
    "is_real_dtype",
    "is_real_number",
    "none_fired",
    "raise_if",
    "status_is",
    "traced_check",
]

# The open `flagging` scopes of each thread (two threads may trace programs at once):
# (the trace whose checks become flags, the flags recorded).
_LOCAL = threading.local()


def _scopes() -> list[tuple[Any, list[Array]]]:
    """This thread's open `flagging` scopes."""
    scopes = getattr(_LOCAL, "flagging", None)
    if scopes is None:
        scopes = _LOCAL.flagging = []
    return scopes


@contextlib.contextmanager
def flagging(anchor: Any) -> Iterator[list[Array]]:
    """Inside, a run-time check (`raise_if`) on a value of `anchor`'s trace raises nothing: its
    fault flag is appended to the list yielded, for the caller to return next to its outputs
    (the eager fast path returns one flag and raises on the host, where it can diagnose). Checks
    inside a nested transformation (`jacfwd`, a `scan` body) keep raising: their flags cannot
    leave it. Outside a trace (`anchor` concrete) nothing changes."""
    flags: list[Array] = []
    scopes = _scopes()
    scopes.append((getattr(anchor, "_trace", None), flags))
    try:
        yield flags
    finally:
        scopes.pop()


def none_fired(faults: Sequence[Array]) -> Array:
    """The flag that none of the checks recorded by `flagging` fired (a boolean scalar)."""
    return ~jnp.any(jnp.stack([jnp.zeros((), bool), *faults]))


def raise_if(
    value: Any, bad: Array, index: Array | Callable[[Any], Array], messages: tuple[str, ...]
) -> Any:
    """`value` unchanged, with a run-time check (also under `jit`/`vmap`): when `bad` holds,
    raise `messages[index]` (`softrigid._fault.fault_if`; `index` may be a function of `value`,
    evaluated only then). Inside `flagging` on `bad`'s own trace the flag `bad` is recorded
    instead."""
    scopes = _scopes()
    if scopes:
        trace, flags = scopes[-1]
        if trace is not None and getattr(bad, "_trace", None) is trace:
            flags.append(jnp.any(bad))
            return value
    return fault_if(value, bad, index, messages)


def as_float(value: Any, name: str = "value") -> Array:
    """A float JAX array; concrete values are converted in NumPy (no JAX dispatch, so building a
    model compiles nothing), traced ones with `jax.numpy`. Strings, complex numbers and objects
    are refused with a `TypeError` naming `name`."""
    if value is None or isinstance(value, (str, bytes)):
        # (NumPy reads None as NaN: "must be finite, got nan" named the wrong fault)
        raise TypeError(f"{name} must be real numbers, got {value!r}")
    errors = (TypeError, ValueError, OverflowError)
    try:
        # np.array copies: the model never aliases the caller's (mutable) arrays; a tuple
        # holding a tracer (`com=(0, 0, l)` under `jax.grad` in `l`) goes to `jax.numpy`
        arr = np.array(value) if is_concrete(value) else jnp.asarray(value)
    except errors as err:
        raise TypeError(f"{name} must be real numbers, got {value!r} ({err})") from None
    if jnp.issubdtype(arr.dtype, jnp.complexfloating):
        raise TypeError(f"{name} must be real numbers, got {value!r}")
    if arr.dtype == np.bool_:  # a flag where a number is expected (NumPy reads it as 0/1)
        raise TypeError(f"{name} must be real numbers, got booleans {value!r}")
    try:
        return jnp.asarray(arr.astype(float))
    except errors as err:
        raise TypeError(f"{name} must be real numbers, got {value!r} ({err})") from None


def is_real_dtype(dtype: Any) -> bool:
    """A floating or integer dtype: real numbers (not complex, boolean or text)."""
    return bool(jnp.issubdtype(dtype, jnp.floating) or jnp.issubdtype(dtype, jnp.integer))


def is_real_number(value: Any) -> bool:
    """A Python or NumPy real scalar that is not a boolean (an option such as a tolerance,
    where `True` would be read as 1)."""
    real = isinstance(value, (int, float, np.integer, np.floating))
    return real and not isinstance(value, (bool, np.bool_))


def as_flag(name: str, value: Any) -> bool:
    """`value` as a Python bool, a `TypeError` naming `name` unless it is a boolean (a string
    `"False"` or a list would be read by its truth value)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_finite(name: str, arr: Array) -> Array:
    """`arr`, checked finite: at once when concrete, by a run-time check when traced (a model
    or a reference built inside `jit`)."""
    if not is_concrete(arr):
        return traced_check(arr, ~jnp.isfinite(arr), f"{name} must be finite")
    if not np.all(np.isfinite(np.asarray(arr))):
        raise ValueError(f"{name} must be finite, got {np.asarray(arr)}")
    return arr


def traced_check(value: Any, bad: Array, message: str) -> Any:
    """`value` (an array or a pytree of them) unchanged, with a run-time check that no element
    of `bad` holds: the counterpart of a build-time check for a model built inside `jit` from
    traced parameters. One fused reduction and `raise_if` (it raises inside the compiled program,
    also under `vmap`, when `value` is used)."""
    return raise_if(value, jnp.any(bad), jnp.zeros((), int), (message,))


def as_scalar(name: str, value: Any, *, positive: bool = False, nonnegative: bool = False) -> Array:
    """A float scalar; checked finite (and positive / non-negative) when concrete, and by a
    run-time check when traced (a model built inside `jit` with a bad traced parameter)."""
    arr = as_float(value, name)
    if arr.shape != ():
        raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    if not is_concrete(arr):
        bad = ~jnp.isfinite(arr) | (arr <= 0 if positive else arr < 0 if nonnegative else False)
        sign = " and positive" if positive else " and non-negative" if nonnegative else ""
        return traced_check(arr, bad, f"{name} must be finite{sign}")
    v = float(arr)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if positive and v <= 0:
        raise ValueError(f"{name} must be positive, got {v}")
    if nonnegative and v < 0:
        raise ValueError(f"{name} must be non-negative, got {v}")
    return arr


def as_vector(name: str, value: Any, size: int) -> Array:
    """A float vector of shape `(size,)`, checked finite (`check_finite`)."""
    arr = as_float(value, name)
    if arr.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {arr.shape}")
    return check_finite(name, arr)


def as_placement(name: str, value: Any) -> tuple[Array, Array]:
    """A rigid placement from `None` (identity), a 4×4 homogeneous matrix or a `(R, t)` pair.

    The rotation is checked orthonormal with determinant +1, to 1e-8 or to 100 units of
    rounding of its dtype where that is coarser (a float32 rotation is good to ~1e-7), and a
    matrix's last row `(0, 0, 0, 1)`: when concrete at once, when traced (a placement built
    inside `jit`) by a run-time check.
    """
    if value is None:
        return as_float(np.eye(3)), as_float(np.zeros(3))
    if isinstance(value, (tuple, list)) and len(value) != 2:
        raise ValueError(
            f"{name} must be None, a 4x4 homogeneous matrix or an (R, t) pair, "
            f"got a sequence of {len(value)}"
        )
    if isinstance(value, (tuple, list)):
        rot = as_float(value[0], f"{name} rotation")
        trans = as_float(value[1], f"{name} translation")
        if rot.shape != (3, 3) or trans.shape != (3,):
            raise ValueError(
                f"{name} as (R, t) needs R (3, 3) and t (3,), got {rot.shape} and {trans.shape}"
            )
    else:
        concrete = is_concrete(value)
        mat = as_float(value, name)
        mat = np.asarray(mat) if concrete else mat
        if mat.shape != (4, 4):
            raise ValueError(
                f"{name} must be a 4x4 homogeneous matrix or an (R, t) pair, got {mat.shape}"
            )
        if concrete and not np.allclose(mat[3], [0, 0, 0, 1], atol=1e-12):
            raise ValueError(f"{name}: last row of a homogeneous matrix must be (0, 0, 0, 1)")
        rot, trans = as_float(mat[:3, :3]), as_float(mat[:3, 3])
        if not concrete:
            last = jnp.any(jnp.abs(mat[3] - jnp.array([0.0, 0.0, 0.0, 1.0])) > 1e-12)
            message = f"{name}: last row of a homogeneous matrix must be (0, 0, 0, 1)"
            rot, trans = traced_check((rot, trans), last, message)
    if not is_concrete(rot, trans):
        # R^T R = I, det R > 0 and finite, checked when the placement is used
        tol = rounding_tolerance(rot, 1e-8)
        bad = (
            ~jnp.all(jnp.isfinite(rot))
            | ~jnp.all(jnp.isfinite(trans))
            | jnp.any(jnp.abs(rot.T @ rot - jnp.eye(3, dtype=rot.dtype)) > tol)
            | (jnp.linalg.det(rot) < 0)
        )
        message = f"{name} must be finite, with an orthonormal rotation of determinant +1"
        return traced_check((rot, trans), bad, message)
    r = np.asarray(rot)
    if not (np.all(np.isfinite(r)) and np.all(np.isfinite(np.asarray(trans)))):
        raise ValueError(f"{name} must be finite")
    if (
        not np.allclose(r.T @ r, np.eye(3), atol=rounding_tolerance(r, 1e-8))
        or np.linalg.det(r) < 0
    ):
        raise ValueError(f"{name}: the rotation must be orthonormal with determinant +1")
    return rot, trans


def copy_params(params: Any) -> Any:
    """A pytree of user parameters rebuilt with fresh arrays (containers and leaves copied), so
    that mutating the caller's dicts or arrays later does not change the model. Every leaf is
    an array or a number (they are traced): a `TypeError` names the first that is not (a
    string leaf leaked NumPy's "Only integer scalar arrays can be converted")."""
    if params is None:
        return None

    def copy(path: Any, leaf: Any) -> Any:
        if not (isinstance(leaf, (int, float, complex, np.generic)) or hasattr(leaf, "dtype")):
            where = jax.tree_util.keystr(path)
            raise TypeError(
                f"params{where} must be an array or a number (params are traced), got "
                f"{type(leaf).__name__} {leaf!r}"
            )
        if is_concrete(leaf) and isinstance(leaf, (np.ndarray, jax.Array, np.generic)):
            return jnp.array(leaf, copy=True)
        return leaf

    return jax.tree_util.tree_map_with_path(copy, params)


def as_tuple_of(value: Any, kind: type, name: str, what: str) -> tuple:
    """`value` (one `kind` instance, a sequence of them, or `None`) as a tuple; a `TypeError`
    naming `name` (and the bad entry's index) otherwise. `what` describes the expected type."""
    if value is None:
        return ()
    if isinstance(value, kind):
        return (value,)
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be {what} or a sequence of them, got {type(value).__name__}")
    for k, item in enumerate(value):
        if not isinstance(item, kind):
            raise TypeError(f"{name}[{k}] must be {what}, got {type(item).__name__}")
    return tuple(value)


def check_state(name: str, value: Any, n: int) -> Array:
    """A real state vector `(n,)` or a batch `(..., n)`; finite when concrete.

    Integers are converted to the default float type; booleans, complex numbers, strings and
    objects are refused (a complex `q` would silently lose its imaginary part, a boolean `q` be
    taken as 0/1).
    """
    if isinstance(value, str):
        raise TypeError(f"{name} must be a real array of shape ({n},), got the string {value!r}")
    try:
        arr = jnp.asarray(value)
    except (TypeError, ValueError, OverflowError) as err:
        raise TypeError(f"{name} must be a real array of shape ({n},): {err}") from None
    if jnp.issubdtype(arr.dtype, jnp.complexfloating) or arr.dtype == jnp.bool_:
        raise TypeError(f"{name} must be real floating point, got dtype {arr.dtype}")
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        if not jnp.issubdtype(arr.dtype, jnp.integer):
            raise TypeError(f"{name} must be a real array, got dtype {arr.dtype}")
        arr = arr.astype(float)
    if arr.ndim < 1 or arr.shape[-1] != n:
        raise ValueError(
            f"{name} must have shape ({n},) for this robot (n_q = {n}), got {arr.shape}"
        )
    if is_concrete(arr) and not bool(np.all(np.isfinite(np.asarray(arr)))):
        bad = np.argwhere(~np.isfinite(np.asarray(arr)))
        raise ValueError(
            f"{name} contains non-finite values (NaN or inf) at index {bad[0].tolist()}"
        )
    return arr


def as_count(name: str, value: Any, minimum: int = 1) -> int:
    """An integer `>= minimum` (an order, a number of nodes, steps or divisions): a `ValueError`
    naming `name` otherwise (floats and booleans included)."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def as_index(name: str, value: Any) -> int:
    """A non-negative integer index (a link index given before the robot is known): a
    `TypeError` for a non-integer, a `ValueError` for a negative one."""
    if getattr(value, "shape", None) == () and not isinstance(value, (int, np.integer)):
        # a 0-d integer array (NumPy or a concrete JAX array) is an index too
        dtype = getattr(value, "dtype", None)
        if (
            dtype is not None
            and np.issubdtype(dtype, np.integer)
            and not isinstance(value, jax.core.Tracer)
        ):
            value = int(value)
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a non-negative integer index, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer index, got {value!r}")
    return int(value)


def as_indices(name: str, value: Any) -> tuple[int, ...]:
    """A sequence of integer indices (a list, a tuple or a 1-d integer array) as a tuple: a
    `TypeError` for anything else, where `int` would truncate a fraction (1.9 → 1)."""
    arr = np.asarray(0.0) if isinstance(value, str) else np.asarray(value)
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{name} must be a sequence of integer indices, got {value!r}")
    return tuple(int(i) for i in arr)


def check_index(name: str, value: Any, size: int) -> int:
    """An index in `[0, size)` (the link-index validator once the robot is known): `as_index`,
    then a `ValueError` at or past `size`."""
    index = as_index(name, value)
    if index >= size:
        raise ValueError(f"{name} must be an integer in [0, {size}), got {value!r}")
    return index


def check_material_point(name: str, value: Any) -> Array:
    """A finite material point `(3,)`."""
    return as_vector(name, value, 3)


def check_density(where: str, density: Any, volume: Any) -> Array:
    """A positive, finite density: scalar or one value per node of `volume` (`None` takes the
    volume's own)."""
    if density is None:
        if volume.density is None:
            raise ValueError(f"{where}: give a density (the volume carries none)")
        density = volume.density
    rho = as_float(density, f"{where}: density")
    if rho.shape not in ((), (volume.n_points,)):
        raise ValueError(
            f"{where}: density must be a scalar or have shape ({volume.n_points},), got {rho.shape}"
        )
    if not is_concrete(rho):
        bad = ~jnp.isfinite(rho) | (rho <= 0)
        return traced_check(rho, bad, f"{where}: density must be finite and positive")
    r = np.asarray(rho)
    if not np.all(np.isfinite(r)) or np.any(r <= 0):
        raise ValueError(
            f"{where}: density must be finite and positive, got {r.min() if r.ndim else r}"
        )
    return rho


def status_is(status: Array, code: int) -> Array:
    """`status == code`, by NumPy for a computed (concrete) status, by JAX under a
    transformation. Reading a solution's flag then compiles no program: an eager `==` on a JAX
    array compiles one, and while another thread compiles a large program it waits for XLA's
    compile threads (15.2 s of Simulation 1's statics from an empty cache, behind the closed
    loop's Jacobian)."""
    return np.asarray(status) == code if is_concrete(status) else status == code
