"""Import of a serial chain from a URDF file: rigid links, joints, origins and inertials.

    robot = softrigid.urdf.load("arm.urdf", tip="tool0",
                                attach={"tool0": [softrigid.Link(joint, soft_body)]})

What is read (URDF's `<robot>`; everything else is ignored):

- `<joint type=...>` → `revolute` and `continuous`: `joints.Revolute`; `prismatic`:
  `joints.Prismatic`; `fixed`: `joints.Fixed`; `floating`: `joints.Free`; `planar`:
  `joints.Planar` (normal `<axis>`, in-plane axes as documented there). `<axis xyz>` defaults
  to `(1, 0, 0)` as in the URDF specification. `<dynamics damping>` becomes the joint's viscous
  damper `R = ½ d q̇²` (`joint_damping=False` ignores it; `friction`, Coulomb friction, is not a
  Rayleigh dissipation and is ignored).
- `<origin xyz rpy>`: `T = (R, xyz)` with URDF's fixed-axis roll-pitch-yaw,
  `R = Rz(yaw) Ry(pitch) Rx(roll)`; missing attributes are zero.
- `<inertial>`: `mass`, the inertial frame's `<origin>` (centre of mass `xyz`, principal or
  not, axes rotated by `rpy`) and `<inertia ixx ixy ixz iyy iyz izz>` about the centre of mass
  in the inertial frame; it becomes `RigidBody(mass, com = xyz, inertia = R I Rᵀ)` in the link
  frame.
- `<limit>` is stored in `Chain.limits` and not enforced (the dynamics has no joint limits);
  a `<mimic>` joint keeps its own coordinate (a `UserWarning` says so: impose
  `q_j = multiplier q_m + offset` yourself); `<visual>` and `<collision>` geometry, `package://`
  mesh paths included, is never opened (meshes are optional: `softrigid.io` draws rigid links
  from meshes you pass it); `<transmission>`, `<gazebo>` and other tags are ignored.

Frames. URDF places each joint in its parent link's frame and each child link's frame at the
joint's moving frame; softrigid's `Link(joint, body)` places the joint in the previous body's
distal frame. Here every body's proximal and distal frames are its URDF link frame (distal
placement = identity) and each URDF joint's `<origin>` is the softrigid joint's `origin`, so
`forward_kinematics(robot, q)[i]` is the world pose of the URDF link `Chain.link_names[i]`.

Bodies must have mass > 0 in softrigid. A link without `<inertial>` (or with zero mass)
reached by a `fixed` joint (`tool0`, `flange`, `base_footprint`) is merged: its placement is
composed into the next joint's `origin` and kept in `Chain.frames`. A massless link behind a
moving joint has no softrigid equivalent: it raises an error naming the link.

Chain. The base link (default: the URDF root) is fixed to the world (its inertial is unused;
gravity is given in its frame), unless `floating_base=True`, which gives it a `Free` joint. The
tree must be a serial chain below the base; on a branched tree name the end link `tip`: the
chain base → tip is taken and the links off it are dropped with a `UserWarning`.

Parser: the standard library's `xml.etree.ElementTree` is enough: URDF is plain XML without
namespaces, entities or schema validation, and the kinematic tree is a handful of tags, so no
URDF library (`urdfdom`, `urdf_parser_py`) needs to be installed.
"""

from __future__ import annotations

import copy
import os
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from . import joints
from ._checks import as_float
from ._model import Link, Robot
from ._rigid_body import RigidBody

__all__ = ["Chain", "Limits", "chain", "links", "load", "rpy_matrix"]

_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
_Placement = tuple[np.ndarray, np.ndarray]


class Limits(NamedTuple):
    """A URDF `<limit>` (stored, not enforced); `nan` where an attribute is absent."""

    lower: float
    upper: float
    effort: float
    velocity: float


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


@dataclass(frozen=True)
class _Inertial:
    mass: float
    com: np.ndarray
    inertia: np.ndarray  # about the centre of mass, link-frame axes


@dataclass(frozen=True)
class _Joint:
    name: str
    kind: str
    parent: str
    child: str
    origin: _Placement
    axis: np.ndarray
    damping: float
    limits: Limits | None
    mimic: str | None


