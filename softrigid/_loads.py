"""External loads: a force at a material point of a body, a wrench on a distal frame.

They are active forces: in the recursion they add to the D'Alembert terms `F*`, `T*`, `π*`
(`algorithm.md`), so they appear in `ν = M q̈ + c + g + s − Q_ext` with a minus sign; the
generalized force of a point load is `Q_ext = J_pᵀ f` with `J_p = ∂p_world/∂q`.
"""

from __future__ import annotations

import abc
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from . import _recursion as rec
from ._ad import value_and_jacfwd
from ._checks import as_index, as_vector, check_index
from ._model import Robot
from ._module import is_concrete, module, static
from ._soft_body import SoftBody
from .quadrature._geometry import INSIDE_TOL, contains, has_geometry

__all__ = ["Load", "PointLoad", "Wrench", "check_loads", "external_loads"]

_FRAMES = ("world", "distal")
# (id(volume), point bytes) → (volume, inside): a mesh's test costs ~2 ms, an eager call ~20 µs;
# the value holds the volume, so its id is not reused while the entry lives
_INSIDE: dict[tuple[int, bytes], tuple[Any, bool]] = {}


class Load(abc.ABC):
    """An external load on link `link`, given in the world frame or in the distal frame `S_i`."""

    link: int
    frame: str

    def _place(self, link: Any, frame: Any) -> None:
        cls = type(self).__name__
        if frame not in _FRAMES:
            raise ValueError(f"{cls}: frame must be one of {_FRAMES}, got {frame!r}")
        object.__setattr__(self, "link", as_index(f"{cls}: link", link))
        object.__setattr__(self, "frame", frame)

    @abc.abstractmethod
    def local(self, robot: Robot, q: Array, rot: Array) -> tuple[Array, Array, Array]:
        """`(force, moment about the origin of S_i, generalized force on q_B)` in `S_i`, with
        `rot` the world rotation of `S_i` (used when the load is given in the world)."""


@module
class PointLoad(Load):
    """A force applied at a material point of the body of link `link`.

    Args:
        link: index of the link whose body carries the point.
        point: `(3,)` material coordinates of the point (the body's reference volume).
        force: `(3,)` force [N], in the world (base) frame or, with `frame="distal"`, in the
            body's distal frame `S_i`.
        frame: `"world"` (default: a dead load, fixed in the base frame) or `"distal"` (a
            follower load, turning with `S_i`).
    """

    point: Array
    force: Array
    link: int = static()
    frame: str = static(default="world")

    def __init__(self, link: int, point: Any, force: Any, frame: str = "world") -> None:
        self._place(link, frame)
        object.__setattr__(self, "point", as_vector("PointLoad: point", point, 3))
        object.__setattr__(self, "force", as_vector("PointLoad: force", force, 3))

    def local(self, robot: Robot, q: Array, rot: Array) -> tuple[Array, Array, Array]:
        """`(f, p × f, J_pᵀ f)` in `S_i`, with `p` the point in `S_i` and `J_p = ∂p/∂q_B`
        (the point's motion inside the body; empty for a rigid body)."""
        body = robot.links[self.link].body
        f = rot.T @ self.force

        def local_point(qb: Array) -> Array:
            return body.local_points(qb, self.point[None])[0]

        qb = q[robot.body_slice(self.link)]
        p, jac = value_and_jacfwd(local_point, qb)
        return f, jnp.cross(p, f), jac.T @ f


@module
class Wrench(Load):
    """A force and a moment applied at the origin of the distal frame `S_i` of link `link`.

    Args:
        link: link index.
        force, moment: `(3,)` [N], [N·m], in the world frame or, with `frame="distal"`, in `S_i`.
        frame: `"world"` (default: fixed in the base frame) or `"distal"` (turning with `S_i`).
    """

    force: Array
    moment: Array
    link: int = static()
    frame: str = static(default="world")

    def __init__(
        self, link: int, force: Any, moment: Any = (0.0, 0.0, 0.0), frame: str = "world"
    ) -> None:
        self._place(link, frame)
        object.__setattr__(self, "force", as_vector("Wrench: force", force, 3))
        object.__setattr__(self, "moment", as_vector("Wrench: moment", moment, 3))

    def local(self, robot: Robot, q: Array, rot: Array) -> tuple[Array, Array, Array]:
        """`(F, M, 0)` in `S_i`."""
        zero = jnp.zeros(robot.links[self.link].body.n_q, q.dtype)
        return rot.T @ self.force, rot.T @ self.moment, zero


def check_loads(robot: Robot, loads: Any) -> tuple[Any, ...]:
    """`loads` as a tuple of `PointLoad`/`Wrench` whose link indices exist in `robot`."""
    if loads is None:
        return ()
    if isinstance(loads, Load):
        loads = (loads,)
    if not isinstance(loads, (tuple, list)):
        raise TypeError(
            f"loads must be a PointLoad, a Wrench or a sequence of them, got {type(loads).__name__}"
        )
    loads = tuple(loads)
    for load in loads:
        if not isinstance(load, Load):
            raise TypeError(f"loads must be PointLoad or Wrench objects, got {type(load).__name__}")
        check_index(f"{type(load).__name__}: link", load.link, robot.n_links)
        if isinstance(load, PointLoad):
            _check_inside(robot, load)
    return loads


def _check_inside(robot: Robot, load: PointLoad) -> None:
    """A `ValueError` when a point load's material point lies outside its soft body's reference
    volume (where the map is not the body's: its force would act on nothing). Checked where the
    point and the volume are concrete and the volume's geometry is known."""
    body = robot.links[load.link].body
    if not isinstance(body, SoftBody) or not is_concrete(load.point):
        return
    vol = body.volume
    if not is_concrete(vol) or not has_geometry(vol):
        return
    point = np.asarray(load.point, dtype=float)
    key = (id(vol), point.tobytes())
    hit = _INSIDE.get(key)
    if hit is None:
        if len(_INSIDE) >= 256:
            _INSIDE.clear()
        hit = _INSIDE[key] = (vol, bool(contains(vol, point, tol=INSIDE_TOL)))
    if not hit[1]:
        x, y, z = point
        raise ValueError(
            f"PointLoad: the material point ({x:.6g}, {y:.6g}, {z:.6g}) is outside the "
            f"{vol.geometry} volume of link {load.link}'s body"
        )


def external_loads(
    robot: Robot, q: Array, pos: rec.LinkPosition, loads: tuple[Any, ...]
) -> rec.ExternalLoads:
    """The loads as `ExternalLoads` in each `S_i` (loads given in the world are rotated by the
    world pose of `S_i`; the generalized forces of point loads go to the body coordinates)."""
    dtype = pos.rot.dtype
    force = jnp.zeros((robot.n_links, 3), dtype)
    moment = jnp.zeros((robot.n_links, 3), dtype)
    gen = jnp.zeros(robot.n_q, dtype)
    rw = rec.world_poses(pos)[0] if any(load.frame == "world" for load in loads) else None
    for load in loads:
        rot_i = rw[load.link] if load.frame == "world" else jnp.eye(3, dtype=dtype)
        f_local, m_local, body_force = load.local(robot, q, rot_i)
        force = force.at[load.link].add(f_local)
        moment = moment.at[load.link].add(m_local)
        if body_force.size:  # a rigid body has no coordinates: no zero-size update
            gen = gen.at[robot.body_slice(load.link)].add(body_force)
    return rec.ExternalLoads(force, moment, gen)
