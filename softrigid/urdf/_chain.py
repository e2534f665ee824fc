"""A URDF chain as softrigid links (`softrigid.urdf.chain`, `links`, `load`): URDF joints
become softrigid joints, inertials rigid bodies, massless links on fixed joints are merged into
the next joint's origin, and user links are attached after named URDF links."""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import joints
from .._checks import as_flag, as_float
from .._model import Link, Robot
from .._rigid_body import RigidBody
from ._parse import (
    _IDENTITY,
    Limits,
    _compose,
    _Inertial,
    _Joint,
    _path,
    _Placement,
    _read,
    _tree,
)

__all__ = ["Chain", "chain", "links", "load"]


class Chain(NamedTuple):
    """A URDF chain as softrigid links, with the names needed to read results.

    Attributes:
        links: the `Link`s, base first (attached links included).
        link_names: for each link, its URDF link name (`"<link>/attached[k]"` for the `k`-th
            link attached after `<link>`).
        joint_names: for each link, its URDF joint name (`"floating_base"` for the joint given
            by `floating_base=True`, `"<link>/attached[k]"` for attached links).
        frames: every URDF link on the chain (merged massless ones included) →
            `(i, (R, t))`, its placement in the frame of the body of link `i` (`i = −1`: the
            base frame).
        limits: URDF joint name → `Limits`, for the joints of the chain with a `<limit>`.
    """

    links: list[Link]
    link_names: list[str]
    joint_names: list[str]
    frames: dict[str, tuple[int, _Placement]]
    limits: dict[str, Limits]


def _softrigid_joint(joint: _Joint, origin: _Placement, joint_damping: bool) -> joints.Joint:
    damping = joint.damping if joint_damping else 0.0
    try:
        if joint.kind in ("revolute", "continuous"):
            return joints.Revolute(joint.axis, origin=origin, damping=damping)
        if joint.kind == "prismatic":
            return joints.Prismatic(joint.axis, origin=origin, damping=damping)
        if joint.kind == "planar":
            return joints.Planar(joint.axis, origin=origin, damping=damping)
        if joint.kind == "floating":
            return joints.Free(origin=origin)
        return joints.Fixed(origin=origin)
    except ValueError as err:
        raise ValueError(f"urdf: joint {joint.name!r}: {err}") from None


def _body(name: str, inertial: _Inertial) -> RigidBody:
    try:
        return RigidBody(inertial.mass, inertial.com, inertial.inertia)
    except ValueError as err:
        raise ValueError(f"urdf: link {name!r}: {err}") from None


def _placed(joint: joints.Joint, placement: _Placement) -> joints.Joint:
    """`joint` with its origin moved to `placement · origin`."""
    out = copy.copy(joint)
    rot, trans = _compose(
        placement, (np.asarray(joint.origin_rotation), np.asarray(joint.origin_translation))
    )
    object.__setattr__(out, "origin_rotation", as_float(rot))
    object.__setattr__(out, "origin_translation", as_float(trans))
    return out


def _check_attach(attach: Any) -> dict[str, list[Link]]:
    if attach is None:
        return {}
    if not isinstance(attach, Mapping):
        raise TypeError(
            "urdf: attach must be a mapping {link name: [softrigid.Link, ...]}, "
            f"got {type(attach).__name__}"
        )
    out = {}
    for name, value in attach.items():
        if not isinstance(value, (Link, Sequence)) or isinstance(value, str):
            raise TypeError(
                f"urdf: attach[{name!r}] must be a softrigid.Link or a sequence of them, "
                f"got {type(value).__name__}"
            )
        extra = [value] if isinstance(value, Link) else list(value)
        for k, link in enumerate(extra):
            if not isinstance(link, Link):
                raise TypeError(
                    f"urdf: attach[{name!r}][{k}] must be a softrigid.Link, got {type(link).__name__}"
                )
        out[name] = extra
    return out


