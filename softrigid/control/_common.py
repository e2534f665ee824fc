"""What the control laws share (`softrigid.control`): gains (scalar, diagonal or matrix), the
selection of controlled coordinates and driven inputs, and the solve `A u = ν` with its run-time
conditioning check, computed from the inverse the solve's factorization gives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .._checks import as_float, as_indices, check_finite, raise_if, traced_check
from .._model import Robot
from .._module import is_concrete
from .._reports import PREFIX

# A matrix is singular for the control laws when κ_F = ‖a‖_F ‖a⁻¹‖_F ≥ _COND_MAX.
_COND_MAX = 1e10
# where a simulation's state has grown by orders of magnitude, the cause is the integration
_BLOW_UP = (
    " (in a simulation whose state has grown by orders of magnitude the run blew up first: "
    "a step dt too large for the closed loop's stiffness and gains; try a smaller dt or an "
    "implicit method)"
)


def _gain(where: str, value: Any, k: int) -> Array:
    """A gain for `k` errors: a scalar, a diagonal `(k,)` or a matrix `(k, k)`, finite and
    positive semi-definite (its symmetric part: a negative or indefinite gain makes every law's
    error dynamics unstable), checked at once or, traced, at run time."""
    g = as_float(value, where)
    if g.shape not in ((), (k,), (k, k)):
        raise ValueError(f"{where} must be a scalar, shape ({k},) or ({k}, {k}); got {g.shape}")
    g = check_finite(where, g)
    xp = np if is_concrete(g) else jnp
    # the smallest eigenvalue of the symmetric part, against the gain's size
    low = xp.min(xp.linalg.eigvalsh(0.5 * (g + g.T))) if g.ndim == 2 else xp.min(g)
    negative = low < -1e-12 * xp.max(xp.abs(g))
    message = f"{where} must be positive semi-definite (its symmetric part for a matrix)"
    if xp is np:
        if negative:
            raise ValueError(f"{message}, got smallest eigenvalue {float(low):.3g}")
        return g
    return traced_check(g, negative, message)


def _apply(gain: Array, e: Array) -> Array:
    return gain @ e if gain.ndim == 2 else gain * e


def _indices(where: str, value: Sequence[int] | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    idx = as_indices(where, value)
    if not idx or len(set(idx)) != len(idx) or min(idx) < 0:
        raise ValueError(f"{where} must be distinct non-negative indices, got {value}")
    return idx


def _driven(where: str, inputs: Sequence[int] | None, robot: Robot) -> tuple[Any, int]:
    """The driven `inputs` (checked indices into `u`, `None` for all) and their number."""
    inputs = _indices(f"{where}: inputs", inputs)
    if inputs is not None and max(inputs) >= robot.n_u:
        raise ValueError(f"{where}: inputs {inputs} out of range n_u = {robot.n_u}")
    return inputs, robot.n_u if inputs is None else len(inputs)


def _select(x: Array, idx: tuple[int, ...] | None, where: str, name: str) -> Array:
    if idx is None:
        return x
    if max(idx) >= x.shape[0]:
        raise ValueError(f"{where}: {name} {idx} out of range for {x.shape[0]} entries")
    return x[np.asarray(idx)]


def _place(v: Array, idx: tuple[int, ...] | None, n_u: int, where: str) -> Array:
    if idx is None:
        if v.shape[0] != n_u:
            raise ValueError(
                f"{where}: the law gives {v.shape[0]} inputs but the robot has n_u = {n_u}; "
                "pass inputs=(...) to choose which inputs it drives"
            )
        return v
    if max(idx) >= n_u:
        raise ValueError(f"{where}: inputs {idx} out of range for n_u = {n_u}")
    return jnp.zeros(n_u, v.dtype).at[np.asarray(idx)].set(v)


def _check_conditioned(where: str, what: str, value: Array, a: Array, a_inv: Array) -> Array:
    """`value` with a run-time check (also under `jit`/`vmap`) that the square `a` is
    invertible and well conditioned, from its inverse `a_inv` (which the law's factorization
    gives): the error names the law and the matrix when

        κ_F(a) = ‖a‖_F ‖a⁻¹‖_F ≥ 1e10   (or non-finite: an exactly singular `a`).

    `κ_F ≥ κ₂ = σ_max/σ_min` (and `κ_F ≤ n κ₂`), so every `a` with `σ_min ≤ 1e-10 σ_max` is
    caught."""
    kappa = jnp.linalg.norm(jax.lax.stop_gradient(a)) * jnp.linalg.norm(
        jax.lax.stop_gradient(a_inv)
    )
    msgs = (
        f"{PREFIX}{where}: {what} is singular (rank-deficient) or ill-conditioned "
        f"(‖A‖_F ‖A⁻¹‖_F ≥ {_COND_MAX:.0e}) at this state{_BLOW_UP}",
        f"{PREFIX}{where}: {what} is not finite (NaN or inf) at this state: the model is not "
        f"defined there{_BLOW_UP}",
    )
    # index 1 where `a` itself is not finite (a state far outside the model's range)
    index = (~jnp.all(jnp.isfinite(jax.lax.stop_gradient(a)))).astype(int)
    return raise_if(value, ~(kappa < _COND_MAX), index, msgs)


def _actuation_solve(where: str, a: Array, nu: Array, pseudo_inverse: bool) -> Array:
    """`u` with `a u = ν`: `a⁻¹ ν` for a square, invertible `a` (one LU factorization solves
    for `[ν, I]`: `u` and the `a⁻¹` of the conditioning check), or `a⁺ ν` (least squares /
    minimum norm) with `pseudo_inverse`."""
    if pseudo_inverse:
        return jnp.linalg.pinv(a) @ nu
    if a.shape[0] != a.shape[1]:
        raise ValueError(
            f"{where}: needs a square actuation matrix on the controlled coordinates, got "
            f"{a.shape}; choose coordinates/inputs that match, or pseudo_inverse=True"
        )
    # A [u, A⁻¹] = [ν, I]
    x = jnp.linalg.solve(a, jnp.concatenate([nu[:, None], jnp.eye(a.shape[0], dtype=a.dtype)], 1))
    return _check_conditioned(where, "the actuation matrix A", x[:, 0], a, x[:, 1:])


def _controlled_actuation(
    where: str, a: Array, coordinates: tuple | None, inputs: tuple | None
) -> Array:
    rows = _select(a, coordinates, where, "coordinates")
    return _select(rows.T, inputs, where, "inputs").T
