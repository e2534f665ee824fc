"""Python's cyclic garbage collector paused while JAX traces and lowers softrigid's programs.

Tracing a robot's program allocates millions of short-lived Python objects (tracers, jaxpr
equations, avals) while the objects that survive (the growing jaxpr, JAX's caches) make every
full collection longer: on jaxlib 0.10 and CPython 3.11 the collector took 30 % of the time
to trace `inverse_dynamics_derivatives` of the helicoid robot (5.4–6.0 s with it, 3.8–4.1 s
without; peak memory the same, 430 MB: the garbage of a trace is freed by reference counting,
not by the collector). `paused` disables the collector for the duration of a `with` block and
enables it again when the last block in any thread ends, if it was enabled before the first;
a collector the user disabled stays disabled. `softrigid._cache.jit` runs a traced function
inside it, and holds the pause of a top-level call that traces (its first, or new shapes) from
the trace until the call returns, lowering and compilation or load included
(`call_held_if_traced`; the collector took 0.4–0.8 s of the helicoid robot's derivatives'
1.1–1.5 s of lowering): another thread's cyclic garbage waits until the call returns. A call
that runs the compiled program, which allocates no Python objects, does not pause. Nothing
else changes: what a trace leaves unreachable in cycles is collected at the next collection
after it.
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["call_held_if_traced", "paused", "pausing"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


class _Calls(threading.local):
    """Per thread: inside a call that `call_held_if_traced` watches, and whether a trace in it
    opened a pause that lasts until the call returns (class attributes: every thread's
    defaults)."""

    watching = False
    held = False


_calls = _Calls()


class _Paused:
    """The context manager of `paused` (a class: entering and leaving cost 0.6 µs in all, a
    generator-based one several times that, on every top-level call of a program)."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _depth, _was_enabled
        with _lock:
            if _depth == 0:
                _was_enabled = gc.isenabled()
                gc.disable()
            _depth += 1

    def __exit__(self, *exc: object) -> None:
        global _depth
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


_PAUSED = _Paused()


def paused() -> _Paused:
    """The garbage collector disabled inside `with paused():` (module docstring); re-entrant
    and shared by threads: it is enabled again when the outermost of all open blocks ends."""
    return _PAUSED


def call_held_if_traced(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fun(*args, **kwargs)` for a compiled program `fun`, pausing the collector only if the
    call traces a function of `pausing` (a new signature): from the trace's start until the call
    returns, so that the lowering and compilation that follow the trace are paused too. A call
    that runs the compiled program costs two thread-local assignments."""
    calls = _calls
    calls.watching = True
    try:
        return fun(*args, **kwargs)
    finally:
        calls.watching = False
        if calls.held:
            calls.held = False
            _PAUSED.__exit__()


def pausing(fun: Callable[..., Any]) -> Callable[..., Any]:
    """`fun` called inside `paused()` (same name, signature and docstring, for `jax.jit`);
    inside `call_held_if_traced` the pause is held until that call returns."""

    @functools.wraps(fun)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if _calls.watching and not _calls.held:
            _PAUSED.__enter__()
            _calls.held = True
        with paused():
            return fun(*args, **kwargs)

    return wrapped
