"""The multi-DoF joints (`Spherical`, `Universal`, `Cylindrical`, `Planar`, `Helical`).

- Joint level: each `transform(q)` against a hand-written rotation and translation (Rodrigues'
  formula in cos/sin, elementary rotations), the springs' energy and dissipation, the errors.
- Robot level (`validation.md` §2): ONE random chain holding all five joints with springs and
  dampers, rigid bodies and a planar constant-curvature soft body, under gravity in a random
  direction; the recursion's `ν` and `M` against the Euler–Lagrange baseline
  (`softrigid.lagrangian`) at `q = 0` and seeded random states, all states in one compiled call.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import robots

import softrigid as sr
from softrigid import joints, kinematics, quadrature

RTOL = 1e-10


def _rel_err(got, ref) -> float:
    got, ref = np.asarray(got), np.asarray(ref)
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def _rodrigues(axis, angle) -> np.ndarray:
    """`cos θ I + sin θ [u] + (1 − cos θ) u uᵀ` for a unit `u`."""
    u = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    k = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    return np.cos(angle) * np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * np.outer(u, u)


def _rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _ry(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _assert_pose(joint, q, rot, trans, tol=1e-15):
    got_r, got_t = joint.transform(jnp.asarray(q, dtype=float))
    np.testing.assert_allclose(np.asarray(got_r), rot, rtol=0, atol=tol)
    np.testing.assert_allclose(np.asarray(got_t), trans, rtol=0, atol=tol)


# --- joint level: closed forms -------------------------------------------------------------


def test_spherical_is_the_rotation_vector():
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    for angle in (0.0, 1e-9, 0.4, 2.5, -3.0):
        _assert_pose(joints.Spherical(), angle * axis, _rodrigues(axis, angle), np.zeros(3))
    # a full turn is the identity (the pose is exact there; only the chart's rate map is singular)
    _assert_pose(joints.Spherical(), 2 * np.pi * axis, np.eye(3), np.zeros(3), tol=1e-14)


def test_universal_rotates_about_axis1_then_the_rotated_axis2():
    t1, t2 = 0.7, -1.1
    _assert_pose(joints.Universal((1, 0, 0), (0, 1, 0)), [t1, t2], _rx(t1) @ _ry(t2), np.zeros(3))
    _assert_pose(joints.Universal((0, 0, 2), (3, 0, 0)), [t1, t2], _rz(t1) @ _rx(t2), np.zeros(3))
    # with an origin: T_J = origin · motion
    o_rot, o_t = _ry(0.3), np.array([0.1, -0.2, 0.3])
    joint = joints.Universal((1, 0, 0), (0, 0, 1), origin=(o_rot, o_t))
    _assert_pose(joint, [t1, t2], o_rot @ _rx(t1) @ _rz(t2), o_t)


def test_cylindrical_translates_along_and_rotates_about_its_axis():
    d, theta = 0.25, 1.3
    _assert_pose(joints.Cylindrical((0, 0, 1)), [d, theta], _rz(theta), [0, 0, d])
    axis = np.array([1.0, 2.0, -2.0]) / 3.0
    _assert_pose(joints.Cylindrical(3 * axis), [d, theta], _rodrigues(axis, theta), d * axis)
    o_rot, o_t = _rx(-0.4), np.array([0.0, 0.5, 0.1])
    joint = joints.Cylindrical((0, 1, 0), origin=(o_rot, o_t))
    _assert_pose(joint, [d, theta], o_rot @ _ry(theta), o_t + o_rot @ [0, d, 0])


def test_planar_in_plane_axes_and_motion():
    x, y, theta = 0.3, -0.2, 0.9
    # the documented in-plane axes of the coordinate normals: z → (x, y), x → (y, z), y → (z, x)
    _assert_pose(joints.Planar((0, 0, 1)), [x, y, theta], _rz(theta), [x, y, 0])
    _assert_pose(joints.Planar((2, 0, 0)), [x, y, theta], _rx(theta), [0, x, y])
    _assert_pose(joints.Planar((0, 1, 0)), [x, y, theta], _ry(theta), [y, 0, x])
    # a general normal: e1 is the projection of the basis vector after the largest component
    n = np.array([0.2, -0.6, 0.3]) / np.linalg.norm([0.2, -0.6, 0.3])  # largest |n_k|: y → e_z
    e1 = np.array([0, 0, 1.0]) - n[2] * n
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(n, e1)
    joint = joints.Planar(n)
    np.testing.assert_allclose(np.asarray(joint.tangent1), e1, rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.asarray(joint.tangent2), e2, rtol=0, atol=1e-15)
    _assert_pose(joint, [x, y, theta], _rodrigues(n, theta), x * e1 + y * e2)


def test_helical_advances_one_pitch_per_turn():
    pitch = 0.05
    joint = joints.Helical((0, 0, 1), pitch)
    _assert_pose(joint, [2 * np.pi], np.eye(3), [0, 0, pitch], tol=1e-15)
    _assert_pose(joint, [0.8], _rz(0.8), [0, 0, pitch * 0.8 / (2 * np.pi)])
    # left-handed (negative pitch) about a general axis, with an origin
    axis = np.array([2.0, -1.0, 2.0]) / 3.0
    o_rot, o_t = _rz(0.5) @ _rx(0.2), np.array([0.3, 0.0, -0.1])
    joint = joints.Helical(axis, -0.12, origin=(o_rot, o_t))
    theta = -1.7
    _assert_pose(
        joint,
        [theta],
        o_rot @ _rodrigues(axis, theta),
        o_t + o_rot @ (-0.12 * theta / (2 * np.pi) * axis),
    )


def test_springs_and_dampers_act_on_each_coordinate():
    q = np.array([0.3, -0.4, 0.2])
    qd = np.array([1.0, 2.0, -0.5])
    k, d, r = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.0, 1.5]), np.array([0.1, 0.0, -0.2])
    planar = joints.Planar((0, 0, 1), stiffness=k, damping=d, rest=r)
    assert float(planar.energy(q)) == pytest.approx(0.5 * np.sum(k * (q - r) ** 2), rel=1e-15)
    assert float(planar.dissipation(qd)) == pytest.approx(0.5 * np.sum(d * qd**2), rel=1e-15)
    # a scalar is the same for every coordinate; ½ k |φ|² = ½ k θ² for a spherical joint
    ball = joints.Spherical(stiffness=2.0)
    assert float(ball.energy(q)) == pytest.approx(np.sum(q**2), rel=1e-15)
    cyl = joints.Cylindrical((1, 0, 0), stiffness=(4.0, 0.5), rest=(0.1, 0.2))
    assert float(cyl.energy(q[:2])) == pytest.approx(2.0 * 0.2**2 + 0.25 * 0.6**2, rel=1e-15)
    screw = joints.Helical((0, 0, 1), 0.01, stiffness=3.0, damping=0.5, rest=0.1)
    assert float(screw.energy(q[:1])) == pytest.approx(1.5 * 0.2**2, rel=1e-15)
    assert float(screw.dissipation(qd[:1])) == pytest.approx(0.25, rel=1e-15)


def test_invalid_joints_raise_clear_errors():
    with pytest.raises(ValueError, match="Cylindrical: axis must be a finite non-zero"):
        joints.Cylindrical((0, 0, 0))
    with pytest.raises(ValueError, match="Helical: axis must be a finite non-zero"):
        joints.Helical((np.nan, 0, 1), 0.1)
    with pytest.raises(ValueError, match=r"Planar: normal must have shape \(3,\)"):
        joints.Planar((0, 1))
    with pytest.raises(ValueError, match="Universal: axis2 must be a finite non-zero"):
        joints.Universal((1, 0, 0), (0, np.inf, 0))
    with pytest.raises(ValueError, match="Universal: axis1 and axis2 must be orthogonal"):
        joints.Universal((1, 0, 0), (1, 1, 0))
    # complex, boolean and text axes are named (a complex array lost its imaginary part)
    for axis in (np.array([1 + 1j, 0, 0]), [True, False, False], "abc"):
        with pytest.raises(TypeError, match="Revolute: axis must be real numbers"):
            joints.Revolute(axis)
    # a finite axis whose norm would overflow is a direction like any other
    np.testing.assert_allclose(joints.Revolute((1e308, 1e308, 0)).axis, [0.5**0.5, 0.5**0.5, 0])

    # traced (a joint built inside jit): checked when used
    def spun(axis):
        return joints.Revolute(axis).transform(jnp.array([0.3]))[0]

    with pytest.raises((jax.errors.JaxRuntimeError, ValueError), match="axis must be a finite"):
        jax.block_until_ready(jax.jit(spun)(jnp.zeros(3)))
    with pytest.raises(ValueError, match="Helical: pitch must be finite"):
        joints.Helical((0, 0, 1), np.inf)
    with pytest.raises(ValueError, match="Helical: pitch must be a scalar"):
        joints.Helical((0, 0, 1), (0.1, 0.2))
    with pytest.raises(ValueError, match="Spherical: stiffness must be non-negative"):
        joints.Spherical(stiffness=(1.0, -1.0, 0.0))
    with pytest.raises(ValueError, match=r"Cylindrical: damping must be a scalar or have shape"):
        joints.Cylindrical((0, 0, 1), damping=(1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match="Planar: rest must be finite"):
        joints.Planar((0, 0, 1), rest=(0.0, np.nan, 0.0))
    with pytest.raises(ValueError, match="Spherical: origin"):
        joints.Spherical(origin=(2 * np.eye(3), np.zeros(3)))


# --- robot level: one chain with every new joint against Euler–Lagrange ---------------------


def _soft_body() -> sr.SoftBody:
    return sr.SoftBody(
        kinematics.PlanarConstantCurvature(0.2),
        quadrature.cylinder(0.02, 0.2, 2, 1, 3),
        density=1000.0,
    )


def _unit(rng) -> np.ndarray:
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def _new_joints_robot(seed: int) -> sr.Robot:
    """Spherical | Universal + soft body | Cylindrical | Planar | Helical, rigid bodies
    elsewhere; random axes, origins, springs and dampers; gravity in a random direction."""
    rng = np.random.default_rng(seed)

    def spring(n):
        k, d, r = rng.uniform(0.0, 2.0, (3, n))
        return {"stiffness": k, "damping": d, "rest": r}

    frame = robots.random_rotation(rng)
    chain = [
        (joints.Spherical(robots.random_placement(rng), **spring(3)), robots.random_rigid_body),
        (
            joints.Universal(frame[:, 0], frame[:, 1], robots.random_placement(rng), **spring(2)),
            lambda rng: _soft_body(),
        ),
        (
            joints.Cylindrical(_unit(rng), robots.random_placement(rng), **spring(2)),
            robots.random_rigid_body,
        ),
        (
            joints.Planar(_unit(rng), robots.random_placement(rng), **spring(3)),
            robots.random_rigid_body,
        ),
        (
            joints.Helical(
                _unit(rng), rng.uniform(-0.5, 0.5), robots.random_placement(rng), **spring(1)
            ),
            robots.random_rigid_body,
        ),
    ]
    links = [sr.Link(joint, body(rng)) for joint, body in chain]
    gravity = 9.81 * robots.random_rotation(rng)[:, 0]
    return sr.Robot(links, gravity=gravity)


@jax.jit
def _recursion_and_baseline(robot, q, qd, qdd):
    """`(ν, M)` of the recursion (one pass over the position level) and `(ν_EL, M_EL)` of the
    Euler–Lagrange baseline at one state, in one compiled function (called once per state)."""
    nu, mass = sr.mass_inverse_dynamics(robot, q, qd, qdd)
    nu_el = sr.lagrangian.inverse_dynamics(robot, q, qd, qdd)
    return nu, nu_el, mass, sr.lagrangian.mass_matrix(robot, q)


def test_new_joints_chain_matches_euler_lagrange():
    robot = _new_joints_robot(0)
    assert robot.n_q == 3 + (2 + 1) + 2 + 3 + 1
    zero = robots.random_state(robot, 69)
    states = [(jnp.zeros(robot.n_q), zero[1], zero[2])]  # the charts at q = 0
    states += [robots.random_state(robot, 70 + k) for k in range(3)]
    for k, (q, qd, qdd) in enumerate(states):
        nu, nu_el, mass, mass_el = _recursion_and_baseline(robot, q, qd, qdd)
        assert _rel_err(nu, nu_el) < RTOL, k
        assert _rel_err(mass, mass_el) < RTOL, k
