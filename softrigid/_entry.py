"""The one argument-check preamble of the public algorithms, and their output checks.

`algorithm(...)` turns a core `core(robot, q, …)` into its public function: the robot, the state
vectors (`(n_q,)`, real, finite when concrete, promoted to one floating dtype), the inputs `u`
(`(n_u,)`) and the external loads are checked once, at the entry, with messages that name the
argument; then the core runs compiled (`jax.jit`, one compiled program per robot structure and
option). Under an outer `jit`/`vmap` the checks run at trace time on shapes and dtypes; a
`vmap` over many states runs chunk by chunk on CPU (`softrigid._batching`).

An eager call first tries the fast path (`softrigid._fastpath`): the robot flattened once, a
program cached for it, checks on types and shapes only and the values' finiteness inside that
program; whatever the fast path does not accept, or any fault it finds, runs the checked path
here, which raises the error.

The outputs are checked at run time, inside the compiled program (so also under the user's
`jit`/`vmap`; `softrigid._reports`): a non-finite value raises an error naming the algorithm
and the first bad coordinate. Eager calls raise it as a `ValueError`; inside the user's `jit`
it surfaces as JAX's runtime error carrying the same message.

The library's own iterations probe trial points that may lie outside a body's range (a Newton
step past a stretch of zero): there a non-finite value is information, and the solver rejects
the trial and reports through its status. Traced inside `trial_evaluations()`, the public
algorithms that a user's actuator or output function calls leave out their output checks.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from . import _batching, _fastpath
from ._cache import jit
from ._checks import as_flag, check_state, is_real_dtype
from ._loads import check_loads
from ._model import Robot, structure_error
from ._module import is_concrete
from ._reports import check_finite, raise_runtime_errors

__all__ = [
    "algorithm",
    "check_inputs",
    "check_robot",
    "check_states",
    "trial_evaluations",
]

# Every runtime message starts with this, so that eager calls can re-raise it cleanly.
F = TypeVar("F", bound=Callable[..., Any])

_TRIAL = contextvars.ContextVar("softrigid_trial_evaluations", default=False)


@contextlib.contextmanager
def trial_evaluations() -> Iterator[None]:
    """Trace the public algorithms called inside without their run-time output checks: for
    the trial points of the library's solvers (Newton's line search, the inverse statics'
    trial inputs, scipy's Radau stages), which reject a non-finite trial themselves. A
    trace-time switch: it selects which compiled program a traced call builds."""
    token = _TRIAL.set(True)
    try:
        yield
    finally:
        _TRIAL.reset(token)


def in_trial_evaluations() -> bool:
    """Whether the trace is inside `trial_evaluations` (model-level run-time checks that a
    solver's trial may fail, e.g. a chamber volume past the map's range, stand down there)."""
    return _TRIAL.get()


STATE_NAMES = ("q", "qd", "qdd", "nu")


def check_robot(robot: Any, where: str | None = None) -> Robot:
    """`robot` if it is a `softrigid.Robot`, else a `TypeError` (naming `where`, the function
    or object that takes it, when given)."""
    if not isinstance(robot, Robot):
        got = type(robot).__name__
        if where is not None:
            raise TypeError(f"{where}: robot must be a softrigid.Robot, got {got}")
        raise TypeError(f"expected a softrigid.Robot as first argument, got {got}")
    problem = structure_error(robot)
    if problem is not None:
        raise ValueError(problem)
    return robot


def check_states(robot: Robot, **arrays: Any) -> list[Array]:
    """The state vectors `(n_q,)`, checked and promoted to one floating dtype with the robot's
    parameters (mixed float32 and float64 inputs are computed in float64)."""
    out = []
    for name, value in arrays.items():
        arr = check_state(name, value, robot.n_q)
        if arr.ndim != 1:
            raise ValueError(
                f"{name} must have shape ({robot.n_q},); for a batch of states use jax.vmap, "
                f"got {arr.shape}"
            )
        out.append(arr)
    # one dtype for the states and the model (float32 states on a float64 model are computed
    # in float64); a float32 computation is one with JAX's x64 mode off
    dtype = jnp.result_type(robot.gravity, *out) if out else None
    if dtype == jnp.float32 and jax.config.read("jax_enable_x64"):
        raise TypeError(
            "a float32 robot with float32 states under JAX's x64 mode: softrigid computes in "
            "float32 with x64 off (jax.config.update('jax_enable_x64', False), or inside "
            "`with jax.enable_x64(False):`); with x64 on, build the robot from float64 values"
        )
    return [x.astype(dtype) for x in out]


def check_inputs(robot: Robot, u: Any, dtype: Any, name: str = "u") -> Array:
    """The robot's inputs `u` `(n_u,)`: actuator inputs, or generalized forces without
    actuators."""
    what = (
        "actuator inputs" if robot.actuators else "generalized forces: the robot has no actuators"
    )
    if isinstance(u, str):
        raise TypeError(f"{name} must be a real array of shape ({robot.n_u},) ({what}), got {u!r}")
    try:
        arr = jnp.asarray(u)
    except (TypeError, ValueError, OverflowError) as err:
        raise TypeError(
            f"{name} must be a real array of shape ({robot.n_u},) ({what}), got {u!r} ({err})"
        ) from None
    if not is_real_dtype(arr.dtype):
        raise TypeError(f"{name} must be real ({what}), got dtype {arr.dtype}")
    if arr.shape != (robot.n_u,):
        hint = "; for a batch use jax.vmap" if arr.ndim > 1 else ""
        raise ValueError(f"{name} must have shape ({robot.n_u},) ({what}), got {arr.shape}{hint}")
    if is_concrete(arr) and not bool(np.all(np.isfinite(np.asarray(arr)))):
        bad = np.flatnonzero(~np.isfinite(np.asarray(arr)))
        raise ValueError(f"{name} contains non-finite values (NaN or inf) at index {bad.tolist()}")
    return arr.astype(dtype)


def _named(name: str, err: Exception) -> Exception:
    """`err` (a `TypeError` or `ValueError` of an argument check) with the public function's
    name in front of its message, as the functions' own messages have it."""
    text = str(err)
    return err if text.startswith(f"{name}: ") else type(err)(f"{name}: {text}")


