"""Equality constraints by the Udwadia–Kalaba equation (`softrigid.constraints`): a unicycle
(rolling constraint), a point-mass pendulum (distance constraint) against the revolute
pendulum, a four-bar linkage (loop closure with Baumgarte stabilization), and the errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import softrigid as sr
from softrigid import constraints, joints

G = 9.81

# ---------------------------------------------------------------- unicycle

MASS, INERTIA, FORCE, TORQUE = 2.0, 0.15, 0.6, -0.09


def _rolling(q):
    # −sin φ ẋ + cos φ ẏ = 0: no sideways velocity
    return jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]])


def _push(t, q, qd):
    # a force F along the heading and a torque τ about the vertical
    return jnp.array([FORCE * jnp.cos(q[2]), FORCE * jnp.sin(q[2]), TORQUE])


@pytest.fixture(scope="module")
def unicycle():
    """`q = (x, y, φ)` on a planar joint with normal z: `M = diag(m, m, I)`."""
    body = sr.RigidBody(MASS, jnp.zeros(3), jnp.diag(jnp.array([0.1, 0.1, INERTIA])))
    return sr.Robot([sr.Link(joints.Planar((0.0, 0.0, 1.0)), body)])


def test_unicycle_rolls(unicycle):
    rolling = constraints.Nonholonomic(_rolling)
    phi0, v0, w0 = 0.3, 0.5, 0.8
    q0 = jnp.array([0.1, -0.2, phi0])
    qd0 = jnp.array([v0 * np.cos(phi0), v0 * np.sin(phi0), w0])
    traj = sr.simulate(unicycle, q0, qd0, 2.0, 1e-3, controller=_push, constraints=rolling)
    t, (x, y, phi), (xd, yd, phid) = np.asarray(traj.t), np.asarray(traj.q).T, np.asarray(traj.qd).T
    # m v̇ = F: v = v0 + F t / m;  I φ̈ = τ: φ̇ = ω0 + τ t / I
    np.testing.assert_allclose(
        xd * np.cos(phi) + yd * np.sin(phi), v0 + FORCE * t / MASS, atol=1e-12
    )
    np.testing.assert_allclose(phid, w0 + TORQUE * t / INERTIA, atol=1e-12)
    np.testing.assert_allclose(phi, phi0 + w0 * t + TORQUE * t**2 / (2 * INERTIA), atol=1e-12)
    # a(q) q̇ = 0 along the motion (measured 4e-15; v and φ̇ to 3e-15 and 2e-14)
    np.testing.assert_allclose(-np.sin(phi) * xd + np.cos(phi) * yd, 0.0, atol=1e-12)
    # the motion is not trivial: it turned and moved
    assert np.ptp(phi) > 0.5 and np.hypot(x[-1] - x[0], y[-1] - y[0]) > 0.5


# ---------------------------------------------------------------- point-mass pendulum

LENGTH = 0.5


@pytest.fixture(scope="module")
def point_mass():
    """A 1 kg point mass in the x-z plane (planar joint with normal y: `q = (z, x, θ)`; the
    spin `θ` is decoupled), gravity −z."""
    body = sr.RigidBody(1.0, jnp.zeros(3), 1e-6 * jnp.eye(3))
    return sr.Robot([sr.Link(joints.Planar((0.0, 1.0, 0.0)), body)], gravity=(0.0, 0.0, -G))


def _position(q):
    # (x, z) of the mass: q = (z, x, θ)
    return jnp.array([q[1], q[0]])


def _distance(q):
    # φ(q) = |p| − l
    return jnp.linalg.norm(_position(q)) - LENGTH


def _pendulum_state(theta, omega):
    """The point mass where the revolute pendulum (about y, angle θ from the downward
    vertical, R_y(θ) (0, 0, −l)) puts its bob."""
    s, c = np.sin(theta), np.cos(theta)
    q = jnp.array([-LENGTH * c, -LENGTH * s, 0.0])
    qd = jnp.array([LENGTH * s * omega, -LENGTH * c * omega, 0.0])
    return q, qd


def test_point_mass_with_a_distance_constraint_is_the_revolute_pendulum(point_mass):
    theta0, t_final = 1.2, 1.0
    rod = constraints.Holonomic(_distance, alpha=10.0, beta=10.0)
    q0, qd0 = _pendulum_state(theta0, 0.0)
    traj = sr.simulate(point_mass, q0, qd0, t_final, 1e-3, constraints=rod)
    # the revolute pendulum: l θ̈ = −g sin θ
    sol = solve_ivp(
        lambda t, y: [y[1], -G / LENGTH * np.sin(y[0])],
        (0.0, t_final),
        [theta0, 0.0],
        t_eval=np.asarray(traj.t),
        rtol=1e-12,
        atol=1e-12,
    )
    q_ref = np.stack([_pendulum_state(th, om)[0] for th, om in sol.y.T])
    qd_ref = np.stack([_pendulum_state(th, om)[1] for th, om in sol.y.T])
    # RK4 at 1 ms: measured 6e-11 (positions) and 2.4e-10 (velocities)
    np.testing.assert_allclose(traj.q, q_ref, atol=1e-9)
    np.testing.assert_allclose(traj.qd, qd_ref, atol=2e-9)
    # the constraint force is the rod's tension −m (l θ̇² + g cos θ) p̂ on the mass
    theta, omega = 0.7, -1.3
    q, qd = _pendulum_state(theta, omega)
    out = sr.constrained_forward_dynamics(point_mass, q, qd, jnp.zeros(3), rod)
    tension = LENGTH * omega**2 + G * np.cos(theta)
    np.testing.assert_allclose(out.force, -tension * np.asarray(q) / LENGTH, atol=1e-12)
    # Q_c = M (q̈ − q̈_f) = aᵀ λ with a = ∂φ/∂q: M = diag(m, m, I), q̈_f = (−g, 0, 0)
    mass, free = np.diag([1.0, 1.0, 1e-6]), np.array([-G, 0.0, 0.0])
    np.testing.assert_allclose(out.force, mass @ (out.qdd - free), atol=1e-12)
    np.testing.assert_allclose(out.multipliers, [-tension], rtol=1e-12)
    # a non-finite constraint (|p| at p = 0) is named
    with pytest.raises(ValueError, match=r"constraints\[0\] \(Holonomic\) is not finite"):
        sr.constrained_forward_dynamics(point_mass, jnp.zeros(3), qd, jnp.zeros(3), rod)
    with pytest.raises(ValueError, match=r"simulate: constraints\[0\] \(Holonomic\) is not"):
        sr.simulate(point_mass, jnp.zeros(3), qd, 0.01, 1e-3, constraints=rod)


# ---------------------------------------------------------------- four-bar linkage

# crank, coupler, rocker; the rocker's ground pivot at (GROUND, 0, 0): a Grashof crank-rocker
LINKS = (0.3, 1.0, 0.6)
MASSES = (0.5, 1.5, 1.0)
GROUND = 1.0


@pytest.fixture(scope="module")
def open_chain():
    """Three rods on revolute joints about y (each rod along its x axis, the next joint at its
    end): `R_y(ψ) e_x = (cos ψ, 0, −sin ψ)` with `ψ_k = θ_1 + … + θ_k`."""
    links = []
    for length, mass in zip(LINKS, MASSES):
        rod = mass * length**2 / 12
        body = sr.RigidBody(
            mass,
            (length / 2, 0.0, 0.0),
            jnp.diag(jnp.array([1e-3 * rod, rod, rod])),
            distal=(jnp.eye(3), (length, 0.0, 0.0)),
        )
        links.append(sr.Link(joints.Revolute((0.0, 1.0, 0.0)), body))
    return sr.Robot(links, gravity=(0.0, 0.0, -G))


def _closure(q):
    # φ(q) = tip(q) − (GROUND, 0) in (x, z): the rocker's end on its ground pivot
    psi = jnp.cumsum(q)
    lengths = jnp.asarray(LINKS)
    return jnp.array([lengths @ jnp.cos(psi) - GROUND, -lengths @ jnp.sin(psi)])


def _four_bar_state(crank, rate, error=0.0):
    """A closed configuration with crank angle `crank` (the rocker angle off by `error`) and
    the velocity of crank rate `rate` that keeps it closed."""
    l1, l2, l3 = LINKS
    b = np.array([l1 * np.cos(crank), -l1 * np.sin(crank)])
    d = np.array([GROUND, 0.0])
    # C: intersection of the circles |C − B| = l2 and |C − D| = l3 (the upper branch)
    bd = d - b
    dist = np.linalg.norm(bd)
    along = (l2**2 - l3**2 + dist**2) / (2 * dist)
    c = b + along * bd / dist + np.sqrt(l2**2 - along**2) * np.array([bd[1], -bd[0]]) / dist
    psi = [crank, np.arctan2(-(c - b)[1], (c - b)[0]), np.arctan2(-(d - c)[1], (d - c)[0])]
    q = jnp.asarray(np.diff(psi, prepend=0.0) + np.array([0.0, 0.0, error]))
    jac = np.asarray(jax.jacfwd(_closure)(q))
    rates = np.linalg.solve(jac[:, 1:], -jac[:, 0] * rate)
    return q, jnp.array([rate, *rates])


def _energies(q, qd):
    """`(T, V)` of the three rods (thin rods about y, centres of mass at their middles)."""
    psi, psid = np.cumsum(q, axis=1), np.cumsum(qd, axis=1)
    kinetic, potential = np.zeros(len(q)), np.zeros(len(q))
    joint = np.zeros((len(q), 2))
    joint_v = np.zeros((len(q), 2))
    for k, (length, mass) in enumerate(zip(LINKS, MASSES)):
        axis = np.stack([np.cos(psi[:, k]), -np.sin(psi[:, k])], 1)
        axis_d = np.stack([-np.sin(psi[:, k]), -np.cos(psi[:, k])], 1) * psid[:, k, None]
        com, com_v = joint + length / 2 * axis, joint_v + length / 2 * axis_d
        rot = mass * length**2 / 12 * psid[:, k] ** 2
        kinetic += 0.5 * mass * np.sum(com_v**2, 1) + 0.5 * rot
        potential += mass * G * com[:, 1]
        joint, joint_v = joint + length * axis, joint_v + length * axis_d
    return kinetic, potential


def test_four_bar_linkage_closes_and_conserves_energy(open_chain):
    loop = constraints.Holonomic(_closure, alpha=20.0, beta=20.0)
    q0, qd0 = _four_bar_state(0.4, 3.0)
    traj = sr.simulate(open_chain, q0, qd0, 2.0, 1e-3, constraints=loop)
    q, qd = np.asarray(traj.q), np.asarray(traj.qd)
    residual = np.abs(np.asarray(jax.vmap(_closure)(traj.q))).max()
    assert residual < 1e-9  # measured 5e-11 (7e-10 without Baumgarte)
    kinetic, potential = _energies(q, qd)
    energy = kinetic + potential
    # to RK4's accuracy at dt = 1 ms: measured 7e-10 J, 3e-10 of the largest kinetic energy (2.3 J)
    assert np.abs(energy - energy[0]).max() < 1e-8 * kinetic.max()
    assert np.ptp(q[:, 0]) > 1.0  # the crank turned
    # Baumgarte pulls an open loop (a 1e-3 rad error at the rocker) closed; without, it stays
    q1, qd1 = _four_bar_state(0.4, 3.0, error=1e-3)
    start = np.abs(np.asarray(_closure(q1))).max()
    for gains, bound in (((20.0, 20.0), 1e-8), ((0.0, 0.0), None)):
        loose = constraints.Holonomic(_closure, *gains)
        end = sr.simulate(open_chain, q1, qd1, 2.0, 1e-3, constraints=loose).q[-1]
        residual = np.abs(np.asarray(_closure(end))).max()
        if bound is None:
            assert residual > 0.1 * start
        else:
            assert residual < bound


# ---------------------------------------------------------------- errors


def test_bad_constraints_are_named(unicycle):
    q, qd, u = jnp.zeros(3), jnp.zeros(3), jnp.zeros(3)
    cfd = sr.constrained_forward_dynamics
    with pytest.raises(ValueError, match=r"Holonomic: phi\(q\) must return a real array of shape"):
        cfd(unicycle, q, qd, u, constraints.Holonomic(lambda q: jnp.eye(3)))
    with pytest.raises(TypeError, match=r"Holonomic: phi\(q\) must return one array, got a tuple"):
        cfd(unicycle, q, qd, u, constraints.Holonomic(lambda q: (q[0], q[1])))
    with pytest.raises(TypeError, match=r"phi\(q\) must return a floating-point array, got dtype"):
        cfd(unicycle, q, qd, u, constraints.Holonomic(lambda q: jnp.zeros(1, int)))
    with pytest.raises(ValueError, match=r"Nonholonomic: a\(q\) must return .* \(m, 3\)"):
        cfd(unicycle, q, qd, u, constraints.Nonholonomic(lambda q: jnp.ones((1, 4))))
    with pytest.raises(ValueError, match=r"AccelerationForm: b must return .* \(1,\)"):
        form = constraints.AccelerationForm(lambda t, q, qd: (jnp.ones((1, 3)), jnp.ones(2)))
        cfd(unicycle, q, qd, u, form)
    with pytest.raises(ValueError, match="AccelerationForm: fn.* must return a pair"):
        cfd(unicycle, q, qd, u, constraints.AccelerationForm(lambda t, q, qd: q))
    with pytest.raises(TypeError, match=r"constraints\[1\] must be a softrigid.constraints"):
        cfd(unicycle, q, qd, u, [constraints.Nonholonomic(_rolling), _rolling])
    with pytest.raises(TypeError, match="Holonomic: phi must be a function"):
        constraints.Holonomic(np.zeros(2))
    with pytest.raises(ValueError, match="Holonomic: alpha must be non-negative"):
        constraints.Holonomic(_distance, alpha=-1.0)
    with pytest.raises(ValueError, match=r"constrained_forward_dynamics: t must be a scalar"):
        cfd(unicycle, q, qd, u, constraints.Nonholonomic(_rolling), t=jnp.zeros(3))
    with pytest.raises(ValueError, match="constraints must not be empty"):
        cfd(unicycle, q, qd, u, [])
    # a constraint without rows gave the free dynamics, as if imposed
    empty = constraints.AccelerationForm(lambda t, q, qd: (jnp.zeros((0, 3)), jnp.zeros(0)))
    for c in (empty, constraints.Holonomic(lambda q: q[:0])):
        with pytest.raises(ValueError, match=r"constraints\[1\] \(\w+\) has no rows"):
            cfd(unicycle, q, qd, u, [constraints.Nonholonomic(_rolling), c])
    # a function JAX cannot trace, or one of other arguments, is named (simulate too)
    numpy_phi = constraints.Holonomic(lambda q: np.sin(q[:1]))
    with pytest.raises(TypeError, match=r"constraints\[0\] \(Holonomic\): its function must be"):
        cfd(unicycle, q, qd, u, numpy_phi)
    with pytest.raises(TypeError, match=r"constraints\[1\] \(Holonomic\): .*missing 1 required"):
        both = [constraints.Nonholonomic(_rolling), constraints.Holonomic(lambda q, t: q[:1])]
        cfd(unicycle, q, qd, u, both)
    with pytest.raises(TypeError, match=r"constraints\[0\] \(Holonomic\): its function must be"):
        sr.simulate(unicycle, q, qd, 0.02, 0.01, constraints=numpy_phi)
    with pytest.raises(ValueError, match="explicit methods 'rk4' and 'semi_implicit_euler'"):
        sr.simulate(
            unicycle, q, qd, 0.1, 0.01, method="implicit_euler",
            constraints=constraints.Nonholonomic(_rolling),
        )  # fmt: skip


def test_a_diverging_run_names_its_step_when_the_constraint_calls_softrigid():
    # φ through sr.forward_kinematics: once the run diverged, the public function's own check
    # of its argument fired first ("forward_kinematics: the argument q contains non-finite
    # values", no time, no step); simulate's report names the step, eagerly and under jit
    def rod():
        inertia = np.diag([1e-4, 0.0075, 0.0075])
        return sr.RigidBody(1.0, (0.15, 0, 0), inertia, distal=(np.eye(3), (0.3, 0, 0)))

    robot = sr.Robot([sr.Link(joints.Revolute((0, 1.0, 0)), rod()) for _ in range(2)])
    # the tip held 0.7 m from the base by a 0.6 m arm: the run blows up once the arm is straight
    reach = constraints.Holonomic(
        lambda q: sr.forward_kinematics(robot, q)[1][-1, ::2] - jnp.array([0.7, 0.0]),
        alpha=10.0,
        beta=10.0,
    )
    q0 = jnp.array([0.3, -0.4])
    with pytest.raises(ValueError, match=r"simulate: the state became non-finite at t = 0\.059 s"):
        sr.simulate(robot, q0, jnp.zeros(2), 0.1, 1e-3, constraints=reach)
    run = jax.jit(lambda q: sr.simulate(robot, q, jnp.zeros(2), 0.1, 1e-3, constraints=reach).q)
    with pytest.raises(
        Exception, match=r"the state became non-finite between step 59 and step 60 "
    ):
        jax.block_until_ready(run(q0))
