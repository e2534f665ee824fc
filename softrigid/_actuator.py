"""The actuator interface: each actuator contributes columns to `A(q)` in `ν = A(q) u`.

The robot model holds its actuators (`softrigid.Robot(..., actuators=...)`) through this
interface only; the actuators themselves (`softrigid.actuators`) build on the chain kinematics.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

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

    def check(self, robot: Robot) -> None:  # noqa: B027 - optional hook, no-op by default
        """Raise `ValueError`/`TypeError` when the actuator does not fit `robot`."""
