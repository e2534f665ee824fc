"""`softrigid.linearize`: the state-space matrices against `jax.jacfwd` of the forward dynamics
(soft segment, tendon, motor, load, damping), the closed form of a pendulum, the small-motion
response of a double pendulum and batching, an LQR designed on them that balances it upright,
and the mass matrix's check."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

import softrigid as sr
from softrigid import joints, kinematics, quadrature
from softrigid.actuators import JointMotor, Tendon
from softrigid.materials import CosseratRod

LENGTH = 0.3


@pytest.fixture(scope="module")
def arm():
    """A sprung, damped revolute shoulder with a rigid link, then a damped soft segment on a
    second revolute joint; a motor on the shoulder and a tendon through the segment."""
    link = sr.RigidBody(0.5, (0.0, 0.0, 0.1), 1e-3 * jnp.eye(3), distal=(jnp.eye(3), (0, 0, 0.2)))
    segment = sr.SoftBody(
        kinematics.PlanarConstantCurvature(LENGTH),
        quadrature.cylinder(0.03, LENGTH, n_axial=3, n_radial=1, n_angular=3),
        density=1000.0,
        material=CosseratRod(2e5, 7e4, eta=0.02),
    )
    links = [
        sr.Link(joints.Revolute((0.0, 1.0, 0.0), stiffness=2.0, damping=0.1), link),
        sr.Link(joints.Revolute((0.0, 1.0, 0.0)), segment),
    ]
    actuators = (JointMotor(0), Tendon([1], (0.01, 0.0)))
    return sr.Robot(links, gravity=(0.3, 0.0, -9.81), actuators=actuators)


def _first_order(robot, loads=None, solver="cholesky"):
    """`ẋ = f(x, u)` with `x = (q, q̇)`, through the public forward dynamics."""
    n = robot.n_q

    def f(x, u):
        return jnp.concatenate([x[n:], sr.forward_dynamics(robot, x[:n], x[n:], u, loads, solver)])

    return f


def test_equal_to_forward_mode_through_the_forward_dynamics(arm):
    rng = np.random.default_rng(4)
    q, qd = (jnp.asarray(rng.uniform(-0.6, 0.6, arm.n_q)) for _ in range(2))
    u = jnp.array([0.4, 2.0])
    load = sr.PointLoad(1, (0.01, 0.0, LENGTH), (0.5, -0.2, 1.0))
    lin = sr.linearize(arm, q, qd, u, [load])
    f = _first_order(arm, [load])
    x = jnp.concatenate([q, qd])
    np.testing.assert_allclose(lin.qdd, f(x, u)[arm.n_q :], rtol=1e-12, atol=1e-12)
    a, b = jax.jacfwd(f, argnums=(0, 1))(x, u)
    scale = float(jnp.max(jnp.abs(a)))
    np.testing.assert_allclose(lin.state_matrix, a, rtol=1e-10, atol=1e-12 * scale)
    np.testing.assert_allclose(lin.input_matrix, b, rtol=1e-10, atol=1e-12)
    # the tendon's A(q) u moves with q: ∂(A u)/∂q is in the state matrix (u = 0 differs)
    at_zero = sr.linearize(arm, q, qd, jnp.zeros(2), [load])
    assert not np.allclose(at_zero.state_matrix, lin.state_matrix, rtol=1e-6)


def test_closed_form_of_a_damped_sprung_pendulum():
    # q̈ = (u − k q − c q̇ − m g l sin q) / (m l² + I):  ∂q̈/∂q = −(k + m g l cos q) / I_o
    m, ell, inertia, k, c = 0.7, 0.4, 0.02, 1.5, 0.3
    bar = sr.RigidBody(m, (0.0, 0.0, -ell), inertia * jnp.eye(3))
    joint = joints.Revolute((0.0, 1.0, 0.0), stiffness=k, damping=c)
    robot = sr.Robot([sr.Link(joint, bar)])
    q = jnp.array([0.8])
    lin = sr.linearize(robot, q, jnp.array([0.5]), jnp.array([0.2]))
    i_o = m * ell**2 + inertia
    expected = [[0.0, 1.0], [-(k + m * 9.81 * ell * np.cos(0.8)) / i_o, -c / i_o]]
    np.testing.assert_allclose(lin.state_matrix, expected, rtol=1e-13)
    np.testing.assert_allclose(lin.input_matrix, [[0.0], [1.0 / i_o]], rtol=1e-13)


def _double_pendulum():
    """Two 1 kg links upright (centres 0.5 m above their joints), a motor on each joint."""

    def link():
        body = sr.RigidBody(1.0, (0, 0, 0.5), 1e-3 * jnp.eye(3), distal=(jnp.eye(3), (0, 0, 1.0)))
        return sr.Link(joints.Revolute((0, 1, 0), damping=0.01), body)

    return sr.Robot([link(), link()], actuators=(JointMotor(0), JointMotor(1)))


@pytest.fixture(scope="module")
def upright():
    robot = _double_pendulum()
    zero = jnp.zeros(2)
    return robot, sr.linearize(robot, zero, zero, zero)


def test_small_motions_follow_the_linearization(upright):
    # from a 1e-6 rad lean, 0.3 s of the nonlinear model against expm(A t) δx: they agree to
    # second order in the lean (the upright is an unstable equilibrium: the lean grows)
    robot, lin = upright
    dx = 1e-6 * np.array([1.0, -0.5, 0.0, 0.0])
    traj = sr.simulate(robot, jnp.asarray(dx[:2]), jnp.zeros(2), 0.3, 0.01)
    linear = scipy.linalg.expm(0.3 * np.asarray(lin.state_matrix)) @ dx
    nonlinear = np.concatenate([traj.q[-1], traj.qd[-1]])
    assert np.max(np.abs(linear)) > 5e-6  # it has grown
    np.testing.assert_allclose(nonlinear, linear, rtol=0, atol=1e-4 * np.max(np.abs(linear)))
    # a batch of states under vmap, each its own
    states = jnp.array([[0.0, 0.0], [0.3, -0.2]])
    batch = jax.vmap(lambda q: sr.linearize(robot, q, jnp.zeros(2), jnp.zeros(2)))(states)
    np.testing.assert_allclose(batch.state_matrix[0], lin.state_matrix, rtol=1e-12, atol=1e-12)
    one = sr.linearize(robot, states[1], jnp.zeros(2), jnp.zeros(2))
    np.testing.assert_allclose(batch.state_matrix[1], one.state_matrix, rtol=1e-12, atol=1e-12)


def test_an_lqr_designed_on_it_balances_the_double_pendulum(upright):
    robot, lin = upright
    a, b = np.asarray(lin.state_matrix), np.asarray(lin.input_matrix)
    assert np.max(np.linalg.eigvals(a).real) > 1.0  # unstable upright
    p = scipy.linalg.solve_continuous_are(a, b, np.eye(4), 0.1 * np.eye(2))
    gain = jnp.asarray(np.linalg.solve(0.1 * np.eye(2), b.T @ p))
    assert np.max(np.linalg.eigvals(a - b @ np.asarray(gain)).real) < 0

    lqr = sr.control.StateFeedback(gain, jnp.zeros(4), jnp.zeros(2))
    start = jnp.array([0.1, -0.1])
    traj = sr.simulate(robot, start, jnp.zeros(2), 4.0, 0.005, controller=lqr)
    # upright again, as the linear closed loop predicts from the same start (which the
    # nonlinear one follows to about the lean squared)
    x = np.concatenate([traj.q, traj.qd], axis=1)
    closed = np.asarray(a - b @ np.asarray(gain))
    linear = np.stack([scipy.linalg.expm(t * closed) @ x[0] for t in np.asarray(traj.t)])
    assert np.max(np.abs(x[-1])) < 1e-2 * 0.1
    np.testing.assert_allclose(x, linear, rtol=0, atol=0.05 * 0.1)


def test_a_singular_mass_matrix_is_named():
    # a point mass on the joint's axis: M = 0, and the check names the function and the
    # coordinate
    body = sr.RigidBody(1.0, (0.0, 0.0, 0.0), jnp.zeros((3, 3)))
    robot = sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), body)])
    z = jnp.zeros(1)
    with pytest.raises(
        ValueError,
        match=r"linearize: the mass matrix is not positive definite at coordinate 0 "
        r"\(link 0, joint coordinate 0",
    ):
        sr.linearize(robot, z, z, z)


def test_bad_arguments_are_named(upright):
    robot, _ = upright
    z = jnp.zeros(2)
    with pytest.raises(ValueError, match=r"linearize: u must have shape \(2,\)"):
        sr.linearize(robot, z, z, jnp.zeros(3))
    with pytest.raises(ValueError, match="linearize: qd contains non-finite values"):
        sr.linearize(robot, z, jnp.array([0.0, jnp.nan]), z)


def test_state_feedback_checks_its_shapes(upright):
    robot, _ = upright
    with pytest.raises(ValueError, match=r"gain must have shape \(n_u, 2 n_q\)"):
        sr.control.StateFeedback(jnp.zeros((2, 3)), jnp.zeros(3), jnp.zeros(2))
    with pytest.raises(ValueError, match=r"needs state of shape \(4,\) and inputs of shape"):
        sr.control.StateFeedback(jnp.zeros((2, 4)), jnp.zeros(3), jnp.zeros(2))
    with pytest.raises(ValueError, match="StateFeedback: gain must be finite"):
        sr.control.StateFeedback(jnp.full((2, 4), jnp.nan), jnp.zeros(4), jnp.zeros(2))
    wrong = sr.control.StateFeedback(jnp.zeros((2, 6)), jnp.zeros(6), jnp.zeros(2))
    with pytest.raises(ValueError, match=r"StateFeedback: gain has shape \(2, 6\)"):
        sr.simulate(robot, jnp.zeros(2), jnp.zeros(2), 0.01, 0.005, controller=wrong)
