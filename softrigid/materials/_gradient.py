"""The deformation gradient of a soft body's map and the Kelvin–Voigt terms built on it.

    F_k = ∂f/∂x (x_k, q),     Ė_k = ½ (Ḟ_kᵀ F_k + F_kᵀ Ḟ_k),
    D = ∂²R/∂q̇² = η Σ_k w_k B_kᵀ ℂ₀ B_k,     B_k[:, j] = sym(F_kᵀ ∂F_k/∂q_j),

for the objective Kelvin–Voigt dissipation `R = (η/2) Σ_k w_k Ė_k : ℂ₀ : Ė_k` (`forces.md`),
and the gradient's jet `(F, ∂F/∂q, ∂²F/∂q²)` that a solid's force derivatives are built from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .._ad import value_and_jacfwd

if TYPE_CHECKING:
    from .._soft_body import SoftBody

__all__ = [
    "deformation_gradient",
    "deformation_jet",
    "green_rate",
    "kelvin_voigt_damping_matrix",
    "kelvin_voigt_matrix",
    "pair_contraction",
    "pair_matrix",
]


def deformation_gradient(body: SoftBody, q: Array, points: Array | None = None) -> Array:
    """Deformation gradients `F_k = ∂f/∂x (x_k, q)` `(K, 3, 3)` of a soft body's map.

    Args:
        body: a `SoftBody` (anything with `.kinematics` and `.volume`).
        q: `(n_q,)` body coordinates.
        points: `(K, 3)` material points (default: the body's quadrature nodes, evaluated with
            the rule's axial-row structure).

    Returns:
        `(K, 3, 3)` with `F[k, i, j] = ∂f_i/∂x_j`: three forward-mode passes of the whole
        `map_points` along the unit material directions.
    """
    n_axial = None
    if points is None:
        points, n_axial = body.volume.points, body.volume.n_axial

    def mapped(p: Array) -> Array:
        return body.kinematics.map_points(p, q, n_axial)

    def column(e: Array) -> Array:
        return jax.jvp(mapped, (points,), (jnp.broadcast_to(e, points.shape),))[1]

    cols = jax.vmap(column)(jnp.eye(3, dtype=points.dtype))  # (3, K, 3): [j, k, i]
    return jnp.transpose(cols, (1, 2, 0))


def green_rate(f: Array, fd: Array) -> Array:
    # Ė = ½ (Ḟᵀ F + Fᵀ Ḟ)
    a = jnp.swapaxes(fd, -1, -2) @ f
    return 0.5 * (a + jnp.swapaxes(a, -1, -2))


def deformation_jet(body: SoftBody, q: Array) -> tuple[Array, Array, Array]:
    """`(F_k, ∂F_k/∂q_j, ∂²F_k/∂q_j∂q_l)` at the body's nodes: `(K, 3, 3)`, `(n_q, K, 3, 3)`
    (index `[j, k]`) and the second derivatives of the pairs `j ≤ l` in the order of
    `np.triu_indices(n_q)`, `(n_q (n_q + 1) / 2, K, 3, 3)` (the rest by symmetry).

    The first derivatives by `n_q` forward passes, the second by one jvp of a jvp per pair
    (vectorized). Nesting two `n_q`-wide forward passes instead computes every pair twice and
    ran 2–3× slower (the helicoid segment: 6.9 against 2.4 ms)."""

    def gradient(y: Array) -> Array:
        return deformation_gradient(body, y)

    f, g = value_and_jacfwd(gradient, q, tangent_axis=0)
    n = q.shape[0]
    if n == 0:
        return f, g, jnp.zeros((0, *f.shape), f.dtype)
    rows, cols = np.triu_indices(n)
    eye = jnp.eye(n, dtype=q.dtype)

    def pair(u: Array, v: Array) -> Array:
        # ∂²F[u, v]: the jvp along v of the jvp along u
        return jax.jvp(lambda y: jax.jvp(gradient, (y,), (u,))[1], (q,), (v,))[1]

    return f, g, jax.vmap(pair)(eye[rows], eye[cols])


def pair_contraction(pairs: Array, x: Array) -> Array:
    """`Σ_l H_jl x_l` `(n, ...)` for a symmetric `H` given by its pairs `j ≤ l` in the order of
    `np.triu_indices(n)` (`pairs` `(n (n + 1) / 2, ...)`), `x` `(n,)`."""
    n = x.shape[0]
    rows, cols = np.triu_indices(n)
    j = np.arange(n)[:, None]
    # pair (r, c) adds H_rc x_c to row r and, off the diagonal, H_rc x_r to row c
    coef = (rows == j) * x[cols] + ((cols == j) & (rows != cols)) * x[rows]  # (n, pairs)
    return jnp.einsum("jp,p...->j...", coef, pairs)


def pair_matrix(values: Array, n: int) -> Array:
    """The symmetric `(n, n)` matrix of the pairs' values `(n (n + 1) / 2,)` (`j ≤ l`, in the
    order of `np.triu_indices(n)`)."""
    rows, cols = np.triu_indices(n)
    index = np.zeros((n, n), dtype=int)
    index[rows, cols] = index[cols, rows] = np.arange(rows.size)
    return values[index]


def kelvin_voigt_matrix(
    f: Array, g: Array, weights: Array, eta: Array, stress: Callable[[Array], Array]
) -> Array:
    """`D = η Σ_k w_k B_kᵀ ℂ₀ B_k` `(n_q, n_q)` from the gradients `F_k` `(K, 3, 3)` and
    their Jacobians `∂F_k/∂q_j` `(n_q, K, 3, 3)`, `B_k[:, j] = sym(F_kᵀ ∂F_k/∂q_j)`,
    `stress(E) = ℂ₀ : E`."""
    b = green_rate(f[None], g)  # sym((∂F_k/∂q_j)ᵀ F_k) = sym(F_kᵀ ∂F_k/∂q_j), (n_q, K, 3, 3)
    s = jax.vmap(jax.vmap(stress))(b)
    return eta * jnp.einsum("jkbc,lkbc,k->jl", b, s, weights)


def kelvin_voigt_damping_matrix(
    body: SoftBody, q: Array, eta: Array, stress: Callable[[Array], Array]
) -> Array:
    """`D = ∂s/∂q̇ = η Σ_k w_k B_kᵀ ℂ₀ B_k` `(n_q, n_q)` of the Kelvin–Voigt dissipation, with
    `B_k[:, j] = sym(F_kᵀ ∂F_k/∂q_j)` (`∂Ė_k/∂q̇_j`: `Ė` is linear in `q̇`) and
    `stress(E) = ℂ₀ : E`: the deformation gradient's `q`-Jacobian by `n_q` forward passes and
    a contraction (`kelvin_voigt_matrix`), where differentiating `s` in `q̇` would pull each of
    the `n_q` tangents back through `∂F/∂q` (2.7× the cost on a helicoid segment).
    Independent of `q̇`, symmetric."""
    f, g = value_and_jacfwd(lambda x: deformation_gradient(body, x), q, tangent_axis=0)
    return kelvin_voigt_matrix(f, g, body.volume.weights, eta, stress)
