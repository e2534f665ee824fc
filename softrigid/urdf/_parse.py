"""Reading a URDF (`softrigid.urdf`): the XML's `<link>` inertials and `<joint>`s (type,
origin, axis, damping, limits, mimic) as plain data, checked to form one tree, URDF's
roll-pitch-yaw placements, and the path of joints from a base link to a tip link."""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Limits", "rpy_matrix"]

_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
_Placement = tuple[np.ndarray, np.ndarray]


class Limits(NamedTuple):
    """A URDF `<limit>` (stored, not enforced); `nan` where an attribute is absent."""

    lower: float
    upper: float
    effort: float
    velocity: float


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
    tensor = elem.find("inertia")
    if mass == 0:
        values = [] if tensor is None else list(tensor.attrib.values())
        if any(_nonzero(v) for v in values):  # Pinocchio keeps such a rotational inertia
            warnings.warn(
                f"urdf: {where} has zero mass and a non-zero <inertia>; the link is read as "
                "massless (its inertia dropped)",
                UserWarning,
                stacklevel=6,
            )
        return None
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


def _nonzero(text: str) -> bool:
    """Whether an attribute's text is a non-zero number (or not a number at all)."""
    try:
        return float(text) != 0
    except ValueError:
        return True


def _limits(where: str, elem: ET.Element | None) -> Limits | None:
    if elem is None:
        return None
    limits = Limits(
        *(
            float(_floats(where + " <limit>", elem, k, 1, (np.nan,))[0])
            for k in ("lower", "upper", "effort", "velocity")
        )
    )
    if limits.lower > limits.upper:  # (NaN, an absent bound, compares false)
        raise ValueError(f"{where} <limit>: lower {limits.lower} exceeds upper {limits.upper}")
    if limits.effort < 0 or limits.velocity < 0:
        raise ValueError(f"{where} <limit>: effort and velocity must be non-negative, got {limits}")
    return limits


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


def _read(source: str | bytes | os.PathLike) -> ET.Element:
    """The `<robot>` element of a URDF file path or XML text (starting with `<`; bytes are
    read as UTF-8)."""
    if isinstance(source, (bytes, bytearray)):
        try:
            source = bytes(source).decode("utf-8-sig")  # a byte-order mark is not text
        except UnicodeDecodeError as err:
            raise ValueError(f"urdf: the XML bytes are not UTF-8 ({err})") from None
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"urdf: expected a file path or the XML text, got {type(source).__name__}")
    try:
        if isinstance(source, str) and not source.strip("\ufeff \t\r\n"):
            raise ValueError("urdf: the source is empty; give a URDF file path or its XML text")
        if isinstance(source, str) and source.lstrip("\ufeff \t\r\n").startswith("<"):
            root = ET.fromstring(source.lstrip("\ufeff"))
        else:
            path = Path(source)
            if path.is_dir():
                raise IsADirectoryError(f"urdf: {str(path)!r} is a directory, not a URDF file")
            if not path.is_file():
                raise FileNotFoundError(f"urdf: no such file: {str(path)!r}")
            root = ET.parse(path).getroot()
    except ET.ParseError as err:
        raise ValueError(f"urdf: malformed XML: {err}") from None
    if root.tag.startswith("{") and root.tag.endswith("}robot"):
        # a default namespace (`<robot xmlns="...">`) prefixes every tag: URDF's tags are its
        # own, so read them without it (as urdfdom and Pinocchio do)
        namespace = root.tag[: -len("robot")]
        for elem in root.iter():
            if isinstance(elem.tag, str) and elem.tag.startswith(namespace):
                elem.tag = elem.tag[len(namespace) :]
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
    _check_mimics(by_child, names)
    roots = [name for name in inertials if name not in by_child]
    if len(roots) != 1:
        raise ValueError(f"urdf: the links must form one tree, found the roots {roots}")
    _check_acyclic(by_child)
    return inertials, by_child


def _check_mimics(by_child: dict[str, _Joint], names: set[str]) -> None:
    """A `ValueError` for a `<mimic>` without a `joint`, naming an unknown joint or the joint
    itself (URDF's mimic follows another joint's coordinate)."""
    for joint in by_child.values():
        if joint.mimic is None:
            continue
        where = f"urdf: joint {joint.name!r} <mimic>"
        if not joint.mimic:
            raise ValueError(f"{where} needs joint=... (the joint it follows)")
        if joint.mimic == joint.name:
            raise ValueError(f"{where} names the joint itself; it must follow another joint")
        if joint.mimic not in names:
            raise ValueError(f"{where} follows the unknown joint {joint.mimic!r}")


def _check_acyclic(by_child: dict[str, _Joint]) -> None:
    """A `ValueError` naming the links of a cycle of joints (a cycle has no root, so one root
    does not rule it out when the cycle is apart from the root's tree)."""
    done: set[str] = set()
    for start in by_child:
        trail: list[str] = []
        link = start
        while link in by_child and link not in done:
            if link in trail:
                cycle = [*trail[trail.index(link) :], link][::-1]
                raise ValueError(f"urdf: the joints form a cycle ({' → '.join(cycle)})")
            trail.append(link)
            link = by_child[link].parent
        done.update(trail)


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
    # links above or beside a base that is not the root are dropped too
    dropped += [name for name in links if name not in on_chain and name not in dropped]
    if dropped:
        warnings.warn(
            f"urdf: chain {base!r} → {tip!r}: links off the chain are dropped: {dropped}",
            stacklevel=3,
        )
    return path
