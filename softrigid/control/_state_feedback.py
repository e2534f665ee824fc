"""Linear full-state feedback about an operating point, the law of an LQR designed on
`softrigid.linearize`."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax import Array

from .._checks import as_float, check_finite
from .._controller import Controller
from .._dynamics import DynamicsTerms
from .._module import module

__all__ = ["StateFeedback"]


@module
class StateFeedback(Controller):
    """Linear state feedback about an operating point `(x₀, u₀)`, `x = (q, q̇)`:

        u = u₀ − K (x − x₀),

    e.g. an LQR's `K = R⁻¹ Bᵀ P` from the matrices of `softrigid.linearize` at an equilibrium
    `x₀ = (q_eq, 0)` under `u₀`. The gain and the point are traced leaves: a new gain reuses a
    compiled simulation, and a batch of gains runs under `jax.vmap`.

    Args:
        gain: `K` `(n_u, 2 n_q)`.
        state: `x₀` `(2 n_q,)`, the operating point `(q₀, q̇₀)`.
        inputs: `u₀` `(n_u,)`, its inputs.
    """

    gain: Array
    state: Array
    inputs: Array

    def __init__(self, gain: Any, state: Any, inputs: Any) -> None:
        k = check_finite("StateFeedback: gain", as_float(gain, "StateFeedback: gain"))
        x0 = check_finite("StateFeedback: state", as_float(state, "StateFeedback: state"))
        u0 = check_finite("StateFeedback: inputs", as_float(inputs, "StateFeedback: inputs"))
        if k.ndim != 2 or k.shape[1] % 2:
            raise ValueError(f"StateFeedback: gain must have shape (n_u, 2 n_q), got {k.shape}")
        if x0.shape != (k.shape[1],) or u0.shape != (k.shape[0],):
            raise ValueError(
                f"StateFeedback: gain {k.shape} needs state of shape ({k.shape[1]},) and inputs "
                f"of shape ({k.shape[0]},), got {x0.shape} and {u0.shape}"
            )
        object.__setattr__(self, "gain", k)
        object.__setattr__(self, "state", x0)
        object.__setattr__(self, "inputs", u0)

    def __call__(self, t: Array, q: Array, qd: Array, terms: DynamicsTerms) -> Array:
        n_u = terms.actuation.shape[1]
        if self.gain.shape != (n_u, 2 * q.shape[0]):
            raise ValueError(
                f"StateFeedback: gain has shape {self.gain.shape}, the robot needs "
                f"({n_u}, {2 * q.shape[0]}) (n_u, 2 n_q)"
            )
        x = jnp.concatenate([q, qd])
        return (self.inputs - self.gain @ (x - self.state)).astype(q.dtype)
