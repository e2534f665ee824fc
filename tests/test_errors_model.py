"""Bad input to the model and the simulator: clear errors that name the argument, never a crash,
a silent NaN or a raw error from deep inside JAX/NumPy (issue "Reliability")."""

from __future__ import annotations

import functools
import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import control, joints, kinematics, quadrature
from softrigid.actuators import JointMotor, Tendon
from softrigid.kinematics import lvp
from softrigid.materials import CompressibleNeoHookean, CosseratRod, SaintVenantKirchhoff

L = 0.2
# what a run-time check that fires inside the caller's jit raises: JAX's runtime error on a
# program's first call, a ValueError with the same text on its cached calls (JAX's fast path)
RUNTIME_ERRORS = (jax.errors.JaxRuntimeError, ValueError)
VOLUME = quadrature.cylinder(0.02, L, n_axial=2, n_radial=1, n_angular=3)


def _rigid(**kw):
    args = {"mass": 1.0, "com": (0.0, 0.0, 0.1), "inertia": 1e-3 * np.eye(3)} | kw
    return sr.RigidBody(**args)


def _soft(density=1000.0):
    return sr.SoftBody(kinematics.PlanarConstantCurvature(L), VOLUME, density=density)


def _pendulum():
    bob = sr.RigidBody(1.0, (0.0, 0.0, -0.5), 1e-6 * jnp.eye(3))
    return sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), bob)])


@pytest.fixture(scope="module")
def pendulum():
    return _pendulum()


# Construction: each case builds something invalid; (exception type, what the message names).
CONSTRUCTION = {
    "robot of one link, not a list": (
        lambda: sr.Robot(sr.Link(joints.Fixed(), _rigid())),
        TypeError,
        "links must be a sequence",
    ),
    "robot of a string": (lambda: sr.Robot("arm"), TypeError, "links must be a sequence"),
    "NaN mode coefficient": (
        lambda: lvp.Polynomial([[0.0, np.nan]], 0.1),
        ValueError,
        "Polynomial: coefficients must be finite",
    ),
    "fractional coordinate position": (
        lambda: lvp.compose(lvp.Twist(lvp.Polynomial([[0.0, 1.0]], 0.1)), coordinates=[[0.5]]),
        TypeError,
        r"compose: coordinates\[0\] must be a sequence of integer indices",
    ),
    "None for a number": (
        lambda: joints.Helical((0.0, 0.0, 1.0), None),
        TypeError,
        "Helical: pitch must be real numbers, got None",
    ),
    "complex inertia": (
        lambda: sr.RigidBody(1.0, (0, 0, 0), np.eye(3) + 1e-5j),
        TypeError,
        "RigidBody: inertia must be real numbers",
    ),
    "soft body on a rule of no nodes": (
        lambda: sr.SoftBody(
            kinematics.PlanarConstantCurvature(0.4),
            quadrature.QuadratureRule(jnp.zeros((0, 3)), jnp.zeros(0)),
            1000.0,
        ),
        ValueError,
        "SoftBody: volume has no nodes",
    ),
    "NaN centre of mass": (
        lambda: _rigid(com=(0.0, np.nan, 0.0)),
        ValueError,
        "com must be finite",
    ),
    "world_points of a string": (
        lambda: sr.world_points(_pendulum(), jnp.zeros(1), 0, "abc"),
        TypeError,
        "world_points: points must be a real array",
    ),
    "complex world_points": (
        lambda: sr.world_points(_pendulum(), jnp.zeros(1), 0, jnp.ones((1, 3)) * 1j),
        TypeError,
        "world_points: points must be real",
    ),
    "NaN world_points": (
        lambda: sr.world_points(_pendulum(), jnp.zeros(1), 0, [[0.0, np.nan, 0.1]]),
        ValueError,
        r"world_points: points contains non-finite values \(NaN or inf\), first at point 0",
    ),
    "string mass": (lambda: _rigid(mass="heavy"), TypeError, "mass must be real numbers"),
    "distal tuple of three": (
        lambda: _rigid(distal=(np.eye(3), np.zeros(3), 1.0)),
        ValueError,
        r"distal must be None, a 4x4 homogeneous matrix or an \(R, t\) pair",
    ),
    "distal as a string": (
        lambda: _rigid(distal="up"),
        TypeError,
        "RigidBody: distal must be real numbers",
    ),
    "a single contact point": (
        lambda: sr.SoftBody(
            lambda x, q: x, VOLUME, 1000.0, n_q=1, pivot=(0, 0, L), contact_points=((0.02, 0, L),)
        ),
        ValueError,
        "contact_points must be a pair",
    ),
    "NaN contact point": (
        lambda: sr.SoftBody(
            lambda x, q: x,
            VOLUME,
            1000.0,
            n_q=1,
            pivot=(0, 0, L),
            contact_points=((np.nan, 0, L), (0, 0.02, L)),
        ),
        ValueError,
        r"contact_points\[0\] must be finite",
    ),
    "pivot outside the body": (
        lambda: sr.SoftBody(
            lambda x, q: x,
            VOLUME,
            1000.0,
            n_q=1,
            pivot=(0, 0, 1.5 * L),
            contact_points=((0.02, 0, 1.5 * L), (0, 0.02, 1.5 * L)),
        ),
        ValueError,
        r"SoftBody: pivot \[0.0, 0.0, 0.3\d*\] lies outside the body's cylinder volume",
    ),
    "kinematics longer than the volume": (
        lambda: sr.SoftBody(kinematics.PlanarConstantCurvature(0.3), VOLUME, 1000.0),
        ValueError,
        r"has length 0.3 but the volume spans x3 ∈ \[0, 0.2\]",
    ),
    "missing density": (lambda: _soft(density=None), ValueError, "give a density"),
    "negative density": (
        lambda: _soft(density=-1.0),
        ValueError,
        "density must be finite and positive",
    ),
    "tendon start with NaN": (
        lambda: Tendon([0], (0.01, 0.0), start=(0.0, np.nan, 0.0)),
        ValueError,
        "Tendon: start must be finite",
    ),
    "loads of the wrong type": (
        lambda: sr.inverse_dynamics(
            sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), _rigid())]),
            jnp.zeros(1),
            jnp.zeros(1),
            jnp.zeros(1),
            loads=5,
        ),
        TypeError,
        "loads must be a PointLoad, a Wrench or a sequence",
    ),
}


