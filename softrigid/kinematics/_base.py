"""The interface every body kinematics model implements.

A body map `f(x, q) -> (3,)` sends the material point `x` (coordinates of the undeformed body,
`(3,)`) to its position in the body's proximal frame (the distal frame of its joint) when the body
coordinates are `q` (`(n_q,)`). Built-in families subclass `Kinematics`; a plain function is
wrapped in `FunctionKinematics`. JAX differentiates the map: no derivative is written by hand.
"""

from __future__ import annotations

import abc
import concurrent.futures
import functools
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.experimental import checkify

from .._checks import copy_params
from .._module import is_concrete, module, runs_eagerly, static

__all__ = ["FunctionKinematics", "Kinematics", "as_kinematics", "kinematics_name"]

# What JAX raises when user code needs a concrete value of a traced argument
_TRACER_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
)


def trace_user(what: str, arguments: str, fn: Callable[..., Any], *args: Any) -> Any:
    """`jax.eval_shape(fn, *args)` for a user function, with JAX's tracer errors turned into a
    `TypeError` that names it.

    Args:
        what: the function as the message names it (for instance `kinematics 'my_map'`).
        arguments: its traced arguments, in words (for instance `x or q`).
        fn: the function; `args`: `jax.ShapeDtypeStruct`s (or pytrees of them) for it.

    Any other exception raised by `fn` passes through unchanged.
    """
    try:
        return jax.eval_shape(fn, *args)
    except _TRACER_ERRORS as err:
        raise TypeError(
            f"{what} must be written with jax.numpy and be traceable by JAX: no NumPy on "
            f"{arguments}, no Python `if`, float() or int() on them (use jnp functions and "
            f"jnp.where); JAX raised {type(err).__name__}"
        ) from err


def user_array(what: str, value: Any) -> Any:
    """`value`, a user function's result, if it is one array of floating dtype (an array, a
    tracer or `jax.eval_shape`'s `ShapeDtypeStruct`; a Python or NumPy float too), else a
    `TypeError` naming `what`: a tuple or list of values (stack them), an integer, boolean or
    complex result (whose derivatives JAX does not take as a real function's)."""
    if isinstance(value, (tuple, list)):
        raise TypeError(
            f"{what} must return one array, got a {type(value).__name__} of {len(value)} "
            "values: return jnp.stack([...]) or jnp.concatenate([...])"
        )
    dtype = getattr(value, "dtype", None)
    if dtype is None and isinstance(value, (int, float, complex, bool)):
        dtype = np.result_type(value)
    if dtype is None or not jnp.issubdtype(dtype, jnp.floating):
        got = type(value).__name__ if dtype is None else f"dtype {dtype}"
        raise TypeError(f"{what} must return a floating-point array, got {got}")
    return value


def check_real_scalar(what: str, out: Any) -> None:
    """A `TypeError` naming `what` where a user function's traced scalar result (`jax.eval_shape`)
    is complex, or integer or boolean other than a Python number (a constant, e.g. an energy
    `0`, which `real_result` converts)."""
    dtype = out.dtype
    constant = getattr(out, "weak_type", False) and not jnp.issubdtype(dtype, jnp.complexfloating)
    if not (jnp.issubdtype(dtype, jnp.floating) or constant):
        raise TypeError(f"{what} must return a real floating-point value, got dtype {dtype}")


def real_result(value: Any, dtype: Any) -> Array:
    """A user function's result as a floating array: a Python number (a constant) becomes
    `dtype`; floating results are kept."""
    arr = jnp.asarray(value)
    return arr if jnp.issubdtype(arr.dtype, jnp.floating) else arr.astype(dtype)


def kinematics_name(kin: Any) -> str:
    """How messages name a map: its `name` (a user function's), else its family."""
    return getattr(kin, "name", "") or type(kin).__name__


def _check_q(kin: Any, method: str, q: Any) -> None:
    """A `ValueError` naming the map where `q` is not `(n_q,)` (JAX would clamp or drop
    out-of-range coordinate indices silently)."""
    shape = jnp.shape(q)
    if shape != (kin.n_q,):
        raise ValueError(
            f"{kinematics_name(kin)}.{method}: q must have shape ({kin.n_q},) (its n_q "
            f"coordinates), got {shape}"
        )


