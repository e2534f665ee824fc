"""The fast path of an eager public call: the robot checked and flattened once, not per call.

An eager call of a public algorithm (`softrigid._entry.algorithm`) whose robot and arguments hold
no tracer runs a program compiled for that robot (its `Handle`), after checks that read only
types, shapes and dtypes:

    f(robot, q, …) → bind → the robot's handle → its program(states) → (outputs, ok) → outputs

The program promotes the states to one floating dtype, runs the core and returns, next to the
outputs, one flag `ok`: every state, every input and every floating output is finite, and no
run-time check inside the core fired (a Cholesky factor, an articulated inertia: under
`_checks.flagging` the checks become flags). No value is read before the call (a NaN in `q`
lowers the flag). When the flag is down, or the program
raises (a check inside the core, a trace-time error), the checked path of `_entry` runs the call
again and raises its error with its message: every error is the checked path's own, and the fast
path only ever returns results that passed its checks.

Each robot, algorithm and set of static options has an entry with one of two programs:

- shared (the first calls): one program per robot *structure* (tree definition) taking the
  robot's leaves, flattened once per robot, as arguments; a new robot of a known structure
  compiles nothing;
- specialized (once the calls after the first have taken `AMORTIZE` times as long as the first
  call, its compilation included, and at least `SPECIALIZE_AFTER` calls): the leaves closed over
  as constants, the program that the user's own `jax.jit(lambda q, qd, qdd: f(robot, q, qd,
  qdd))` compiles (XLA folds the constants: 10–20 % fewer instructions, and no leaves to pass:
  100–200 µs less per call at 20 bodies). Compiling it costs once what the first call cost, so
  it is paid only when the calls have cost as much (a loop of a few finite differences does
  not compile twice; a simulation loop does, early).

The shared programs have no host callback, so JAX's persistent compilation cache
(`softrigid.enable_compilation_cache`) stores them: a later process loads a robot's first call
instead of compiling it. The specialized ones hand the fault flag through the host (see `_run`).

Handles live as long as their robot (weak references); the shared programs are in a bounded cache.
Tracers anywhere (the user's `jit`, `vmap`, `grad`, a robot built inside `jit`) take the checked
path, as before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._cache import jit
from ._checks import check_state, flagging, none_fired
from ._loads import check_loads
from ._model import Robot, structure_error
from ._module import is_concrete

__all__ = [
    "AMORTIZE",
    "SLOW",
    "SPECIALIZE_AFTER",
    "Handle",
    "Signature",
    "call",
    "disabled",
    "handle",
]

# An algorithm on a robot gets its own program after at least SPECIALIZE_AFTER calls whose time
# (after the first call) adds up to AMORTIZE times the first call's (a second compilation is
# paid once the calls have cost as much: at most twice the best policy's cost, whatever the
# robot's compile and call times).
SPECIALIZE_AFTER = 32
AMORTIZE = 1.0

SLOW = object()
"""What `call` returns when the checked path must run the call."""

_ARRAYS = ("q", "qd", "qdd", "nu", "u")
_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))
# the array types taken as they are; JAX's concrete array type joins at the first handle (an
# array made at import would start JAX's backend, which `softrigid.fast_compilation` precedes)
_FAST_TYPES: tuple[type, ...] = (np.ndarray,)
_NONE = object()
_ENABLED = [True]


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Every eager call inside takes the checked path (for tests and benchmarks that compare)."""
    before = _ENABLED[0]
    _ENABLED[0] = False
    try:
        yield
    finally:
        _ENABLED[0] = before


def flag_names(core: Callable[..., Any], static: tuple[str, ...]) -> tuple[str, ...]:
    """The compile-time options of `core` annotated `bool`."""
    parameters = inspect.signature(core).parameters
    return tuple(n for n in static if parameters[n].annotation in (bool, "bool"))


@dataclasses.dataclass(frozen=True, eq=False)
class Signature:
    """What the fast path needs of an algorithm's core `core(robot, <arrays>, [loads], <static>)`.

    Attributes:
        name: the algorithm's name.
        core: the unchecked core.
        params: its parameter names after `robot`, in order.
        defaults: the default of each parameter (`_NONE` where there is none).
        required: how many leading parameters have no default.
        arrays: `(position in params, name, is the input u)` of the states and the inputs.
        loads: the position of `loads` in params, or -1.
        static: the positions of the compile-time options in params.
        flags: the positions of the options annotated `bool` (a value of another type takes
            the checked path, which names it).
    """

    name: str
    core: Callable[..., Any]
    params: tuple[str, ...]
    defaults: tuple[Any, ...]
    required: int
    arrays: tuple[tuple[int, str, bool], ...]
    loads: int
    static: tuple[int, ...]
    flags: tuple[int, ...]

    @classmethod
    def of(cls, core: Callable[..., Any], static: tuple[str, ...]) -> Signature | None:
        """The signature of `core`, or `None` when a parameter is none of robot, state, `u`,
        `loads` or a static option (such an algorithm always takes the checked path)."""
        parameters = inspect.signature(core).parameters
        names = tuple(parameters)
        plain = all(p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters.values())
        known = {"robot", *_ARRAYS, "loads", *static}
        if not plain or names[:1] != ("robot",) or not set(names) <= known:
            return None
        params = names[1:]
        flags = flag_names(core, static)
        empty = inspect.Parameter.empty
        defaults = tuple(
            _NONE if parameters[n].default is empty else parameters[n].default for n in params
        )
        return cls(
            name=core.__name__.lstrip("_"),
            core=core,
            params=params,
            defaults=defaults,
            required=sum(d is _NONE for d in defaults),
            arrays=tuple((i, n, n == "u") for i, n in enumerate(params) if n in _ARRAYS),
            loads=params.index("loads") if "loads" in params else -1,
            static=tuple(i for i, n in enumerate(params) if n in static),
            flags=tuple(i for i, n in enumerate(params) if n in flags),
        )


