"""How softrigid compiles: XLA options for its programs (`compiler_options`), `jit` with them,
and the process-wide settings that speed compilation and calls up (`fast_compilation`,
`fused_loops`, `synchronous_dispatch`). The persistent compilation cache is
`_persistent_cache`'s.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from importlib.metadata import version
from typing import Any

import jax
from jax._src import core as jax_core  # trace_state_clean: no public equivalent
from jax._src import xla_bridge  # backends_are_initialized: no public equivalent

from ._gc import call_held_if_traced, pausing

__all__ = [
    "compiler_options",
    "fast_compilation",
    "fused_loops",
    "jit",
    "synchronous_dispatch",
]

# XLA:CPU's elemental fusion emitters instead of its MLIR ones; XLA aborts the process on a
# flag it does not know, so only for the jaxlib releases checked to have this one
_FAST_OPTION = "xla_cpu_use_fusion_emitters"
_FAST_FLAG = f"--{_FAST_OPTION}=false"
_FAST_FLAG_RELEASES = ("0.10",)
_ASYNC_DISPATCH = "jax_cpu_enable_async_dispatch"
# XLA passes left out of programs whose loops hold a whole model evaluation (`compiler_options`)
_DISABLED_PASSES = "xla_disable_hlo_passes"
_LOOP_PASSES = "while-loop-invariant-code-motion,simplify-while-loops"
# XLA:CPU's schedule for a process confined to one core (`compiler_options`); the older boolean
# `xla_cpu_enable_concurrency_optimized_scheduler` does not take effect as a program's option
_SCHEDULER_OPTION = "xla_cpu_scheduler_type"
_SCHEDULER_FLAGS = (_SCHEDULER_OPTION, "xla_cpu_enable_concurrency_optimized_scheduler")
_ONE_CORE_SCHEDULER = "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED"
# XLA:CPU splits a program's generated code into this many LLVM modules to compile them on its
# thread pool; a process confined to one core compiles them one after the other
_SPLIT_OPTION = "xla_cpu_parallel_codegen_split_count"
# Eigen's dots split over XLA:CPU's intra-op thread pool; False: in the calling thread
_THREADS_OPTION = "xla_cpu_multi_thread_eigen"
# XLA:CPU's library fusions (dots through YNNPACK); empty: XLA's own kernels (`compiler_options`)
_LIBRARY_OPTION = "xla_cpu_experimental_ynn_fusion_type"
# XLA:CPU compiles a loop whose body and condition access fewer bytes per iteration than this
# backend option (default 1,024) as one kernel (`fused_loops`); a map-valued flag, `XLA_FLAGS`
# only (not a program's option)
_EXTRA_OPTIONS = "--xla_backend_extra_options="
_LOOP_OPTION = "xla_cpu_small_while_loop_byte_threshold"
LOOP_BYTES = 65536


@functools.cache
def _checked_release() -> bool:
    """Whether this jaxlib release is one checked to have the option."""
    return ".".join(version("jaxlib").split(".")[:2]) in _FAST_FLAG_RELEASES


def _one_core() -> bool:
    """Whether this process may run on one core only (its CPU affinity, e.g. `taskset -c 1`)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) == 1
    return os.cpu_count() == 1


