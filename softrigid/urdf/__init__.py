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

from ._chain import Chain, chain, links, load
from ._parse import Limits, rpy_matrix

__all__ = ["Chain", "Limits", "chain", "links", "load", "rpy_matrix"]
