"""Empirical cubature: a positive sub-rule fitted to sampled integrands (Hernández et al. 2017).

Degree-based compression (`compress`) keeps a rule's polynomial moments; an integrand that a
polynomial approximates poorly (a map singular near the volume, a strain energy of large
deformations) converges slowly in the degree. The empirical cubature method fits the integrands
themselves: every integral a body takes over its rule is linear in the rule's weights,

    I_i(s) = Σ_k w_k φ_i(x_k, s),     so     ∂I_i/∂w_k = φ_i(x_k, s),

and the derivatives with respect to the weights at sampled states `s` (the pullbacks of unit
cotangents, one per integral component) are the integrands at every node. With `Φ` their snapshot matrix (rows `φ_i(·, s)`,
each scaled to unit norm in `⟨f, g⟩ = Σ_k w_k f_k g_k`, and the constant function), the right
singular vectors of `Φ diag(√w)` above `tol` times the largest singular value give an
orthonormal basis `ψ_1 … ψ_r` of the sampled integrands; with the unit constant `ψ_0` added as
an equation of its own (the volume, met exactly rather than to `tol` with the others),

    Σ_k u_k ψ_j(x_k) = Σ_k w_k ψ_j(x_k),   j = 0…r,   u ≥ 0,

is solved by Lawson–Hanson NNLS (`scipy.optimize.nnls`, as `compress` does; at most `r + 1`
non-zero weights, the equations met to rounding): every integrand in the span of the snapshots
is integrated as the full rule does, and one close to it (another state of the sampled range)
nearly so. Large rules are solved in chunks first, as in `compress`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, overload

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import nnls

from .._checks import as_flag, is_real_number
from ._rule import QuadratureRule
from ._stored import Stored, hash_arrays, load, store
from ._subrules import check_rule, reduce_in_chunks, subset_rule

__all__ = ["EmpiricalInfo", "empirical"]

_RESIDUAL_TOL = 1e-9  # relative residual of the basis' integrals above which the fit failed
_COTANGENTS = 32  # integral components whose integrands one vectorized reverse pass computes


class EmpiricalInfo(NamedTuple):
    """What `empirical(..., return_info=True)` reports.

    Attributes:
        indices: `(n,)` indices of the kept nodes in the input rule (increasing).
        n_nodes: `n`, the number of nodes of the fitted rule.
        n_input: `K`, the number of nodes of the input rule.
        n_snapshots: the sampled integrands (integral components times samples, plus the
            constant function).
        rank: the number of basis functions kept: the constant and the `r` singular
            vectors above `tol`.
        residual: `‖Σ_k (u_k − w_k) ψ(x_k)‖ / ‖Σ_k w_k ψ(x_k)‖` over the basis `ψ`.
        snapshot_error: the largest relative error of the sampled integrals themselves,
            `max_i |Σ_k (u_k − w_k) φ_i(x_k)| / (Σ_k w_k |φ_i(x_k)|)`.
        singular_values: the singular values of the scaled snapshots, decreasing (how fast
            they fall tells how many nodes a tolerance needs).
    """

    indices: np.ndarray
    n_nodes: int
    n_input: int
    n_snapshots: int
    rank: int
    residual: float
    snapshot_error: float
    singular_values: np.ndarray


@functools.partial(jax.jit, static_argnames="integrals")
def _integrands(
    integrals: Callable[[QuadratureRule, Any], Any], rule: QuadratureRule, sample: Any
) -> tuple[jax.Array, jax.Array]:
    """The `m` integral components `(m,)` and their derivatives with respect to the weights
    `(m, K)` at one sample (the integrands at the nodes). Module-level with `integrals` static:
    fitting again with the same function and a rule of the same structure compiles nothing."""

    def flat(weights: jax.Array) -> jax.Array:
        leaves = jax.tree.leaves(integrals(dataclasses.replace(rule, weights=weights), sample))
        if not leaves:
            raise TypeError("empirical: integrals(rule, sample) returned no arrays")
        try:
            return jnp.concatenate([jnp.ravel(jnp.asarray(v)) for v in leaves])
        except TypeError as err:  # e.g. a string: JAX's words name no argument
            raise TypeError(
                f"empirical: integrals(rule, sample) must return arrays ({err})"
            ) from None

    # ∂I/∂w row by row: one forward pass, then the pullback of the unit cotangents,
    # `_COTANGENTS` at a time (memory ∝ that many × nodes, whatever the components)
    out, pullback = jax.vjp(flat, rule.weights)
    if not jnp.issubdtype(out.dtype, jnp.floating):
        raise TypeError(
            f"empirical: integrals(rule, sample) must return real floating values, got {out.dtype}"
        )
    if out.dtype != jnp.float64:  # the fit checks its integrals to 1e-9: float32 rounds at 6e-8
        raise ValueError(
            f"empirical: the integrals are {out.dtype}; the fit needs float64: call "
            "jax.config.update('jax_enable_x64', True) before creating arrays"
        )
    eye = jnp.eye(out.size, dtype=out.dtype)
    return out, jax.lax.map(lambda e: pullback(e)[0], eye, batch_size=_COTANGENTS)


def _checked_samples(samples: Any) -> Any:
    """The samples as JAX arrays, each with the same leading sample axis of at least one
    sample, or a `TypeError`/`ValueError` naming them."""
    try:
        samples = jax.tree.map(jnp.asarray, samples)
    except TypeError as err:
        raise TypeError(f"empirical: samples must be arrays (a pytree of them) ({err})") from None
    leaves = jax.tree.leaves(samples)
    count = {leaf.shape[0] if leaf.ndim else None for leaf in leaves}
    if len(count) != 1 or None in count or 0 in count:
        raise ValueError(
            "empirical: samples must be arrays with one leading sample axis of at least one "
            f"sample, got shapes {[leaf.shape for leaf in leaves]}"
        )
    return samples


def _snapshots(
    rule: QuadratureRule, integrals: Callable[[QuadratureRule, Any], Any], samples: Any
) -> np.ndarray:
    """`(S m, K)`: `_integrands` at each of the `S` samples (a pytree with a leading sample
    axis, `_checked_samples`), one sample at a time (the intermediates of one sample's passes,
    not of all)."""
    w = np.asarray(rule.weights)
    rows = []
    for i in range(jax.tree.leaves(samples)[0].shape[0]):
        values, row = (
            np.asarray(a)
            for a in _integrands(integrals, rule, jax.tree.map(lambda a, i=i: a[i], samples))
        )
        # linear in the weights, I = Σ_k w_k φ(x_k): then I = Σ_k w_k ∂I/∂w_k, to rounding of
        # the terms' sizes (and of the largest component's: a component that cancels to 1e-22
        # beside one of 1e10 is rounding)
        gap = np.abs(row @ w - values)
        size = np.abs(row) @ w + np.abs(values)
        excess = gap / (1e-8 * size + 1e-12 * np.max(size, initial=0.0) + np.finfo(float).tiny)
        if np.any(excess > 1.0):
            j = int(np.argmax(excess))
            raise ValueError(
                f"empirical: integrals(rule, sample) must be linear in the rule's weights "
                f"(Σ_k w_k f(x_k, sample)); at sample {i}, component {j} is {values[j]:.6g} "
                f"but Σ_k w_k ∂I/∂w_k = {(row @ w)[j]:.6g}"
            )
        rows.append(row)
    return np.concatenate(rows)


def _basis(phi: np.ndarray, w: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """`(r + 1, K)` values of the orthonormal basis `ψ_j` of the snapshots' span (singular
    values of the unit-norm snapshots above `tol` times the largest), then the unit constant
    `ψ_0` as an equation of its own (so the volume is met exactly, never truncated with the
    snapshots); and all singular values."""
    peak = np.max(np.abs(phi), axis=1)
    # each snapshot over its largest value first: the squares of 1e160 (or 1e-165) would
    # overflow (underflow) and drop the snapshot
    unit = phi[peak > 0] / peak[peak > 0, None]
    scaled = unit / np.sqrt((unit * unit) @ w)[:, None]
    _, s, vt = np.linalg.svd(scaled * np.sqrt(w)[None], full_matrices=False)
    rank = int(np.sum(s > tol * s[0]))
    one = np.full((1, w.size), 1.0 / np.sqrt(np.sum(w)))
    return np.concatenate([vt[:rank] / np.sqrt(w)[None], one]), s


def _select(a: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative weights `u` with `a u = a w` on few nodes: kept indices and weights. Large
    problems are solved chunk by chunk first (`reduce_in_chunks`, as in `compress`), then once
    on the union of the chunks' nodes."""

    def keep(sub: np.ndarray) -> np.ndarray:
        u, _ = nnls(a[:, sub], a[:, sub] @ w[sub], maxiter=10 * sub.size)
        return sub[u > 0]

    idx = reduce_in_chunks(w.size, a.shape[0], keep)
    u, _ = nnls(a[:, idx], a @ w, maxiter=10 * idx.size)
    return idx[u > 0], u[u > 0]