@pytest.mark.parametrize("case", sorted(CONSTRUCTION))
def test_bad_construction_raises_a_clear_error(case):
    build, error, pattern = CONSTRUCTION[case]
    with pytest.raises(error, match=pattern):
        build()


def test_frame_points_off_a_segment_and_as_one_array():
    # a segment is a line: its own default contact points lie off it and were refused as
    # "outside the body" for every map without an exact distal pose
    segment = quadrature.segment(L, 3)
    body = sr.SoftBody(
        lambda x, q: x + q[0] * x[2] * jnp.array([1.0, 0.0, 0.0]), segment, 1e3, n_q=1
    )
    given = sr.SoftBody(
        lambda x, q: x,
        VOLUME,
        1000.0,
        n_q=1,
        pivot=(0, 0, 0.2),
        contact_points=np.array([[0.02, 0, 0.2], [0, 0.02, 0.2]]),  # one (2, 3) array
    )
    for b in (body, given):
        robot = sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), b)])
        assert np.all(np.isfinite(sr.mass_matrix(robot, jnp.full(robot.n_q, 0.1))))


def test_negative_density_through_jit_is_reported():
    # a model built inside a trace cannot be checked at build time: a run-time check fires
    def mass(rho):
        body = sr.SoftBody(kinematics.PlanarConstantCurvature(L), VOLUME, density=rho)
        robot = sr.Robot([sr.Link(joints.Fixed(), body)])
        return sr.mass_matrix(robot, jnp.zeros(1))[0, 0]

    fn = jax.jit(mass)
    assert float(fn(1000.0)) > 0
    with pytest.raises(Exception, match="SoftBody: density must be finite and positive"):
        jax.block_until_ready(fn(-1000.0))


