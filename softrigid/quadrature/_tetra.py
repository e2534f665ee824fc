"""Quadrature rules on a tetrahedron, in barycentric coordinates.

A rule is `(λ (K, 4), w (K,))` with `Σ_k w_k = 1`: on a tetrahedron `T` with vertices `v_0..v_3`,
`∫_T g dV ≈ |T| Σ_k w_k g(Σ_i λ_ki v_i)`, exact for polynomials of total degree `≤ degree`.

Degrees 1–6 use fully symmetric rules with positive weights and interior (or boundary) nodes:

| degree | nodes | rule |
| --- | --- | --- |
| 1 | 1 | centroid |
| 2 | 4 | Hammer–Marlowe–Stroud / Keast (1986) rule 2, `a = (5 − √5)/20` |
| 3 | 10 | Keast (1986), 4 interior nodes and the 6 edge midpoints |
| 4, 5 | 14 | Walkington (2000) / Keast family, degree 5 (no positive symmetric degree-4 rule with
  fewer nodes exists among the 11-node orbit structures) |
| 6 | 24 | Keast (1986) rule 7 |

The constants were recomputed here by solving the moment equations in 40-digit arithmetic from
the published values (they agree to the published 16 digits); the tests check exactness.
Degrees `≥ 7` use Stroud's conical product rule (collapsed cube with Gauss–Jacobi factors):
`n³` nodes with `n = ⌈(degree + 1)/2⌉`, positive weights, not symmetric.

References: P. Keast, "Moderate-degree tetrahedral quadrature formulas", CMAME 55 (1986);
N. Walkington, "Quadrature on simplices of arbitrary dimension", CMU report (2000);
A. H. Stroud, "Approximate calculation of multiple integrals" (1971), conical product rules.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
from scipy.special import roots_jacobi

__all__ = ["MAX_DEGREE", "tetrahedron_rule"]

MAX_DEGREE = 30


def _orbit(values: tuple[float, float, float, float]) -> np.ndarray:
    """All distinct permutations of a barycentric 4-tuple (the S4 orbit), in a fixed order."""
    return np.array(sorted(set(itertools.permutations(values))), dtype=float)


def _s31(a: float) -> np.ndarray:
    return _orbit((a, a, a, 1.0 - 3.0 * a))


def _s22(a: float) -> np.ndarray:
    return _orbit((a, a, 0.5 - a, 0.5 - a))


def _s211(a: float, b: float) -> np.ndarray:
    return _orbit((a, a, b, 1.0 - 2.0 * a - b))


def _symmetric(orbits: list[tuple[np.ndarray, float]]) -> tuple[np.ndarray, np.ndarray]:
    bary = np.concatenate([o for o, _ in orbits])
    weights = np.concatenate([np.full(len(o), w) for o, w in orbits])
    return bary, weights


def _symmetric_rule(degree: int) -> tuple[np.ndarray, np.ndarray]:
    if degree == 1:
        return np.full((1, 4), 0.25), np.ones(1)
    if degree == 2:
        return _symmetric([(_s31(0.13819660112501051518), 0.25)])
    if degree == 3:
        return _symmetric(
            [
                (_s31(0.14385647193438487683), 0.21776506988040599549),
                (_s22(0.0), 0.021489953413062669669),
            ]
        )
    if degree in (4, 5):
        return _symmetric(
            [
                (_s31(0.092735250310891226402), 0.073493043116361949542),
                (_s31(0.3108859192633006098), 0.1126879257180158508),
                (_s22(0.045503704125649649492), 0.042546020777081466438),
            ]
        )
    return _symmetric(
        [
            (_s31(0.21460287125915202929), 0.0399227502581674921),
            (_s31(0.040673958534611353116), 0.010077211055320642948),
            (_s31(0.32233789014227551034), 0.055357181543654722095),
            (_s211(0.063661001875017525299, 0.26967233145831580803), 0.048214285714285714286),
        ]
    )


def _gauss_jacobi01(n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights on [0, 1] for the weight `(1 − u)^alpha`."""
    x, w = roots_jacobi(n, alpha, 0.0)
    return 0.5 * (1.0 + x), w * 0.5 ** (alpha + 1.0)


def _conical_rule(degree: int) -> tuple[np.ndarray, np.ndarray]:
    # x = u, y = (1 − u) v, z = (1 − u)(1 − v) s; dV = (1 − u)² (1 − v) du dv ds on the unit cube
    n = (degree + 2) // 2
    u, wu = _gauss_jacobi01(n, 2.0)
    v, wv = _gauss_jacobi01(n, 1.0)
    s, ws = _gauss_jacobi01(n, 0.0)
    uu, vv, ss = (g.reshape(-1) for g in np.meshgrid(u, v, s, indexing="ij"))
    w = (wu[:, None, None] * wv[None, :, None] * ws[None, None, :]).reshape(-1)
    x = uu
    y = (1.0 - uu) * vv
    z = (1.0 - uu) * (1.0 - vv) * ss
    bary = np.stack([1.0 - x - y - z, x, y, z], axis=-1)
    return bary, 6.0 * w  # the unit tetrahedron has volume 1/6


@functools.cache
def _rule(degree: int) -> tuple[np.ndarray, np.ndarray]:
    bary, weights = _symmetric_rule(degree) if degree <= 6 else _conical_rule(degree)
    bary.setflags(write=False)
    weights.setflags(write=False)
    return bary, weights


def tetrahedron_rule(degree: int) -> tuple[np.ndarray, np.ndarray]:
    """Barycentric nodes `(K, 4)` and weights `(K,)` (summing to 1) of a rule exact for
    polynomials of total degree `≤ degree` on any tetrahedron (read-only arrays).

    Raises:
        ValueError: `degree` is not an integer in `[1, MAX_DEGREE]`.
    """
    return _rule(check_degree("tetrahedron_rule", degree))


def check_degree(where: str, degree: object) -> int:
    """`degree` as an int in `[1, MAX_DEGREE]`, else a `ValueError` that names `where`."""
    if (
        not isinstance(degree, (int, np.integer))
        or isinstance(degree, bool)
        or not 1 <= degree <= MAX_DEGREE
    ):
        raise ValueError(f"{where}: degree must be an integer in [1, {MAX_DEGREE}], got {degree!r}")
    return int(degree)
