"""The robot model: an immutable serial chain of links (joint + body) and its actuators."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._actuator import Actuator
from ._body import Body
from ._checks import as_tuple_of, as_vector, check_index
from ._module import module, static
from .joints import Joint

__all__ = ["Link", "Robot", "structure_error"]


def _kind(value: Any) -> str:
    """What a wrong joint or body argument is: its type's name, or for a class (`Fixed`
    where `Fixed()` was meant) the class and the call that makes one."""
    if isinstance(value, type):
        return f"the class {value.__name__} itself (an instance is needed: {value.__name__}(...))"
    return type(value).__name__


@module
class Link:
    """Joint `J_i` followed by body `B_i`; coordinates `q_i = (q_Ji, q_Bi)`."""

    joint: Joint
    body: Body

    def __post_init__(self) -> None:
        if not isinstance(self.joint, Joint):
            raise TypeError(
                f"Link: joint must be a softrigid.joints joint, got {_kind(self.joint)}"
            )
        if not isinstance(self.body, Body):
            raise TypeError(
                f"Link: body must be a softrigid.RigidBody or SoftBody, got {_kind(self.body)}"
            )

    @property
    def n_q(self) -> int:
        """`n_Ji + n_Bi`."""
        return self.joint.n_q + self.body.n_q


@module
class Robot:
    """An immutable serial chain of rigid and soft links, with its actuators.

    Args:
        links: sequence of `Link(joint, body)`, from the base outwards.
        gravity: `(3,)` gravitational acceleration in the base frame [m/s²].
        actuators: optional sequence of `softrigid.actuators` (joint motors, tendons, pressure
            chambers). Without actuators the robot's inputs are the generalized forces
            themselves (`A = I`, `u = ν`, `n_u = n_q`); with them the inputs are the actuators'
            (`ν = A(q) u`, `n_u` = their total number of inputs, in the order given).

    `q` is ordered link by link, and inside a link joint coordinates first, then body
    coordinates. The robot holds no state: every algorithm is a pure function of it.
    """

    links: tuple[Link, ...]
    gravity: Any
    actuators: tuple[Actuator, ...]
    n_q: int = static(default=0, init=False)
    n_u: int = static(default=0, init=False)

    def __init__(
        self,
        links: Sequence[Link],
        gravity: Any = (0.0, 0.0, -9.81),
        actuators: Sequence[Actuator] | Actuator | None = None,
    ) -> None:
        if isinstance(links, Link):
            raise TypeError("Robot: links must be a sequence of softrigid.Link, e.g. [link]")
        if not isinstance(links, Sequence) or isinstance(links, (str, bytes)):
            raise TypeError(
                f"Robot: links must be a sequence of softrigid.Link, got {type(links).__name__}"
            )
        links = tuple(links)
        if not links:
            raise ValueError("Robot: needs at least one link")
        for i, link in enumerate(links):
            if not isinstance(link, Link):
                raise TypeError(
                    f"Robot: links[{i}] must be a softrigid.Link, got {type(link).__name__}"
                )
        object.__setattr__(self, "links", links)
        object.__setattr__(self, "gravity", as_vector("Robot: gravity", gravity, 3))
        object.__setattr__(self, "n_q", sum(link.n_q for link in links))
        if self.n_q == 0:
            raise ValueError(
                "Robot: the links have no coordinates (every joint Fixed and every body "
                "rigid): there is nothing to move; give a joint or a body coordinates"
            )
        acts = _as_actuators(actuators)
        object.__setattr__(self, "actuators", acts)
        for act in acts:
            act.check(self)
        n_u = sum(act.n_inputs(self) for act in acts) if acts else self.n_q
        object.__setattr__(self, "n_u", n_u)

    @property
    def n_links(self) -> int:
        """Number of links `N`."""
        return len(self.links)

    def q_slices(self) -> tuple[slice, ...]:
        """The slice of `q` of each link."""
        out, start = [], 0
        for link in self.links:
            out.append(slice(start, start + link.n_q))
            start += link.n_q
        return tuple(out)

    def joint_slice(self, i: int) -> slice:
        """The slice of `q` of the joint coordinates `q_Ji` of link `i`."""
        sl = self.q_slices()[check_index("link index", i, self.n_links)]
        return slice(sl.start, sl.start + self.links[i].joint.n_q)

    def body_slice(self, i: int) -> slice:
        """The slice of `q` of the body coordinates `q_Bi` of link `i`."""
        sl = self.q_slices()[check_index("link index", i, self.n_links)]
        return slice(sl.start + self.links[i].joint.n_q, sl.stop)

    def split(self, q: Any) -> tuple[Any, ...]:
        """`q` `(..., n_q)` cut into the per-link vectors `q_i` `(..., n_i)`."""
        shape = getattr(q, "shape", None)
        if shape is None or len(shape) == 0 or shape[-1] != self.n_q:
            raise ValueError(
                f"Robot.split: q must have shape (..., {self.n_q}) (n_q), got "
                f"{shape if shape is not None else type(q).__name__}"
            )
        return tuple(q[..., s] for s in self.q_slices())

    def __len__(self) -> int:
        return len(self.links)


def _as_actuators(actuators: Any) -> tuple[Actuator, ...]:
    return as_tuple_of(actuators, Actuator, "Robot: actuators", "a softrigid.actuators actuator")


def _actual_sizes(robot: Robot) -> tuple[int, int | None]:
    """`(n_q, n_u)` from the robot's links and actuators (what its constructor set; `n_u` is
    `None` where an actuator no longer fits the links)."""
    n_q = sum(link.n_q for link in robot.links)
    try:
        n_u = sum(act.n_inputs(robot) for act in robot.actuators) if robot.actuators else n_q
    except IndexError:  # a joint motor's link index past the links
        n_u = None
    return n_q, n_u


def structure_error(robot: Robot) -> str | None:
    """Why the public functions refuse a robot changed outside its constructor, or `None`:
    leaves that carry a batch axis (a stack of robots called without `vmap`), or sizes that
    are not its links' and actuators' (`equinox.tree_at` keeps `n_q`, `n_u`)."""
    gravity = getattr(robot.gravity, "shape", ())
    if tuple(gravity) != (3,):
        return (
            f"the robot's leaves carry a batch axis (its gravity has shape {tuple(gravity)}, "
            "not (3,)): map a batch of robots with jax.vmap, e.g. "
            "jax.vmap(f, in_axes=(0, None, ...))(robots, q, ...)"
        )
    sizes = _actual_sizes(robot)
    if sizes != (robot.n_q, robot.n_u):
        return (
            f"the robot's sizes n_q = {robot.n_q}, n_u = {robot.n_u} are not those of its links "
            f"and actuators ({sizes[0]}, {sizes[1]}): it was changed outside its constructor "
            "(e.g. equinox.tree_at on its links, bodies or actuators, which keeps the old sizes "
            "and skips the checks); build it again with softrigid.Robot(links, gravity, "
            "actuators) or dataclasses.replace(robot, links=...)"
        )
    return None
