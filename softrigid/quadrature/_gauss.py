"""The one Gauss–Legendre rule of softrigid (used by the volumes, the LVP integrals and tendons)."""

from __future__ import annotations

import functools

import numpy as np

from .._checks import as_count

__all__ = ["gauss_legendre"]


@functools.cache
def _nodes(order: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(order)
    return 0.5 * (x + 1.0), 0.5 * w


def gauss_legendre(order: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights on `[0, 1]`, exact for polynomials of degree
    `2·order − 1` (NumPy's `leggauss`, float64-accurate: nodes and weights to ~1e-16).

    Returns copies, so callers may scale them in place.
    """
    x, w = _nodes(as_count("Gauss–Legendre order", order))
    return x.copy(), w.copy()
