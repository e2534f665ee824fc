"""The controller interface: an immutable pytree mapping a state and its dynamics terms to the
robot's inputs.

    u = controller(t, q, q̇, terms),    terms = softrigid.dynamics_terms(robot, q, q̇)

A controller's gains are traced leaves (changing a gain does not recompile a simulation), and a
model-based law reads `M`, the bias `c + g + s` and `A(q)` from `terms`: the integrator evaluates
them once per stage and shares them with the controller.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np
from jax import Array

if TYPE_CHECKING:
    from ._dynamics import DynamicsTerms

__all__ = ["Controller", "concrete_times", "held_switch_times"]


def held_switch_times(obj: Any) -> tuple[float, ...]:
    """The switch times (`switch_times()`) of the controllers and references held by the
    dataclass `obj` (its fields, also inside tuples and lists), sorted, each once."""
    times: set[float] = set()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name, None)
            for item in value if isinstance(value, (tuple, list)) else (value,):
                method = getattr(item, "switch_times", None)
                if callable(method) and not isinstance(item, type):
                    times.update(float(t) for t in method())
    return tuple(sorted(times))


class Controller(abc.ABC):
    """A control law `u(t, q, q̇, terms)` `(n_u,)`; subclasses are `@module` pytrees."""

    @abc.abstractmethod
    def __call__(self, t: Array, q: Array, qd: Array, terms: DynamicsTerms) -> Array:
        """The robot's inputs `u` `(n_u,)` at time `t` and state `(q, q̇)`."""

    def switch_times(self) -> tuple[float, ...]:
        """The times at which `u(t, ·)` may jump (a `Phases`' switching times, the ends of a
        `CubicRestToRest`, whose acceleration jumps there): the adaptive methods of `simulate`
        restart at them rather than step across a jump of the right-hand side. By default
        those of the controllers and references this one holds (`held_switch_times`); a law
        with its own jumps in time overrides it. Called on concrete controllers only."""
        return held_switch_times(self)


def concrete_times(times: Any) -> tuple[float, ...]:
    """`times` (an array of switch times) as Python floats."""
    return tuple(float(t) for t in np.asarray(times).reshape(-1))