def rpy_matrix(rpy: Any) -> np.ndarray:
    """URDF's fixed-axis roll-pitch-yaw: `R = Rz(yaw) Ry(pitch) Rx(roll)` `(3, 3)`.

    Args:
        rpy: `(3,)` angles `(roll, pitch, yaw)` [rad] about the fixed x, y, z axes.
    """
    r, p, y = (float(a) for a in rpy)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def _compose(a: _Placement, b: _Placement) -> _Placement:
    return a[0] @ b[0], a[1] + a[0] @ b[1]


_IDENTITY: _Placement = (np.eye(3), np.zeros(3))


def _floats(where: str, elem: ET.Element | None, attr: str, n: int, default: Any) -> np.ndarray:
    text = None if elem is None else elem.get(attr)
    if text is None:
        if default is None:
            raise ValueError(f"urdf: {where} needs the attribute {attr!r}")
        return np.array(default, dtype=float)
    try:
        values = np.array([float(v) for v in text.split()])
    except ValueError:
        raise ValueError(f"urdf: {where}: {attr}={text!r} is not a list of numbers") from None
    if values.shape != (n,) or not np.all(np.isfinite(values)):
        raise ValueError(f"urdf: {where}: {attr}={text!r} must be {n} finite numbers")
    return values


def _origin(where: str, elem: ET.Element | None) -> _Placement:
    if elem is None:
        return _IDENTITY
    xyz = _floats(where, elem, "xyz", 3, (0.0, 0.0, 0.0))
    rpy = _floats(where, elem, "rpy", 3, (0.0, 0.0, 0.0))
    return rpy_matrix(rpy), xyz


def _inertial(name: str, link: ET.Element) -> _Inertial | None:
    """The link's inertial in its frame, or `None` without `<inertial>` or with zero mass."""
    elem = link.find("inertial")
    if elem is None:
        return None
    where = f"link {name!r} <inertial>"
    mass = float(_floats(where + " <mass>", elem.find("mass"), "value", 1, None)[0])
    if mass < 0:
        raise ValueError(f"urdf: {where}: mass must be non-negative, got {mass}")
    if mass == 0:
        return None
    tensor = elem.find("inertia")
    if tensor is None:
        raise ValueError(f"urdf: {where} has a mass but no <inertia>")
    ixx, ixy, ixz, iyy, iyz, izz = (
        _floats(where + " <inertia>", tensor, k, 1, None)[0]
        for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    )
    inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    rot, com = _origin(where + " <origin>", elem.find("origin"))
    # inertia about the centre of mass, rotated from the inertial frame into the link frame
    return _Inertial(mass, com, rot @ inertia @ rot.T)


def _limits(where: str, elem: ET.Element | None) -> Limits | None:
    if elem is None:
        return None
    return Limits(
        *(
            float(_floats(where + " <limit>", elem, k, 1, (np.nan,))[0])
            for k in ("lower", "upper", "effort", "velocity")
        )
    )


def _joint(elem: ET.Element) -> _Joint:
    name = elem.get("name")
    if not name:
        raise ValueError("urdf: a <joint> has no name")
    kind = elem.get("type")
    if kind not in _JOINT_TYPES:
        raise ValueError(
            f"urdf: joint {name!r} has type {kind!r}; supported types: {', '.join(_JOINT_TYPES)}"
        )
    where = f"joint {name!r}"
    parent, child = elem.find("parent"), elem.find("child")
    if parent is None or child is None or not parent.get("link") or not child.get("link"):
        raise ValueError(f"urdf: {where} needs <parent link=...> and <child link=...>")
    mimic = elem.find("mimic")
    return _Joint(
        name=name,
        kind=kind,
        parent=parent.get("link"),
        child=child.get("link"),
        origin=_origin(where + " <origin>", elem.find("origin")),
        axis=_floats(where + " <axis>", elem.find("axis"), "xyz", 3, (1.0, 0.0, 0.0)),
        damping=float(
            _floats(where + " <dynamics>", elem.find("dynamics"), "damping", 1, (0.0,))[0]
        ),
        limits=_limits(where, elem.find("limit")),
        mimic=None if mimic is None else mimic.get("joint"),
    )


