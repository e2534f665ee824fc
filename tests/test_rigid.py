"""Rigid chains against the independent NumPy Newton–Euler (`tests/newton_euler.py`) and
Tokad's two-link arm in closed form (seed 004, Table 2; `validation.md` §4)."""

import jax.numpy as jnp
import newton_euler as ne
import numpy as np
import pytest
import robots

import softrigid as sr
from softrigid import joints

# One structure shared by every seed (the engine compiles once per structure): a floating
# base, a run of identical revolute links (the engine's scanned path), a prismatic and a
# fixed joint.
KINDS = ("free", "revolute", "revolute", "prismatic", "fixed")
SEEDS = (0, 1, 2)
RTOL = 1e-12


def _rel_err(got, ref) -> float:
    got, ref = np.asarray(got), np.asarray(ref)
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def _chain(seed: int):
    rng = np.random.default_rng(seed)
    links = [robots.random_rigid_link(rng, kind) for kind in KINDS]
    gravity = 9.81 * robots.random_rotation(rng)[:, 0]
    return robots.robot_from_rigid_links(links, gravity), links, gravity


@pytest.fixture(scope="module", params=SEEDS)
def chain(request):
    robot, links, gravity = _chain(request.param)
    q, qd, qdd = robots.random_state(robot, 100 + request.param)
    return robot, links, gravity, (q, qd, qdd)


def test_inverse_dynamics_matches_newton_euler(chain):
    robot, links, gravity, (q, qd, qdd) = chain
    got = sr.inverse_dynamics(robot, q, qd, qdd)
    ref = ne.inverse_dynamics(links, np.asarray(q), np.asarray(qd), np.asarray(qdd), gravity)
    assert _rel_err(got, ref) < RTOL


def test_mass_matrix_matches_newton_euler_unit_accelerations(chain):
    robot, links, _, (q, _, _) = chain
    got = sr.mass_matrix(robot, q)
    ref = ne.mass_matrix(links, np.asarray(q))
    assert _rel_err(got, ref) < RTOL


def test_forward_kinematics_matches(chain):
    robot, links, _, (q, _, _) = chain
    rot, pos = sr.forward_kinematics(robot, q)
    rot_ref, pos_ref = ne.forward_kinematics(links, np.asarray(q))
    assert np.max(np.abs(np.asarray(rot) - rot_ref)) < 1e-14
    assert _rel_err(pos, pos_ref) < RTOL


def test_external_loads_match_newton_euler():
    robot, links, gravity = _chain(SEEDS[0])
    q, qd, qdd = robots.random_state(robot, 7)
    rng = np.random.default_rng(7)
    point, force = rng.normal(size=3), rng.normal(size=3)
    w_force, w_moment = rng.normal(size=3), rng.normal(size=3)
    last = len(links) - 1
    loads = [
        sr.PointLoad(2, point, force),
        sr.Wrench(last, w_force, w_moment),
    ]
    got = sr.inverse_dynamics(robot, q, qd, qdd, loads=loads)
    # a wrench acts at the origin of the distal frame: in the body frame that is `distal_t`
    ne_loads = (
        (2, point, force, np.zeros(3)),
        (last, links[last].distal_t, w_force, w_moment),
    )
    ref = ne.inverse_dynamics(
        links, np.asarray(q), np.asarray(qd), np.asarray(qdd), gravity, loads=ne_loads
    )
    assert _rel_err(got, ref) < RTOL


# Tokad's two-link arm: slender uniform links in the x–y plane rotating about z, CoM at
# mid-length, J = m l²/12, relative joint angles, gravity along −y.
M1, M2, L1, L2, G0 = 1.7, 0.9, 0.8, 0.55, 9.81


def _tokad_closed_form(theta, omega, omega_dot):
    c2, s2 = np.cos(theta[1]), np.sin(theta[1])
    c1, c12 = np.cos(theta[0]), np.cos(theta[0] + theta[1])
    c11 = M1 * L1**2 / 3 + M2 * (L1**2 + L1 * L2 * c2 + L2**2 / 3)
    c12_ = M2 * (L2**2 / 3 + 0.5 * L1 * L2 * c2)
    c22 = M2 * L2**2 / 3
    h = 0.5 * M2 * L1 * L2 * s2
    d = np.array([[-h * omega[1], -h * (omega[0] + omega[1])], [h * omega[0], 0.0]])
    beta = G0 * np.array(
        [M1 * 0.5 * L1 * c1 + M2 * (L1 * c1 + 0.5 * L2 * c12), M2 * 0.5 * L2 * c12]
    )
    c = np.array([[c11, c12_], [c12_, c22]])
    return c @ omega_dot + d @ omega + beta, c


@pytest.fixture(scope="module")
def tokad():
    def rod(m, l):
        j = m * l**2 / 12
        return sr.RigidBody(
            m, (l / 2, 0.0, 0.0), np.diag([0.0, j, j]), distal=(np.eye(3), (l, 0, 0))
        )

    return sr.Robot(
        [
            sr.Link(joints.Revolute((0, 0, 1)), rod(M1, L1)),
            sr.Link(joints.Revolute((0, 0, 1)), rod(M2, L2)),
        ],
        gravity=(0.0, -G0, 0.0),
    )


@pytest.mark.parametrize(
    ("theta", "omega", "omega_dot"),
    [
        ((0.3, -0.7), (1.1, -0.4), (0.5, 2.0)),
        ((-1.2, 2.4), (-0.8, 1.9), (-1.5, 0.3)),
        ((2.0, 0.0), (0.0, 0.0), (0.0, 0.0)),
    ],
)
def test_tokad_two_link_table(tokad, theta, omega, omega_dot):
    ref, c_ref = _tokad_closed_form(*(np.array(x) for x in (theta, omega, omega_dot)))
    q, qd, qdd = (jnp.array(x, dtype=float) for x in (theta, omega, omega_dot))
    assert _rel_err(sr.inverse_dynamics(tokad, q, qd, qdd), ref) < RTOL
    assert _rel_err(sr.mass_matrix(tokad, q), c_ref) < RTOL