# ---------------------------------------------------------------- a model built inside jit

Q1 = jnp.array([0.3])


def _sprung(kd):
    # the ID of a pendulum with spring and damper (k, d) = kd: uses both
    joint = joints.Revolute((0, 1, 0), stiffness=kd[0], damping=kd[1])
    robot = sr.Robot([sr.Link(joint, _rigid())])
    return sr.inverse_dynamics(robot, Q1, jnp.array([0.7]), jnp.array([-0.4]))


def _inertia(inertia):
    robot = sr.Robot([sr.Link(joints.Revolute((1, 0, 0)), _rigid(inertia=inertia))])
    return sr.mass_matrix(robot, Q1)


def _soft_on_rule(wx):
    # the mass matrix of a soft body on VOLUME with the weight of node 0 and x1 of node 1 = wx
    volume = quadrature.QuadratureRule(
        VOLUME.points.at[1, 0].set(wx[1]),
        VOLUME.weights.at[0].set(wx[0]),
        pivot=VOLUME.pivot,
        contact_a=VOLUME.contact_a,
        contact_b=VOLUME.contact_b,
    )
    robot = sr.Robot([sr.Link(joints.Fixed(), sr.SoftBody(_soft().kinematics, volume, 1000.0))])
    return sr.mass_matrix(robot, Q1)


def _tendon(start):
    body = _soft()
    robot = sr.Robot(
        [sr.Link(joints.Revolute((0, 1, 0)), body)],
        actuators=Tendon([0], (0.01, 0.0), start=start),
    )
    return sr.actuation_matrix(robot, jnp.array([0.3, 0.2]))


def _placed(origin=None, distal=None):
    body = sr.RigidBody(1.0, (0.0, 0.0, 0.1), 1e-3 * np.eye(3), distal=distal)
    robot = sr.Robot([sr.Link(joints.Revolute((1, 0, 0), origin=origin), body)] * 2)
    return sr.mass_matrix(robot, jnp.array([0.3, 0.2]))


_INERTIA = 1e-3 * np.diag([1.0, 2.0, 2.5])
_TURN = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
_WX = np.array([VOLUME.weights[0], VOLUME.points[1, 0]])
# name: (model and algorithm of traced parameters, valid values, bad ones, the message); cases
# that share a function share its compiled programs
TRACED = {
    "negative joint stiffness": (_sprung, np.array([1.5, 0.2]), np.array([-1.0, 0.2]), "Revolute: stiffness must be finite and non-negative"),
    "NaN joint damping": (_sprung, np.array([1.5, 0.2]), np.array([1.5, np.nan]), "Revolute: damping must be finite and non-negative"),
    "inertia not positive semi-definite": (_inertia, _INERTIA, -_INERTIA, "RigidBody: inertia must be positive semi-definite"),
    "asymmetric inertia": (_inertia, _INERTIA, _INERTIA + np.triu(np.ones((3, 3)), 1) * 1e-4, "RigidBody: inertia must be symmetric"),
    "inertia against the triangle inequality": (_inertia, _INERTIA, 1e-3 * np.diag([1.0, 1.0, 3.0]), "RigidBody: inertia has principal moments that violate the triangle inequality"),
    "negative rule weight": (_soft_on_rule, _WX, _WX * np.array([-1e-3, 1.0]), "QuadratureRule: weights must be finite and positive"),
    "NaN rule point": (_soft_on_rule, _WX, _WX + np.array([0.0, np.nan]), "QuadratureRule: points must be finite"),
    "NaN tendon start": (lambda x: _tendon(jnp.stack([x, 0.0, -0.05])), 0.01, np.nan, "Tendon: start must be finite"),
    "joint origin not a rotation": (lambda r: _placed(origin=(r, jnp.zeros(3))), _TURN, 2 * _TURN, "Revolute: origin must be finite, with an orthonormal rotation"),
    "homogeneous origin's last row": (lambda m: _placed(origin=m), np.eye(4), np.eye(4) + np.outer(np.eye(4)[3], np.eye(4)[0]), "Revolute: origin: last row of a homogeneous matrix"),
    "reflected distal placement": (lambda r: _placed(distal=(r, jnp.array([0.0, 0.0, 0.2]))), _TURN, _TURN * np.array([1.0, 1.0, -1.0]), "RigidBody: distal must be finite, with an orthonormal rotation"),
}  # fmt: skip