def _point_arguments(method: str, kin: Any, x: Any, q: Any) -> None:
    if jnp.shape(x) != (3,):
        raise ValueError(
            f"{kinematics_name(kin)}.{method}: x must be one material point of shape (3,), "
            f"got {jnp.shape(x)} (map_points takes (K, 3))"
        )
    _check_q(kin, method, q)


def _points_arguments(
    method: str, kin: Any, points: Any, q: Any, n_axial: int | None = None
) -> None:
    del n_axial
    shape = jnp.shape(points)
    if len(shape) != 2 or shape[1] != 3:
        raise ValueError(
            f"{kinematics_name(kin)}.{method}: points must have shape (K, 3), got {shape}"
        )
    _check_q(kin, method, q)


def _backbone_arguments(kin: Any, x3: Any, q: Any) -> None:
    if jnp.ndim(x3) != 1:
        raise ValueError(
            f"{kinematics_name(kin)}.backbone: x3 must have shape (R,), got {jnp.shape(x3)}"
        )
    _check_q(kin, "backbone", q)


def _distal_arguments(kin: Any, q: Any) -> None:
    _check_q(kin, "distal_pose", q)


# the public methods of a map and the checks of their arguments, applied where a class
# defines the method (`Kinematics.__init_subclass__`)
_ARGUMENT_CHECKS: dict[str, Callable[..., None]] = {
    "__call__": functools.partial(_point_arguments, "__call__"),
    "valid": functools.partial(_point_arguments, "valid"),
    "map_points": functools.partial(_points_arguments, "map_points"),
    "check": functools.partial(_points_arguments, "check"),
    "backbone": _backbone_arguments,
    "distal_pose": _distal_arguments,
}