# the fit's version in the names of the rules kept on disk (2: the constant as an equation of
# its own, so the volume is exact; rules of version 1 are fitted again)
_FIT_VERSION = 2


def _tag(key: str, tol: float, samples: Any) -> str:
    """The name of a fit among the rules kept on disk: the fit's version, the user's `key` for
    the integrals, `tol` and the SHA-256 of the samples' arrays."""
    digest = hashlib.sha256()
    hash_arrays(digest, jax.tree.leaves(samples))
    return f"empirical v{_FIT_VERSION} {key!r} tol {tol!r} samples {digest.hexdigest()}"


def _fit(
    rule: QuadratureRule,
    integrals: Callable[[QuadratureRule, Any], Any],
    samples: Any,
    w: np.ndarray,
    tol: float,
) -> tuple[Stored, np.ndarray, np.ndarray]:
    """The fit: kept indices and weights, residual, rank and snapshot count (`Stored`), the
    snapshots (with the constant function) and the singular values."""
    phi = _snapshots(rule, integrals, samples)
    if not np.all(np.isfinite(phi)):
        raise ValueError(
            "empirical: the integrands at the sampled states are not finite (NaN or inf): a "
            "sample outside the map's range?"
        )
    phi = np.concatenate([np.ones((1, w.size)), phi])  # the volume is always kept
    psi, s = _basis(phi, w, tol)
    idx, u = _select(psi, w)
    target = psi @ w
    residual = float(np.linalg.norm(psi[:, idx] @ u - target) / np.linalg.norm(target))
    if not residual <= _RESIDUAL_TOL:
        raise ValueError(
            f"empirical: the basis' integrals are met only to {residual:.2g} (relative); "
            "try a larger tol"
        )
    return Stored(idx, u, residual, int(psi.shape[0]), int(phi.shape[0])), phi, s


