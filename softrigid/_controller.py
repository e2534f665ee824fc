"""The controller interface: an immutable pytree mapping a state and its dynamics terms to the
robot's inputs.

    u = controller(t, q, q̇, terms),    terms = softrigid.dynamics_terms(robot, q, q̇)

A controller's gains are traced leaves (changing a gain does not recompile a simulation), and a
model-based law reads `M`, the bias `c + g + s` and `A(q)` from `terms`: the integrator evaluates
them once per stage and shares them with the controller.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

from jax import Array

if TYPE_CHECKING:
    from ._dynamics import DynamicsTerms

__all__ = ["Controller"]


class Controller(abc.ABC):
    """A control law `u(t, q, q̇, terms)` `(n_u,)`; subclasses are `@module` pytrees."""

    @abc.abstractmethod
    def __call__(self, t: Array, q: Array, qd: Array, terms: DynamicsTerms) -> Array:
        """The robot's inputs `u` `(n_u,)` at time `t` and state `(q, q̇)`."""
