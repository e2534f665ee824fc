"""Compressed rules kept on disk between processes (`softrigid.enable_compilation_cache`).

`compress` solves a non-negative least-squares problem over every node of its input rule:
3.6 s for the helicoid mesh's 37,632 nodes at degree 8, each time a script builds the robot.
Its result is a function of the input rule's nodes, weights and densities, the degree, and the
numerical libraries that solved it; an entry is a file named by the SHA-256 of exactly those
(the bytes of the arrays, the degree, this module's format version and the NumPy and SciPy
versions), holding the kept node indices, their weights and the solve's residual, rank and
equation count. A later process with the same inputs reads them instead of solving: the same
nodes and weights, whatever its BLAS threads (the docstring of `compress`: the solve's choice
among valid rules can change with them). Files are written whole (a temporary file, then
renamed); one that cannot be read or does not fit the input rule is ignored and solved again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import warnings
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import scipy

from .._persistent_cache import rule_directory

__all__ = ["Stored", "hash_arrays", "load", "store"]

_FORMAT = 1  # raise when `compress`'s algorithm or this file's content changes


class Stored(NamedTuple):
    """One compression's result: kept node indices (increasing), their weights, the relative
    residual, the rank and the number of moment equations (`CompressionInfo`)."""

    indices: np.ndarray
    weights: np.ndarray
    residual: float
    rank: int
    bound: int


def _key(x: np.ndarray, w: np.ndarray, density: np.ndarray | None, degree: int | str) -> str:
    digest = hashlib.sha256(
        f"softrigid.compress {_FORMAT}; numpy {np.__version__}; scipy {scipy.__version__}; "
        f"degree {degree}; density {density is not None}".encode()
    )
    hash_arrays(digest, (x, w) if density is None else (x, w, density))
    return digest.hexdigest()


def hash_arrays(digest: Any, arrays: Iterable[Any]) -> None:
    """Feed each array's shape and float64 bytes to the `hashlib` object `digest`."""
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a, dtype=np.float64))
        digest.update(repr(a.shape).encode())
        digest.update(a.tobytes())


def _path(
    x: np.ndarray, w: np.ndarray, density: np.ndarray | None, degree: int | str
) -> Path | None:
    folder = rule_directory()
    return None if folder is None else folder / f"{_key(x, w, density, degree)}.npz"


def load(
    x: np.ndarray, w: np.ndarray, density: np.ndarray | None, degree: int | str
) -> Stored | None:
    """The stored compression of the rule `(x, w, density)` to `degree` (or the reduction a
    string names, `empirical`'s), or `None` (no folder, no entry, or an entry that cannot be
    read or does not fit `x`)."""
    path = _path(x, w, density, degree)
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as f:
            found = Stored(
                f["indices"], f["weights"], float(f["residual"]), int(f["rank"]), int(f["bound"])
            )
    except (OSError, KeyError, ValueError, TypeError, EOFError, zipfile.BadZipFile):
        # (TypeError: an entry of another format, e.g. a lone array, or a field not a number)
        return None
    idx, u = found.indices, found.weights
    fits = (
        idx.ndim == 1
        and idx.dtype.kind == "i"
        and u.shape == idx.shape
        and idx.size > 0
        and bool(np.all(np.diff(idx) > 0))
        and 0 <= idx[0]
        and idx[-1] < x.shape[0]
        and bool(np.all(np.isfinite(u) & (u > 0)))
    )
    return found if fits else None


def store(
    x: np.ndarray, w: np.ndarray, density: np.ndarray | None, degree: int | str, found: Stored
) -> None:
    """Keep `found` for the rule `(x, w, density)` and `degree` where `enable_compilation_cache`
    put the folder (nothing without one; a warning if it cannot be written)."""
    path = _path(x, w, density, degree)
    if path is None:
        return
    where = "compress" if isinstance(degree, int) else "empirical"
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # created with the process's umask, as JAX's program entries beside it (a temporary
        # file of `tempfile` is its owner's only, so other users of a shared folder never
        # read the rule back)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(descriptor, "wb") as f:
            np.savez(f, **found._asdict())
        os.replace(temporary, path)
    except OSError as err:
        with contextlib.suppress(OSError):  # (its folder may not exist or be a file)
            temporary.unlink(missing_ok=True)
        warnings.warn(
            f"{where}: could not keep the rule in {str(path.parent)!r} ({err})", stacklevel=3
        )