@dataclasses.dataclass(eq=False)
class _Entry:
    """One algorithm with one set of static options on one robot: its program, and how often
    and how long it ran (the first call apart) before it was specialized."""

    program: Callable[..., Any]
    specialized: bool = False
    calls: int = 0
    first: float = 0.0
    spent: float = 0.0


@dataclasses.dataclass(eq=False)
class Handle:
    """A robot flattened once: its leaves, tree definition, state shapes and programs."""

    leaves: tuple[Any, ...]
    treedef: Any
    shape_q: tuple[int]
    shape_u: tuple[int]
    single: bool  # a float32 robot: float32 states under x64 go to the checked path, which refuses
    entries: dict[Any, _Entry] = dataclasses.field(default_factory=dict)


_HANDLES: weakref.WeakKeyDictionary[Robot, Handle] = weakref.WeakKeyDictionary()
# The first call of each shared program (its compilation included), for the robots of its
# structure that come later and find it compiled.
_FIRST: weakref.WeakKeyDictionary[Callable[..., Any], float] = weakref.WeakKeyDictionary()


def handle(robot: Robot) -> Handle | None:
    """The robot's handle (made on first use), or `None` for a robot with traced leaves."""
    found = _HANDLES.get(robot)
    if found is not None:
        return found
    leaves, treedef = jax.tree_util.tree_flatten(robot)
    if not is_concrete(leaves) or structure_error(robot) is not None:
        return None  # traced leaves, or a robot the checked path refuses (`check_robot`)
    _accept_jax_arrays()
    single = jnp.result_type(robot.gravity) == jnp.float32
    made = Handle(tuple(leaves), treedef, (robot.n_q,), (robot.n_u,), single)
    _HANDLES[robot] = made
    return made


def _accept_jax_arrays() -> None:
    """Add JAX's concrete array type to `_FAST_TYPES` (once). The array is made concrete
    even when the first handle is made while a `jit` traces (a robot built outside, called
    first inside): an array made there is a tracer, and tracers would then pass for concrete
    states, tracing the model twice (the fast path's program, then the checked one)."""
    global _FAST_TYPES
    if len(_FAST_TYPES) == 1:
        with jax.ensure_compile_time_eval():  # a transfer, nothing compiled
            concrete = type(jax.device_put(np.zeros(0)))
        _FAST_TYPES = (concrete, np.ndarray)


def _run(
    sig: Signature, static: tuple[Any, ...], robot: Robot, arrays: tuple, loads: Any, sync: bool
) -> Any:
    """The program's body: `(outputs, ok)`, the promoted states through the core and the flag
    that the states, the inputs and every floating output are finite and that no run-time check
    of the core fired (`_checks.flagging`: its checks become flags, so the program has no host
    callback and the persistent compilation cache can store it)."""
    states = [x for (_, _, is_u), x in zip(sig.arrays, arrays) if not is_u]
    dtype = jnp.result_type(robot.gravity, *states)
    kwargs = {name: x.astype(dtype) for (_, name, _), x in zip(sig.arrays, arrays)}
    kwargs.update((sig.params[i], value) for i, value in zip(sig.static, static))
    if sig.loads >= 0:
        kwargs["loads"] = loads
    with flagging(arrays[0] if arrays else None) as faults:
        out = sig.core(robot, **kwargs)
    checked = [*arrays, *jax.tree_util.tree_leaves(out)]
    finite = [jnp.all(jnp.isfinite(x)) for x in checked if jnp.issubdtype(x.dtype, jnp.inexact)]
    ok = jnp.all(jnp.stack(finite)) & none_fired(faults)
    if not sync:
        return out, ok
    # The fault branch hands the flag through the host: XLA:CPU runs a program with a host
    # callback in the calling thread, which spares a call that waits for its result the hand-off
    # to a worker thread and back (measured ~30 µs on one core; without it the program takes
    # the asynchronous path). Such a program is not stored by the persistent compilation cache:
    # only the specialized programs, compiled after many calls in the process, take this form.
    return out, jax.lax.cond(ok, lambda flag: flag, _through_host, ok)


def _through_host(flag: Any) -> Any:
    return jax.pure_callback(np.asarray, jax.ShapeDtypeStruct((), jnp.bool_), flag)