def _checked(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` after `_ARGUMENT_CHECKS[name]` of its arguments (at trace time)."""
    check = _ARGUMENT_CHECKS[name]

    @functools.wraps(method)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        check(self, *args, **kwargs)
        return method(self, *args, **kwargs)

    checked._arguments_checked = True  # type: ignore[attr-defined]
    return checked


class Kinematics(abc.ABC):
    """Abstract body map `f(x, q)`. Subclasses are `@module` pytrees with a static `n_q`.

    The shapes of the arguments of `__call__` (`x` `(3,)`, `q` `(n_q,)`), `map_points`,
    `backbone`, `distal_pose` and, for the LVP primitives, `valid` and `check` are checked
    where a subclass defines them (at trace time: no
    cost in a compiled program), so a map called directly with the wrong number of
    coordinates raises a `ValueError` naming it instead of reading clamped indices.

    Override `map_points` to evaluate a whole quadrature rule faster than point by point (for
    instance once per axial row of a tensor-product rule). Two optional capabilities are
    declared, not probed: a family that knows the pose of its distal frame exactly (a Cosserat
    backbone) sets `exact_distal = True` and implements `distal_pose`; otherwise the body builds
    it from the images of a pivot and two contact points (eqs. (5)–(7) of the seed). A family
    with rigid sections on a backbone sets `has_backbone = True` and implements `backbone`. A
    family whose capability depends on the instance exposes the flag as a property computed
    from static fields.
    """

    n_q: int
    exact_distal: ClassVar[bool] = False
    has_backbone: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in _ARGUMENT_CHECKS:
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "_arguments_checked", False):
                setattr(cls, name, _checked(name, method))

    @abc.abstractmethod
    def __call__(self, x: Array, q: Array) -> Array:
        """Position `(3,)` of material point `x` `(3,)` at body coordinates `q` `(n_q,)`."""

    @functools.partial(_checked, "map_points")
    def map_points(self, points: Array, q: Array, n_axial: int | None = None) -> Array:
        """Positions `(K, 3)` of the material points `points` `(K, 3)`.

        `n_axial` (optional) says that `points` are ordered axial-major in `n_axial` rows that
        share `x3`; the default ignores it and maps point by point.
        """
        del n_axial
        return jax.vmap(self.__call__, in_axes=(0, None))(points, q)

    def backbone(self, x3: Array, q: Array) -> tuple[Array, Array]:
        """Rod structure `(r (R, 3), rot (R, 3, 3))` at the axial coordinates `x3` `(R,)`:

            f(x, q) = r(x3, q) + rot(x3, q) (x1, x2, 0)    (rigid sections on a backbone).

        Only for families with `has_backbone`; it lets `SoftBody` integrate tensor-product
        volumes exactly row by row, with the section's moments, instead of node by node.
        """
        del x3, q
        raise NotImplementedError(
            f"{type(self).__name__} has no backbone (has_backbone is False); "
            "a family that implements backbone() sets has_backbone = True"
        )

    def distal_pose(self, q: Array) -> tuple[Array, Array]:
        """Exact pose `(R (3, 3), t (3,))` of the distal frame in the proximal frame, at `q`
        `(n_q,)`. Only for families with `exact_distal`; the others build it from contact
        points."""
        del q
        raise NotImplementedError(
            f"{type(self).__name__} gives no exact distal pose (exact_distal is False); "
            "a family that implements distal_pose() sets exact_distal = True"
        )


@module
class FunctionKinematics(Kinematics):
    """A user function as a body map.

    Args:
        fn: `fn(x, q) -> (3,)`, or `fn(x, q, params) -> (3,)` when `params` is given.
        n_q: number of body coordinates.
        params: optional pytree of arrays passed to `fn` as traced leaves (for instance the
            weights of a learned map, so that gradients flow to them). The model keeps a copy:
            changing the caller's arrays or containers later does not change the body.
        name: shown in error messages (defaults to the function's name).
    """

    fn: Callable[..., Array] = static()
    n_q: int = static()
    params: Any = None
    name: str = static(default="")

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise TypeError(f"kinematics must be callable, got {type(self.fn).__name__}")
        count = isinstance(self.n_q, (int, np.integer)) and not isinstance(self.n_q, bool)
        if not count or self.n_q < 0:
            raise ValueError(f"n_q must be a non-negative integer, got {self.n_q!r}")
        object.__setattr__(self, "n_q", int(self.n_q))
        if not self.name:
            object.__setattr__(self, "name", getattr(self.fn, "__name__", repr(self.fn)))
        object.__setattr__(self, "params", copy_params(self.params))

    def __call__(self, x: Array, q: Array) -> Array:
        if self.params is None:
            return self.fn(x, q)
        return self.fn(x, q, self.params)


def as_kinematics(kinematics: Any, n_q: int | None = None, params: Any = None) -> Kinematics:
    """Return `kinematics` as a `Kinematics`, wrapping a plain callable (which needs `n_q`)."""
    if isinstance(kinematics, Kinematics):
        if isinstance(n_q, bool) or (n_q is not None and n_q != kinematics.n_q):
            raise ValueError(
                f"n_q={n_q} contradicts {type(kinematics).__name__}.n_q={kinematics.n_q}"
            )
        if params is not None:
            raise ValueError("params is only for plain-function kinematics")
        return kinematics
    if not callable(kinematics):
        raise TypeError(
            f"kinematics must be a softrigid.kinematics family or a callable f(x, q), "
            f"got {type(kinematics).__name__}"
        )
    if n_q is None:
        raise ValueError(
            f"kinematics function {getattr(kinematics, '__name__', kinematics)!r} needs n_q= "
            "(its number of coordinates)"
        )
    return FunctionKinematics(kinematics, n_q, params)


def check_map(kin: Kinematics, dtype: Any = float) -> None:
    """Trace `kin` once on abstract inputs and check it returns a `(3,)` array.

    Raises a `TypeError` naming the map when it is not traceable by JAX (NumPy on `x` or `q`,
    a Python `if` or `float()` on them) or returns a complex or integer position, and a
    `ValueError` on a wrong output shape; other exceptions from the user's code pass through
    unchanged. Warns where the map returns a lower precision than its inputs' (float32
    positions for float64 `x` and `q`: the dynamics silently float32-accurate). (`check_indices`
    checks the indices a user map reads.)
    """
    name = kinematics_name(kin)
    x = jax.ShapeDtypeStruct((3,), jnp.dtype(dtype))
    q = jax.ShapeDtypeStruct((kin.n_q,), jnp.dtype(dtype))
    out = trace_user(f"kinematics {name!r}", "x or q", kin, x, q)
    shape = getattr(out, "shape", None)
    if shape != (3,):
        raise ValueError(
            f"kinematics {name!r} must return a (3,) position for x (3,) and q ({kin.n_q},); "
            f"it returned {shape if shape is not None else type(out).__name__}"
        )
    if not jnp.issubdtype(out.dtype, jnp.floating):
        raise TypeError(
            f"kinematics {name!r} must return a real floating-point position, got dtype "
            f"{out.dtype} (a complex or integer map has no real derivatives)"
        )
    given = jax.dtypes.canonicalize_dtype(dtype)
    if jnp.finfo(out.dtype).bits < jnp.finfo(given).bits:
        warnings.warn(
            f"kinematics {name!r} returns {out.dtype} positions for {given} x and q: the body's "
            f"dynamics will be only as accurate as {out.dtype} (relative rounding "
            f"{float(jnp.finfo(out.dtype).eps):.0e}); compute the map in the dtype of its inputs",
            stacklevel=3,
        )


def _placeholders(params: Any) -> Any:
    """Zeros of the shapes and dtypes of `params`' leaves (traced leaves included)."""
    return jax.tree_util.tree_map(lambda a: jnp.zeros(jnp.shape(a), jnp.result_type(a)), params)


def _outside_transformations(fn: Callable[[], Any]) -> Any:
    """`fn()` evaluated eagerly: in this thread outside every JAX transformation, else in a
    thread of its own, whose trace state is clean (JAX's is per thread), so that a check made
    while a body is built inside `jit`, `grad` or `vmap` runs on values instead of being
    staged into the caller's program. Exceptions are raised here."""
    if runs_eagerly():
        return fn()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(fn).result()


def check_indices(kin: Kinematics, dtype: Any = float, points: Any = None) -> None:
    """A `ValueError` where a user map (`FunctionKinematics`) indexes `x` or `q` out of
    bounds (e.g. `q[1]` with `n_q = 1`): JAX clamps such an index silently, so the body would
    move with another coordinate. Found by `checkify`'s index checks on one evaluation at
    `q = 0` at every one of `points` `(M, 3)` (the body's nodes and frame points: an index may
    depend on `x`, as in a map of pieces; the origin where they are not given or traced), also
    when the body is built inside `jit`, `grad` or `vmap`. Traced `params` are replaced by
    zeros of their shapes: the indices a map reads do not depend on its weights' values. A map
    that closes over a traced value of the caller cannot be evaluated apart: not checked."""
    if not isinstance(kin, FunctionKinematics):
        return
    points = np.zeros((1, 3)) if points is None or not is_concrete(points) else points
    points = np.asarray(points, dtype).reshape(-1, 3)
    traced = not is_concrete(kin.params)

    def check() -> str | None:
        params = _placeholders(kin.params) if traced else kin.params
        q = jnp.zeros(kin.n_q, dtype)

        def position(x: Array, q: Array) -> Array:
            return kin.fn(x, q) if params is None else kin.fn(x, q, params)

        batched = jax.vmap(position, in_axes=(0, None))
        err, _ = checkify.checkify(batched, errors=checkify.index_checks)(jnp.asarray(points), q)
        return err.get()

    try:
        message = _outside_transformations(check)
    except jax.errors.UnexpectedTracerError:  # the map reads a traced value of the caller
        return
    if message is not None:
        name = kinematics_name(kin)
        raise ValueError(
            f"kinematics {name!r} indexes past its arguments (x (3,), q ({kin.n_q},)): "
            f"{message.strip().rstrip('.')}; JAX would clamp the index silently. Give n_q= the "
            "number of coordinates the map reads"
        )
