"""Actuators: tendon lengths and A = −∂l/∂q, pressure chambers, joint motors, the power balance
with elasticity, damping and actuation, and bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import softrigid as sr
from softrigid import actuation_force, actuation_matrix, joints, kinematics, meshing, quadrature
from softrigid.actuators import JointMotor, PressureChamber, Tendon
from softrigid.materials import CompressibleNeoHookean, CosseratRod

RADIUS, LENGTH = 0.05, 0.4
VOLUME = quadrature.cylinder(RADIUS, LENGTH, n_axial=3, n_radial=2, n_angular=5)
tendon_length = jax.jit(Tendon.length)
chamber_volume = jax.jit(PressureChamber.chamber_volume)
FRAME = {"pivot": (0.0, 0.0, LENGTH), "contact_points": ((RADIUS, 0, LENGTH), (0, RADIUS, LENGTH))}


def actuated(robot, actuators):
    """`robot` with `actuators` (the model holds its actuators)."""
    return sr.Robot(robot.links, robot.gravity, actuators=actuators)


def cc_body(material=None):
    return sr.SoftBody(
        kinematics.PlanarConstantCurvature(LENGTH), VOLUME, density=1000.0, material=material
    )


def cc_strain(X, q):
    z = jnp.zeros_like(q[0])
    return jnp.stack([z, -q[0] / LENGTH, z, z, z, 1.0 + z])


def bulge(x, q):
    """Radial expansion by 1 + q0 (changes volume) and a bend-like shear by q1."""
    return jnp.stack([x[0] * (1.0 + q[0]) + q[1] * x[2] ** 2, x[1] * (1.0 + q[0]), x[2]])


@pytest.fixture(scope="module")
def cc_chain():
    """Two planar CC segments on fixed joints, then a third after a revolute joint about y."""
    body = cc_body()
    links = [
        sr.Link(joints.Fixed(), body),
        sr.Link(joints.Fixed(), body),
        sr.Link(joints.Revolute((0.0, 1.0, 0.0)), body),
    ]
    return sr.Robot(links, gravity=(0.0, 0.0, 0.0))


@pytest.mark.parametrize("d", [0.03, -0.02])
def test_tendon_offset_in_constant_curvature(cc_chain, d):
    # l = L + d q per segment (the span across a fixed joint is zero), so A = −d on each
    # coordinate; across the revolute joint the straight span is 2 |d sin(θ/2)|
    tendon_fixed = Tendon([0, 1], (d, 0.0))
    tendon_all = Tendon([0, 1, 2], (d, 0.0))
    rng = np.random.default_rng(0)
    for q in (np.zeros(4), rng.uniform(-1.0, 1.0, 4)):
        q = jnp.asarray(q)
        np.testing.assert_allclose(
            tendon_length(tendon_fixed, cc_chain, q), 2 * LENGTH + d * (q[0] + q[1]), rtol=1e-14
        )
        span = 2 * abs(d * np.sin(q[2] / 2))
        np.testing.assert_allclose(
            tendon_length(tendon_all, cc_chain, q),
            3 * LENGTH + d * (q[0] + q[1] + q[3]) + span,
            rtol=1e-14,
        )
        a = actuation_matrix(actuated(cc_chain, [tendon_fixed]), q)
        np.testing.assert_allclose(a[:, 0], [-d, -d, 0.0, 0.0], rtol=1e-14, atol=1e-16)


def test_tendon_start_anchor(cc_chain):
    # a base anchor 0.1 below the entry point adds a constant 0.1
    d = 0.02
    tendon = Tendon([0], (d, 0.01), start=(d, 0.01, -0.1))
    q = jnp.array([0.3, -0.2, 0.5, 0.1])
    np.testing.assert_allclose(
        tendon_length(tendon, cc_chain, q), LENGTH + d * q[0] + 0.1, rtol=1e-14
    )


def test_tendon_general_path_against_polyline():
    # a helical path through a volume-changing map: Gauss length vs a fine world polyline
    body = sr.SoftBody(bulge, VOLUME, density=1.0, n_q=2, **FRAME)
    robot = sr.Robot([sr.Link(joints.Revolute((1.0, 0.0, 0.0)), body)], gravity=(0, 0, 0))

    def helix(s):
        return jnp.stack([0.03 * jnp.cos(3 * s), 0.03 * jnp.sin(3 * s), LENGTH * s])

    tendon = Tendon([0], paths=[helix], order=12)
    q = jnp.array([0.4, 0.1, 0.2])
    s = np.linspace(0.0, 1.0, 20001)
    pts = np.asarray(sr.world_points(robot, q, 0, jax.vmap(helix)(jnp.asarray(s))))
    poly = np.sum(np.linalg.norm(np.diff(pts, axis=0), axis=1))
    np.testing.assert_allclose(tendon_length(tendon, robot, q), poly, rtol=1e-9)
    # A = −∂l/∂q by central differences
    h = 1e-6
    fd = [
        -(tendon_length(tendon, robot, q + h * e) - tendon_length(tendon, robot, q - h * e))
        / (2 * h)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(
        actuation_matrix(actuated(robot, tendon), q)[:, 0], fd, rtol=1e-7, atol=1e-10
    )


def test_tendon_guides_are_chords_in_constant_curvature(cc_chain):
    # straight between guides on the offset line x1 = d at arc lengths s_j: chords of the
    # fibre's arc of radius L/q + d, l = Σ_j 2 (L/q + d) sin(q Δs_j / 2L); body 1's first guide
    # is 0.1 past the fixed joint, so the span across it is one more chord of body 1
    d, s = 0.03, np.array([0.0, 0.1, 0.25, LENGTH])
    guides = np.stack([np.full(4, d), np.zeros(4), s], axis=1)
    tendon = Tendon([0, 1], guides=[guides, guides[1:]])
    gaps = np.diff(s)

    def chords(q):
        return jnp.sum(2 * (LENGTH / q + d) * jnp.sin(q * gaps / (2 * LENGTH)))

    def closed_form(q):
        return chords(q[0]) + chords(q[1])

    robot = actuated(cc_chain, [tendon])
    q = jnp.array([0.7, -0.4, 0.3, 0.2])
    np.testing.assert_allclose(tendon_length(tendon, cc_chain, q), closed_form(q), rtol=1e-14)
    np.testing.assert_allclose(
        actuation_matrix(robot, q)[:, 0], -jax.grad(closed_form)(q), rtol=1e-12, atol=1e-16
    )
    # q = 0: the straight lengths, and the limit A = −d Σ Δs / L per body (finite)
    zero = jnp.zeros(4)
    np.testing.assert_allclose(tendon_length(tendon, cc_chain, zero), 2 * LENGTH, rtol=1e-15)
    np.testing.assert_allclose(
        actuation_matrix(robot, zero)[:, 0], [-d, -d, 0.0, 0.0], rtol=1e-13, atol=1e-16
    )


def test_tendons_together_equal_each_alone(cc_chain):
    # consecutive tendons share one map evaluation per body (Tendon.group_columns): the same
    # columns as each tendon alone, in the robot's order, a path tendon among them
    guides = [np.array([[0.02, 0.01, 0.05], [0.0, 0.03, 0.3]]), np.array([[-0.02, 0.0, 0.2]])]
    tendons = [
        Tendon([0, 1], guides=guides, start=(0.0, 0.0, -0.05)),
        Tendon([1, 2], (0.01, -0.02)),
        Tendon([2], guides=guides[1:]),
        Tendon([0], guides=guides[:1]),
    ]
    robot = actuated(cc_chain, tendons)
    q = jnp.array([0.5, -0.3, 0.2, 0.8])

    @jax.jit  # the oracles as one program (op by op they took 760 small compilations)
    def each_alone(q):
        columns = jnp.concatenate([t.columns(cc_chain, q) for t in tendons], axis=1)
        return columns, jnp.stack([tendon_length(t, cc_chain, q) for t in tendons])

    alone, lengths = each_alone(q)
    np.testing.assert_allclose(actuation_matrix(robot, q), alone, rtol=1e-13, atol=1e-16)
    together = jax.jit(lambda q: Tendon.lengths(cc_chain, q, tendons))(q)
    np.testing.assert_allclose(together, lengths, rtol=1e-14)


def test_second_derivatives_of_tendon_lengths_compile():
    """`jax.hessian` of guided tendons' lengths on three helicoid segments (the Jacobian of `A`
    that a Newton method or a closed loop's exact Jacobian takes): XLA:CPU (jaxlib 0.10) gave a
    batched 3 × 3 `dot` of the chain's poses a transposed output layout and aborted the process
    in its emitter, until the chain's products were written elementwise (`_math.matmul`).
    Equal to central differences of the gradient."""
    from softrigid.kinematics import lvp

    body = sr.SoftBody(lvp.helicoid_segment(0.1), quadrature.cylinder(0.02, 0.1, 3, 2, 5), 960.0)
    eyelet = np.array([[0.01, 0.0, 0.05]])
    tendons = [Tendon([0], guides=[eyelet]), Tendon([0, 1], guides=[eyelet, eyelet])]
    tendons.append(Tendon([1, 2], guides=[eyelet, eyelet]))
    robot = sr.Robot([sr.Link(joints.Fixed(), body) for _ in range(3)], actuators=tendons)

    def total(x):
        return jnp.sum(Tendon.lengths(robot, x, tendons))

    q = 0.01 * jnp.arange(24.0)
    hess = np.asarray(jax.jit(jax.hessian(total))(q))
    grad, h = jax.jit(jax.grad(total)), 1e-6
    fd = np.stack([(grad(q + h * e) - grad(q - h * e)) / (2 * h) for e in np.eye(24)], 1)
    np.testing.assert_allclose(hess, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())
    np.testing.assert_allclose(hess, hess.T, rtol=0, atol=1e-12 * np.abs(hess).max())


def test_tendon_guides_are_checked(cc_chain):
    inside = np.array([[0.03, 0.0, 0.1], [0.03, 0.0, 0.3]])
    with pytest.raises(ValueError, match=r"one guides array per link \(2\), got 1"):
        Tendon([0, 1], guides=[inside])
    with pytest.raises(ValueError, match=r"guides\[0\] must be a \(g, 3\) array"):
        Tendon([0], guides=[inside[:, :2]])
    with pytest.raises(ValueError, match=r"guides\[0\] must be finite"):
        Tendon([0], guides=[inside * np.nan])
    with pytest.raises(ValueError, match="exactly one of offset"):
        Tendon([0], (0.01, 0.0), guides=[inside])
    outside = inside + np.array([0.03, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"a guide in link 0 leaves the body: .*\(0.06, 0, 0.1\)"):
        actuated(cc_chain, [Tendon([0], guides=[outside])])


def test_pressure_chamber_volume():
    # region r ≤ r_c mapped by bulge: V_c = π r_c² L (1 + q0)², A = (2π r_c² L (1 + q0), 0)
    body = sr.SoftBody(bulge, VOLUME, density=1.0, n_q=2, **FRAME)
    robot = sr.Robot([sr.Link(joints.Prismatic((0.0, 0.0, 1.0)), body)], gravity=(0, 0, 0))
    rc = 0.02
    chamber = PressureChamber(0, region=quadrature.cylinder(rc, LENGTH, 2, 2, 3))
    q = jnp.array([0.1, 0.25, -0.3])
    v0 = np.pi * rc**2 * LENGTH
    np.testing.assert_allclose(chamber_volume(chamber, robot, q), v0 * (1 + q[1]) ** 2, rtol=1e-13)
    np.testing.assert_allclose(
        actuation_matrix(actuated(robot, chamber), q)[:, 0],
        [0.0, 2 * v0 * (1 + q[1]), 0.0],
        atol=1e-15,
    )
    # the same chamber given by its volume function
    by_fn = PressureChamber(0, volume=lambda qb: v0 * (1 + qb[0]) ** 2)
    np.testing.assert_allclose(
        actuation_matrix(actuated(robot, by_fn), q),
        actuation_matrix(actuated(robot, chamber), q),
        atol=1e-15,
    )


def test_joint_motor_and_actuation_force(cc_chain):
    q = jnp.array([0.3, -0.2, 0.5, 0.1])
    robot = actuated(cc_chain, [JointMotor(2), Tendon([0, 1], (0.02, 0.0))])
    assert robot.n_u == 2 and cc_chain.n_u == cc_chain.n_q == 4
    a = actuation_matrix(robot, q)
    assert a.shape == (4, 2)
    np.testing.assert_array_equal(a[:, 0], [0.0, 0.0, 1.0, 0.0])
    u = jnp.array([1.5, 2.0])
    np.testing.assert_allclose(actuation_force(robot, q, u), a @ u, rtol=1e-15)
    # without actuators the inputs are the generalized forces: A = I
    np.testing.assert_array_equal(actuation_matrix(cc_chain, q), np.eye(4))
    # forward dynamics takes the robot's inputs: it inverts ID with ν = A u
    qd = jnp.array([0.1, 0.2, -0.3, 0.4])
    qdd = sr.forward_dynamics(robot, q, qd, u)
    np.testing.assert_allclose(sr.inverse_dynamics(robot, q, qd, qdd), a @ u, atol=1e-12)
    with pytest.raises(ValueError, match=r"u must have shape \(2,\) \(actuator inputs\)"):
        sr.forward_dynamics(robot, q, qd, jnp.ones(4))
    with pytest.raises(ValueError, match=r"u must have shape \(4,\) \(generalized forces"):
        sr.forward_dynamics(cc_chain, q, qd, jnp.ones(2))


# ---------------------------------------------------------------- power balance


@pytest.fixture(scope="module")
def actuated_robot():
    """A revolute joint with spring and damper carrying a damped neo-Hookean body, then a
    damped CC rod on a tilted fixed joint; tendons through both, a chamber and a joint motor."""
    neo = sr.SoftBody(
        bulge,
        VOLUME,
        density=1000.0,
        material=CompressibleNeoHookean(2e4, 3e4, eta=0.05),
        n_q=2,
        **FRAME,
    )
    rod = cc_body(CosseratRod(1e5, 4e4, eta=0.02, strain=cc_strain))
    rng = np.random.default_rng(5)
    origin = (Rotation.from_rotvec(rng.normal(size=3)).as_matrix(), 0.1 * rng.normal(size=3))
    links = [
        sr.Link(joints.Revolute((0.0, 1.0, 0.0), stiffness=3.0, damping=0.2), neo),
        sr.Link(joints.Fixed(origin=origin), rod),
    ]
    acts = (
        Tendon([1], (0.02, 0.01)),
        Tendon([0, 1], (-0.03, 0.0)),
        PressureChamber(0, region=quadrature.cylinder(0.02, LENGTH, 2, 2, 3)),
        JointMotor(0),
    )
    return sr.Robot(links, gravity=(0.5, -2.0, -9.81), actuators=acts)


def test_power_balance(actuated_robot):
    # d(T + V)/dt = q̇ᵀ A u − 2R along the forward-dynamics flow, with the energy rate by a jvp;
    # T = ½ Σ m_k |ṗ_k|² over the world quadrature nodes (Euler–Lagrange, not the recursion)
    robot = actuated_robot
    masses = [link.body.mass_weights for link in robot.links]

    @jax.jit
    def energy_rate(q, qd, qdd):
        def energy(q, qd):
            vel = jax.jvp(lambda x: sr.material_points(robot, x), (q,), (qd,))[1]
            kinetic = sum(0.5 * jnp.sum(m * jnp.sum(v * v, -1)) for m, v in zip(masses, vel))
            return kinetic + sr.potential_energy(robot, q)

        return jax.jvp(energy, (q, qd), (qd, qdd))[1]

    rng = np.random.default_rng(6)
    for _ in range(2):
        q = jnp.asarray(0.2 * rng.normal(size=robot.n_q))
        qd = jnp.asarray(rng.normal(size=robot.n_q))
        u = jnp.asarray(rng.uniform(0.0, 2.0, 4))
        nu = actuation_force(robot, q, u)
        qdd = sr.forward_dynamics(robot, q, qd, u)
        expected = qd @ nu - 2.0 * sr.dissipation(robot, q, qd)
        np.testing.assert_allclose(energy_rate(q, qd, qdd), expected, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------- bad input


def test_tendon_outside_the_body(cc_chain):
    with pytest.raises(ValueError, match=r"leaves the body: the material point \(0.06, 0, 0\)"):
        actuated(cc_chain, Tendon([0], (0.06, 0.0)))

    def too_long(s):
        return jnp.stack([0.0 * s, 0.0 * s, 1.2 * LENGTH * s])

    with pytest.raises(ValueError, match=r"leaves the body: the material point \(0, 0, 0.44\d*\)"):
        actuated(cc_chain, Tendon([0], paths=[too_long]))

    def undefined(s):
        return jnp.stack([0.0 * s, jnp.sqrt(s - 0.5), LENGTH * s])

    with pytest.raises(ValueError, match=r"path 0 \(through link 0\) is not finite at s = 0:"):
        actuated(cc_chain, Tendon([0], paths=[undefined]))


@pytest.mark.parametrize("n_radial", [1, 2, 4])
def test_tendon_inside_check_uses_the_exact_section(n_radial):
    # against the disk itself, not the quadrature: an offset of 0.025 in a 0.03 disk is inside
    # for every rule, (0.029, 0.029) (radius 0.041) is outside
    vol = quadrature.cylinder(0.03, LENGTH, n_axial=2, n_radial=n_radial, n_angular=4)
    body = sr.SoftBody(kinematics.PlanarConstantCurvature(LENGTH), vol, density=1000.0)
    robot = sr.Robot([sr.Link(joints.Fixed(), body)], gravity=(0, 0, 0))
    actuated(robot, Tendon([0], (0.025, 0.0)))
    with pytest.raises(ValueError, match="outside its cylinder volume"):
        actuated(robot, Tendon([0], (0.029, 0.029)))


@pytest.fixture(scope="module")
def meshed_body():
    """A CC body on a meshed cylinder of radius RADIUS (its section a polygon inside the disk)."""
    mesh = quadrature.from_mesh(meshing.cylinder(RADIUS, LENGTH, n_radial=1, n_axial=1), 1)
    return sr.SoftBody(kinematics.PlanarConstantCurvature(LENGTH), mesh, density=1000.0)


# name: (a chamber region, whether it lies in the VOLUME body, in the meshed one); one radial
# or axial node or one Gauss node per box direction: the nodes alone lie in the cylinder body
REGIONS = {
    "the body's own cylinder": (quadrature.cylinder(RADIUS, LENGTH, 1, 1, 3), True, False),
    "a wider cylinder": (quadrature.cylinder(1.2 * RADIUS, LENGTH, 2, 1, 3), False, False),
    "a longer cylinder": (quadrature.cylinder(0.02, 1.05 * LENGTH, 1, 1, 3), False, False),
    "a thin cylinder": (quadrature.cylinder(0.5 * RADIUS, LENGTH, 1, 1, 3), True, True),
    "an inscribed box": (quadrature.box((0.07, 0.07, LENGTH), 1), True, False),
    "a box with corners out": (quadrature.box((0.08, 0.08, LENGTH), 1), False, False),
    "a wider mesh": (
        quadrature.from_mesh(meshing.cylinder(0.07, LENGTH, n_radial=1, n_axial=1), 1),
        False,
        False,
    ),
}


@pytest.mark.parametrize("case", sorted(REGIONS))
def test_chamber_region_is_checked_against_the_geometry(cc_chain, meshed_body, case):
    # the region's geometry against the body's exact volume, not the region's quadrature nodes
    region, in_cylinder, in_mesh = REGIONS[case]
    meshed = sr.Robot([sr.Link(joints.Fixed(), meshed_body)], gravity=(0, 0, 0))
    for robot, inside, volume in ((cc_chain, in_cylinder, "cylinder"), (meshed, in_mesh, "mesh")):
        chamber = PressureChamber(0, region=region)
        if inside:
            assert actuated(robot, chamber).n_u == 1
            continue
        message = (
            f"PressureChamber: the {region.geometry} region leaves the SoftBody of link 0: its "
            rf"point \(.*\) is outside the body's {volume} volume"
        )
        with pytest.raises(ValueError, match=message):
            actuated(robot, chamber)


def test_chamber_in_the_bore_of_a_tube():
    # a bore inside a tube is fine (the cavity counts)
    tube = quadrature.tube(0.02, RADIUS, LENGTH, n_axial=2, n_radial=1, n_angular=4)
    body = sr.SoftBody(bulge, tube, density=1.0, n_q=2, **FRAME)
    robot = sr.Robot([sr.Link(joints.Fixed(), body)], gravity=(0, 0, 0))
    bore = PressureChamber(0, region=quadrature.cylinder(0.02, LENGTH, 2, 2, 3))
    assert actuated(robot, bore).n_u == 1


def test_bad_actuators(cc_chain):
    rigid = sr.RigidBody(1.0, (0, 0, 0), np.eye(3) * 0.01)
    robot = sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), rigid)])
    with pytest.raises(TypeError, match="link 0 carries a RigidBody, not a SoftBody"):
        actuated(robot, Tendon([0], (0.0, 0.0)))
    with pytest.raises(ValueError, match="consecutive"):
        Tendon([0, 2], (0.0, 0.0))
    with pytest.raises(TypeError, match="Tendon: links must be a link index or a sequence"):
        Tendon(1.0, (0.0, 0.0))
    assert Tendon(0, (0.0, 0.0), order=np.int64(3)).order == 3
    with pytest.raises(ValueError, match="Tendon: order must be an integer >= 1, got 2.5"):
        Tendon(0, (0.0, 0.0), order=2.5)
    with pytest.raises(ValueError, match="exactly one of offset"):
        Tendon([0], (0.0, 0.0), paths=[lambda s: s])
    with pytest.raises(ValueError, match="one path per link"):
        Tendon([0, 1], paths=[lambda s: s])
    with pytest.raises(ValueError, match="the joint of link 0 has no coordinate"):
        actuated(cc_chain, JointMotor(0))
    with pytest.raises(ValueError, match=r"JointMotor: link must be an integer in \[0, 3\)"):
        actuated(cc_chain, JointMotor(5))
    with pytest.raises(ValueError, match=r"u must have shape \(1,\)"):
        actuation_force(actuated(cc_chain, JointMotor(2)), jnp.zeros(4), jnp.ones(2))
    with pytest.raises(TypeError, match=r"actuators\[1\] must be a softrigid.actuators"):
        actuated(cc_chain, [JointMotor(2), "tendon"])
    with pytest.raises(ValueError, match="exactly one of region= or volume="):
        PressureChamber(0)
    with pytest.raises(TypeError, match=r"PressureChamber: volume\(q_B\) must return a real sc"):
        actuated(cc_chain, PressureChamber(0, volume=lambda qb: "1 l"))
    # a volume that is NaN at the state: its gradient, the actuation column, read 0 (no force)
    undefined = actuated(cc_chain, PressureChamber(0, volume=lambda qb: jnp.sqrt(qb[0] - 1.0)))
    q = jnp.array([0.3, -0.2, 0.5, 0.1])
    with pytest.raises(ValueError, match="PressureChamber on link 0: the chamber volume"):
        actuation_matrix(undefined, q)
    with pytest.raises((jax.errors.JaxRuntimeError, ValueError), match="chamber volume V_c"):
        jax.block_until_ready(jax.jit(lambda x: actuation_force(undefined, x, jnp.ones(1)))(q))


def test_actuation_matrix_differentiable_under_jit(cc_chain):
    # the route check runs inside traces too; l = 2L + d (q0 + q1) is linear, so ∂A/∂q = 0
    tendon = Tendon([0, 1], (0.02, 0.0))
    q = jnp.array([0.3, -0.2, 0.5, 0.1])
    robot = actuated(cc_chain, tendon)
    d_a = jax.jit(jax.jacfwd(lambda x: actuation_matrix(robot, x)))(q)
    assert d_a.shape == (4, 1, 4)
    np.testing.assert_allclose(d_a, 0.0, atol=1e-12)


@pytest.mark.parametrize(
    "links",
    [
        (1, 2, 3),  # every segment of the group: its distal frames mapped in the same call
        (1, 2),  # some of them: the frames and the points mapped apart
        (0, 3),  # the rigid link and one segment
    ],
)
def test_grouped_world_points_are_the_world_points(links):
    """The tendons' points (`_chain.grouped_world_points`, one map call per group for the
    chain's poses and the points where every link of the group has points) equal each link's
    `world_points`, values and Jacobians, on a revolute rigid link and three CC segments."""
    from softrigid._chain import grouped_world_points

    segment = sr.SoftBody(
        kinematics.ConstantCurvature3D(0.3),
        quadrature.cylinder(0.03, 0.3, n_axial=3, n_radial=1, n_angular=3),
        density=1000.0,
    )
    rigid = sr.RigidBody(0.5, (0.0, 0.0, 0.1), 1e-3 * jnp.eye(3), distal=(jnp.eye(3), (0, 0, 0.2)))
    chain = [sr.Link(joints.Revolute((0.0, 1.0, 0.0)), rigid)]
    robot = sr.Robot(chain + [sr.Link(joints.Fixed(), segment) for _ in range(3)])
    q = jnp.asarray(np.random.default_rng(3).uniform(-0.5, 0.5, robot.n_q))
    pts = (jnp.array([[0.01, 0.0, 0.1], [0.0, 0.01, 0.3]]), jnp.array([[0.01, 0.01, 0.2]]))
    entries = [(i, pts[k % 2]) for k, i in enumerate(links)] + [(links[0], pts[1])]

    def grouped(x):
        return jnp.concatenate([p.ravel() for p in grouped_world_points(robot, x, entries)])

    def one_by_one(x):
        return jnp.concatenate([sr.world_points(robot, x, i, p).ravel() for i, p in entries])

    # values and Jacobians, each side one compiled program (op by op: 260 compilations)
    def both(f):
        return jax.jit(lambda x: (f(x), jax.jacfwd(f)(x)))(q)

    (value, jac), (value_1, jac_1) = both(grouped), both(one_by_one)
    np.testing.assert_allclose(value, value_1, rtol=0, atol=1e-15)
    np.testing.assert_allclose(jac, jac_1, rtol=0, atol=1e-13)