@functools.cache
def _jitted(build):
    return jax.jit(build)


@pytest.mark.parametrize("case", sorted(TRACED))
def test_model_built_inside_jit_is_checked_at_run_time(case):
    # build time cannot read traced parameters: the run-time check fires when the model is used
    build, good, bad, message = TRACED[case]
    fn = _jitted(build)
    np.testing.assert_allclose(fn(good), build(good), rtol=1e-12, atol=1e-15)
    with pytest.raises(RUNTIME_ERRORS, match=message):
        jax.block_until_ready(fn(bad))
    # the same value given concretely is refused at build time, naming the same argument
    with pytest.raises(ValueError, match=re.match(r"\w+: \w+", message).group()):
        build(bad)


def _solid_force(material):
    body = sr.SoftBody(kinematics.PlanarConstantCurvature(L), VOLUME, 1000.0, material=material)
    return sr.elastic_force(sr.Robot([sr.Link(joints.Fixed(), body)]), jnp.array([0.5]))


def test_solid_parameters_inside_jit_are_checked_at_run_time():
    # refused when concrete, accepted traced: ν = 0.7 gave a negative definite stiffness and a
    # negative dissipation; ν = 0.5 was named as "lam must be finite"
    young = jax.jit(lambda nu: _solid_force(CompressibleNeoHookean.from_young(1e6, nu)))
    np.testing.assert_allclose(
        young(0.3), _solid_force(CompressibleNeoHookean.from_young(1e6, 0.3)), rtol=1e-13
    )
    for nu in (0.7, 0.5, -1.0):
        with pytest.raises(RUNTIME_ERRORS, match=r"Poisson's ratio nu must lie in \(-1, 0\.5\)"):
            jax.block_until_ready(young(nu))
    lame = jax.jit(lambda mu, lam: _solid_force(SaintVenantKirchhoff(mu, lam)))
    with pytest.raises(RUNTIME_ERRORS, match="SaintVenantKirchhoff: the bulk modulus lam"):
        jax.block_until_ready(lame(1e5, -5e5))


def test_derivatives_inside_jit_keep_the_output_checks():
    # the check sat on the primal output only, which a derivative inside jit never reads: XLA
    # removed it as dead code and jit(grad(...)) returned NaN silently (a neo-Hookean body past
    # det F = 0 at q = 23, a NaN state)
    body = sr.SoftBody(
        kinematics.PlanarConstantCurvature(0.3),
        quadrature.cylinder(0.02, 0.3, n_axial=2, n_radial=2, n_angular=4),
        1.0,
        material=CompressibleNeoHookean(1e5, 2e5),
    )
    robot = sr.Robot([sr.Link(joints.Fixed(), body)])
    energy = jax.jit(jax.grad(lambda q: sr.elastic_energy(robot, q)))
    stiffness = jax.jit(jax.jacfwd(lambda q: sr.elastic_force(robot, q)))
    np.testing.assert_allclose(energy(jnp.array([2.0])), sr.elastic_force(robot, jnp.array([2.0])))
    for fn in (energy, stiffness):
        with pytest.raises(RUNTIME_ERRORS, match="elastic_.*: non-finite value"):
            jax.block_until_ready(fn(jnp.array([23.0])))
        with pytest.raises(RUNTIME_ERRORS, match="the argument q contains non-finite values"):
            jax.block_until_ready(fn(jnp.array([jnp.nan])))