@functools.lru_cache(maxsize=128)
def _shared(sig: Signature, static: tuple[Any, ...], treedef: Any) -> Callable[..., Any]:
    """The program shared by every robot of one structure: the leaves are arguments."""

    def program(leaves: tuple, arrays: tuple, loads: Any) -> Any:
        robot = jax.tree_util.tree_unflatten(treedef, leaves)
        return _run(sig, static, robot, arrays, loads, sync=False)

    return jit(program)


def _specialized(sig: Signature, static: tuple[Any, ...], h: Handle) -> Callable[..., Any]:
    """The program of one robot: its leaves closed over as constants (not the robot, which the
    handle must not keep alive)."""
    leaves, treedef = h.leaves, h.treedef

    def program(arrays: tuple, loads: Any) -> Any:
        robot = jax.tree_util.tree_unflatten(treedef, leaves)
        return _run(sig, static, robot, arrays, loads, sync=True)

    return jit(program)


def _bind(sig: Signature, args: tuple, kwargs: dict[str, Any]) -> tuple | None:
    """The arguments after the robot in the order of `sig.params`, defaults filled in; `None`
    when they do not bind (the checked path raises the `TypeError`)."""
    given, params = len(args) - 1, sig.params
    if not kwargs:
        return args[1:] + sig.defaults[given:] if sig.required <= given <= len(params) else None
    if given > len(params) or not set(kwargs) <= set(params[given:]):
        return None
    rest = zip(params[given:], sig.defaults[given:])
    values = (*args[1:], *(kwargs.get(name, default) for name, default in rest))
    return None if any(v is _NONE for v in values) else values


def _convert(name: str, value: Any, shape: tuple[int]) -> Any:
    """The checked conversion of a concrete state or input that is not already a floating
    vector of the right shape (a list, integers), or `SLOW` (a tracer, a bad argument: the
    checked path raises its error, in its order)."""
    if isinstance(value, jax.core.Tracer):
        return SLOW
    try:
        arr = check_state(name, value, shape[0])
    except (TypeError, ValueError):
        return SLOW
    return arr if arr.shape == shape else SLOW


def call(sig: Signature, args: tuple, kwargs: dict[str, Any]) -> Any:
    """The result of the eager call `f(*args, **kwargs)` by the fast path, or `SLOW`."""
    robot = args[0] if args else None
    if type(robot) is not Robot or not _ENABLED[0]:
        return SLOW
    values = _bind(sig, args, kwargs)
    h = handle(robot)
    if values is None or h is None:
        return SLOW
    arrays = []
    for i, name, is_u in sig.arrays:
        value, shape = values[i], h.shape_u if is_u else h.shape_q
        if type(value) not in _FAST_TYPES or value.shape != shape or value.dtype not in _FLOATS:
            value = _convert(name, value, shape)
            if value is SLOW:
                return SLOW
        arrays.append(value)
    if h.single and jax.config.read("jax_enable_x64"):
        if all(a.dtype == np.float32 for i, a in enumerate(arrays) if not sig.arrays[i][2]):
            return SLOW  # `check_states` names a float32 computation asked under x64
    loads = values[sig.loads] if sig.loads >= 0 else None
    if loads is None:
        loads = ()
    else:
        try:
            loads = check_loads(robot, loads)
        except (TypeError, ValueError):
            return SLOW
        if not is_concrete(loads):
            return SLOW
    if any(type(values[i]) is not bool for i in sig.flags):
        return SLOW
    static = tuple(values[i] for i in sig.static) if sig.static else ()
    try:
        entry = h.entries.get((sig, static))
        if entry is None:
            entry = h.entries[sig, static] = _Entry(_shared(sig, static, h.treedef))
    except TypeError:  # an unhashable option: the checked path reports it
        return SLOW
    if entry.specialized:
        return _attempt(entry.program, tuple(arrays), loads)
    return _shared_call(sig, static, h, entry, tuple(arrays), loads)


def _attempt(program: Callable[..., Any], *args: Any) -> Any:
    """The outputs of `program(*args)`, or `SLOW` when its flag is down or it raised (the
    checked path runs the call again and raises, with its message)."""
    try:
        out, ok = program(*args)
        return out if np.asarray(ok) else SLOW  # waits: an error of the run arrives here
    except Exception:
        return SLOW


def _shared_call(
    sig: Signature, static: tuple[Any, ...], h: Handle, entry: _Entry, arrays: tuple, loads: Any
) -> Any:
    """Run the entry's shared program (as `call`) and specialize the entry when it has earned
    it."""
    start = time.perf_counter()
    out = _attempt(entry.program, h.leaves, arrays, loads)
    if out is SLOW:
        return SLOW
    elapsed = time.perf_counter() - start
    entry.calls += 1
    if entry.calls == 1:  # the structure's first call: what compiling a program costs
        entry.first = _FIRST.setdefault(entry.program, elapsed)
    else:
        entry.spent += elapsed
    if entry.calls >= SPECIALIZE_AFTER and entry.spent >= AMORTIZE * entry.first:
        entry.program, entry.specialized = _specialized(sig, static, h), True
    return out