def chain(
    source: str | bytes | os.PathLike,
    *,
    base: str | None = None,
    tip: str | None = None,
    floating_base: bool = False,
    attach: Mapping[str, Sequence[Link]] | None = None,
    joint_damping: bool = True,
) -> Chain:
    """The serial chain `base → tip` of a URDF as softrigid `Link`s, with names and frames.

    Args:
        source: a URDF file path, or the URDF text itself (a string starting with `<`, or
            its UTF-8 bytes).
        base: the link fixed to the world (default: the URDF root); gravity and the
            coordinates of a floating base are expressed in its frame.
        tip: the end link; required when the tree branches below `base` (the other branches
            are dropped with a warning). Default: the only leaf below `base`.
        floating_base: give the base link a `Free` joint (6 coordinates `(p, φ)`, first in
            `q`); the base link then needs an `<inertial>` with mass > 0.
        attach: `{link name: [Link, ...]}`: links (soft arms, tools) inserted after the named
            URDF link of the chain; their first joint's origin is taken in that link's frame,
            and the URDF chain, if it goes on, continues from the last attached link's distal
            frame (the placement of the next URDF joint is then applied there).
        joint_damping: use `<dynamics damping>` as the joints' viscous dampers.

    Returns:
        A `Chain` (links, link and joint names, frames of every URDF link, joint limits).
    """
    floating_base = as_flag("urdf: floating_base", floating_base)
    joint_damping = as_flag("urdf: joint_damping", joint_damping)
    for name, value in (("base", base), ("tip", tip)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"urdf: {name} must be a link name (a string), got {value!r}")
    root = _read(source)
    inertials, by_child = _tree(root)
    names = list(inertials)
    base = base if base is not None else next(n for n in names if n not in by_child)
    path = _path(by_child, names, base, tip)
    extra = _check_attach(attach)
    on_chain = {base, *(j.child for j in path)}
    for name in extra:
        if name not in on_chain:
            raise ValueError(f"urdf: attach: link {name!r} is not on the chain {base!r} → ...")

    out = Chain([], [], [], {}, {})
    # placement of the current URDF link frame in the frame of the last body (−1: the base)
    last, pending = -1, _IDENTITY

    def add(link: Link, link_name: str, joint_name: str) -> None:
        nonlocal last, pending
        if pending is not _IDENTITY:
            link = Link(_placed(link.joint, pending), link.body)
        out.links.append(link)
        out.link_names.append(link_name)
        out.joint_names.append(joint_name)
        last, pending = len(out.links) - 1, _IDENTITY

    def reached(link_name: str) -> None:
        out.frames[link_name] = (last, pending)
        for k, link in enumerate(extra.get(link_name, ())):
            add(link, f"{link_name}/attached[{k}]", f"{link_name}/attached[{k}]")

    if floating_base:
        if inertials[base] is None:
            raise ValueError(
                f"urdf: floating_base: the base link {base!r} has no mass; name a link with "
                "an <inertial> as base=..."
            )
        add(Link(joints.Free(), _body(base, inertials[base])), base, "floating_base")
    reached(base)
    for joint in path:
        if joint.mimic is not None:
            warnings.warn(
                f"urdf: joint {joint.name!r} mimics {joint.mimic!r}; softrigid keeps it as an "
                "independent coordinate (impose the coupling yourself)",
                stacklevel=2,
            )
        if joint.limits is not None:
            out.limits[joint.name] = joint.limits
        inertial = inertials[joint.child]
        if inertial is None:
            if joint.kind != "fixed":
                raise ValueError(
                    f"urdf: link {joint.child!r} has no mass (no <inertial> or mass 0) but its "
                    f"joint {joint.name!r} is {joint.kind}; softrigid bodies need mass > 0: "
                    "give the link an <inertial>"
                )
            # a massless link on a fixed joint is merged: its frame moves the next origin
            pending = _compose(pending, joint.origin)
        else:
            sr_joint = _softrigid_joint(joint, joint.origin, joint_damping)
            add(Link(sr_joint, _body(joint.child, inertial)), joint.child, joint.name)
        reached(joint.child)
    if not out.links:
        raise ValueError(f"urdf: no link with mass on the chain from the base link {base!r}")
    return out


def links(
    source: str | bytes | os.PathLike,
    *,
    base: str | None = None,
    tip: str | None = None,
    floating_base: bool = False,
    attach: Mapping[str, Sequence[Link]] | None = None,
    joint_damping: bool = True,
) -> list[Link]:
    """The `Link`s of a URDF chain, base first (arguments as `chain`)."""
    return chain(
        source,
        base=base,
        tip=tip,
        floating_base=floating_base,
        attach=attach,
        joint_damping=joint_damping,
    ).links


def load(
    source: str | bytes | os.PathLike,
    *,
    base: str | None = None,
    tip: str | None = None,
    floating_base: bool = False,
    attach: Mapping[str, Sequence[Link]] | None = None,
    joint_damping: bool = True,
    gravity: Any = (0.0, 0.0, -9.81),
) -> Robot:
    """A `Robot` of a URDF chain (arguments as `chain`).

    Args:
        gravity: `(3,)` gravitational acceleration in the base link's frame [m/s²].
    """
    chain_links = links(
        source,
        base=base,
        tip=tip,
        floating_base=floating_base,
        attach=attach,
        joint_damping=joint_damping,
    )
    return Robot(chain_links, gravity=gravity)