def test_rod_basis_too_rich_for_the_axial_rule_warns():
    basis = kinematics.Legendre(L, (6,), strains=("bend",))
    rod = kinematics.Cosserat(L, basis, n_steps=2)
    with pytest.warns(UserWarning, match=r"integrated at 2 axial nodes, too few .* rank"):
        sr.SoftBody(rod, VOLUME, 1000.0, material=CosseratRod(1e6, 3e5))


# ---------------------------------------------------------------- simulate


def test_simulate_refuses_an_absurd_number_of_steps(pendulum):
    z = jnp.zeros(1)
    with pytest.raises(ValueError, match=r"asks for 1e\+15 steps"):
        sr.simulate(pendulum, z, z, t_final=1e12, dt=1e-3)


def test_simulate_time_arguments(pendulum):
    z = jnp.zeros(1)
    # a JAX or NumPy scalar step is a number like any other
    traj = sr.simulate(pendulum, jnp.array([0.3]), z, 0.02, jnp.asarray(0.01))
    assert traj.q.shape == (3, 1)
    with pytest.raises(TypeError, match="dt must be a Python or NumPy number known before tracing"):
        jax.jit(lambda dt: sr.simulate(pendulum, z, z, 0.02, dt).q)(0.01)
    with pytest.raises(ValueError, match="dt must be a finite positive number"):
        sr.simulate(pendulum, z, z, 1.0, -0.1)
    with pytest.raises(TypeError, match="t_final must be a real scalar"):
        sr.simulate(pendulum, z, z, "1 s", 0.1)
    # a complex number passed as a number and failed in float() without a name
    with pytest.raises(TypeError, match=r"simulate: t_final must be a real scalar, got \(1\+0j\)"):
        sr.simulate(pendulum, z, z, 1 + 0j, 0.1)
    with pytest.raises(ValueError, match="for a batch of initial states use jax.vmap"):
        sr.simulate(pendulum, jnp.zeros((4, 1)), jnp.zeros((4, 1)), 0.02, 0.01)


def test_simulate_float32_initial_state(pendulum):
    # promoted consistently with the model (float64 parameters): no dtype error
    q0 = jnp.array([0.3], jnp.float32)
    traj = sr.simulate(pendulum, q0, jnp.zeros(1, jnp.float32), 0.02, 0.01)
    ref = sr.simulate(pendulum, jnp.array([0.3]), jnp.zeros(1), 0.02, 0.01)
    np.testing.assert_allclose(traj.q, ref.q, rtol=1e-6)


def _blow_up(t, q, qd):
    return jnp.where(t > 0.02, jnp.inf, 0.0) * jnp.ones(1)


def test_simulate_divergence_is_reported_under_jit_and_vmap(pendulum):
    def run(q0):
        return sr.simulate(pendulum, q0, jnp.zeros(1), 0.05, 0.01, controller=_blow_up).q

    # eager: the controller named at the first stage time where it is not finite
    with pytest.raises(ValueError, match=r"inputs u are not finite at t = 0.025 s .* step 3"):
        run(jnp.zeros(1))
    # traced: the run-time check inside the program names the steps
    with pytest.raises(Exception, match="became non-finite at step 3 "):
        jax.block_until_ready(jax.jit(run)(jnp.zeros(1)))
    with pytest.raises(Exception, match="simulate: the state became non-finite"):
        jax.block_until_ready(jax.vmap(run)(jnp.zeros((2, 1))))
    # a law whose inputs are NaN at a step's start (a NaN gain, here set past its constructor's
    # check as a tree_map over a batch of laws does) is named as such under jit too (it was
    # "the state became non-finite ...; reduce dt": no dt helps)
    bad = jax.tree_util.tree_map(lambda x: x * jnp.nan, control.ComputedTorque(1.0, 1.0, [0.0]))
    with pytest.raises(Exception, match="inputs u became non-finite at step 1 .* no smaller dt"):
        jax.block_until_ready(
            jax.jit(lambda law: sr.simulate(pendulum, jnp.zeros(1), jnp.zeros(1), 0.05, 0.01, law))(
                bad
            ).q
        )
    # a NaN initial state inside jit or vmap is named (it was reported as a divergence)
    with pytest.raises(Exception, match="simulate: q0 must be finite"):
        jax.block_until_ready(jax.vmap(run)(jnp.array([[0.0], [jnp.nan]])))


