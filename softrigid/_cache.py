"""Fast start: JAX's persistent compilation cache, so that a later process loads a robot's
compiled programs from disk instead of compiling them again.

A first call costs tracing (Python), lowering (to StableHLO) and XLA's compilation; the cache
stores the compilation, keyed by the lowered program, so every robot of the same structure
(the same bodies, joints, maps and quadrature sizes; any values) hits it. Programs with host
callbacks are not stored by JAX: the eager fast path's programs (`softrigid._fastpath`) have
none; a `jit` of the user's around a checked algorithm, or `simulate` with a progress report,
has them and is compiled in every process.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax
from jax.experimental.compilation_cache import compilation_cache

__all__ = ["enable_compilation_cache"]

_ENVIRONMENT = "SOFTRIGID_CACHE"


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
