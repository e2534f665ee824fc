"""The `O(N)` articulated-body forward dynamics (`softrigid._articulated`) against the Cholesky
path (`M` by the recursion, Cholesky solve) on mixed chains and against the inverse dynamics on
a chain of every joint and body family, with free base, springs, external loads and actuators,
at random states and at `q = 0` (zero curvature, the singular point of the closed forms);
derivatives through it; its run-time check; and its use by `simulate` and `vector_field`."""

from __future__ import annotations

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest
from robots import mixed_robot, random_inertia, random_rigid_chain, random_state, small_robot

import softrigid as sr
from softrigid import joints, kinematics, quadrature
from softrigid._articulated import _spd_solve, _unpack, articulated_accelerations, choose_solver
from softrigid.actuators import JointMotor, Tendon
from softrigid.kinematics import lvp
from softrigid.materials import CosseratRod

LENGTH = 0.2
VOLUME = quadrature.cylinder(0.02, LENGTH, n_axial=3, n_radial=1, n_angular=3)


def _soft(kin, material=None, **extra):
    return sr.SoftBody(kin, VOLUME, density=1000.0, material=material, **extra)


def _rigid(seed):
    rng = np.random.default_rng(seed)
    mass = rng.uniform(0.3, 1.0)
    return sr.RigidBody(
        mass,
        rng.uniform(-0.05, 0.05, 3),
        random_inertia(rng, mass, 0.1),
        distal=(np.eye(3), (0.0, 0.05, 0.1)),
    )


def _families_robot(cosserat: bool) -> sr.Robot:
    """Every joint family (fixed, revolute, prismatic, helical, cylindrical, universal, planar,
    spherical, free) and every body family (rigid, planar CC, 3D CC, planar PCS, a
    volume-preserving composition and a spatial PCS rod or, with `cosserat`, a Cosserat rod
    with a strain basis in its place), joint springs, rod materials, a motor and a tendon. The
    fixed joint carries a rigid body: a link without coordinates."""
    rod = CosseratRod(2e5, 7e4, eta=0.02)
    if cosserat:
        kin = kinematics.Cosserat(
            LENGTH, kinematics.PiecewiseConstant(LENGTH, 2, ("bend", "axial")), n_steps=2
        )
        cylindrical = sr.Link(joints.Cylindrical((0, 0, 1)), _soft(kin, rod))
    else:  # a spatial PCS rod: bending, twist and stretch, closed form (compiles in seconds)
        kin = kinematics.SpatialPCS(LENGTH, strains=("bend", "twist", "axial"))
        cylindrical = sr.Link(joints.Cylindrical((0, 0, 1)), _soft(kin, rod))
    links = [
        sr.Link(joints.Free(), _rigid(0)),
        sr.Link(joints.Revolute((0, 1, 0), stiffness=2.0, damping=0.1), _rigid(1)),
        sr.Link(joints.Fixed(origin=(np.eye(3), (0.0, 0.0, 0.05))), _rigid(2)),
        sr.Link(joints.Helical((1, 0, 0), pitch=0.02), _soft(kinematics.PlanarPCS(LENGTH), rod)),
        sr.Link(
            joints.Universal((1, 0, 0), (0, 1, 0)), _soft(kinematics.ConstantCurvature3D(LENGTH))
        ),
        cylindrical,
        sr.Link(
            joints.Prismatic((0, 0, 1)), _soft(kinematics.PlanarConstantCurvature(LENGTH), rod)
        ),
        sr.Link(joints.Planar((0, 1, 0)), _rigid(3)),
        sr.Link(joints.Spherical(), _soft(lvp.Bend(lvp.Polynomial([[0.0, 1.0]], LENGTH)))),
    ]
    actuators = (JointMotor(1), Tendon([3], (0.01, 0.0)))
    return sr.Robot(links, gravity=(0.5, -1.0, -9.81), actuators=actuators)


@pytest.fixture(scope="module")
def families():
    # the Cosserat rod alone costs 30 s of compilation: it is in the slow test below
    return _families_robot(cosserat=False)


def _loads(robot):
    soft = next(i for i, link in enumerate(robot.links) if isinstance(link.body, sr.SoftBody))
    return (
        sr.PointLoad(soft, (0.01, 0.0, 0.5 * LENGTH), (0.3, -0.7, 1.1), frame="distal"),
        sr.Wrench(robot.n_links - 1, (1.0, 0.5, -0.2), (0.05, -0.02, 0.01)),
    )


def _both(robot, q, qd, u, loads=()):
    cholesky = sr.forward_dynamics(robot, q, qd, u, loads=loads, solver="cholesky")
    articulated = sr.forward_dynamics(robot, q, qd, u, loads=loads, solver="articulated")
    return np.asarray(cholesky), np.asarray(articulated)