def test_a_robot_changed_outside_its_constructor_is_refused():
    # `equinox.tree_at` swaps pytree children and keeps the static sizes: a dropped link once
    # gave an inverse dynamics of the wrong shape and a non-square mass matrix, silently
    import equinox as eqx

    link = sr.Link(joints.Revolute((0, 1, 0)), _rigid())
    robot = sr.Robot([link, link], actuators=[JointMotor(0), JointMotor(1)])
    z = jnp.zeros(2)
    for _ in range(3):  # the robot's fast path made first: the changed robot gets its own
        sr.inverse_dynamics(robot, z, z, z)
    message = r"n_q = 2, n_u = 2 are not those of its links and actuators \(1, None\)"
    dropped = eqx.tree_at(lambda r: r.links, robot, robot.links[:1])
    for q in (z, z[:1]):
        with pytest.raises(ValueError, match="inverse_dynamics: the robot's sizes " + message):
            sr.inverse_dynamics(dropped, q, q, q)
        with pytest.raises(ValueError, match=message):
            jax.jit(sr.mass_matrix)(dropped, q)
    # a stack of robots called without vmap (once: broadcasting shapes (3, 3, 3, 3), (27, 27))
    stacked = jax.tree_util.tree_map(lambda *x: jnp.stack(x), robot, robot)
    with pytest.raises(ValueError, match=r"batch axis \(its gravity has shape \(2, 3\).*jax.vmap"):
        sr.inverse_dynamics(stacked, z, z, z)
    batched = jax.vmap(sr.inverse_dynamics, in_axes=(0, None, None, None))(stacked, z, z, z)
    assert batched.shape == (2, 2)
    fewer = eqx.tree_at(lambda r: r.actuators, robot, robot.actuators[:1])
    with pytest.raises(ValueError, match=r"are not those of its links and actuators \(2, 1\)"):
        sr.forward_dynamics(fewer, z, z, z)


def test_zero_dimensional_integer_arrays_are_link_indices():
    # np.array(1), jnp.int32(0): refused as "not an integer index" while np.int64 passed
    robot = sr.Robot(
        [sr.Link(joints.Revolute((0, 1, 0)), _rigid())] * 2,
        actuators=[JointMotor(np.array(1)), JointMotor(jnp.int32(0))],
    )
    assert robot.n_u == 2
    points = sr.world_points(robot, jnp.zeros(2), jnp.array(1), jnp.zeros((1, 3)))
    np.testing.assert_allclose(points, sr.world_points(robot, jnp.zeros(2), 1, jnp.zeros((1, 3))))
    with pytest.raises(TypeError, match="link must be a non-negative integer index"):
        JointMotor(np.array(1.5))


def test_inertia_checks_do_not_overflow_near_the_largest_float():
    # moments of 1e308: the triangle inequality's sum overflowed (a RuntimeWarning) and inf
    # passed it; checked in units of the largest entry, a valid tensor passes quietly and an
    # invalid one is named, at build time and inside jit
    big = 1e308 * np.eye(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sr.RigidBody(1.0, (0.0, 0.0, 0.1), big)
    bad = 0.4e308 * np.diag([1.0, 1.0, 3.0])
    with pytest.raises(ValueError, match="violate the triangle inequality"):
        sr.RigidBody(1.0, (0.0, 0.0, 0.1), bad)
    build = jax.jit(lambda i: sr.RigidBody(1.0, (0.0, 0.0, 0.1), i).inertia)
    with pytest.raises(RUNTIME_ERRORS, match="violate the triangle inequality"):
        jax.block_until_ready(build(jnp.asarray(bad)))
