"""Compressed quadrature: a positive sub-rule with the same low-order moments (Tchakaloff).

Given a positive rule `(x_k, w_k)`, `k = 1…K`, find weights `u ≥ 0`, zero on all but a few
nodes, with the same moments up to total degree `d`:

    Σ_k u_k p_j(x_k) = Σ_k w_k p_j(x_k),     j = 1…N,     N = C(d + D, D),

`p_j` a basis of the polynomials of degree `≤ d` in the `D ≤ 3` coordinates the nodes span.
Tchakaloff's theorem (Carathéodory's theorem on the cone of moment vectors) gives such a `u`
with at most `N` non-zero weights, chosen among the nodes of the input rule. The solver is the
Lawson–Hanson NNLS active-set method (`scipy.optimize.nnls`): its passive set stays linearly
independent, so the solution has at most `rank ≤ N` non-zero weights, and it ends with a least-
squares solve on that set, so the moments are met to rounding. (A simplex vertex of the same
system, `scipy.optimize.linprog` with HiGHS, has the same node count but was 5–100× slower
on a 37,632-node mesh rule at degrees 2–6, and guarantees the moments only to its 1e-7
feasibility tolerance.)

Conditioning: the nodes are centred and scaled to `[−1, 1]^D` by their bounding box, the
polynomials are products of Legendre polynomials, and that Vandermonde matrix is orthonormalized
in the discrete inner product of the input rule (QR, then SVD of `R` for the numerical rank),
so the moment equations have an orthonormal basis (`p_j`, `Σ_k ŵ_k p_i p_j = δ_ij`,
`ŵ = w / Σ w`). Rules with many nodes are compressed in chunks first (the union of compressed
chunks has the same moments as the whole), which bounds the memory to a few hundred MB.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple, overload

import numpy as np
from numpy.polynomial import legendre
from scipy.optimize import nnls

from .._checks import as_flag
from ._rule import QuadratureRule
from ._stored import Stored, load, store
from ._subrules import check_rule, chunks, reduce_in_chunks, subset_rule

__all__ = ["CompressionInfo", "compress"]

_RANK_TOL = 1e-11  # singular values below this (relative) span numerically vanishing polynomials
_SUPPORT_TOL = 1e-9  # a degree-⌊d/2⌋ polynomial this small on every node: the rule can't be exact
_RESIDUAL_TOL = 1e-10  # relative moment residual above which compression is declared failed


class CompressionInfo(NamedTuple):
    """What `compress(..., return_info=True)` reports.

    Attributes:
        degree: the exactness degree `d` asked for.
        indices: `(n,)` indices of the kept nodes in the input rule (increasing).
        n_nodes: `n`, the number of nodes of the compressed rule.
        n_input: `K`, the number of nodes of the input rule.
        bound: Tchakaloff's bound on `n`, the number of moment equations: `C(d + D, D)` with
            `D` the number of coordinates the nodes span (3 for a volume; twice that when the
            rule carries a non-uniform density, whose moments are matched too).
        rank: the number of independent moment equations on the input's nodes (`≤ bound`).
        residual: `‖Σ_k (u_k − w_k) p(x_k)‖ / ‖Σ_k w_k p(x_k)‖` over the orthonormal basis `p`.
        monomial_residual: `max_α |Σ u_k x_k^α − Σ w_k x_k^α| / Σ w_k |x_k^α|` over the raw
            monomials `|α| ≤ d` in the original coordinates.
    """

    degree: int
    indices: np.ndarray
    n_nodes: int
    n_input: int
    bound: int
    rank: int
    residual: float
    monomial_residual: float


def _exponents(degree: int, dims: int) -> np.ndarray:
    """`(N, dims)` exponents of total degree `≤ degree`, graded (all of degree `e` before
    `e + 1`), so the first `C(e + dims, dims)` columns span degree `≤ e`."""
    rows = [
        alpha
        for total in range(degree + 1)
        for alpha in np.ndindex(*(total + 1,) * dims)
        if sum(alpha) == total
    ]
    return np.array(rows, dtype=np.int64).reshape(len(rows), dims)


def _vandermonde(y: np.ndarray, exponents: np.ndarray) -> np.ndarray:
    """`(K, N)` product Legendre polynomials `Π_i P_{α_i}(y_i)` at `y (K, D)` in `[−1, 1]^D`."""
    out = np.ones((y.shape[0], exponents.shape[0]))
    degree = int(exponents.max(initial=0))
    for i in range(y.shape[1]):
        out *= legendre.legvander(y[:, i], degree)[:, exponents[:, i]]
    return out


def _orthonormal(
    y: np.ndarray, w: np.ndarray, exponents: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Transform `T (N, r)` with `V T` orthonormal in `Σ_k w_k (·)(·)` (`w` normalized), `r` the
    numerical rank, and the singular values `(N,)` of `diag(√w) V`: the `R` of a QR
    factorization, stacked over chunks of nodes (TSQR), then an SVD of `R`."""
    rs = [
        np.linalg.qr(np.sqrt(w[part])[:, None] * _vandermonde(y[part], exponents), mode="r")
        for part in chunks(y.shape[0], exponents.shape[0])
    ]
    r = rs[0] if len(rs) == 1 else np.linalg.qr(np.concatenate(rs), mode="r")
    _, s, zt = np.linalg.svd(r)
    rank = int(np.sum(s > _RANK_TOL * s[0]))
    return zt[:rank].T / s[:rank], s