def _read(source: str | os.PathLike) -> ET.Element:
    """The `<robot>` element of a URDF file path or XML string (text starting with `<`)."""
    try:
        if isinstance(source, str) and source.lstrip().startswith("<"):
            root = ET.fromstring(source)
        else:
            path = Path(source)
            if not path.is_file():
                raise FileNotFoundError(f"urdf: no such file: {str(path)!r}")
            root = ET.parse(path).getroot()
    except ET.ParseError as err:
        raise ValueError(f"urdf: malformed XML: {err}") from None
    if root.tag != "robot":
        raise ValueError(f"urdf: the root element must be <robot>, got <{root.tag}>")
    return root


def _tree(root: ET.Element) -> tuple[dict[str, _Inertial | None], dict[str, _Joint]]:
    """Links (name → inertial) and joints by child link, checked to form a tree."""
    inertials: dict[str, _Inertial | None] = {}
    for elem in root.findall("link"):
        name = elem.get("name")
        if not name:
            raise ValueError("urdf: a <link> has no name")
        if name in inertials:
            raise ValueError(f"urdf: duplicate link {name!r}")
        inertials[name] = _inertial(name, elem)
    by_child: dict[str, _Joint] = {}
    names: set[str] = set()
    for elem in root.findall("joint"):
        joint = _joint(elem)
        if joint.name in names:
            raise ValueError(f"urdf: duplicate joint {joint.name!r}")
        names.add(joint.name)
        for link in (joint.parent, joint.child):
            if link not in inertials:
                raise ValueError(f"urdf: joint {joint.name!r} refers to the unknown link {link!r}")
        if joint.child in by_child:
            raise ValueError(
                f"urdf: link {joint.child!r} has two parent joints "
                f"({by_child[joint.child].name!r}, {joint.name!r}); URDF needs a tree"
            )
        by_child[joint.child] = joint
    if not inertials:
        raise ValueError("urdf: the robot has no <link>")
    roots = [name for name in inertials if name not in by_child]
    if len(roots) != 1:
        raise ValueError(f"urdf: the links must form one tree, found the roots {roots}")
    return inertials, by_child


def _path(by_child: dict[str, _Joint], links: Sequence[str], base: str, tip: str | None):
    """The joints from `base` to `tip` (default: the only leaf below `base`)."""
    children: dict[str, list[str]] = {name: [] for name in links}
    for joint in by_child.values():
        children[joint.parent].append(joint.child)
    for name, role in ((base, "base"), (tip, "tip")):
        if name is not None and name not in children:
            raise ValueError(f"urdf: {role} link {name!r} is not in the URDF")
    if tip is None:
        tip = base
        while children[tip]:
            if len(children[tip]) > 1:
                raise ValueError(
                    f"urdf: the tree branches at link {tip!r} (children {children[tip]}); "
                    "softrigid models serial chains: name the end link with tip=... "
                    "(the other branches are then dropped)"
                )
            tip = children[tip][0]
    path, link = [], tip
    while link != base:
        if link not in by_child or len(path) > len(by_child):  # the root, or a cycle
            raise ValueError(f"urdf: tip link {tip!r} is not below the base link {base!r}")
        path.append(by_child[link])
        link = by_child[link].parent
    path.reverse()
    on_chain = {base, *(j.child for j in path)}
    dropped, stack = [], [base]
    while stack:
        for child in children[stack.pop()]:
            if child not in on_chain:
                dropped.append(child)
            stack.append(child)
    if dropped:
        warnings.warn(
            f"urdf: chain {base!r} → {tip!r}: links off the chain are dropped: {dropped}",
            stacklevel=3,
        )
    return path


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
        extra = [value] if isinstance(value, Link) else list(value)
        for k, link in enumerate(extra):
            if not isinstance(link, Link):
                raise TypeError(
                    f"urdf: attach[{name!r}][{k}] must be a softrigid.Link, got {type(link).__name__}"
                )
        out[name] = extra
    return out


def chain(
    source: str | os.PathLike,
    *,
    base: str | None = None,
    tip: str | None = None,
    floating_base: bool = False,
    attach: Mapping[str, Sequence[Link]] | None = None,
    joint_damping: bool = True,
) -> Chain:
    """The serial chain `base → tip` of a URDF as softrigid `Link`s, with names and frames.

    Args:
        source: a URDF file path, or the URDF text itself (a string starting with `<`).
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
    source: str | os.PathLike,
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
    source: str | os.PathLike,
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
