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
from pathlib import Path

import jax
from jax.experimental.compilation_cache import compilation_cache

__all__ = ["enable_compilation_cache", "rule_directory"]

_ENVIRONMENT = "SOFTRIGID_CACHE"
# where `enable_compilation_cache` keeps compressed quadrature rules (`quadrature.compress`)
_RULES_FOLDER = "quadrature"
_rules: Path | None = None


def rule_directory() -> Path | None:
    """Where `quadrature.compress` keeps its rules for later processes (`None`: nowhere), set by
    `enable_compilation_cache`."""
    return _rules


def enable_compilation_cache(
    directory: str | os.PathLike[str] | None = None, *, min_compile_time_s: float = 0.0
) -> Path:
    """Store the programs JAX compiles in `directory`, and load them from there in later
    processes (JAX's persistent compilation cache, for every program of the process); and keep
    the compressed quadrature rules of `quadrature.compress` in its folder `quadrature`, so
    that a later process compressing the same rule to the same degree reads the nodes and
    weights instead of solving again (the helicoid's 37,632-node rule to degree 8: 3.6 s).

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
    global _rules
    if isinstance(min_compile_time_s, bool) or not isinstance(min_compile_time_s, (int, float)):
        raise TypeError(f"min_compile_time_s must be a number, got {min_compile_time_s!r}")
    if not min_compile_time_s >= 0.0:
        raise ValueError(f"min_compile_time_s must be non-negative, got {min_compile_time_s}")
    default = os.environ.get(_ENVIRONMENT) or Path.home() / ".cache" / "softrigid" / "jax"
    if directory is not None and not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"directory must be a path, got {type(directory).__name__}")
    if directory is not None and not str(directory).strip():
        raise ValueError("directory must not be empty (None: the default folder)")
    # absolute now: a relative folder would follow the working directory of each later write
    path = Path(default if directory is None else directory).expanduser().absolute()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"directory: cannot create {str(path)!r} ({err})") from None
    if not os.access(path, os.W_OK):
        raise ValueError(f"directory: {str(path)!r} is not writable")
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time_s))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    _rules = path / _RULES_FOLDER
    # JAX decides once per process whether the cache is used (at the first compilation): start
    # over, so that a call after some programs were compiled takes effect too
    compilation_cache.reset_cache()
    return path