@overload
def empirical(
    rule: QuadratureRule,
    integrals: Callable[[QuadratureRule, Any], Any],
    samples: Any,
    *,
    tol: float = ...,
    key: str | None = ...,
    return_info: Literal[False] = ...,
) -> QuadratureRule: ...
@overload
def empirical(
    rule: QuadratureRule,
    integrals: Callable[[QuadratureRule, Any], Any],
    samples: Any,
    *,
    tol: float = ...,
    key: str | None = ...,
    return_info: Literal[True],
) -> tuple[QuadratureRule, EmpiricalInfo]: ...
def empirical(
    rule: QuadratureRule,
    integrals: Callable[[QuadratureRule, Any], Any],
    samples: Any,
    *,
    tol: float = 1e-10,
    key: str | None = None,
    return_info: bool = False,
) -> QuadratureRule | tuple[QuadratureRule, EmpiricalInfo]:
    """A positive rule on a subset of `rule`'s nodes fitted to the integrands of `integrals`
    at the sampled states (empirical cubature, Hernández et al. 2017; module docstring).

    `integrals(r, sample)` returns any pytree of arrays computed from integrals over the rule
    `r` (e.g. a body's mass matrix, inverse dynamics and forces, with the body built on `r`)
    and must be linear in `r.weights` (every sum `Σ_k w_k φ(x_k)` is; a quantity of several
    bodies is linear in each body's weights). The fitted rule integrates each sampled
    integrand as `rule` does, to the singular-value tolerance `tol` of their span, and
    integrands of other states as well as the samples represent them: sample the range of
    states the model will visit, and check the result on states not sampled
    (`benchmarks/compress_accuracy.py --empirical` does). It keeps the volume (the constant
    function is always fitted). Use it where `compress`'s polynomial moments converge
    slowly. Measured (`compress_accuracy.py --empirical`, 10 fitting states, 3 others to
    test): the gripper's source map, singular on its bore's axis, on its 48,384-node mesh
    rule: `tol = 1e-10` keeps 50 nodes, and `M`, `ID`, `g` and the elastic force are within
    1e-10 of the full rule, the Kelvin–Voigt force 9e-7 (6e-8 with 20 fitting states), where
    `compress` to degree 8 keeps 165 nodes and misses by 9e-4 to 1e-2. A quantity linear in
    the velocities (damping) generalizes from its samples' directions only: sample more states,
    or give its matrix. For a body that may be linked anywhere, fit `SoftBody.integrals`
    (its mass and velocity moments and internal forces: everything the recursion takes from
    the rule).

    Args:
        rule: a concrete `QuadratureRule` `(K,)` with positive weights (the reference).
        integrals: `integrals(r, sample) -> pytree`, jit-traceable, linear in `r.weights`.
        samples: a pytree of arrays with a leading sample axis `S` (e.g. `(q, q̇, q̈)` stacked);
            `integrals` is evaluated (and differentiated) at each sample in turn.
        tol: singular values of the unit-norm snapshots below `tol` times the largest are
            dropped (fewer nodes, less accuracy); `0 < tol < 1`.
        key: a name for `integrals` (change it when they change). With it and
            `softrigid.enable_compilation_cache()`, the fit is kept on disk (the cache's folder
            `quadrature`, as `compress`'s, keyed by the rule's arrays, the samples' arrays,
            `tol`, `key` and the NumPy and SciPy versions) and a later process with the same
            inputs reads its nodes and weights instead of fitting again (the fit is a reverse
            pass per integral component and sample over every node: seconds to minutes). A
            changed `integrals` under an unchanged `key` reads the old fit: the key is yours.
        return_info: also return an `EmpiricalInfo` (fits again: the snapshots it reports
            are not kept on disk).

    Returns:
        The fitted `QuadratureRule` `(n,)`: rows of `rule.points`, the new weights, the
        per-node density subset and the rule's frame points, geometry and mesh (as
        `compress`). With `return_info=True`, `(rule, info)`.

    Raises:
        TypeError: `rule` is not a `QuadratureRule` or `integrals` is not callable.
        ValueError: the rule is empty, traced or has non-positive weights; `tol` is not in
            `(0, 1)`; the samples have no common leading axis; the integrals are not float64
            (JAX's x64 mode is off) or not finite;
            the fitted integrals miss the full rule's by more than 1e-9 (relative).

    Example:
        >>> import jax
        >>> jax.config.update("jax_enable_x64", True)  # the fit needs float64
        >>> import softrigid as sr
        >>> from softrigid import joints, kinematics, quadrature
        >>> full = quadrature.cylinder(0.02, 0.2, n_axial=6, n_radial=3, n_angular=8)
        >>> def integrals(r, q):
        ...     body = sr.SoftBody(kinematics.ConstantCurvature3D(0.2), r, 1000.0)
        ...     robot = sr.Robot([sr.Link(joints.Fixed(), body)], gravity=(0, 0, -9.81))
        ...     return sr.mass_matrix(robot, q), sr.gravity_force(robot, q)
        >>> samples = jax.random.uniform(jax.random.key(0), (8, 3), minval=-1.0, maxval=1.0)
        >>> rule = quadrature.empirical(full, integrals, samples)  # doctest: +SKIP
    """
    x, w, density = check_rule(rule, "empirical")
    if not callable(integrals):
        raise TypeError(f"empirical: integrals must be callable, got {type(integrals).__name__}")
    if not (is_real_number(tol) and 0.0 < float(tol) < 1.0):
        raise ValueError(f"empirical: tol must be a number in (0, 1), got {tol!r}")
    return_info = as_flag("empirical: return_info", return_info)
    if key is not None and not isinstance(key, str):
        raise TypeError(f"empirical: key must be a string or None, got {type(key).__name__}")
    # checked before the key's hash reads them (a text leaf failed there, unnamed)
    samples = _checked_samples(samples)
    tag = None if key is None else _tag(key, float(tol), samples)
    found = None if tag is None or return_info else load(x, w, density, tag)
    if found is None:
        found, phi, s = _fit(rule, integrals, samples, w, float(tol))
        if tag is not None:
            store(x, w, density, tag, found)
    idx, u = found.indices, found.weights
    out = subset_rule(rule, x, density, idx, u)
    if not return_info:
        return out
    scale = np.abs(phi) @ w
    error = np.abs(phi[:, idx] @ u - phi @ w)[scale > 0] / scale[scale > 0]
    info = EmpiricalInfo(
        indices=idx,
        n_nodes=int(idx.size),
        n_input=int(w.size),
        n_snapshots=found.bound,
        rank=found.rank,
        residual=found.residual,
        snapshot_error=float(error.max()),
        singular_values=s,
    )
    return out, info