def _assert_same(cholesky, articulated, rtol=1e-10):
    scale = max(1.0, float(np.max(np.abs(cholesky))))
    np.testing.assert_allclose(articulated, cholesky, rtol=0, atol=rtol * scale)


def _compare_at_random_and_zero_states(robot, seed):
    # a random state, then q = 0 (straight rods: the removable singularities of the closed
    # forms) at rest and with a velocity; the loads in every call (one compilation)
    q, qd, _ = random_state(robot, seed, scale=0.4)
    u = jnp.asarray(np.random.default_rng(seed).normal(size=robot.n_u))
    _assert_same(*_both(robot, q, qd, u, _loads(robot)))
    z = jnp.zeros(robot.n_q)
    _assert_same(*_both(robot, z, z, u, _loads(robot)))
    _assert_same(*_both(robot, z, qd, u, _loads(robot)))


@pytest.mark.parametrize("seed", [0, 1])
def test_inverts_inverse_dynamics_on_every_family(families, seed):
    """`ID(q, q̇, q̈) = A(q) u` at the articulated `q̈` (the recursion as the oracle: its program
    compiles in half the time of the Cholesky path's on this nine-link chain; the Cholesky
    comparison runs on the mixed chains below and, with a Cosserat rod, under `-m slow`)."""
    robot, loads = families, _loads(families)
    q, qd, _ = random_state(robot, seed, scale=0.4)
    u = jnp.asarray(np.random.default_rng(seed).normal(size=robot.n_u))
    z = jnp.zeros(robot.n_q)
    for x, xd in ((q, qd), (z, z), (z, qd)):
        qdd = sr.forward_dynamics(robot, x, xd, u, loads=loads, solver="articulated")
        nu = np.asarray(sr.inverse_dynamics(robot, x, xd, qdd, loads=loads))
        force = np.asarray(sr.actuation_force(robot, x, u))
        scale = max(1.0, float(np.max(np.abs(force))), float(np.max(np.abs(nu))))
        np.testing.assert_allclose(nu, force, rtol=0, atol=1e-10 * scale)


@pytest.mark.slow
def test_equals_cholesky_with_a_cosserat_rod():
    _compare_at_random_and_zero_states(_families_robot(cosserat=True), 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_cholesky_on_mixed_chains(seed):
    # free base, a group of identical revolute + CC links (scanned together), springs, a
    # random gravity direction
    robot = mixed_robot(seed)
    q, qd, _ = random_state(robot, seed)
    u = jnp.asarray(np.random.default_rng(seed).normal(size=robot.n_u))
    _assert_same(*_both(robot, q, qd, u, _loads(robot)))


def _derivative_case():
    robot = small_robot(0)
    q, qd, _ = random_state(robot, 3)
    u = jnp.asarray(np.random.default_rng(3).normal(size=robot.n_u))

    def fd(solver):
        return lambda q, qd: sr.forward_dynamics(robot, q, qd, u, solver=solver)

    return fd, jax.jacfwd(fd("cholesky"), argnums=(0, 1))(q, qd), (q, qd)


@pytest.mark.slow
def test_reverse_mode_matches_the_cholesky_path():
    # reverse mode through the two scans and the unrolled Cholesky factorizations against
    # forward mode through the Cholesky path
    fd, jac_c, state = _derivative_case()
    jac_a = jax.jacrev(fd("articulated"), argnums=(0, 1))(*state)
    for a, c in zip(jac_a, jac_c):
        np.testing.assert_allclose(a, c, rtol=0, atol=1e-9 * np.max(np.abs(c)))


@pytest.mark.slow
def test_forward_mode_matches_the_cholesky_path():
    fd, jac_c, state = _derivative_case()
    jac_a = jax.jacfwd(fd("articulated"), argnums=(0, 1))(*state)
    for a, c in zip(jac_a, jac_c):
        np.testing.assert_allclose(a, c, rtol=0, atol=1e-9 * np.max(np.abs(c)))


def test_batched_and_jitted():
    robot = small_robot(1)
    states = [random_state(robot, s) for s in range(4)]
    q = jnp.stack([s[0] for s in states])
    qd = jnp.stack([s[1] for s in states])
    u = jnp.zeros((4, robot.n_u))
    batched = jax.jit(jax.vmap(lambda q, qd, u: articulated_accelerations(robot, q, qd, u)))
    ref = jax.vmap(lambda q, qd, u: sr.forward_dynamics(robot, q, qd, u, solver="cholesky"))
    np.testing.assert_allclose(batched(q, qd, u), ref(q, qd, u), rtol=0, atol=1e-10)


def test_batched_with_a_link_without_coordinates():
    """Under `vmap` the passes' products are outer-product sums: a fixed joint carrying a rigid
    body (a link of zero coordinates, nothing to contract) between two revolute links gives the
    Cholesky path's accelerations."""
    body = sr.RigidBody(1.5, (0.0, 0.0, -0.2), 1e-3 * jnp.eye(3))
    robot = sr.Robot(
        [
            sr.Link(joints.Revolute((0, 1, 0)), body),
            sr.Link(joints.Fixed(origin=(jnp.eye(3), (0.0, 0.0, -0.3))), body),
            sr.Link(joints.Revolute((1, 0, 0)), body),
        ]
    )
    q = jnp.array([[0.3, -0.2], [0.1, 0.5], [-1.2, 2.0]])
    qd, u = jnp.ones_like(q), jnp.zeros_like(q)

    def fd(solver):
        return jax.vmap(lambda q, qd, u: sr.forward_dynamics(robot, q, qd, u, solver=solver))

    ref = fd("cholesky")(q, qd, u)
    np.testing.assert_allclose(fd("articulated")(q, qd, u), ref, rtol=0, atol=1e-12)


def _frozen_robot():
    # a body map whose second coordinate goes through stop_gradient: it has no inertia (the
    # second Cholesky pivot of D_1 vanishes; the first coordinate bends the body)
    def frozen(x, q):
        return x + (q[0] + jax.lax.stop_gradient(q[1])) * jnp.array([x[2], 0.0, 0.0])

    body = sr.SoftBody(
        frozen,
        VOLUME,
        density=1000.0,
        n_q=2,
        pivot=(0.0, 0.0, LENGTH),
        contact_points=((0.02, 0.0, LENGTH), (0.0, 0.02, LENGTH)),
    )
    rigid = sr.RigidBody(1.0, (0.0, 0.0, 0.0), 1e-3 * jnp.eye(3))
    return sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), rigid), sr.Link(joints.Fixed(), body)])


