"""Statics: closed-form equilibria, Euler–Bernoulli, the damped-simulation limit, Newton's
quadratic convergence, inverse statics and clear errors."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import joints, kinematics, quadrature
from softrigid.actuators import JointMotor, Tendon, actuation_force, controller
from softrigid.materials import CosseratRod
from softrigid.statics import equilibrium, inverse_statics

RADIUS, LENGTH, YOUNG = 0.02, 0.25, 5e6
VOLUME = quadrature.cylinder(RADIUS, LENGTH, n_axial=3, n_radial=2, n_angular=5)
I_SECTION = np.pi * RADIUS**4 / 4  # ∫ x1² dA


def cc_strain(X, q):
    """κ2 = −q/L: the strain of `PlanarConstantCurvature(LENGTH)`."""
    z = jnp.zeros_like(q[0])
    return jnp.stack([z, -q[0] / LENGTH, z, z, z, 1.0 + z])


def cc_rod(eta=0.0, density=1000.0):
    return sr.SoftBody(
        kinematics.PlanarConstantCurvature(LENGTH),
        VOLUME,
        density=density,
        material=CosseratRod(YOUNG, YOUNG / 3, eta=eta, strain=cc_strain),
    )


@pytest.fixture(scope="module")
def arm():
    """Two damped CC segments hanging sideways to gravity (−x), with two antagonistic tendons;
    stiffness-proportional damping η = 0.15 s makes every mode decay within a few seconds."""
    body = cc_rod(eta=0.15)
    robot = sr.Robot([sr.Link(joints.Fixed(), body)] * 2, gravity=(-9.81, 0.0, 0.0))
    acts = (Tendon([0, 1], (0.015, 0.0)), Tendon([0, 1], (-0.015, 0.0)))
    return robot, acts


def test_tendon_bends_constant_curvature_rod():
    # s = E I q / L and A = −d: E I q / L = −d u  ⇒  q = −d u L / (E I), one Newton step
    robot = sr.Robot([sr.Link(joints.Fixed(), cc_rod())], gravity=(0.0, 0.0, 0.0))
    for d, u in ((0.015, 2.0), (-0.01, 5.0)):
        sol = equilibrium(robot, jnp.array([u]), Tendon(0, (d, 0.0)))
        np.testing.assert_allclose(sol.q, [-d * u * LENGTH / (YOUNG * I_SECTION)], rtol=1e-13)
        assert sol.iterations == 1
        assert sol.stable


def test_euler_bernoulli_cantilever():
    # Cosserat rod with an affine curvature κ2(X) = q0 + q1 X/L (exact for a tip load) under a
    # small tip force P along x1: δ = P L³/(3 E I), tip angle P L²/(2 E I), up to (δ/L)²
    kin = kinematics.Cosserat(LENGTH, kinematics.Monomial(LENGTH, 1, strains=("bend2",)))
    body = sr.SoftBody(kin, VOLUME, density=1000.0, material=CosseratRod(YOUNG, YOUNG / 3))
    robot = sr.Robot([sr.Link(joints.Fixed(), body)], gravity=(0.0, 0.0, 0.0))
    ei = YOUNG * I_SECTION
    force = 1e-4 * ei / LENGTH**2
    load = sr.PointLoad(0, (0.0, 0.0, LENGTH), (force, 0.0, 0.0))
    sol = equilibrium(robot, loads=load)
    rot, tip = sr.forward_kinematics(robot, sol.q)
    np.testing.assert_allclose(tip[0, 0], force * LENGTH**3 / (3 * ei), rtol=1e-7)
    np.testing.assert_allclose(rot[0, 0, 2], force * LENGTH**2 / (2 * ei), rtol=1e-7)


def test_newton_converges_quadratically(arm):
    robot, acts = arm
    sol = equilibrium(robot, jnp.array([3.0, 0.5]), acts, tol=1e-14)
    r = np.asarray(sol.history)
    # a smooth case: 4 Newton steps from the straight arm, each squaring the residual
    assert sol.iterations == 4
    ratios = r[1:-1] / r[:-2] ** 2
    assert np.all(ratios < 0.1), ratios
    assert r[-1] < 1e-14 * 10
    assert sol.stable
    # the balance holds through the recursion too: ID(q, 0, 0) = A(q) u
    zero = jnp.zeros(robot.n_q)
    np.testing.assert_allclose(
        sr.inverse_dynamics(robot, sol.q, zero, zero),
        actuation_force(robot, acts, sol.q, sol.u),
        rtol=1e-12,
        atol=1e-13,
    )


def test_equilibrium_is_the_limit_of_a_damped_simulation(arm):
    robot, acts = arm
    u = jnp.array([3.0, 0.5])
    sol = equilibrium(robot, u, acts)
    control = controller(robot, acts, lambda t, q, qd: u)
    zero = jnp.zeros(robot.n_q)
    traj = sr.simulate(robot, zero, zero, t_final=5.0, dt=1e-3, control=control)
    np.testing.assert_allclose(traj.qd[-1], 0.0, atol=1e-9)
    np.testing.assert_allclose(traj.q[-1], sol.q, rtol=0, atol=1e-9)


def test_inverse_statics_reaches_a_tip_target(arm):
    # two tendons, one output (the tip's x): the damped least-squares solution is an exact
    # equilibrium on the target
    robot, acts = arm
    tip = jnp.array([[0.0, 0.0, LENGTH]])

    def tip_x(q):
        return sr.world_points(robot, q, 1, tip)[0, :1]

    target = jnp.array([0.12])
    inv = inverse_statics(robot, acts, tip_x, target, tol=1e-12)
    np.testing.assert_allclose(inv.output, target, atol=1e-12)
    assert inv.output_error < 1e-12
    check = equilibrium(robot, inv.u, acts)
    np.testing.assert_allclose(check.q, inv.q, atol=1e-10)
    np.testing.assert_allclose(tip_x(check.q), target, atol=1e-10)


def test_stability_of_an_inverted_pendulum():
    # a rigid pendulum on a revolute joint: hanging is stable, upright is an unstable equilibrium
    bar = sr.RigidBody(1.0, (0.0, 0.0, 0.5), np.diag([0.1, 0.1, 0.01]))
    robot = sr.Robot([sr.Link(joints.Revolute((0.0, 1.0, 0.0)), bar)], gravity=(0, 0, 9.81))
    down = equilibrium(robot, q0=jnp.array([0.3]))
    np.testing.assert_allclose(down.q, [0.0], atol=1e-12)
    assert down.stable
    up = equilibrium(robot, q0=jnp.array([np.pi - 0.2]))
    np.testing.assert_allclose(up.q, [np.pi], atol=1e-12)
    assert not up.stable
    # a motor holds it at q = 1: τ = m g l sin q (not at 90°, a fold where ∂r/∂q = 0 and
    # the root is only determined to √tol)
    tau = 9.81 * 0.5 * np.sin(1.0)
    side = equilibrium(robot, jnp.array([tau]), JointMotor(0), q0=jnp.array([0.8]))
    np.testing.assert_allclose(side.q, [1.0], atol=1e-12)
    assert side.stable


# ---------------------------------------------------------------- errors


def test_singular_newton_step():
    # nothing holds the joint without gravity or a spring: ∂r/∂q = 0
    bar = sr.RigidBody(1.0, (0.0, 0.0, 0.5), np.diag([0.1, 0.1, 0.01]))
    robot = sr.Robot([sr.Link(joints.Revolute((0.0, 1.0, 0.0)), bar)], gravity=(0, 0, 0))
    with pytest.raises(ValueError, match=r"singular Newton step .* coordinates \[0\]"):
        equilibrium(robot, jnp.array([1.0]), JointMotor(0))


def test_no_convergence_is_an_error(arm):
    robot, acts = arm
    with pytest.raises(ValueError, match="did not converge in 2 iterations"):
        equilibrium(robot, jnp.array([3.0, 0.5]), acts, max_iter=2)


def test_bad_arguments(arm):
    robot, acts = arm
    with pytest.raises(ValueError, match="give both u and actuators"):
        equilibrium(robot, jnp.array([1.0, 1.0]))
    with pytest.raises(ValueError, match=r"u must have shape \(2,\)"):
        equilibrium(robot, jnp.array([1.0]), acts)
    with pytest.raises(ValueError, match=r"q0 must have shape \(2,\)"):
        equilibrium(robot, q0=jnp.zeros(3))
    with pytest.raises(ValueError, match=r"tol must be a number in \(0, 1\)"):
        equilibrium(robot, tol=0.0)
    with pytest.raises(ValueError, match="both must be the same"):
        inverse_statics(robot, acts, lambda q: q, jnp.zeros(3))