def algorithm(static_argnames: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Decorator: the public function of a core `core(robot, <states>, [u], [loads], …)`.

    Arguments named `q`, `qd`, `qdd`, `nu` are checked as states, `u` as the robot's inputs,
    `loads` as external loads (normalized to a tuple); `static_argnames` are compile-time
    options. The core is compiled once per robot structure and option. Every floating output
    is checked finite at run time (`check_finite`). Eager calls take the fast path of
    `softrigid._fastpath` when it accepts them (algorithms whose parameters are all states,
    inputs, loads and static options).
    """

    def decorate(core: F) -> F:
        signature = inspect.signature(core)
        name = core.__name__.lstrip("_")

        inputs = [k for k in (*STATE_NAMES, "u", "loads") if k in signature.parameters]

        @functools.wraps(core)
        def checked_core(robot: Robot, *args: Any, **kwargs: Any) -> Any:
            given = signature.bind(robot, *args, **kwargs).arguments
            named = {k: given[k] for k in inputs if k in given}
            return check_finite(name, robot, core(robot, *args, **kwargs), named)

        # (checked, under a `vmap`) -> program; under a `vmap` many states run chunk by chunk
        # on CPU (softrigid._batching); unchecked inside `trial_evaluations()`
        jitted = {
            (checked, batched): jit(
                _batching.chunked(fn) if batched else fn, static_argnames=static_argnames
            )
            for checked, fn in ((True, checked_core), (False, core))
            for batched in (False, True)
        }
        fast = _fastpath.Signature.of(core, static_argnames)
        flags = _fastpath.flag_names(core, static_argnames)

        @functools.wraps(core)
        def public(*args: Any, **kwargs: Any) -> Any:
            if fast is not None:
                out = _fastpath.call(fast, args, kwargs)
                if out is not _fastpath.SLOW:
                    return out
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as err:
                raise TypeError(f"{core.__name__}: {err}") from None
            bound.apply_defaults()
            values = bound.arguments
            for flag in flags:  # a string "False" or an array is not read by its truth value
                values[flag] = as_flag(f"{name}: {flag}", values[flag])
            try:
                robot = check_robot(values["robot"])
                states = {k: values[k] for k in STATE_NAMES if k in values}
                checked = dict(zip(states, check_states(robot, **states)))
                values.update(checked)
                dtype = next(iter(checked.values())).dtype if checked else float
                if "u" in values:
                    values["u"] = check_inputs(robot, values["u"], dtype)
                if "loads" in values:
                    values["loads"] = check_loads(robot, values["loads"])
            except (TypeError, ValueError) as err:
                raise _named(name, err) from None
            if not is_concrete(bound.args, bound.kwargs):
                batched = _batching.under_vmap((bound.args, bound.kwargs))
                program = jitted[(not _TRIAL.get(), batched)]
                return program(*bound.args, **bound.kwargs)
            return raise_runtime_errors(
                lambda: jitted[(True, False)](*bound.args, **bound.kwargs), robot, checked
            )

        return public  # type: ignore[return-value]

    return decorate