def test_singular_articulated_inertia_names_the_coordinate():
    robot = _frozen_robot()
    z = jnp.zeros(3)
    message = (
        r"forward_dynamics: the articulated inertia D_1 of link 1 is not positive definite "
        r"at link 1, body coordinate 1 "
    )
    with pytest.raises(ValueError, match=message):
        sr.forward_dynamics(robot, z, z, z, solver="articulated")
    jitted = jax.jit(lambda q: articulated_accelerations(robot, q, z, z))
    with pytest.raises(Exception, match=message):
        jax.block_until_ready(jitted(z))
    nan = jnp.array([0.0, jnp.nan, 0.0])
    with pytest.raises(Exception, match="the argument q contains non-finite values"):
        jax.block_until_ready(jitted(nan))


@pytest.mark.parametrize("bad", [1, 2])
def test_a_nan_pivot_is_the_coordinate_named(bad):
    # a pivot that is the square root of a negative number is NaN: it fails itself, and the
    # pivots before it stay good (a NaN largest pivot once failed them all: coordinate 0)
    diagonal = jnp.ones(3).at[bad].set(-1e-20)
    sol, pivots = _spd_solve(jnp.diag(diagonal), jnp.ones((3, 7)))
    assert bool(jnp.isnan(pivots[bad]))
    packed = jnp.concatenate([sol.reshape(-1), pivots, jnp.ones(1)])[None]
    assert int(_unpack(3, packed)[2][0]) == bad


def test_light_links_beside_a_heavy_base_solve_in_both_solvers():
    # 1e-9 kg links 1 mm across beside a 1 t base (their M_jj 1e-18 of the largest): the
    # Cholesky path refused them as "not positive definite" (its test was M_jj > 1e-13 of the
    # largest) while the articulated one solved them to their own rounding
    heavy = sr.RigidBody(1e3, (0, 0, 0.1), 2.5 * np.eye(3), distal=(np.eye(3), (0, 0, 0.3)))
    light = sr.RigidBody(
        1e-9, (0, 0.01, 0.02), 1e-15 * np.diag([1.0, 2.0, 1.5]), distal=(np.eye(3), (0, 0, 0.05))
    )
    arm = sr.RigidBody(2.0, (0, 0, 0.1), 0.02 * np.eye(3), distal=(np.eye(3), (0, 0, 0.2)))
    robot = sr.Robot(
        [
            sr.Link(joints.Prismatic((0, 0, 1)), heavy),
            sr.Link(joints.Revolute((0, 1, 0)), arm),
            sr.Link(joints.Revolute((1, 0, 0)), light),
            sr.Link(joints.Revolute((0, 0, 1)), light),
        ]
    )
    q, qd = jnp.array([0.1, 0.4, -0.3, 0.7]), jnp.array([0.2, -0.5, 1.0, 0.3])
    u = jnp.array([1.0, 0.2, 1e-16, -2e-16])
    a, c = (sr.forward_dynamics(robot, q, qd, u, solver=s) for s in ("articulated", "cholesky"))
    np.testing.assert_allclose(c, a, rtol=1e-9)
    residual = np.abs(np.asarray(sr.inverse_dynamics(robot, q, qd, c) - u))
    assert residual[0] < 1e-11 and residual[2:].max() < 1e-24


