"""The material interface: an elastic energy and a Rayleigh dissipation function per body."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
from jax import Array

from .._ad import value_and_jacfwd
from .._checks import as_scalar

if TYPE_CHECKING:
    from .._soft_body import SoftBody

__all__ = ["Material", "check_eta"]


class Material(abc.ABC):
    """A material law of a soft body: an elastic energy and a Rayleigh dissipation function.

    Internal stresses have zero resultant on the body, so they enter the dynamics only through
    `s = ∂U/∂q_B + ∂R/∂q̇_B` in the rows of the body coordinates (`algorithm.md`).
    """

    @abc.abstractmethod
    def energy(self, body: SoftBody, q: Array) -> Array:
        """Elastic energy `U(q_B)` of `body` (scalar)."""

    def dissipation(self, body: SoftBody, q: Array, qd: Array) -> Array:
        """Rayleigh function `R(q_B, q̇_B) ≥ 0`, quadratic in `q̇_B` (default: no damping)."""
        del body, q, qd
        return jnp.zeros(())

    def internal_force(self, body: SoftBody, q: Array, qd: Array) -> Array:
        """`s_B = ∂U/∂q_B + ∂R/∂q̇_B` `(n_q,)` (default: reverse mode of `energy` and
        `dissipation`)."""
        return jax.grad(self.energy, argnums=1)(body, q) + jax.grad(self.dissipation, argnums=2)(
            body, q, qd
        )

    def damping_matrix(self, body: SoftBody, q: Array, qd: Array) -> Array:
        """`∂s_B/∂q̇_B = ∂²R/∂q̇_B²` `(n_q, n_q)` (default: forward mode of `internal_force`
        in `q̇_B`; independent of `q̇_B` for a dissipation quadratic in it)."""
        return jax.jacfwd(lambda y: self.internal_force(body, q, y))(qd)

    def internal_force_derivatives(
        self, body: SoftBody, q: Array, qd: Array
    ) -> tuple[Array, Array, Array]:
        """`(s_B, ∂s_B/∂q_B, ∂s_B/∂q̇_B)` (`(n_q,)`, then two `(n_q, n_q)`), what the
        dynamics' derivatives need of the material (default: forward mode of `internal_force`
        in `q_B`, and `damping_matrix`)."""
        s, d_q = value_and_jacfwd(lambda x: self.internal_force(body, x, qd), q)
        return s, d_q, self.damping_matrix(body, q, qd)

    def validate(self, body: SoftBody) -> tuple[Array, str] | None:
        """Called when a `SoftBody` is built with this material; raise on an invalid pairing.
        Where the pairing depends on traced values (a body built inside `jit`), return the
        run-time condition `(bad, message)` instead: the body attaches it to the material's
        parameters, so it fires where an algorithm uses them. Default: nothing to check."""
        del body
        return None


def check_eta(cls: str, eta: object) -> Array:
    """A damping time `η ≥ 0` [s]."""
    return as_scalar(f"{cls}: eta (damping time)", eta, nonnegative=True)
