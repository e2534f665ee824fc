"""Fast start: JAX's persistent compilation cache, so that a later process loads a robot's
compiled programs from disk instead of compiling them again.

A first call costs tracing (Python), lowering (to StableHLO) and XLA's compilation; the cache
stores the compilation, keyed by the lowered program, so every robot of the same structure
(the same bodies, joints, maps and quadrature sizes; any values) hits it. Programs with host
callbacks are not stored by JAX: softrigid's run-time checks are not callbacks (`_fault`), so
the eager fast path's programs and a `jit` of the user's around a public function are stored;
`simulate` with a progress report holds one and is compiled in every process.
"""

from __future__ import annotations

import os
from importlib.metadata import version
from pathlib import Path

import jax
from jax._src import xla_bridge  # backends_are_initialized: no public equivalent
from jax.experimental.compilation_cache import compilation_cache

__all__ = ["enable_compilation_cache", "fast_compilation"]

_ENVIRONMENT = "SOFTRIGID_CACHE"
# XLA:CPU's elemental fusion emitters instead of its MLIR ones; XLA aborts the process on a
# flag it does not know, so only for the jaxlib releases checked to have this one
_FAST_FLAG = "--xla_cpu_use_fusion_emitters=false"
_FAST_FLAG_RELEASES = ("0.10",)


def fast_compilation() -> bool:
    """Make XLA:CPU compile this process's programs with its elemental fusion emitters
    (`XLA_FLAGS=--xla_cpu_use_fusion_emitters=false`) instead of its MLIR ones: on softrigid's
    programs (jaxlib 0.10, one core) compilation takes 2–2.7× less time (the 20-body planar
    CC chain's inverse dynamics 6.3 → 2.3 s; the helicoid robot's 108 → 48 s) and the programs
    run as fast or faster (the helicoid's inverse dynamics 9.6 → 5.8 ms; results equal to
    rounding). It affects every JAX program of the process, softrigid's or not.

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
    if _FAST_FLAG.split("=")[0] in flags:
        return _FAST_FLAG in flags.split()
    if ".".join(version("jaxlib").split(".")[:2]) not in _FAST_FLAG_RELEASES:
        return False
    if xla_bridge.backends_are_initialized():
        raise RuntimeError(
            "fast_compilation: JAX's backend has already started (an array or a computation "
            "was made first); call it at the start of the program, before any array"
        )
    os.environ["XLA_FLAGS"] = f"{flags} {_FAST_FLAG}".strip()
    return True


def enable_compilation_cache(
    directory: str | os.PathLike[str] | None = None, *, min_compile_time_s: float = 0.0
) -> Path:
    """Store the programs JAX compiles in `directory`, and load them from there in later
    processes (JAX's persistent compilation cache, for every program of the process).

    Args:
        directory: where the programs go; default: the environment variable `SOFTRIGID_CACHE`,
            else `~/.cache/softrigid/jax`. Created when missing.
        min_compile_time_s: store only programs whose compilation took at least this long
            (JAX's default is 1 s, which leaves out the small robots' programs).

    Returns:
        The directory.

    Example:
        >>> import softrigid as sr
        >>> sr.enable_compilation_cache("/tmp/softrigid-cache")  # doctest: +SKIP
    """
    if isinstance(min_compile_time_s, bool) or not isinstance(min_compile_time_s, (int, float)):
        raise TypeError(f"min_compile_time_s must be a number, got {min_compile_time_s!r}")
    if not min_compile_time_s >= 0.0:
        raise ValueError(f"min_compile_time_s must be non-negative, got {min_compile_time_s}")
    default = os.environ.get(_ENVIRONMENT) or Path.home() / ".cache" / "softrigid" / "jax"
    path = Path(default if directory is None else directory).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"directory: cannot create {str(path)!r} ({err})") from None
    if not os.access(path, os.W_OK):
        raise ValueError(f"directory: {str(path)!r} is not writable")
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time_s))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # JAX decides once per process whether the cache is used (at the first compilation): start
    # over, so that a call after some programs were compiled takes effect too
    compilation_cache.reset_cache()
    return path
