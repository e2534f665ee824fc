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

import jax.numpy as jnp
import numpy as np
from jax import Array

from ._checks import is_real_dtype
from ._module import is_concrete

if TYPE_CHECKING:
    from ._dynamics import DynamicsTerms

__all__ = ["Controller", "concrete_times", "held_robots", "held_switch_times", "real_inputs"]


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
        with its own jumps in time overrides it. Times traced as arguments of the user's
        `jit` or `vmap` are left out (`concrete_times`)."""
        return held_switch_times(self)

    def check_robot(self, robot: Any) -> None:
        """A `ValueError` where this controller, or one it holds, was built for a robot of
        another size than `robot` (another `n_q` or `n_u`: its law would fail with a shape
        error deep in the dynamics). Checks the robots held in its fields
        (`held_robots`)."""
        for own in held_robots(self):
            if (own.n_q, own.n_u) != (robot.n_q, robot.n_u):
                raise ValueError(
                    f"{type(self).__name__}: the controller (or one it holds) was built for a "
                    f"robot with n_q = {own.n_q}, n_u = {own.n_u}, but controls one with n_q = "
                    f"{robot.n_q}, n_u = {robot.n_u}: build the controller with that robot"
                )


def held_robots(obj: Any) -> list[Any]:
    """The robots (objects with `n_q`, `n_u` and `links`) in the fields of the dataclass `obj`
    and of the controllers it holds (also inside tuples and lists)."""
    out = []
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name, None)
            for item in value if isinstance(value, (tuple, list)) else (value,):
                if all(hasattr(item, name) for name in ("n_q", "n_u", "links")):
                    out.append(item)
                elif isinstance(item, Controller):
                    out.extend(held_robots(item))
    return out


def real_inputs(what: str, u: Any) -> Array:
    """`u` as an array of real (floating or integer) inputs, else a `TypeError` naming `what`
    (a cast to the state's dtype would drop a complex input's imaginary part)."""
    u = jnp.asarray(u)
    if not is_real_dtype(u.dtype):
        raise TypeError(f"{what} must return real inputs, got dtype {u.dtype}")
    return u


def concrete_times(times: Any) -> tuple[float, ...]:
    """`times` (an array of switch times) as Python floats; none where they are traced (an
    argument of the user's `jit` or `vmap`: `simulate` then plans no pieces at them, and a
    fixed step across one stays first order, `softrigid._switches`)."""
    if not is_concrete(times):
        return ()
    return tuple(float(t) for t in np.asarray(times).reshape(-1))