def test_solver_choice():
    # auto: Cholesky only for small rigid robots (fewer than 5 coordinates), where it was
    # measured the faster; articulated with a deformable body or from 5 coordinates
    four, five = (random_rigid_chain(0, n, kinds=("revolute",))[0] for n in (4, 5))
    assert choose_solver("f", four, "auto") == "cholesky"
    assert choose_solver("f", five, "auto") == "articulated"
    robot = mixed_robot(0)  # 3 links, a free base: 8 coordinates
    assert choose_solver("f", robot, "auto") == "articulated"
    cc = sr.SoftBody(
        kinematics.PlanarConstantCurvature(0.2),
        quadrature.cylinder(0.01, 0.2, n_axial=2, n_radial=1, n_angular=3),
        density=1000.0,
    )
    assert choose_solver("f", sr.Robot([sr.Link(joints.Fixed(), cc)]), "auto") == "articulated"
    assert choose_solver("f", robot, "cholesky") == "cholesky"
    assert choose_solver("f", robot, "articulated") == "articulated"
    z = jnp.zeros(robot.n_q)
    with pytest.raises(ValueError, match=r"forward_dynamics: solver must be one of"):
        sr.forward_dynamics(robot, z, z, z, solver="aba")
    with pytest.raises(ValueError, match=r"simulate: solver must be one of"):
        sr.simulate(robot, z, z, 0.01, 0.01, solver="featherstone")


def test_simulate_and_vector_field_use_it():
    # the option reaches the integrator and the vector field (a rigid chain: the plumbing is
    # the point, the physics is tested above)
    robot, _ = random_rigid_chain(4, n_links=3, kinds=("revolute", "prismatic"))
    q0, qd0, _ = random_state(robot, 2)

    def law(t, q, qd):
        return -0.5 * qd

    runs = [
        sr.simulate(robot, q0, qd0, 0.02, 0.005, controller=law, solver=s)
        for s in ("articulated", "cholesky")
    ]
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=0, atol=1e-11)
    np.testing.assert_allclose(runs[0].u, runs[1].u, rtol=0, atol=1e-11)
    qd_a, qdd_a = sr.vector_field(robot, law, solver="articulated")(0.0, (q0, qd0))
    qdd_c = sr.forward_dynamics(robot, q0, qd0, law(0.0, q0, qd0), solver="cholesky")
    np.testing.assert_array_equal(qd_a, qd0)
    np.testing.assert_allclose(qdd_a, qdd_c, rtol=0, atol=1e-10 * np.max(np.abs(qdd_c)))


def _dot_operand_shapes(jaxpr) -> list[tuple[int, ...]]:
    """The operand shapes of every `dot_general` in a jaxpr and its sub-jaxprs."""
    shapes = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            shapes += [tuple(v.aval.shape) for v in eqn.invars]
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            shapes += _dot_operand_shapes(sub)
    return shapes


@pytest.mark.parametrize("solver", ["articulated", "cholesky"])
def test_no_identity_product_without_actuators(solver):
    # A = I without actuators: `ν = u` directly, not an `n_q × n_q` identity built and
    # multiplied at every call (`generalized_input`)
    robot = random_rigid_chain(0, 7, kinds=("revolute",))[0]  # n_q = 7: not a 6 × 6 product
    z = jnp.zeros(robot.n_q)
    jaxpr = jax.make_jaxpr(lambda u: sr.forward_dynamics(robot, z, z, u, solver=solver))(z)
    square = (robot.n_q, robot.n_q)
    if solver == "articulated":
        assert square not in _dot_operand_shapes(jaxpr.jaxpr)
    u = jnp.linspace(-1.0, 1.0, robot.n_q)
    np.testing.assert_array_equal(sr.actuation_force(robot, z, u), u)
    np.testing.assert_allclose(
        sr.forward_dynamics(robot, z, z, u, solver=solver),
        jnp.linalg.solve(sr.mass_matrix(robot, z), u - sr.inverse_dynamics(robot, z, z, z)),
        rtol=1e-10,
        atol=1e-12,
    )