def compiler_options(*, loops: bool = False) -> dict[str, Any]:
    """The XLA options softrigid compiles its own programs with (its public calls, `simulate`,
    the statics, the implicit integrators): XLA:CPU's elemental fusion emitters
    (`{"xla_cpu_use_fusion_emitters": False}`), which compile softrigid's programs 2–2.7×
    faster than the default MLIR emitters and run them as fast or faster (README, "Fast
    start"). Per program, unlike `fast_compilation` (the whole process): a user's other JAX
    programs keep XLA's defaults.

    XLA:CPU's library fusions are left out (`{"xla_cpu_experimental_ynn_fusion_type": ""}`:
    dots in XLA's own kernels, not YNNPACK fusion thunks), which a cached program rebuilds
    slowly at load: the helicoid robot's closed-loop Jacobian (Simulation 1) loads in 12.9
    instead of 18.0 s, its derivatives compile in 24.7 instead of 27.3 s, and the programs run
    as fast or faster (its full mesh's inverse dynamics 15–18 instead of 24–33 ms; README, "No
    library fusions"). Not set where `XLA_FLAGS` sets it.

    Dots run by Eigen's single-threaded kernels in the calling thread
    (`{"xla_cpu_multi_thread_eigen": False}`) instead of being split over XLA:CPU's intra-op
    thread pool: softrigid's dots are small (a link's `6 × 6` and `6 × n` blocks, a batch
    chunk's Gram products of the rows), where handing them to the pool costs more than the
    work. Measured 2026-12-01 (forward dynamics, the same function compiled both ways in one
    process, interleaved, µs per call / per state at B = 1,024): one pinned core, planar PCS 8
    segments 95.6 → 85.7 / 41.4 → 33.5, the spatial PCS chain 124 → 115 / 50.5 → 43.8, one
    segment 41.4 → 40.4 / 5.09 → 4.08 (B = 64: 5.30 → 4.29), rigid chains unchanged (they
    have no dots in their passes); both cores, B = 1,024, 50.9 → 42.0, 54.0 → 47.4 and 5.82 →
    4.31, per call unchanged; the helicoid robot (both cores) within 6 % either way (full-mesh
    inverse dynamics 18.0 → 16.9 ms, its derivatives 11.8 → 11.3 ms). Not set where
    `XLA_FLAGS` sets it.

    With `loops`, for programs whose loops hold a whole model evaluation (the statics' Newton
    and Levenberg–Marquardt loops), XLA's loop-invariant code motion and while-loop simplifier
    are left out (`"xla_disable_hlo_passes"`): on such bodies they are most of XLA's own
    passes' time (the helicoid robot's inverse statics compiled in 41.5 instead of 65.9 s on
    one core) and found nothing to gain at run time (the same solve in 0.614 and 0.618 s).
    Not set where `XLA_FLAGS` lists passes to disable itself (the user's list holds).

    In a process confined to one core (its CPU affinity: `taskset -c 1`, a pinned control
    loop), XLA's memory-optimized schedule (`{"xla_cpu_scheduler_type":
    "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED"}`) instead of its default, concurrency-optimized one.
    XLA:CPU runs a program's kernels as a dependency graph and, whenever more than a few are
    ready at once, hands half of them to a worker thread; on one core that thread can only run
    by switching the caller out (5 context switches per call of a one-segment PCS robot's
    forward dynamics). The memory-optimized schedule reuses buffers, whose reuse orders the
    kernels, so far fewer are ready at once. Measured 2026-11-28 (one pinned core, µs per
    call): one planar PCS segment 36–37 → 25, six revolute joints 36–37 → 23, thirty 56–58 →
    49–51; batched calls, the helicoid robot and `simulate` unchanged (within 6 %). With more
    cores the default schedule stays: there the concurrency pays on batched calls (the spatial
    PCS chain at 1,024 states: 30 against 42 µs per state). Not set where `XLA_FLAGS` chooses
    a schedule itself. There, too, the program's code is generated as one LLVM module
    (`{"xla_cpu_parallel_codegen_split_count": 1}`): XLA:CPU splits it into 32 to compile
    them on its thread pool, which on one core only adds work. Measured 2026-11-29 (the
    20-body planar CC chain's first eager calls, six fresh processes each in two alternated
    sets, one pinned core): `inverse_dynamics` 2.08–2.29 → 1.94–2.08 s, `forward_dynamics`
    after it 1.84–2.28 → 1.71–1.96 s; the compiled program runs as fast (67–70 µs either way).
    Not set where `XLA_FLAGS` sets the split.

    Pass them to a `jax.jit` of your own around softrigid's functions to compile it the same
    way: `jax.jit(f, compiler_options=sr.compiler_options())`. The emitters are left out where
    `XLA_FLAGS` already sets them (`fast_compilation`, or the user's choice, which is then
    kept); nothing is set on a jaxlib release not checked to have these options (XLA rejects
    an option it does not know) and where JAX's default backend is not the CPU (the options
    are XLA:CPU's). The affinity is read at each call (a `softrigid` program reads it once, at
    its first call). Reading the backend starts it: call `fast_compilation` first if you use
    it.

    Example:
        >>> import jax, softrigid as sr
        >>> f = jax.jit(lambda q: q + 1, compiler_options=sr.compiler_options())
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if not _checked_release() or jax.default_backend() != "cpu":
        return {}
    options: dict[str, Any] = {} if _FAST_OPTION in flags else {_FAST_OPTION: False}
    if _LIBRARY_OPTION not in flags:
        options[_LIBRARY_OPTION] = ""
    if _THREADS_OPTION not in flags:
        options[_THREADS_OPTION] = False
    if loops and _DISABLED_PASSES not in flags:
        options[_DISABLED_PASSES] = _LOOP_PASSES
    if _one_core() and not any(flag in flags for flag in _SCHEDULER_FLAGS):
        options[_SCHEDULER_OPTION] = _ONE_CORE_SCHEDULER
    if _one_core() and _SPLIT_OPTION not in flags:
        options[_SPLIT_OPTION] = 1
    return options


def jit(fun: Callable[..., Any] | None = None, *, loops: bool = False, **kwargs: Any) -> Any:
    """`jax.jit(fun, **kwargs)` compiled the way softrigid compiles its own programs: with
    `compiler_options(loops=loops)` where it is called outside any JAX transformation (inside
    another `jit`, `vmap` or `grad` it is a plain `jax.jit`: JAX takes options on top-level
    programs only, so put it outermost, `sr.jit(jax.vmap(f))`). Use it as `sr.jit(f)`, `@sr.jit`
    or `functools.partial(sr.jit, static_argnames=...)`; `.lower`, `.trace` and the other
    attributes of a `jax.jit` are the top-level program's. `loops` leaves out XLA's
    loop-invariant code motion and while-loop simplifier, for programs whose loops hold a whole
    model evaluation (a solver's iterations). Your own `compiler_options` (a dict) are added to
    softrigid's and take precedence over them, on the top-level program.

    Measured 2026-11-29 (one pinned core, the same function jitted both ways in one process,
    timed interleaved): forward dynamics of the 30-joint rigid chain 75.7 → 53.4 µs per call
    with `jax.jit` → `sr.jit`, batched over 1,024 states 21.2 → 13.4 µs per state; one planar
    PCS segment 59.2 → 34.2 µs; eight segments batched 40.6 → 32.7 µs per state.

    Example:
        >>> import jax, softrigid as sr
        >>> double = sr.jit(lambda q: 2.0 * q)
        >>> batched = sr.jit(jax.vmap(lambda q: 2.0 * q))  # outermost: the options apply
    """
    if fun is None:
        return functools.partial(jit, loops=loops, **kwargs)
    if not callable(fun):
        raise TypeError(f"softrigid.jit: fun must be callable, got {type(fun).__name__}")
    own = kwargs.pop("compiler_options", None) or {}
    if not isinstance(own, Mapping):
        raise TypeError(
            f"softrigid.jit: compiler_options must be a dict of XLA options, got "
            f"{type(own).__name__}"
        )
    return _Program(fun, kwargs, loops, dict(own))


class _Program:
    """Two `jax.jit`s of one function: with `compiler_options()` for a call outside any
    transformation, without them inside one (a user's `jit`, `vmap` or `grad` around a public
    function), since JAX refuses options on a program staged into another. The options are
    read at the first top-level call or attribute (`lower`, `trace`, …, the first's), not at
    import: reading them starts JAX's backend."""

    __slots__ = ("__weakref__", "_fun", "_kwargs", "_loops", "_options", "_plain", "_top")

    def __init__(
        self,
        fun: Callable[..., Any],
        kwargs: dict[str, Any],
        loops: bool,
        options: dict[str, Any] | None = None,
    ) -> None:
        # the garbage collector paused while `fun` is traced (inside a user's `jit` too) and,
        # for a top-level call that traces, until it returns: lowering and compilation
        # included (`softrigid._gc`)
        fun = pausing(fun)
        self._fun, self._kwargs, self._loops = fun, kwargs, loops
        self._options = options or {}
        self._plain = jax.jit(fun, **kwargs)
        self._top: Any = None

    def _top_level(self) -> Any:
        if self._top is None:
            options = {**compiler_options(loops=self._loops), **self._options}
            self._top = (
                jax.jit(self._fun, compiler_options=options, **self._kwargs)
                if options
                else self._plain
            )
        return self._top

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not jax_core.trace_state_clean():
            return self._plain(*args, **kwargs)
        # a call that traces (the first, new shapes) pauses the collector from the trace until
        # it returns; one that runs the compiled program, which allocates no Python objects,
        # does not (this wrapper added 1.9 µs to `jax.jit`'s dispatch with a pause, 1.3 without)
        return call_held_if_traced(self._top or self._top_level(), *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._top_level(), name)


def _before_backend(where: str) -> None:
    """Raise unless JAX's backend is still to start: a process-wide setting made later would
    be ignored."""
    if xla_bridge.backends_are_initialized():
        raise RuntimeError(
            f"{where}: JAX's backend has already started (an array or a computation was made "
            "first); call it at the start of the program, before any array"
        )


def fast_compilation() -> bool:
    """Make XLA:CPU compile this process's programs with its elemental fusion emitters
    (`XLA_FLAGS=--xla_cpu_use_fusion_emitters=false`) instead of its MLIR ones: on softrigid's
    programs (jaxlib 0.10, one core) compilation takes 2–2.7× less time (the 20-body planar
    CC chain's inverse dynamics 6.3 → 2.3 s; the helicoid robot's 108 → 48 s) and the programs
    run as fast or faster (the helicoid's inverse dynamics 9.6 → 5.8 ms; results equal to
    rounding). It affects every JAX program of the process, softrigid's or not: softrigid's own
    programs take these emitters anyway (`compiler_options`), so it matters for programs of
    yours, such as a `jax.jit` around softrigid's functions.

    Call it before JAX starts its backend: before the first array or computation (importing
    softrigid starts none). XLA aborts the process on a flag it does not know: on a jaxlib
    release not checked to have this one, nothing changes and the result is `False`.

    Returns:
        Whether the flag is in effect for this process's programs.

    Raises:
        RuntimeError: JAX's backend has started (an array exists): the flag would be ignored.

    Example:
        >>> import softrigid as sr
        >>> sr.fast_compilation()  # doctest: +SKIP
        True
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if _FAST_OPTION in flags:
        return _FAST_FLAG in flags.split()
    if not _checked_release():
        return False
    _before_backend("fast_compilation")
    os.environ["XLA_FLAGS"] = f"{flags} {_FAST_FLAG}".strip()
    return True


def fused_loops(max_bytes: int = LOOP_BYTES) -> bool:
    """Make XLA:CPU compile each small loop of this process's programs as one kernel: every
    loop whose body and condition access fewer than `max_bytes` per iteration (XLA's cost
    analysis; its default is 1,024), such as the articulated-body and recursion passes of one
    state, `lax.scan`s over a robot's links.

    XLA:CPU runs a program as a sequence of kernels, one per fusion, and a loop it does not
    compile whole runs its body's kernels one by one at every iteration (~40 ns each); a loop
    compiled as one kernel runs as one function. On jaxlib 0.10 the inward articulated pass
    accesses 4–16 KB per link of a rigid or planar PCS chain and 16–64 KB per spatial PCS
    segment, above XLA's default, so it ran kernel by kernel. Measured 2026-11-29
    (`benchmarks/peers.py`, one pinned core, forward dynamics per call, µs, default →
    `fused_loops()`): the 30-joint rigid chain 58.0 → 37.8–46.9 (Pinocchio's ABA 10.6), 6
    joints 32.0 → 25.9–35.5, 16 planar PCS segments 134 → 114, the spatial PCS chain 145 →
    116–121; one planar segment (no loop) and calls batched with `vmap` unchanged within
    noise. It affects every JAX program of the process, softrigid's or not (SoRoMoX's 30-joint
    chain 137 → 52–56 µs in the same runs), and only loops without library calls (LAPACK,
    softrigid's run-time checks) in them.

    Call it before JAX starts its backend: before the first array or computation (importing
    softrigid starts none). It appends `xla_cpu_small_while_loop_byte_threshold` to the
    `--xla_backend_extra_options` of `XLA_FLAGS`; where `XLA_FLAGS` sets that option itself,
    the user's value holds. On a jaxlib release not checked to have the option nothing changes.

    Args:
        max_bytes: a loop accessing fewer bytes per iteration is compiled as one kernel.

    Returns:
        Whether the option is in effect for this process's programs.

    Raises:
        TypeError: `max_bytes` is not an integer.
        ValueError: `max_bytes` is negative.
        RuntimeError: JAX's backend has started (an array exists): the option would be ignored.

    Example:
        >>> import softrigid as sr
        >>> sr.fused_loops()  # doctest: +SKIP
        True
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError(f"fused_loops: max_bytes must be an integer, got {max_bytes!r}")
    if not 0 <= max_bytes < 2**63:
        raise ValueError(f"fused_loops: max_bytes must be in [0, 2**63), got {max_bytes}")
    flags = os.environ.get("XLA_FLAGS", "")
    if _LOOP_OPTION in flags:
        return True
    if not _checked_release():
        return False
    _before_backend("fused_loops")
    option = f"{_LOOP_OPTION}={max_bytes}"
    tokens = flags.split()
    extra = [i for i, token in enumerate(tokens) if token.startswith(_EXTRA_OPTIONS)]
    if extra:  # the user's own comma-separated list of `key=value` options: one more
        tokens[extra[-1]] += f",{option}"
        os.environ["XLA_FLAGS"] = " ".join(tokens)
    else:
        os.environ["XLA_FLAGS"] = f"{flags} {_EXTRA_OPTIONS}{option}".strip()
    return True


def synchronous_dispatch() -> bool:
    """Run this process's CPU programs in the thread that calls them (JAX's
    `jax_cpu_enable_async_dispatch = False`): less latency for a loop that waits for each
    result, such as a controller or a host-driven integrator calling the dynamics step by step.

    By default XLA:CPU runs a program inline only when its cost analysis counts fewer than
    1,000 flops; any larger program (every robot's dynamics) is handed to a worker thread, and
    a caller that waits for the result pays two thread hand-offs. Measured 2026-11-28 (jitted
    `forward_dynamics`, each call waited for, µs, asynchronous → synchronous): one pinned core,
    one planar PCS segment 47.2 → 39.0, a 30-joint rigid chain 63.8 → 49.1; both cores, 75.7 →
    48.7 and 86.1 → 60.8. Calls not waited for one by one (a batch of independent calls)
    gain little (36.0 → 34.8, 54.2 → 48.7 on one core). It affects every JAX program of the
    process, softrigid's or not, and only on the CPU.

    Call it before JAX starts its backend: before the first array or computation (importing
    softrigid starts none).

    Returns:
        Whether JAX runs CPU programs synchronously now (`False` on a JAX release without the
        option).

    Raises:
        RuntimeError: JAX's backend has started (an array exists) with asynchronous dispatch.

    Example:
        >>> import softrigid as sr
        >>> sr.synchronous_dispatch()  # doctest: +SKIP
        True
    """
    if _ASYNC_DISPATCH not in jax.config.values:
        return False
    if not jax.config.values[_ASYNC_DISPATCH]:
        return True
    _before_backend("synchronous_dispatch")
    jax.config.update(_ASYNC_DISPATCH, False)
    return True