def _system(
    y: np.ndarray, rho: np.ndarray | None, exponents: np.ndarray, t: np.ndarray
) -> np.ndarray:
    """Moment matrix `A (E, K)`: `A u` are the moments of weights `u` at the nodes `y` in the
    basis `V T` (one block per measure: volume, then density)."""
    basis = (_vandermonde(y, exponents) @ t).T
    return basis if rho is None else np.concatenate([basis, basis * rho[None]])


def _moments(
    y: np.ndarray, w: np.ndarray, rho: np.ndarray | None, exponents: np.ndarray, t: np.ndarray
) -> np.ndarray:
    """`A w`, accumulated over chunks of nodes."""
    out = 0.0
    for part in chunks(y.shape[0], exponents.shape[0]):
        out = out + _system(y[part], None if rho is None else rho[part], exponents, t) @ w[part]
    return out


def _nnls(
    y: np.ndarray,
    w: np.ndarray,
    rho: np.ndarray | None,
    exponents: np.ndarray,
    basis: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Non-zero NNLS weights `(indices, u)` of one problem with the moments of `w` (normalized),
    and the relative residual; `basis = (T, target)` when given, else from the nodes."""
    if basis is None:
        t, _ = _orthonormal(y, w, exponents)
        basis = (t, _moments(y, w, rho, exponents, t))
    t, target = basis
    a = _system(y, rho, exponents, t)
    u, _ = nnls(a, target, maxiter=10 * a.shape[1])
    idx = np.flatnonzero(u > 0)
    return idx, u[idx], float(np.linalg.norm(a @ u - target) / np.linalg.norm(target))


def _solve(
    y: np.ndarray, w: np.ndarray, rho: np.ndarray | None, exponents: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float, int]:
    """A positive sub-rule of `(y, w)` (`w` normalized) with the same moments: kept indices,
    weights, relative residual in the orthonormal basis of the whole rule, and its rank.
    Large rules are first compressed chunk by chunk (the union of the compressed chunks has
    the moments of the whole)."""
    t, _ = _orthonormal(y, w, exponents)
    target = _moments(y, w, rho, exponents, t)
    n_eq = exponents.shape[0] * (1 if rho is None else 2)

    def keep(sub: np.ndarray) -> np.ndarray:
        return sub[_nnls(y[sub], w[sub], None if rho is None else rho[sub], exponents)[0]]

    idx = reduce_in_chunks(y.shape[0], n_eq, keep)
    sub_rho = None if rho is None else rho[idx]
    local, u, residual = _nnls(y[idx], w[idx], sub_rho, exponents, (t, target))
    return idx[local], u, residual, t.shape[1]


def _monomial_residual(
    x: np.ndarray,
    w: np.ndarray,
    rho: np.ndarray | None,
    idx: np.ndarray,
    u: np.ndarray,
    degree: int,
) -> float:
    """`max_α |Σ u x^α − Σ w x^α| / Σ w |x^α|` over raw monomials `|α| ≤ degree` (both
    measures when a density is given)."""
    powers = x[:, None, :] ** np.arange(degree + 1)[None, :, None]  # (K, d + 1, 3)
    worst = 0.0
    for measure, kept in ((w, u),) if rho is None else ((w, u), (rho * w, rho[idx] * u)):
        for alpha in _exponents(degree, 3):
            mono = powers[:, alpha[0], 0] * powers[:, alpha[1], 1] * powers[:, alpha[2], 2]
            scale = measure @ np.abs(mono)
            if scale > 0:
                worst = max(worst, abs(kept @ mono[idx] - measure @ mono) / scale)
    return float(worst)


def _check_degree(degree: object) -> int:
    if not isinstance(degree, (int, np.integer)) or isinstance(degree, bool) or degree < 0:
        raise ValueError(f"compress: degree must be a non-negative integer, got {degree!r}")
    return int(degree)


def _normalized(density: np.ndarray | None) -> np.ndarray | None:
    """The per-node density over its mean; `None` for a uniform one (the mass moments are then
    the volume moments times a constant)."""
    if density is None or np.ptp(density) <= 1e-14 * np.abs(density).max():
        return None
    return density / density.mean()


def _fit(x: np.ndarray, w: np.ndarray, rho: np.ndarray | None, d: int) -> Stored:
    """`compress`'s solve: kept indices, weights, residual, rank and equation count."""
    lo, hi = x.min(0), x.max(0)
    extent = hi - lo
    dims = np.flatnonzero(extent > 1e-12 * max(extent.max(), np.abs(x).max()))
    # centre and scale the spanned coordinates to [−1, 1] (the others are constant)
    y = (x[:, dims] - 0.5 * (lo + hi)[dims]) / (0.5 * extent[dims])
    exponents = _exponents(d, dims.size)
    total = w.sum()
    idx, u, residual, rank = _solve(y, w / total, rho, exponents)
    u = u * total
    # a polynomial p of degree ⌊d/2⌋ with Σ w p² = 0 makes exactness to degree d impossible
    half = exponents[: math.comb(d // 2 + dims.size, dims.size)]
    _, s = _orthonormal(y[idx], u / total, half)
    deficient = s.size < half.shape[0] or s[-1] <= _SUPPORT_TOL * s[0]
    if deficient or not residual <= _RESIDUAL_TOL:
        why = (
            f"a polynomial of degree {d // 2} nearly vanishes on all of its {x.shape[0]} nodes"
            if deficient
            else f"the moments are met only to {residual:.2g} (relative)"
        )
        hint = f", e.g. from_mesh(path, degree={d})" if d <= 30 else " (from_mesh's reach 30)"
        thin = [f"x{k + 1}" for k in dims if extent[k] < 1e-6 * extent.max()]
        if thin:  # a flat rule with rounding noise across: the noise's scale is a dimension
            hint += (
                f" ({', '.join(thin)} spread over less than 1e-6 of the rule's extent: "
                "set a coordinate that should be constant exactly)"
            )
        raise ValueError(
            f"compress: rule cannot support degree {d}: {why}; give a rule exact to degree {d}"
            + hint
        )
    bound = exponents.shape[0] * (1 if rho is None else 2)
    return Stored(idx, u, residual, rank, bound)


@overload
def compress(
    rule: QuadratureRule, degree: int, *, return_info: Literal[False] = ...
) -> QuadratureRule: ...
@overload
def compress(
    rule: QuadratureRule, degree: int, *, return_info: Literal[True]
) -> tuple[QuadratureRule, CompressionInfo]: ...
def compress(
    rule: QuadratureRule, degree: int, *, return_info: bool = False
) -> QuadratureRule | tuple[QuadratureRule, CompressionInfo]:
    """A positive rule on a subset of `rule`'s nodes with the same moments up to degree `d`.

    Finds `u ≥ 0`, non-zero on at most `N = C(d + 3, 3)` nodes (`C(d + D, D)` when the nodes
    span only `D < 3` coordinates, e.g. a `segment` rule), with

        Σ_k u_k x_k^α = Σ_k w_k x_k^α     for every multi-index `|α| ≤ d`,

    to rounding (Tchakaloff: such a rule exists among the nodes of any positive rule exact to
    degree `d`; Lawson–Hanson NNLS in an orthonormal product-Legendre basis finds one, see the
    module docstring), except along polynomials that nearly vanish on the input's nodes (below
    1e-11 of the basis' scale, dropped from the equations as rank-deficient): there the match is
    to about 1e-11 (a Gauss cylinder of 6 rings and 11 sides at degree 10: x1⁵x2⁵ to 1.3e-11;
    `info.monomial_residual` reports it). The body integrands (`f`, its Jacobian,
    `∂²f/∂q²[q̇, q̇]`, strain energy densities) are smooth in `x`, so the few-node rule
    integrates them about as accurately as their best polynomial approximation of degree `d`
    (`benchmarks/compress_accuracy.py`: relative errors of `M`, `ID`, elastic forces ~1e-5 at
    `d = 4`, ~1e-7 at `d = 6` on the helicoid segment). A map singular close to the volume
    converges slowly: the gripper's source map, singular on the axis of its bore, is at ~2e-3
    for `d = 10`. When the rule carries a non-uniform per-node density, the moments of `w` and
    of `ρ w` are both matched (at most `2N` nodes), so mass and volume integrals both stay
    right.

    The compressed rule reproduces the moments of *the input rule*. To integrate the exact
    meshed volume to degree `d`, the input must itself be exact to degree `d`:
    `compress(from_mesh(path, degree=d), d)` (`from_mesh` has symmetric positive rules for
    degrees 1–6 and conical products, positive, above). Compressing a degree-1 mesh rule to
    degree 6 gives a 6th-degree match of that 1st-degree rule, not of the volume.

    Which nodes are kept is one valid choice among many and depends on rounding, including
    the number of BLAS threads (OpenBLAS splits long sums over threads): measured 2026-11-27,
    the 37,632-node degree-4 rule of `meshes/helicoid.vtu` compressed to degree 6 kept
    different sets of 84 nodes with one thread and with two. Both are exact to degree 6 and
    integrate smooth integrands equally well, but a model that magnifies small changes (e.g.
    statics close to buckling, `examples/helicoid_tracking.py`) can answer differently. For
    a reproducible rule run NumPy's BLAS on one thread (`OPENBLAS_NUM_THREADS=1` before NumPy
    loads) or keep the rule's points and weights.

    With `softrigid.enable_compilation_cache()` the result is kept on disk (the cache's folder
    `quadrature`, one file per input rule and degree, keyed by the SHA-256 of the input's
    nodes, weights and densities, the degree and the NumPy and SciPy versions): a later
    process compressing the same rule to the same degree reads the kept nodes and weights
    instead of solving again (the helicoid's 37,632-node rule to degree 8: 3.6 s), so it gets
    the rule of the first process, whatever its own BLAS threads.

    Args:
        rule: a concrete `QuadratureRule` `(K,)` with positive weights.
        degree: the total degree `d ≥ 0` of the moments to keep.
        return_info: also return a `CompressionInfo` (kept indices, node count, Tchakaloff
            bound, rank, and the relative moment residual in the orthonormal basis and in raw
            monomials).

    Returns:
        The compressed `QuadratureRule` `(n,)`, `n ≤ N`: rows of `rule.points` (exactly equal),
        in their original order, the new weights, the per-node `density` subset, and the same
        `pivot`, `contact_a`, `contact_b`, `geometry`, `dimensions` and `mesh` (so
        `softrigid.io` still draws the body); `n_axial` is `None` (a subset has no rows).
        With `return_info=True`, `(rule, info)`.

    Raises:
        TypeError: `rule` is not a `QuadratureRule`.
        ValueError: `degree` is not a non-negative integer; the rule is empty, traced, or has
            a non-positive or non-finite weight; the nodes cannot carry a rule exact to degree
            `d` (a polynomial of degree `⌊d/2⌋` vanishes on all of them, or the moments are not
            met to 1e-10).
    """
    d = _check_degree(degree)
    return_info = as_flag("compress: return_info", return_info)
    x, w, density = check_rule(rule)
    rho = _normalized(density)
    found = load(x, w, density, d)  # kept by an earlier process (`enable_compilation_cache`)
    if found is None:
        found = _fit(x, w, rho, d)
        store(x, w, density, d, found)
    idx, u = found.indices, found.weights
    out = subset_rule(rule, x, density, idx, u)
    if not return_info:
        return out
    info = CompressionInfo(
        degree=d,
        indices=idx,
        n_nodes=int(idx.size),
        n_input=int(x.shape[0]),
        bound=found.bound,
        rank=found.rank,
        residual=found.residual,
        monomial_residual=_monomial_residual(x, w, rho, idx, u, d),
    )
    return out, info
