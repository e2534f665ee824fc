"""Statics: closed-form equilibria, Euler–Bernoulli, the damped-simulation limit, Newton's
quadratic convergence, jit/vmap and the status, implicit gradients, inverse statics and clear
errors."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from compile_log import compilations

import softrigid as sr
from softrigid import joints, kinematics, quadrature
from softrigid._reports import raise_runtime_errors
from softrigid.actuators import JointMotor, Tendon
from softrigid.materials import CosseratRod
from softrigid.statics import equilibrium, inverse_statics

RADIUS, LENGTH, YOUNG = 0.02, 0.25, 5e6
VOLUME = quadrature.cylinder(RADIUS, LENGTH, n_axial=3, n_radial=2, n_angular=5)
I_SECTION = np.pi * RADIUS**4 / 4  # ∫ x1² dA
TIP = jnp.array([[0.0, 0.0, LENGTH]])


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


def tendon_rod(d, gravity=(0.0, 0.0, 0.0)):
    """One CC segment with a tendon at offset `d` along `x1`."""
    return sr.Robot(
        [sr.Link(joints.Fixed(), cc_rod())], gravity=gravity, actuators=[Tendon(0, (d, 0.0))]
    )


def pendulum(gravity=(0.0, 0.0, 9.81), stiffness=0.0):
    """A rigid bar on a revolute joint about y with a motor (and a spring)."""
    bar = sr.RigidBody(1.0, (0.0, 0.0, 0.5), np.diag([0.1, 0.1, 0.01]))
    joint = joints.Revolute((0.0, 1.0, 0.0), stiffness=stiffness)
    return sr.Robot([sr.Link(joint, bar)], gravity=gravity, actuators=[JointMotor(0)])


@pytest.fixture(scope="module")
def arm():
    """Two damped CC segments hanging sideways to gravity (−x), with two antagonistic tendons;
    stiffness-proportional damping η = 0.15 s makes every mode decay within a few seconds."""
    body = cc_rod(eta=0.15)
    acts = [Tendon([0, 1], (0.015, 0.0)), Tendon([0, 1], (-0.015, 0.0))]
    return sr.Robot([sr.Link(joints.Fixed(), body)] * 2, gravity=(-9.81, 0.0, 0.0), actuators=acts)


@pytest.fixture(scope="module")
def sideways_rod():
    """One CC segment with a tendon, bent sideways by gravity (a nonlinear balance)."""
    return tendon_rod(0.015, gravity=(-9.81, 0.0, 0.0))


def test_tendon_bends_constant_curvature_rod():
    # s = E I q / L and A = −d: E I q / L = −d u  ⇒  q = −d u L / (E I), one Newton step
    for d, u in ((0.015, 2.0), (-0.01, 5.0)):
        sol = equilibrium(tendon_rod(d), jnp.array([u]))
        np.testing.assert_allclose(sol.q, [-d * u * LENGTH / (YOUNG * I_SECTION)], rtol=1e-13)
        assert sol.iterations == 1
        assert sol.status == 0 and sol.converged
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


@pytest.mark.slow
def test_newton_converges_quadratically(arm):
    sol = equilibrium(arm, jnp.array([3.0, 0.5]), tol=1e-14)
    r = np.asarray(sol.history)
    # a smooth case: 4 Newton steps from the straight arm, each squaring the residual
    assert sol.iterations == 4
    assert np.all(np.isnan(r[5:])) and np.all(np.isfinite(r[:5]))
    r = r[:5]
    ratios = r[1:-1] / r[:-2] ** 2
    assert np.all(ratios < 0.1), ratios
    assert r[-1] < 1e-14 * 10
    assert sol.stable
    # the balance holds through the recursion too: ID(q, 0, 0) = A(q) u
    zero = jnp.zeros(arm.n_q)
    np.testing.assert_allclose(
        sr.inverse_dynamics(arm, sol.q, zero, zero),
        sr.actuation_force(arm, sol.q, sol.u),
        rtol=1e-12,
        atol=1e-13,
    )
    # an exact equilibrium as the initial guess takes no step
    again = equilibrium(arm, sol.u, q0=sol.q)
    assert again.iterations == 0 and again.converged
    np.testing.assert_array_equal(again.q, sol.q)


def test_stiffness_and_the_newton_jacobian_are_the_hessians():
    """`stiffness_matrix` block by block (one Hessian per link in its own coordinates) and the
    Newton Jacobian (that plus forward mode of gravity, loads and the tendons' `A u`) equal
    `jax.hessian` of the elastic energy and `jax.jacfwd` of the residual: on a chain of two
    identical sprung revolute links carrying CC rods, then a rigid bar on a sprung joint,
    under gravity, a point load and three tendons; `A(q)` comes out of the same pass."""
    from softrigid._loads import check_loads
    from softrigid._statics_residual import jacobian, residual

    rod = cc_rod(eta=0.1)
    bar = sr.RigidBody(0.5, (0.0, 0.0, 0.1), np.diag([0.01, 0.01, 0.002]))
    sprung = joints.Revolute((0.0, 1.0, 0.0), stiffness=2.0)
    links = [
        sr.Link(sprung, rod),
        sr.Link(sprung, rod),
        sr.Link(joints.Revolute((1, 0, 0), stiffness=3.0), bar),
    ]
    acts = [Tendon([0, 1], (0.015, 0.0)), Tendon([0], (0.0, 0.01)), Tendon([1], (-0.01, 0.0))]
    robot = sr.Robot(links, gravity=(-9.81, 0.0, -2.0), actuators=acts)
    loads = check_loads(robot, [sr.PointLoad(1, (0.01, 0.0, LENGTH), (0.3, -0.2, 1.0))])
    rng = np.random.default_rng(4)
    q = jnp.asarray(0.5 * rng.normal(size=robot.n_q))
    u = jnp.asarray(rng.uniform(0.0, 5.0, robot.n_u))
    k = sr.stiffness_matrix(robot, q)
    hess = jax.hessian(lambda x: sr.elastic_energy(robot, x))(q)
    np.testing.assert_allclose(k, hess, rtol=1e-12, atol=1e-12 * float(jnp.abs(hess).max()))
    assert float(jnp.abs(k[:2, 2:]).max()) == 0.0  # no coupling between links
    # the oracle compiled (one program: 7 s, where op by op it took 22 s)
    expected = jax.jit(jax.jacfwd(lambda x: residual(robot, loads, u, x)[0]))(q)
    jac, act = jax.jit(jacobian, static_argnums=1)(robot, loads, u, q)
    np.testing.assert_allclose(
        jac, expected, rtol=1e-11, atol=1e-11 * float(jnp.abs(expected).max())
    )
    # A(q) from the same pass (the inverse statics' ∂q/∂u = J⁻¹ A takes it from there)
    np.testing.assert_allclose(act, sr.actuation_matrix(robot, q), rtol=1e-13, atol=1e-15)


@pytest.mark.slow
def test_equilibrium_is_the_limit_of_a_damped_simulation(arm):
    u = jnp.array([3.0, 0.5])
    sol = equilibrium(arm, u)
    zero = jnp.zeros(arm.n_q)
    traj = sr.simulate(arm, zero, zero, t_final=5.0, dt=1e-3, controller=lambda t, q, qd: u)
    np.testing.assert_allclose(traj.qd[-1], 0.0, atol=1e-9)
    np.testing.assert_allclose(traj.q[-1], sol.q, rtol=0, atol=1e-9)


@pytest.mark.slow
def test_inverse_statics_reaches_a_tip_target(arm):
    # two tendons, one output (the tip's x): the damped least-squares solution is an exact
    # equilibrium on the target
    def tip_x(q):
        return sr.world_points(arm, q, 1, TIP)[0, :1]

    target = jnp.array([0.12])
    inv = inverse_statics(arm, tip_x, target, tol=1e-12)
    np.testing.assert_allclose(inv.output, target, atol=1e-12)
    assert inv.output_error < 1e-12
    assert inv.converged
    check = equilibrium(arm, inv.u)
    np.testing.assert_allclose(check.q, inv.q, atol=1e-10)
    np.testing.assert_allclose(tip_x(check.q), target, atol=1e-10)
    # out of iterations: the message gives the inputs and the likely cause (an out-of-reach
    # target whose error creeps down as antagonistic tendons drift; it gave |e| alone)
    with pytest.raises(ValueError, match=r"no convergence in 1 iterations .*u = .*reachable"):
        inverse_statics(arm, tip_x, target, max_iter=1)


def test_stability_of_an_inverted_pendulum():
    # a rigid pendulum on a revolute joint: hanging is stable, upright is an unstable equilibrium
    robot = pendulum()
    down = equilibrium(robot, q0=jnp.array([0.3]))
    np.testing.assert_allclose(down.q, [0.0], atol=1e-12)
    assert down.stable
    up = equilibrium(robot, q0=jnp.array([np.pi - 0.2]))
    np.testing.assert_allclose(up.q, [np.pi], atol=1e-12)
    assert not up.stable
    # a motor holds it at q = 1: τ = m g l sin q (not at 90°, a fold where ∂r/∂q = 0 and
    # the root is only determined to √tol)
    tau = 9.81 * 0.5 * np.sin(1.0)
    side = equilibrium(robot, jnp.array([tau]), q0=jnp.array([0.8]))
    np.testing.assert_allclose(side.q, [1.0], atol=1e-12)
    assert side.stable


def test_inverse_statics_reports_whether_its_equilibrium_is_stable():
    # a motor holds the pendulum (gravity +z, bar along +z: q = 0 hangs, q = π stands) at an
    # angle q* with τ = m g l sin q*; with a weak spring (k = 1 < m g l) the angles near the
    # top are unstable equilibria: ∂r/∂q = k + m g l cos q* < 0
    robot = pendulum(stiffness=1.0)
    for target, stable in ((0.5, True), (np.pi - 0.3, False)):
        sol = inverse_statics(robot, lambda q: q, jnp.array([target]), q0=jnp.array([target]))
        assert sol.converged
        np.testing.assert_allclose(sol.u, [1.0 * target + 9.81 * 0.5 * np.sin(target)], rtol=1e-9)
        assert bool(sol.stable) is stable
        assert bool(equilibrium(robot, sol.u, q0=sol.q).stable) is stable


def test_a_rotation_vector_start_near_two_pi_is_recharted():
    # a link hanging from a spherical joint, a side load fixing its twist: two starts that are
    # the same rotation (|φ| = 0.022 and 2π − 0.022) reach the same equilibrium (from the second,
    # where ∂r/∂q is nearly singular, Newton stopped after 50 iterations at |r| = 2e-2)
    body = sr.RigidBody(1.0, (0, 0, 0.3), jnp.diag(jnp.array([2e-2, 2e-2, 1e-3])))
    robot = sr.Robot([sr.Link(joints.Spherical(), body)], gravity=(0, 0, -9.81))
    load = sr.PointLoad(0, (0.1, 0.0, 0.3), (0.0, 2.0, 0.0))
    near = jnp.array([0.01, 0.02, 0.0])
    far = near * (1.0 - 2.0 * np.pi / jnp.linalg.norm(near))
    poses = [sr.forward_kinematics(robot, q)[0][0] for q in (near, far)]
    np.testing.assert_allclose(poses[0], poses[1], atol=1e-14)
    a, b = (equilibrium(robot, q0=q, loads=load) for q in (near, far))
    np.testing.assert_allclose(a.q, b.q, rtol=1e-12)
    assert int(b.iterations) == int(a.iterations)


def test_exact_start_converges_in_zero_steps():
    # hanging straight down, g(0) vanishes up to round-off: no force scale, but an equilibrium
    robot = pendulum()
    sol = equilibrium(robot)
    assert sol.iterations == 0 and sol.converged
    np.testing.assert_array_equal(sol.q, [0.0])
    # an upright rod under its own weight along its axis, inputs zero
    rod = tendon_rod(0.015, gravity=(0.0, 0.0, -9.81))
    sol = equilibrium(rod)
    assert sol.iterations == 0 and sol.converged
    np.testing.assert_allclose(sol.q, [0.0], atol=1e-15)
    # inverse statics from the default u0 = 0 starts there and reaches a tip target
    inv = inverse_statics(rod, lambda q: sr.world_points(rod, q, 0, TIP)[0, :1], [-0.01])
    assert inv.converged
    np.testing.assert_allclose(inv.output, [-0.01], atol=1e-10)
    # a computed solution's flag is read by NumPy: no program compiled (`_checks.status_is`)
    assert isinstance(sol.converged, np.bool_) and isinstance(inv.converged, np.bool_)
    assert jax.jit(lambda: equilibrium(robot).converged)().dtype == jnp.bool_


# ---------------------------------------------------------------- jit, vmap, gradients


def test_weak_and_stiff_coordinates_both_converge_to_tol():
    # a rod whose axial stiffness (251) is 2e4 times its bending stiffness: the balance test
    # relative to the largest force alone stopped after two steps with the bends off by 3e-7
    # (relative) at tol = 1e-10; the Newton correction must be below tol too
    length = 0.2
    vol = quadrature.cylinder(0.02, length, n_axial=2, n_radial=1, n_angular=3)
    kin = kinematics.SpatialPCS(length, strains=("bend", "axial"))
    body = sr.SoftBody(kin, vol, density=1000.0, material=CosseratRod(1e6, 4e5))
    tendons = [Tendon(0, (0.012, 0.0)), Tendon(0, (-0.006, 0.0104)), Tendon(0, (-0.006, -0.0104))]
    robot = sr.Robot([sr.Link(joints.Fixed(), body)], gravity=(-9.81, 0, 0), actuators=tendons)
    u = jnp.array([3.0, 0.5, 1.0])
    sol = sr.equilibrium(robot, u)
    # the tolerance is an argument of the compiled solve: another one compiles nothing
    with compilations() as compiled:
        ref = sr.equilibrium(robot, u, tol=1e-15, throw=False)
    assert not compiled, compiled
    assert ref.converged
    assert np.diag(np.asarray(ref.jacobian))[2] > 1e4 * np.diag(np.asarray(ref.jacobian))[0]
    np.testing.assert_allclose(sol.q, ref.q, rtol=0, atol=1e-10 * float(jnp.max(jnp.abs(ref.q))))


def test_equilibrium_under_jit_and_vmap(sideways_rod):
    # a batch of tensions in one jitted solve, each as the eager one
    tensions = jnp.array([[0.0], [3.0], [200.0]])
    batch = jax.jit(jax.vmap(lambda u: equilibrium(sideways_rod, u)))(tensions)
    assert batch.q.shape == (3, sideways_rod.n_q)
    assert np.all(np.asarray(batch.converged))
    assert len(set(np.asarray(batch.iterations).tolist())) > 1  # each its own Newton count
    for k, u in enumerate(tensions):
        sol = equilibrium(sideways_rod, u)
        np.testing.assert_allclose(batch.q[k], sol.q, rtol=0, atol=1e-13)
        assert batch.iterations[k] == sol.iterations
        assert batch.stable[k] == sol.stable


def test_failures_under_jit_raise_or_report_a_status(sideways_rod):
    u = jnp.array([20.0])
    # throw (the default): an equinox runtime check, also inside jit
    one_step = jax.jit(lambda u: equilibrium(sideways_rod, u, max_iter=1).q)
    with pytest.raises(Exception, match="did not converge within max_iter"):
        jax.block_until_ready(one_step(u))
    # throw=False: the status reports it
    sol = jax.jit(lambda u: equilibrium(sideways_rod, u, max_iter=1, throw=False))(u)
    assert int(sol.status) == 1 and not sol.converged and sol.iterations == 1
    # a non-finite input under jit is caught at run time
    with pytest.raises(Exception, match="not finite"):
        jax.block_until_ready(one_step(u * jnp.nan))


def test_implicit_gradients_match_finite_differences(sideways_rod):
    # ∂q*/∂θ = −J⁻¹ ∂r/∂θ for the tension u and the rod's Young's modulus E
    def solve_rod(rod, u, young):
        robot = eqx.tree_at(lambda r: r.links[0].body.material.E, rod, young)
        return equilibrium(robot, u).q

    def solve(u, young):
        return solve_rod(sideways_rod, u, young)

    # the robot an argument: one compilation for both rods (the same structure)
    jacobian = jax.jit(jax.jacfwd(solve_rod, argnums=(1, 2)))
    u, young = jnp.array([3.0]), jnp.asarray(YOUNG)
    d_u, d_e = jacobian(sideways_rod, u, young)
    grad_u = jax.grad(lambda u: solve(u, young)[0])(u)
    h_u, h_e = 1e-4, 1e-4 * YOUNG
    fd_u = (solve(u + h_u, young) - solve(u - h_u, young)) / (2 * h_u)
    fd_e = (solve(u, young + h_e) - solve(u, young - h_e)) / (2 * h_e)
    np.testing.assert_allclose(d_u[:, 0], fd_u, rtol=1e-6)
    np.testing.assert_allclose(grad_u, fd_u, rtol=1e-6)
    np.testing.assert_allclose(d_e, fd_e, rtol=1e-6)
    # without gravity the closed form q = −d u L / (E I): ∂q/∂u = −d L/(E I), ∂q/∂E = −q/E
    flat = tendon_rod(0.015)
    d_flat, d_flat_e = jacobian(flat, u, young)
    q_flat = -0.015 * u[0] * LENGTH / (YOUNG * I_SECTION)
    np.testing.assert_allclose(d_flat, [[-0.015 * LENGTH / (YOUNG * I_SECTION)]], rtol=1e-12)
    np.testing.assert_allclose(d_flat_e, [-q_flat / YOUNG], rtol=1e-10)


def test_eager_gradients_of_a_robot_built_from_a_parameter_compile_once(sideways_rod):
    # jax.grad / jax.vmap without a jit of the user's, the robot built from the parameter (its
    # leaves tracers): the Newton loop ran op by op and compiled again at every call (15 s per
    # gradient); now the compiled solve is called, and later calls compile nothing (the
    # run-time check's switch compiled again at every eager vmap call: 20 ms a call)
    def tip(young):
        robot = eqx.tree_at(lambda r: r.links[0].body.material.E, sideways_rod, young)
        return equilibrium(robot, jnp.array([3.0])).q[0]

    grads = [jax.grad(tip)(jnp.asarray(YOUNG * s)) for s in (1.0, 1.1)]
    batches = [jax.vmap(tip)(jnp.asarray(YOUNG * np.array([s, 1.2]))) for s in (1.0, 1.1)]
    with compilations() as compiled:
        grads.append(jax.grad(tip)(jnp.asarray(YOUNG * 1.2)))
        batches.append(jax.vmap(tip)(jnp.asarray(YOUNG * np.array([1.2, 1.3]))))
    assert not compiled, compiled
    # the values: ∂q/∂E against the jitted forward mode of the same solve
    forward = jax.jit(jax.jacfwd(tip))
    np.testing.assert_allclose(grads[2], forward(jnp.asarray(YOUNG * 1.2)), rtol=1e-10)
    np.testing.assert_allclose(batches[2][0], tip(jnp.asarray(YOUNG * 1.2)), rtol=1e-12)


# ---------------------------------------------------------------- inverse statics


def test_inverse_statics_of_a_spring_bar_under_jit_and_vmap():
    # a bar on a spring k without gravity: q = τ/k and the tip's x = l sin q, so the motor
    # torque that puts it on x* is τ = k asin(x*/l)
    k = 2.0
    robot = pendulum(gravity=(0.0, 0.0, 0.0), stiffness=k)
    tip = jnp.array([[0.0, 0.0, 1.0]])

    def tip_x(q):
        return sr.world_points(robot, q, 0, tip)[0, :1]

    eager = inverse_statics(robot, tip_x, [0.5], tol=1e-12)
    assert eager.converged
    np.testing.assert_allclose(eager.u, [k * np.arcsin(0.5)], rtol=1e-10)
    # NumPy scalars as options, the damping too (it refused np.float32 and np.int64); the
    # damping and the tolerance are arguments of the compiled solve: new values compile nothing
    for damping, tol in ((np.float32(1e-3), np.float64(1e-12)), (np.int64(1), 1e-11)):
        with compilations() as compiled:
            sol = inverse_statics(robot, tip_x, [0.5], tol=tol, damping=damping)
        assert not compiled, compiled
        np.testing.assert_allclose(sol.u, eager.u, rtol=1e-10)
    targets = jnp.array([[0.5], [-0.3], [0.8]])
    batch = jax.jit(jax.vmap(lambda t: inverse_statics(robot, tip_x, t, tol=1e-12)))(targets)
    assert np.all(np.asarray(batch.converged))
    np.testing.assert_allclose(batch.u, k * np.arcsin(targets), rtol=1e-10)
    np.testing.assert_allclose(batch.output, targets, atol=1e-12)


def test_inverse_statics_reverse_mode_by_the_implicit_function_theorem():
    """One output per input: `jax.grad` of the solved torque w.r.t. the target and the spring
    stiffness equals the closed form `τ = k asin(x*/l)` (reverse mode did not go through the
    loop before); forward mode agrees."""

    def torque(target, k):
        robot = pendulum(gravity=(0.0, 0.0, 0.0), stiffness=k)

        def tip_x(q):
            return sr.world_points(robot, q, 0, jnp.array([[0.0, 0.0, 1.0]]))[0, :1]

        return inverse_statics(robot, tip_x, target[None], tol=1e-12).u[0]

    x, k = 0.5, 2.0
    expected = (k / np.sqrt(1 - x**2), np.arcsin(x))  # ∂τ/∂x*, ∂τ/∂k
    for derivative in (jax.grad, jax.jacfwd):
        got = derivative(torque, argnums=(0, 1))(jnp.asarray(x), jnp.asarray(k))
        np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_least_squares_inverse_statics_in_reverse_mode():
    """More outputs than inputs: the best fit's `Gᵀ e = 0` differentiated by the implicit
    function theorem (reverse mode raised before: the loop is a `while_loop`). A bar on a
    spring `k` without gravity, its tip `(sin q, cos q)` in `(x, z)` and a target off the
    circle: the nearest point is at `q = atan2(x*, z*)`, so `τ = k atan2(x*, z*)`."""
    tip = jnp.array([[0.0, 0.0, 1.0]])

    def fit(target, k, throw=True):
        robot = pendulum(gravity=(0.0, 0.0, 0.0), stiffness=k)

        def tip_xz(q):
            return sr.world_points(robot, q, 0, tip)[0, ::2]

        return inverse_statics(robot, tip_xz, target, tol=1e-12, throw=throw)

    (x, z), k = (0.3, 0.8), 2.0
    sol = fit(jnp.array([x, z]), k, throw=False)
    assert int(sol.status) == 2  # a least-squares minimum: the target is off the circle
    # Gauss–Newton converges linearly at a nonzero residual, and the loop stops on a step below
    # tol: the fit is good to about 1e-9 here, and its derivatives with it
    np.testing.assert_allclose(sol.u, [k * np.arctan2(x, z)], rtol=1e-8)
    r2 = x**2 + z**2
    expected = ([k * z / r2, -k * x / r2], np.arctan2(x, z))  # ∂τ/∂y*, ∂τ/∂k
    # reverse mode (the custom root's tangent solve, transposed)
    got = jax.grad(lambda t, k: fit(t, k).u[0], argnums=(0, 1))(jnp.array([x, z]), k)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-8)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-8)


def test_unreachable_target_is_reported():
    # a bar on a spring, no gravity: the tip's x = l sin(τ/k) ≤ l, a target at 2 l is out of
    # reach; the best fit (the arm at 90°) comes with converged=False and a warning
    robot = pendulum(gravity=(0.0, 0.0, 0.0), stiffness=2.0)
    tip = jnp.array([[0.0, 0.0, 1.0]])

    def tip_x(q):
        return sr.world_points(robot, q, 0, tip)[0, :1]

    with pytest.warns(RuntimeWarning, match="target is not reached"):
        inv = inverse_statics(robot, tip_x, [2.0])
    assert not inv.converged
    np.testing.assert_allclose(inv.q, [np.pi / 2], atol=1e-4)
    np.testing.assert_allclose(inv.output_error, 1.0, atol=1e-6)


def test_failed_trial_equilibria_stay_out_of_the_output(monkeypatch):
    # an equilibrium that does not converge under a trial input (here: every u > 1, its last
    # iterate NaN) is rejected without evaluating the user's output there, so a checked output
    # (world_points raises on a non-finite point) does not abort the solve: the target,
    # τ = 2 asin(0.8) = 1.85 N m, is out of the inputs that converge, and the solve ends with a
    # status (its steps creep towards u = 1) and a true equilibrium
    import softrigid._statics_levenberg as inverse
    from softrigid._statics_newton import MAX_ITER

    real = inverse.newton

    def flaky(robot, loads, u, q0, tol, max_iter):
        q, c = real(robot, loads, u, q0, tol, max_iter)
        bad = u[0] > 1.0
        return jnp.where(bad, jnp.nan, q), c._replace(status=jnp.where(bad, MAX_ITER, c.status))

    monkeypatch.setattr(inverse, "newton", flaky)
    robot = pendulum(gravity=(0.0, 0.0, 0.0), stiffness=2.0)
    tip = jnp.array([[0.0, 0.0, 1.0]])
    inv = inverse_statics(
        robot, lambda q: sr.world_points(robot, q, 0, tip)[0, :1], [0.8], throw=False
    )
    assert int(inv.status) in (1, 2) and 0.9 < float(inv.u[0]) <= 1.0
    np.testing.assert_allclose(inv.q, inv.u / 2.0, rtol=1e-10)


# ---------------------------------------------------------------- errors


def test_singular_newton_step():
    # nothing holds the joint without gravity or a spring: ∂r/∂q = 0
    robot = pendulum(gravity=(0, 0, 0))
    with pytest.raises(ValueError, match=r"singular Newton step .* coordinates \[0\]"):
        equilibrium(robot, jnp.array([1.0]))
    # inverse statics names the failed equilibrium under u0 with the equilibrium's own message
    with pytest.raises(ValueError, match=r"could not be solved: .*singular Newton step"):
        inverse_statics(robot, lambda q: q, [0.1], u0=jnp.array([1.0]))


def test_singular_equilibrium_stops_inverse_statics():
    # nothing holds the joint, but q = 0 balances u0 = 0 exactly: the equilibrium converges at
    # once, its Jacobian is zero and ∂q/∂u = J⁻¹ A is undefined. The solve stops with status 5
    # (before, the NaN gain made every later step NaN and the loop never ended), eagerly with
    # a ValueError naming the coordinate, under jit with the status or a runtime error
    robot = pendulum(gravity=(0, 0, 0))
    message = r"Jacobian .* is singular at q = .*coordinates \[0\] have no restoring force"
    with pytest.raises(ValueError, match=message):
        inverse_statics(robot, lambda q: q, [0.1])
    sol = jax.jit(lambda t: inverse_statics(robot, jnp.sin, t, throw=False))(jnp.array([0.1]))
    assert int(sol.status) == 5 and not sol.converged
    np.testing.assert_allclose(sol.q, [0.0])
    with pytest.raises((jax.errors.JaxRuntimeError, ValueError), match="singular"):
        jax.block_until_ready(
            jax.jit(lambda t: inverse_statics(robot, jnp.sin, t))(jnp.array([0.1]))
        )
    # two free joints about the gravity axis of a chain: both named
    arm = sr.Robot(
        [sr.Link(joints.Revolute((0.0, 0.0, 1.0)), cc_rod()) for _ in range(2)],
        gravity=(0.0, 0.0, -9.81),
    )
    with pytest.raises(ValueError, match=r"coordinates \[0, 2\] have no restoring force"):
        inverse_statics(arm, lambda q: sr.forward_kinematics(arm, q)[1][-1], [0.1, 0.0, 0.5])


def test_outputs_that_do_not_move_stop_inverse_statics():
    # an output no input moves (a constant, or the frame before the only joint): G = 0, so no
    # step changes |e|. The loop ran forever: its damping started at a subnormal number that
    # the CPU flushes to zero, so 10 μ never grew to the damping limit. Now status 6, eagerly
    # a ValueError, under jit the status or a runtime error
    robot = pendulum()
    message = r"outputs do not move with the inputs at an iterate \(G = W ∂y/∂q ∂q/∂u = 0\)"
    with pytest.raises(ValueError, match=message):
        inverse_statics(robot, lambda q: jnp.ones(1), jnp.zeros(1))
    sol = inverse_statics(robot, lambda q: jnp.ones(1), jnp.zeros(1), max_iter=3, throw=False)
    assert int(sol.status) == 6 and int(sol.iterations) == 0 and not sol.converged
    bar = robot.links[0].body
    links = [sr.Link(joints.Fixed(), bar), sr.Link(robot.links[0].joint, bar)]
    base = sr.Robot(links, gravity=(0.0, 0.0, 9.81), actuators=[JointMotor(1)])
    frame = jax.jit(lambda t: inverse_statics(base, _first_frame(base), t, throw=False).status)
    assert int(frame(jnp.array([0.1, 0.0, 0.5]))) == 6
    with pytest.raises((jax.errors.JaxRuntimeError, ValueError), match="do not move"):
        jax.block_until_ready(
            jax.jit(lambda t: inverse_statics(robot, lambda q: jnp.ones(1), t))(jnp.zeros(1))
        )


def _first_frame(robot):
    """The world position of link 0's distal frame (before the pendulum's joint)."""
    return lambda q: sr.forward_kinematics(robot, q)[1][0]


def test_singular_step_names_an_unresolved_strain_basis():
    # three curvature modes over a single axial quadrature point: the energy sees one of them
    kin = kinematics.Cosserat(LENGTH, kinematics.Monomial(LENGTH, 2, strains=("bend2",)))
    volume = quadrature.cylinder(RADIUS, LENGTH, n_axial=1, n_radial=2, n_angular=5)
    with pytest.warns(UserWarning):
        body = sr.SoftBody(kin, volume, density=1000.0, material=CosseratRod(YOUNG, YOUNG / 3))
    robot = sr.Robot([sr.Link(joints.Fixed(), body)], gravity=(0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match=r"no restoring force.*axial quadrature"):
        equilibrium(robot, jnp.ones(robot.n_q))


def test_non_finite_output_is_named():
    # the equilibrium under u0 = 0 is q = 0, where log(q) = −inf: the output is blamed, not the
    # equilibrium; under jit a NaN target gives the same status
    robot = pendulum(gravity=(0.0, 0.0, 0.0), stiffness=2.0)
    with pytest.raises(ValueError, match=r"output\(q\) - target is not finite .* output function"):
        inverse_statics(robot, jnp.log, [0.1])

    def solve(t):
        return inverse_statics(robot, jnp.sin, t, throw=False)

    sol = jax.jit(solve)(jnp.array([jnp.nan]))
    assert int(sol.status) == 4 and not sol.converged
    # an output that is not one floating array is named before any solve
    with pytest.raises(TypeError, match=r"output\(q\) must return one array, got a tuple"):
        inverse_statics(robot, lambda q: (q[0], q[0]), [0.1, 0.2])
    with pytest.raises(TypeError, match=r"output\(q\) must return a floating-point array"):
        inverse_statics(robot, lambda q: jnp.ones(1, int), [0.1])


def test_no_convergence_is_an_error(sideways_rod):
    with pytest.raises(ValueError, match="did not converge in 2 iterations"):
        equilibrium(sideways_rod, jnp.array([200.0]), max_iter=2)
    sol = equilibrium(sideways_rod, jnp.array([200.0]), max_iter=2, throw=False)
    assert int(sol.status) == 1 and not sol.converged


def test_bad_arguments(arm):
    with pytest.raises(ValueError, match=r"u must have shape \(2,\)"):
        equilibrium(arm, jnp.array([1.0]))
    with pytest.raises(ValueError, match=r"u contains non-finite"):
        equilibrium(arm, jnp.array([1.0, jnp.nan]))
    with pytest.raises(ValueError, match=r"q0 must have shape \(2,\)"):
        equilibrium(arm, q0=jnp.zeros(3))
    with pytest.raises(ValueError, match=r"tol must be a number in \(0, 1\)"):
        equilibrium(arm, tol=0.0)
    with pytest.raises(ValueError, match=r"max_iter must be a positive integer below 2\*\*31"):
        equilibrium(arm, max_iter=10**20)
    # a flag is a boolean (the string "False" was read as true, None and 0 as false)
    for flag in ("False", None, 0):
        with pytest.raises(TypeError, match="throw must be True or False"):
            equilibrium(arm, throw=flag)
    # NumPy scalars are options like Python numbers (a solve on the one-bar pendulum, whose
    # program compiles in a tenth of the arm's time)
    bar = pendulum(stiffness=2.0)
    sol = equilibrium(bar, tol=np.float32(1e-6), max_iter=np.int64(20), throw=np.True_)
    assert sol.converged
    with pytest.raises(ValueError, match="both must be the same"):
        inverse_statics(arm, lambda q: q, jnp.zeros(3))
    with pytest.raises(ValueError, match="target must be finite"):
        inverse_statics(arm, lambda q: q, jnp.array([0.1, jnp.nan]))
    with pytest.raises(TypeError, match="inverse_statics: target must be real numbers"):
        inverse_statics(arm, lambda q: q, jnp.array([0.1 + 1j, 0.0]))
    with pytest.raises(ValueError, match=r"u0 must have shape \(2,\)"):
        inverse_statics(arm, lambda q: q, jnp.zeros(2), u0=jnp.zeros(3))
    for bad in (-1e-3, True, np.bool_(True), "0.1"):
        with pytest.raises(ValueError, match="damping must be a positive number"):
            inverse_statics(arm, lambda q: q, jnp.zeros(2), damping=bad)
    with pytest.raises(ValueError, match="weights must be finite and positive"):
        inverse_statics(arm, lambda q: q, jnp.zeros(2), weights=jnp.array([1.0, 0.0]))
    # traced weights: a run-time check (a NaN weight was status 4, blaming the output)
    solve = jax.jit(
        lambda w: inverse_statics(bar, lambda q: q, jnp.zeros(1), weights=w, throw=False).u
    )
    for w in ([-1.0], [np.nan]):
        with pytest.raises(ValueError, match="inverse_statics: weights must be finite and pos"):
            raise_runtime_errors(lambda w=w: solve(jnp.array(w)))
    # the only positional argument after the robot is what the solve is given; guesses are
    # keyword-only (no silent swap of q0 and u)
    with pytest.raises(TypeError, match="positional"):
        equilibrium(arm, jnp.zeros(2), jnp.zeros(2))
    with pytest.raises(TypeError, match="positional"):
        inverse_statics(arm, lambda q: q, jnp.zeros(2), jnp.zeros(2))


def test_inverse_statics_with_redundant_inputs_keeps_their_split():
    # two motors on one joint: the outputs fix only their sum τ = k asin(x*/l); the steps are
    # minimum-norm, so the difference u1 − u2 stays what u0 gives it (here 0 and 2), exactly,
    # even with a damping small enough to make GᵀG + μ² I singular to rounding
    k = 2.0
    bar = sr.RigidBody(1.0, (0.0, 0.0, 0.5), np.diag([0.1, 0.1, 0.01]))
    joint = joints.Revolute((0.0, 1.0, 0.0), stiffness=k)
    robot = sr.Robot(
        [sr.Link(joint, bar)], gravity=(0.0, 0.0, 0.0), actuators=[JointMotor(0), JointMotor(0)]
    )
    tip = jnp.array([[0.0, 0.0, 1.0]])

    def tip_x(q):
        return sr.world_points(robot, q, 0, tip)[0, :1]

    for damping in (1e-3, 1e-12):
        for u0 in ((0.0, 0.0), (1.0, -1.0)):
            sol = inverse_statics(robot, tip_x, [0.99], u0=u0, damping=damping, tol=1e-12)
            assert sol.converged
            np.testing.assert_allclose(sum(sol.u), k * np.arcsin(0.99), rtol=1e-10)
            np.testing.assert_allclose(sol.u[0] - sol.u[1], u0[0] - u0[1], atol=1e-12)


def test_inverse_statics_forward_mode_through_an_output_closure(sideways_rod):
    # the output closes over the traced offset: under jacfwd the call ran its eager path and
    # read a tracer (ConcretizationTypeError); forward mode goes through the iterations
    def tension(offset):
        out = inverse_statics(sideways_rod, lambda q: q[:1] + offset, jnp.array([0.2]), tol=1e-12)
        return out.u[0]

    eps = 1e-6
    fd = (tension(eps) - tension(-eps)) / (2 * eps)
    np.testing.assert_allclose(jax.jacfwd(tension)(0.0), fd, rtol=1e-6)


def test_eager_solves_leave_out_the_implicit_differentiation(custom_root_calls):
    # `custom_root` traces the roots and their linearization at every call, differentiated or
    # not: on the helicoid robot of Simulation 1 half of the inverse statics' 10.8 s of tracing.
    # An eager call (nothing traced: no derivative can be asked) runs the loop without it,
    # to the same solution; under a transformation the implicit function theorem stays
    k = 2.0
    robot = pendulum(gravity=(0.0, 0.0, 0.0), stiffness=k)
    tip = jnp.array([[0.0, 0.0, 1.0]])
    roots = custom_root_calls

    def tip_x(q):
        return sr.world_points(robot, q, 0, tip)[0, :1]

    eager = inverse_statics(robot, tip_x, [0.5], tol=1e-12)
    held = equilibrium(robot, jnp.array([0.3]))
    assert not roots
    traced = jax.jit(lambda t: inverse_statics(robot, tip_x, t, tol=1e-12))(jnp.array([0.5]))
    traced_held = jax.jit(lambda u: equilibrium(robot, u))(jnp.array([0.3]))
    assert len(roots) == 2
    np.testing.assert_allclose(eager.u, [k * np.arcsin(0.5)], rtol=1e-10)
    np.testing.assert_allclose(eager.u, traced.u, rtol=1e-12)
    np.testing.assert_allclose(held.q, [0.3 / k], rtol=1e-10)
    np.testing.assert_allclose(held.q, traced_held.q, rtol=1e-12)
    for field in ("iterations", "status", "stable"):
        assert np.asarray(getattr(eager, field)) == np.asarray(getattr(traced, field))
        assert np.asarray(getattr(held, field)) == np.asarray(getattr(traced_held, field))


def test_equilibrium_of_a_model_closing_over_a_mapped_value():
    # a user map closing over `a`, the value an eager `vmap`/`jacfwd` maps: the arguments are
    # concrete but the model is not, so the call is not eager (before: the eager error branch
    # read the traced status, ConcretizationTypeError); the closed form q = (u + g a m_z)/k
    k, g, u = 3.0, 9.81, jnp.array([0.2])
    points, weights = np.asarray(VOLUME.points), np.asarray(VOLUME.weights)
    m_z = 1000.0 * np.sum(weights * points[:, 2])

    def q_eq(a):
        def bent(x, q):  # x1 += a q x3: the body's x3-moment turns gravity along x1 into q
            return x + q[0] * a * x[2] * jnp.array([1.0, 0.0, 0.0])

        energy = sr.materials.Energy(lambda q: 0.5 * k * q[0] ** 2)
        body = sr.SoftBody(bent, VOLUME, density=1000.0, n_q=1, material=energy)
        robot = sr.Robot([sr.Link(joints.Fixed(), body)], gravity=(g, 0.0, 0.0))
        return equilibrium(robot, u).q[0]

    a = jnp.array([1.0, 2.0])
    np.testing.assert_allclose(jax.vmap(q_eq)(a), (0.2 + g * a * m_z) / k, rtol=1e-10)
    np.testing.assert_allclose(jax.jacfwd(q_eq)(1.0), g * m_z / k, rtol=1e-9)


def test_the_equilibriums_jacobian_is_differentiable():
    # `jacobian` left custom_root as an auxiliary output, whose derivative was zero, silently:
    # a bar on a spring without gravity has J = k (dJ/dk = 1); with gravity J(q(u)) moves with u
    def stiffness(k):
        return equilibrium(pendulum(gravity=(0, 0, 0), stiffness=k), jnp.array([0.3])).jacobian

    for derivative in (jax.grad, jax.jacfwd):
        np.testing.assert_allclose(derivative(lambda k: stiffness(k)[0, 0])(2.0), 1.0, rtol=1e-12)

    def held(u):
        return equilibrium(pendulum(stiffness=5.0), jnp.array([u]), tol=1e-13).jacobian[0, 0]

    fd = (held(1.0 + 1e-5) - held(1.0 - 1e-5)) / 2e-5
    np.testing.assert_allclose(jax.grad(held)(1.0), fd, rtol=1e-6)
    assert abs(fd) > 0.01
