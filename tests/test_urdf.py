"""URDF import (`softrigid.urdf`) against the independent NumPy Newton–Euler oracle.

The oracle's links are written here by hand from the numbers of `data/arm.urdf` (URDF's
fixed-axis roll-pitch-yaw through SciPy's extrinsic "xyz" Euler angles, the inertia rotated into
the link frame, the massless `mount` link's placement composed into the next joint's origin),
not through the loader. Optional peer check against Pinocchio's `rnea`/`crba` when installed.
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import newton_euler as ne
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import softrigid as sr
from softrigid import joints, kinematics, quadrature, urdf

ARM = Path(__file__).parent / "data" / "arm.urdf"
RTOL = 1e-10
GRAVITY = np.array([0.0, 0.0, -9.81])


def _rel_err(got, ref) -> float:
    got, ref = np.asarray(got), np.asarray(ref)
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def _rpy(roll, pitch, yaw) -> np.ndarray:
    # URDF rpy: rotations about the fixed x, then y, then z axes (extrinsic "xyz")
    return Rotation.from_euler("xyz", [roll, pitch, yaw]).as_matrix()


def _inertia(ixx, ixy, ixz, iyy, iyz, izz) -> np.ndarray:
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def _rigid(kind, axis, origin, mass, inertial_xyz, inertial_rpy, inertia) -> ne.Link:
    rot = _rpy(*inertial_rpy)
    axis = np.asarray(axis, dtype=float)
    return ne.Link(
        kind=kind,
        axis=axis / np.linalg.norm(axis),
        origin_rot=origin[0],
        origin_t=np.asarray(origin[1], dtype=float),
        mass=mass,
        com=np.asarray(inertial_xyz, dtype=float),
        inertia=rot @ inertia @ rot.T,
    )


HALF_PI = np.pi / 2
MOUNT = (_rpy(0, -0.5, 0.2), np.array([0.4, 0, 0]))  # massless link2 → mount (fixed)
SLIDER = (_rpy(0.3, 0.2, -0.1), np.array([0.02, 0.03, 0.05]))
TOOL = (_rpy(-HALF_PI, 0, 0), np.array([0, 0.15, 0]))  # massless link5 → tool0 (fixed)


def _oracle_links() -> list[ne.Link]:
    """`data/arm.urdf` as Newton–Euler links (base_link is the world: its inertial is unused)."""
    slider_origin = (MOUNT[0] @ SLIDER[0], MOUNT[1] + MOUNT[0] @ SLIDER[1])
    return [
        _rigid(
            "revolute",
            (0, 0, 1),
            (_rpy(0, 0, 0.3), (0, 0, 0.1)),
            2.5,
            (0.01, -0.02, 0.15),
            (0.1, -0.2, 0.3),
            _inertia(0.02, 0.001, -0.002, 0.025, 0.003, 0.012),
        ),
        _rigid(
            "revolute",
            (0, 0.6, 0.8),
            (_rpy(HALF_PI, 0, 0), (0.05, 0, 0.3)),
            1.8,
            (0.2, 0.01, 0),
            (0, 0.4, 0),
            _inertia(0.004, -0.0005, 0.0008, 0.03, 0.0002, 0.031),
        ),
        _rigid(
            "prismatic",
            (1, 0, 0),
            slider_origin,
            1.2,
            (0.1, 0, 0.02),
            (0, 0, 0),
            _inertia(0.001, 0.0001, 0, 0.006, -0.0002, 0.0062),
        ),
        _rigid(
            "fixed",
            (1, 0, 0),
            (_rpy(0, 0, 1.0), (0.25, 0, 0)),
            0.5,
            (0.03, 0.01, -0.02),
            (0.2, 0.1, 0),
            _inertia(0.0004, 0.00002, 0, 0.0005, 0, 0.0003),
        ),
        _rigid(
            "revolute",
            (0, 1, 0),
            (_rpy(-0.4, 0.3, 0.8), (0.05, 0, 0.02)),
            0.7,
            (0, 0.08, 0.01),
            (0.5, 0, -0.3),
            _inertia(0.0015, 0.0001, -0.0001, 0.0008, 0.0002, 0.0016),
        ),
    ]


def _states(n: int, count: int = 3, seed: int = 3):
    rng = np.random.default_rng(seed)
    return [tuple(rng.uniform(-1.0, 1.0, (3, n))) for _ in range(count)]


# `(ν, M)` from one pass over the position level, compiled once for the arm
_id_and_mass = jax.jit(sr.mass_inverse_dynamics)


def test_rpy_matrix_is_fixed_axis_roll_pitch_yaw():
    rpy = (0.3, -1.1, 2.4)
    np.testing.assert_allclose(urdf.rpy_matrix(rpy), _rpy(*rpy), rtol=0, atol=1e-15)


def test_chain_structure_names_and_limits():
    chain = urdf.chain(ARM)
    assert chain.link_names == ["link1", "link2", "link3", "link4", "link5"]
    assert chain.joint_names == ["shoulder", "elbow", "slider", "bracket", "wrist"]
    kinds = [type(link.joint) for link in chain.links]
    assert kinds == [
        joints.Revolute,
        joints.Revolute,
        joints.Prismatic,
        joints.Fixed,
        joints.Revolute,
    ]
    assert set(chain.limits) == {"shoulder", "slider", "wrist"}
    assert chain.limits["slider"] == urdf.Limits(0.0, 0.2, 100.0, 0.5)
    # merged massless links keep their frames: mount in link2's body, tool0 in link5's
    index, (rot, trans) = chain.frames["tool0"]
    assert index == 4
    np.testing.assert_allclose(rot, TOOL[0], atol=1e-15)
    np.testing.assert_allclose(trans, TOOL[1], atol=1e-15)
    assert chain.frames["mount"][0] == 1
    assert chain.frames["base_link"][0] == -1
    assert float(chain.links[0].joint.damping) == 0.3
    assert float(urdf.chain(ARM, joint_damping=False).links[0].joint.damping) == 0.0


def test_inverse_dynamics_and_mass_matrix_match_newton_euler():
    robot = urdf.load(ARM, gravity=GRAVITY, joint_damping=False)
    links = _oracle_links()
    assert robot.n_q == ne.n_q(links) == 4
    for q, qd, qdd in [(np.zeros(4), np.ones(4), -np.ones(4)), *_states(4)]:
        nu, mass = _id_and_mass(robot, jnp.asarray(q), jnp.asarray(qd), jnp.asarray(qdd))
        assert _rel_err(nu, ne.inverse_dynamics(links, q, qd, qdd, GRAVITY)) < RTOL
        assert _rel_err(mass, ne.mass_matrix(links, q)) < RTOL


def test_joint_damping_adds_the_viscous_force():
    damped = urdf.load(ARM, gravity=GRAVITY)
    q, qd, _ = _states(4, 1, seed=8)[0]
    force = np.asarray(sr.damping_force(damped, jnp.asarray(q), jnp.asarray(qd)))
    np.testing.assert_allclose(force, [0.3 * qd[0], 0.0, 0.0, 0.0], rtol=1e-15, atol=0)


def _soft_link(origin) -> sr.Link:
    body = sr.SoftBody(
        kinematics.PlanarConstantCurvature(0.2),
        quadrature.cylinder(0.02, 0.2, 2, 1, 3),
        density=1000.0,
    )
    return sr.Link(joints.Revolute((0.0, 1.0, 0.0), origin=origin), body)


def _assert_same_model(a, b):
    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    assert tree_a == tree_b
    for x, y in zip(leaves_a, leaves_b):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=1e-15)


def test_soft_arm_attached_after_the_flange():
    """`attach={"tool0": [...]}` appends the soft link with its origin taken in tool0's frame:
    the same model as the rigid links from the oracle's numbers plus the soft link whose origin
    is composed by hand; its base point is at `FK(link5) · tool0 · origin` (NumPy oracle)."""
    user_origin = (_rpy(0.0, 0.0, 0.5), np.array([0.0, 0.0, 0.01]))
    soft = _soft_link(user_origin)
    chain = urdf.chain(ARM, attach={"tool0": [soft]}, joint_damping=False)
    assert chain.link_names[-1] == "tool0/attached[0]"
    links = _oracle_links()
    composed = (TOOL[0] @ user_origin[0], TOOL[1] + TOOL[0] @ user_origin[1])
    by_hand = [
        sr.Link(
            {"revolute": joints.Revolute, "prismatic": joints.Prismatic}[link.kind](
                link.axis, origin=(link.origin_rot, link.origin_t)
            )
            if link.kind != "fixed"
            else joints.Fixed(origin=(link.origin_rot, link.origin_t)),
            sr.RigidBody(link.mass, link.com, link.inertia),
        )
        for link in links
    ] + [sr.Link(joints.Revolute((0.0, 1.0, 0.0), origin=composed), soft.body)]
    _assert_same_model(chain.links, by_hand)

    robot = sr.Robot(chain.links, gravity=GRAVITY)
    q = np.array([0.4, -0.7, 0.1, 0.9, 0.3, 1.2])
    rot, trans = ne.forward_kinematics(links, q[:4])
    point = sr.world_points(robot, jnp.asarray(q), 5, jnp.zeros((1, 3)))
    expected = trans[-1] + rot[-1] @ composed[1]
    np.testing.assert_allclose(np.asarray(point)[0], expected, rtol=0, atol=1e-14)


def test_attach_in_the_middle_continues_the_chain_from_the_attached_tip():
    origin = (np.eye(3), np.array([0.0, 0.0, 0.02]))
    chain = urdf.chain(ARM, attach={"mount": [_soft_link(origin)]})
    assert chain.link_names == ["link1", "link2", "mount/attached[0]", "link3", "link4", "link5"]
    soft, slider = chain.links[2], chain.links[3]
    # the soft link attaches at mount (placement composed in), the slider at the soft tip
    np.testing.assert_allclose(soft.joint.origin_rotation, MOUNT[0], atol=1e-15)
    np.testing.assert_allclose(
        soft.joint.origin_translation, MOUNT[1] + MOUNT[0] @ origin[1], atol=1e-15
    )
    np.testing.assert_allclose(slider.joint.origin_rotation, SLIDER[0], atol=1e-15)
    np.testing.assert_allclose(slider.joint.origin_translation, SLIDER[1], atol=1e-15)


def test_floating_base_and_joint_types():
    text = """<robot name="r">
      <link name="body"><inertial><mass value="2"/>
        <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.25"/></inertial></link>
      <link name="slider"><inertial><mass value="1"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
      <link name="puck"><inertial><origin xyz="0.1 0 0"/><mass value="1"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
      <joint name="plane" type="planar"><parent link="body"/><child link="slider"/>
        <axis xyz="0 0 2"/><dynamics damping="0.5"/></joint>
      <joint name="drift" type="floating"><parent link="slider"/><child link="puck"/>
        <origin xyz="0 0 0.3"/></joint>
    </robot>"""
    chain = urdf.chain(text, floating_base=True)
    assert [type(link.joint) for link in chain.links] == [joints.Free, joints.Planar, joints.Free]
    assert chain.joint_names[0] == "floating_base"
    np.testing.assert_allclose(chain.links[1].joint.normal, [0, 0, 1])
    np.testing.assert_allclose(chain.links[1].joint.damping, [0.5, 0.5, 0.5])
    np.testing.assert_allclose(chain.links[2].joint.origin_translation, [0, 0, 0.3])
    assert sr.Robot(chain.links).n_q == 6 + 3 + 6
    # without the option the base body is the world and carries no coordinate
    assert urdf.load(text).n_q == 3 + 6


def _robot_xml(body: str) -> str:
    return f'<robot name="r"><link name="a"/>{body}</robot>'


_INERTIAL = (
    '<inertial><mass value="1"/>'
    '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>'
)


def _joint_xml(name, kind, parent, child, extra=""):
    return (
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
        f'<child link="{child}"/>{extra}</joint>'
    )


def test_branched_tree_needs_a_tip_and_warns_about_dropped_links():
    text = _robot_xml(
        f'<link name="b">{_INERTIAL}</link><link name="c">{_INERTIAL}</link>'
        f'<link name="d">{_INERTIAL}</link>'
        + _joint_xml("ab", "revolute", "a", "b")
        + _joint_xml("bc", "revolute", "b", "c")
        + _joint_xml("bd", "prismatic", "b", "d")
    )
    with pytest.raises(ValueError, match="branches at link 'b'.*tip="):
        urdf.load(text)
    with pytest.warns(UserWarning, match=r"dropped: \['c'\]"):
        chain = urdf.chain(text, tip="d")
    assert chain.joint_names == ["ab", "bd"]
    # a base below the root: the links above it are named too (they were dropped silently)
    with pytest.warns(
        UserWarning, match=r"'b' → 'c': links off the chain are dropped: \['d', 'a'\]"
    ):
        assert urdf.chain(text, base="b", tip="c").joint_names == ["bc"]


def test_a_default_xml_namespace_is_read_as_plain_urdf():
    # `<robot xmlns="...">` prefixes every tag; urdfdom and Pinocchio read it (refused before)
    plain = _robot_xml(
        f'<link name="b">{_INERTIAL}</link>' + _joint_xml("ab", "revolute", "a", "b")
    )
    spaced = plain.replace('<robot name="r">', '<robot name="r" xmlns="http://www.ros.org">')
    a, b = urdf.load(plain), urdf.load(spaced)
    q = jnp.array([0.4])
    assert np.array_equal(sr.mass_matrix(a, q), sr.mass_matrix(b, q))
    assert np.array_equal(sr.gravity_force(a, q), sr.gravity_force(b, q))


def test_mimic_joint_keeps_its_coordinate_with_a_warning():
    text = _robot_xml(
        f'<link name="b">{_INERTIAL}</link><link name="c">{_INERTIAL}</link>'
        + _joint_xml("ab", "revolute", "a", "b")
        + _joint_xml("bc", "revolute", "b", "c", '<mimic joint="ab" multiplier="2"/>')
    )
    with pytest.warns(UserWarning, match="'bc' mimics 'ab'"):
        assert urdf.load(text).n_q == 2


def test_zero_mass_with_an_inertia_warns_that_the_link_is_massless():
    massless = '<inertial><mass value="0"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>'
    text = _robot_xml(
        f'<link name="b">{_INERTIAL}</link><link name="c">{massless}</link>'
        + _joint_xml("ab", "revolute", "a", "b")
        + _joint_xml("bc", "fixed", "b", "c")
    )
    with pytest.warns(UserWarning, match="link 'c' <inertial> has zero mass and a non-zero"):
        robot = urdf.load(text)
    # b's own inertia only (0.01 about the joint's x axis): c's 0.1 is dropped
    np.testing.assert_allclose(sr.mass_matrix(robot, jnp.zeros(1)), [[0.01]], rtol=1e-12)


@pytest.mark.parametrize(
    ("mimic", "match"),
    [
        ("", "needs joint="),
        ("bc", "names the joint itself"),
        ("zz", "follows the unknown joint 'zz'"),
    ],
)
def test_mimic_must_follow_another_joint(mimic, match):
    text = _robot_xml(
        f'<link name="b">{_INERTIAL}</link><link name="c">{_INERTIAL}</link>'
        + _joint_xml("ab", "revolute", "a", "b")
        + _joint_xml("bc", "revolute", "b", "c", f'<mimic joint="{mimic}"/>')
    )
    with pytest.raises(ValueError, match=f"joint 'bc' <mimic> {match}"):
        urdf.load(text)


def test_invalid_urdf_raise_clear_errors(tmp_path):
    ok_link = f'<link name="b">{_INERTIAL}</link>'
    with pytest.raises(FileNotFoundError, match="no such file"):
        urdf.load(tmp_path / "missing.urdf")
    bad = tmp_path / "bad.urdf"
    bad.write_text('<robot name="r"><link name="a"></robot>')
    with pytest.raises(ValueError, match="malformed XML"):
        urdf.load(bad)
    with pytest.raises(ValueError, match="root element must be <robot>"):
        urdf.load("<model/>")
    with pytest.raises(ValueError, match="joint 'j' has type 'ball'"):
        urdf.load(_robot_xml(ok_link + _joint_xml("j", "ball", "a", "b")))
    with pytest.raises(ValueError, match="link 'b' has no mass.*joint 'j' is revolute"):
        urdf.load(_robot_xml('<link name="b"/>' + _joint_xml("j", "revolute", "a", "b")))
    with pytest.raises(
        ValueError,
        match=r"joint 'j': Revolute: axis must be a finite non-zero vector \(norm ≥ 1e-12\)",
    ):
        urdf.load(
            _robot_xml(ok_link + _joint_xml("j", "revolute", "a", "b", '<axis xyz="0 0 0"/>'))
        )
    with pytest.raises(ValueError, match="unknown link 'x'"):
        urdf.load(_robot_xml(ok_link + _joint_xml("j", "fixed", "a", "x")))
    with pytest.raises(ValueError, match=r"rpy='0 0' must be 3 finite numbers"):
        urdf.load(_robot_xml(ok_link + _joint_xml("j", "fixed", "a", "b", '<origin rpy="0 0"/>')))
    with pytest.raises(ValueError, match="link 'b': RigidBody: inertia has principal moments"):
        urdf.load(
            _robot_xml(
                '<link name="b"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" '
                'iyy="0.1" iyz="0" izz="0.1"/></inertial></link>'
                + _joint_xml("j", "revolute", "a", "b")
            )
        )
    with pytest.raises(ValueError, match="no link with mass on the chain"):
        urdf.load(_robot_xml(""))
    with pytest.raises(ValueError, match="tip link 'a' is not below the base link 'b'"):
        urdf.load(_robot_xml(ok_link + _joint_xml("j", "fixed", "a", "b")), base="b", tip="a")
    with pytest.raises(ValueError, match="attach: link 'nowhere' is not on the chain"):
        urdf.load(ARM, attach={"nowhere": []})
    with pytest.raises(TypeError, match=r"attach\['tool0'\]\[0\] must be a softrigid.Link"):
        urdf.load(ARM, attach={"tool0": ["soft arm"]})
    with pytest.raises(ValueError, match="floating_base: the base link 'a' has no mass"):
        urdf.load(_robot_xml(ok_link + _joint_xml("j", "fixed", "a", "b")), floating_base=True)


def test_cycles_and_bad_sources_are_named():
    # a cycle apart from the root's tree passed the one-root check, and walking the chain
    # from a base inside it never ended
    links = f'<link name="b">{_INERTIAL}</link><link name="c">{_INERTIAL}</link>'
    cycle = _robot_xml(
        links + _joint_xml("bc", "revolute", "b", "c") + _joint_xml("cb", "revolute", "c", "b")
    )
    for kw in ({"base": "b"}, {"base": "b", "tip": "c"}, {}):
        with pytest.raises(ValueError, match=r"the joints form a cycle \((b → c → b|c → b → c)\)"):
            urdf.load(cycle, **kw)
    loop = _robot_xml(f'<link name="b">{_INERTIAL}</link>' + _joint_xml("bb", "revolute", "b", "b"))
    with pytest.raises(ValueError, match=r"the joints form a cycle \(b → b\)"):
        urdf.load(loop, base="b")
    text = _robot_xml(f'<link name="b">{_INERTIAL}</link>' + _joint_xml("ab", "revolute", "a", "b"))
    assert urdf.load(text.encode()).n_q == 1  # the XML's bytes
    with pytest.raises(TypeError, match="expected a file path or the XML text, got int"):
        urdf.load(5)
    with pytest.raises(TypeError, match=r"attach\['b'\] must be a softrigid.Link or a sequence"):
        urdf.load(text, attach={"b": None})
    # a byte-order mark is not a path; bytes in another encoding, a folder and names that are
    # not strings are named; flags are booleans ("no" added a floating base)
    assert urdf.load("\ufeff" + text).n_q == 1
    assert urdf.load("\ufeff".encode() + text.encode()).n_q == 1
    with pytest.raises(ValueError, match="urdf: the XML bytes are not UTF-8"):
        urdf.load(b"\xff" + text.encode())
    with pytest.raises(IsADirectoryError, match="is a directory, not a URDF file"):
        urdf.load(ARM.parent)
    for empty in ("", " \n", b""):  # Path("") is the current folder
        with pytest.raises(ValueError, match="urdf: the source is empty"):
            urdf.load(empty)
    with pytest.raises(TypeError, match=r"urdf: tip must be a link name \(a string\)"):
        urdf.load(text, tip=["b"])
    with pytest.raises(TypeError, match="urdf: floating_base must be True or False, got 'no'"):
        urdf.load(text, floating_base="no")
    inverted = text.replace(
        "</joint>", '<limit lower="1" upper="-1" effort="5" velocity="1"/></joint>'
    )
    with pytest.raises(ValueError, match="joint 'ab' <limit>: lower 1.0 exceeds upper -1.0"):
        urdf.load(inverted)


def test_pinocchio_rnea_and_crba_agree():
    """Peer check: Pinocchio's RNEA and CRBA on the same file (continuous joints take
    `(cos θ, sin θ)` in Pinocchio; joint damping is not part of its RNEA)."""
    import pinocchio as pin  # the test extra

    model = pin.buildModelFromUrdf(str(ARM))
    data = model.createData()
    robot = urdf.load(ARM, gravity=np.asarray(model.gravity.linear), joint_damping=False)
    assert model.nv == robot.n_q
    for q, qd, qdd in _states(4, seed=11):
        q_pin = []
        for joint in list(model.joints)[1:]:
            theta = q[joint.idx_v]
            q_pin += [np.cos(theta), np.sin(theta)] if joint.nq == 2 else [theta]
        q_pin = np.array(q_pin)
        tau = pin.rnea(model, data, q_pin, qd, qdd)
        mass = pin.crba(model, data, q_pin)
        mass = np.triu(mass) + np.triu(mass, 1).T
        nu, mass_sr = _id_and_mass(robot, jnp.asarray(q), jnp.asarray(qd), jnp.asarray(qdd))
        assert _rel_err(nu, tau) < RTOL
        assert _rel_err(mass_sr, mass) < RTOL


# ---------------------------------------------------------------- real URDFs (example-robot-data)

# (URDF file under the package's robots/ folder, tip link, links that softrigid drops and that are
# pruned from Pinocchio's copy so both model the same chain). UR5: the chain world → tool0; the
# branches base and ee_link (massless frames) are dropped. Panda: panda_link0 → panda_leftfinger
# (7 revolute joints, the hand on a fixed joint, the prismatic left finger); the right finger (a
# <mimic> of the left one, 15 g) and the massless panda_hand_tcp are dropped.
REAL_ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", "tool0", ("base", "ee_link")),
    "panda": (
        "panda_description/urdf/panda.urdf",
        "panda_leftfinger",
        ("panda_hand_tcp", "panda_rightfinger"),
    ),
}


def _example_robot_data() -> Path:
    """The `robots/` folder that the `example-robot-data` wheel installs (a cmeel prefix, no
    Python module); skips the test when the package is absent."""
    from importlib import metadata

    try:
        dist = metadata.distribution("example-robot-data")
    except metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed")
    folder = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    if not folder.is_dir():
        pytest.skip(f"example-robot-data: no robots folder at {folder}")
    return folder


def _without_links(path: Path, dropped: tuple[str, ...]) -> str:
    """The URDF text without the links `dropped` and the joints leading to them."""
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    for elem in list(root):
        child = elem.find("child") if elem.tag == "joint" else None
        name = elem.get("name") if elem.tag == "link" else None
        if name in dropped or (child is not None and child.get("link") in dropped):
            root.remove(elem)
    return ET.tostring(root, encoding="unicode")


def _pin_configuration(model, q: np.ndarray) -> np.ndarray:
    """Pinocchio's `q` for softrigid's: a continuous joint (nq = 2) takes `(cos θ, sin θ)`."""
    out = []
    for joint in list(model.joints)[1:]:
        theta = q[joint.idx_v]
        out += (
            [np.cos(theta), np.sin(theta)]
            if joint.nq == 2
            else list(q[joint.idx_v : joint.idx_v + joint.nv])
        )
    return np.array(out)


@pytest.fixture(scope="module", params=sorted(REAL_ROBOTS))
def real_robot(request):
    """`(name, path, tip, softrigid chain, Pinocchio model)`: each robot built once."""
    import pinocchio as pin  # the test extra

    rel, tip, dropped = REAL_ROBOTS[request.param]
    path = _example_robot_data() / rel
    with pytest.warns(UserWarning, match="links off the chain are dropped") as record:
        chain = urdf.chain(path, tip=tip, joint_damping=False)
    assert all(name in str(record[0].message) for name in dropped)
    model = pin.buildModelFromXML(_without_links(path, dropped))
    return request.param, path, tip, chain, model


def test_real_urdf_loads_without_its_meshes(real_robot):
    """The files name their meshes by `package://` paths; the loader never opens them, so the
    text alone (no folder to resolve them against) gives the same chain."""
    _, path, tip, chain, model = real_robot
    text = path.read_text()
    assert "package://" in text
    with pytest.warns(UserWarning, match="dropped"):
        from_text = urdf.chain(text, tip=tip, joint_damping=False)
    assert from_text.link_names == chain.link_names
    _assert_same_model(from_text.links, chain.links)
    # one softrigid coordinate per Pinocchio velocity, joints in the same order
    moving = [n for n, link in zip(chain.joint_names, chain.links) if link.joint.n_q > 0]
    assert moving == list(model.names)[1:]


def test_real_urdf_matches_pinocchio_rnea_crba_and_frames(real_robot):
    """UR5 and Panda: inverse dynamics and mass matrix equal Pinocchio's `rnea`/`crba` to 1e-10
    at random states (measured ≤ 1e-15), and the merged tip frame's world pose equals
    Pinocchio's frame placement."""
    import pinocchio as pin

    _, _, tip, chain, model = real_robot
    data = model.createData()
    robot = sr.Robot(chain.links, gravity=np.asarray(model.gravity.linear))
    assert robot.n_q == model.nv
    rng = np.random.default_rng(17)
    frame = model.getFrameId(tip)
    for _ in range(3):
        q = rng.uniform(-np.pi, np.pi, robot.n_q)
        qd, qdd = rng.normal(size=(2, robot.n_q))
        q_pin = _pin_configuration(model, q)
        tau = pin.rnea(model, data, q_pin, qd, qdd)
        mass = pin.crba(model, data, q_pin)
        mass = np.triu(mass) + np.triu(mass, 1).T
        nu, mass_sr = _id_and_mass(robot, jnp.asarray(q), jnp.asarray(qd), jnp.asarray(qdd))
        assert _rel_err(nu, tau) < RTOL
        assert _rel_err(mass_sr, mass) < RTOL
        # tip frame: the pose of its body composed with its merged placement
        index, (rot_f, trans_f) = chain.frames[tip]
        rots, transs = sr.forward_kinematics(robot, jnp.asarray(q))
        pin.framesForwardKinematics(model, data, q_pin)
        placement = data.oMf[frame]
        np.testing.assert_allclose(rots[index] @ rot_f, placement.rotation, atol=1e-12)
        np.testing.assert_allclose(
            transs[index] + rots[index] @ trans_f, placement.translation, atol=1e-12
        )
