"""The robot model: an immutable serial chain of links (joint + body)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
from jax import Array

from ._bodies import RigidBody, SoftBody
from ._checks import as_vector
from ._module import module, static
from .joints import Joint

__all__ = ["Link", "Robot"]


@module
class Link:
    """Joint `J_i` followed by body `B_i`; coordinates `q_i = (q_Ji, q_Bi)`."""

    joint: Joint
    body: RigidBody | SoftBody

    def __post_init__(self) -> None:
        if not isinstance(self.joint, Joint):
            raise TypeError(
                f"Link: joint must be a softrigid.joints joint, got {type(self.joint).__name__}"
            )
        if not isinstance(self.body, (RigidBody, SoftBody)):
            raise TypeError(
                f"Link: body must be a softrigid.RigidBody or SoftBody, got {type(self.body).__name__}"
            )

    @property
    def n_q(self) -> int:
        """`n_Ji + n_Bi`."""
        return self.joint.n_q + self.body.n_q


@module
class Robot:
    """An immutable serial chain of rigid and soft links.

    Args:
        links: sequence of `Link(joint, body)`, from the base outwards.
        gravity: `(3,)` gravitational acceleration in the base frame [m/s²].

    `q` is ordered link by link, and inside a link joint coordinates first, then body
    coordinates. The robot holds no state: every algorithm is a pure function of it.
    """

    links: tuple[Link, ...]
    gravity: Array
    n_q: int = static(default=0, init=False)

    def __init__(self, links: Sequence[Link], gravity: Any = (0.0, 0.0, -9.81)) -> None:
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

    def split(self, q: Array) -> tuple[Array, ...]:
        """`q` cut into the per-link vectors `q_i`."""
        return tuple(q[..., s] for s in self.q_slices())

    def __len__(self) -> int:
        return len(self.links)

    def zeros(self) -> Array:
        """A zero configuration `(n_q,)`."""
        return jnp.zeros(self.n_q)
