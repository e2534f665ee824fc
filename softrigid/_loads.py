"""External loads: a force at a material point of a body, a wrench on a distal frame.

They are active forces: in the recursion they add to the D'Alembert terms `F*`, `T*`, `π*`
(`algorithm.md`), so they appear in `ν = M q̈ + c + g + s − Q_ext` with a minus sign; the
generalized force of a point load is `Q_ext = J_pᵀ f` with `J_p = ∂p_world/∂q`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

from ._bodies import RigidBody
from ._checks import as_vector
from ._model import Robot
from ._module import module, static

__all__ = ["PointLoad", "Wrench", "check_loads"]

_FRAMES = ("world", "distal")


def _check_frame(cls: str, frame: str) -> None:
    if frame not in _FRAMES:
        raise ValueError(f"{cls}: frame must be one of {_FRAMES}, got {frame!r}")


@module
class PointLoad:
    """A force applied at a material point of the body of link `link`.

    Args:
        link: index of the link whose body carries the point.
        point: `(3,)` material coordinates of the point (the body's reference volume).
        force: `(3,)` force [N], in the world (base) frame or, with `frame="distal"`, in the
            body's distal frame `S_i`.
    """

    point: Array
    force: Array
    link: int = static()
    frame: str = static(default="world")

    def __init__(self, link: int, point: Any, force: Any, frame: str = "world") -> None:
        _check_frame("PointLoad", frame)
        object.__setattr__(self, "link", _check_link("PointLoad", link))
        object.__setattr__(self, "frame", frame)
        object.__setattr__(self, "point", as_vector("PointLoad: point", point, 3))
        object.__setattr__(self, "force", as_vector("PointLoad: force", force, 3))

    def local(self, robot: Robot, q: Array, rot: Array) -> tuple[Array, Array, Callable | None]:
        body = robot.links[self.link].body
        f = rot.T @ self.force
        if isinstance(body, RigidBody):
            p = body.distal_rotation.T @ (self.point - body.distal_translation)
            return f, jnp.cross(p, f), None

        def local_point(qb: Array) -> Array:
            return body.local_points(qb, self.point[None])[0]

        nj = robot.links[self.link].joint.n_q
        qb = robot.split(q)[self.link][nj:]
        p = local_point(qb)

        def generalized(qb: Array) -> Array:
            # π*_ext = J_pᵀ f with J_p = ∂p/∂q_B (the point's motion inside S_i)
            return jax.jacfwd(local_point)(qb).T @ f

        return f, jnp.cross(p, f), generalized


@module
class Wrench:
    """A force and a moment applied at the origin of the distal frame `S_i` of link `link`.

    Args:
        link: link index.
        force, moment: `(3,)` [N], [N·m], in the world frame or, with `frame="distal"`, in `S_i`.
    """

    force: Array
    moment: Array
    link: int = static()
    frame: str = static(default="world")

    def __init__(
        self, link: int, force: Any, moment: Any = (0.0, 0.0, 0.0), frame: str = "world"
    ) -> None:
        _check_frame("Wrench", frame)
        object.__setattr__(self, "link", _check_link("Wrench", link))
        object.__setattr__(self, "frame", frame)
        object.__setattr__(self, "force", as_vector("Wrench: force", force, 3))
        object.__setattr__(self, "moment", as_vector("Wrench: moment", moment, 3))

    def local(self, robot: Robot, q: Array, rot: Array) -> tuple[Array, Array, None]:
        del robot, q
        return rot.T @ self.force, rot.T @ self.moment, None


def _check_link(cls: str, link: Any) -> int:
    if not isinstance(link, int) or isinstance(link, bool) or link < 0:
        raise ValueError(f"{cls}: link must be a non-negative integer index, got {link!r}")
    return link


def check_loads(robot: Robot, loads: Any) -> tuple[Any, ...]:
    """`loads` as a tuple of `PointLoad`/`Wrench` whose link indices exist in `robot`."""
    if loads is None:
        return ()
    if isinstance(loads, (PointLoad, Wrench)):
        loads = (loads,)
    loads = tuple(loads)
    for load in loads:
        if not isinstance(load, (PointLoad, Wrench)):
            raise TypeError(f"loads must be PointLoad or Wrench objects, got {type(load).__name__}")
        if load.link >= robot.n_links:
            raise ValueError(
                f"{type(load).__name__}: link {load.link} does not exist (robot has {robot.n_links} links)"
            )
    return loads
