"""The actuator interface: each actuator contributes columns to `A(q)` in `ν = A(q) u`.

The robot model holds its actuators (`softrigid.Robot(..., actuators=...)`) through this
interface only; the actuators themselves (`softrigid.actuators`) build on the chain kinematics.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING

import jax.numpy as jnp
from jax import Array

if TYPE_CHECKING:
    from ._model import Robot

__all__ = ["Actuator"]


class Actuator(abc.ABC):
    """An actuator: `n_inputs(robot)` inputs and their columns `columns(robot, q)` of `A(q)`."""

    @abc.abstractmethod
    def n_inputs(self, robot: Robot) -> int:
        """Number of inputs `u` of this actuator on `robot`."""

    @abc.abstractmethod
    def columns(self, robot: Robot, q: Array) -> Array:
        """Its columns `(n_q, n_inputs)` of `A(q)`."""

    @classmethod
    def group_columns(cls, robot: Robot, q: Array, actuators: Sequence[Actuator]) -> Array:
        """The columns `(n_q, Σ n_inputs)` of several actuators of this class, in their order
        (by default each alone; a class overrides it to share work between its actuators, as
        tendons with guides share one map evaluation per body)."""
        return jnp.concatenate([a.columns(robot, q) for a in actuators], axis=1)

    def check(self, robot: Robot) -> None:  # noqa: B027 - optional hook, no-op by default
        """Raise `ValueError`/`TypeError` when the actuator does not fit `robot`."""
