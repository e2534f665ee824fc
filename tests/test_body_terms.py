"""Body terms of the recursion: mass moments, row-by-row rods, D'Alembert resultants.

The oracle is the direct per-node sum of `algorithm.md`:
`acc_k = a + ω̇ × p_k + ω × (ω × p_k) + 2 ω × J_k q̇ + J_k q̈ + ∂²p_k[q̇, q̇]`,
`F* = −Σ m_k acc_k`, `T* = −Σ m_k p_k × acc_k`, `π* = −Σ m_k J_kᵀ acc_k`.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import joints, kinematics, quadrature
from softrigid._body import dalembert_wrench

VOLUMES = {
    "cylinder": quadrature.cylinder(0.04, 0.3, 3, 2, 3),
    "tube": quadrature.tube(0.02, 0.04, 0.3, 3, 2, 4),
    "box": quadrature.box((0.05, 0.03, 0.3), (2, 3, 3)),
}


@jax.jit
def _direct_wrench(body, q, qd, qdd, w, a, dw):
    def local(x):
        return body.local_points(x, body.volume.points)

    points = local(q)
    jac = jax.jacfwd(local)(q)
    hess = jax.jvp(lambda x: jax.jvp(local, (x,), (qd,))[1], (q,), (qd,))[1]
    acc = (
        a
        + jnp.cross(dw, points)
        + jnp.cross(w, jnp.cross(w, points))
        + 2 * jnp.cross(w, jac @ qd)
        + jac @ qdd
        + hess
    )
    macc = body.mass_weights[:, None] * acc
    return -macc.sum(0), -jnp.cross(points, macc).sum(0), -jnp.einsum("kin,ki->n", jac, macc)


@jax.jit
def _body_terms(body, q, qd, qdd, w, a, dw):
    moments, data = body.position_terms(q)
    h = body.velocity_terms(data, q, qd)
    return moments, dalembert_wrench(moments, h, qd, qdd, w, a, dw)


def _wrapped(body):
    """The same body through a plain function: no backbone hook, integrated node by node."""
    kin = body.kinematics
    return sr.SoftBody(lambda x, q: kin(x, q), body.volume, body.density, n_q=kin.n_q)


@pytest.mark.parametrize("name", sorted(VOLUMES))
def test_rows_equal_nodes_and_direct_sums(name):
    rod = sr.SoftBody(kinematics.PlanarConstantCurvature(0.3), VOLUMES[name], 1100.0)
    nodes = _wrapped(rod)
    assert rod.sectioned and not nodes.sectioned
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, qd, qdd = (jnp.asarray(rng.normal(size=1)) for _ in range(3))
        w, a, dw = (jnp.asarray(rng.normal(size=3)) for _ in range(3))
        pr, got_rod = _body_terms(rod, q, qd, qdd, w, a, dw)
        pn, got_nodes = _body_terms(nodes, q, qd, qdd, w, a, dw)
        for x, y in zip(pr, pn):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-13 * float(jnp.abs(y).max()))
        expected = _direct_wrench(nodes, q, qd, qdd, w, a, dw)
        for got in (got_rod, got_nodes):
            for x, y in zip(got, expected):
                np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


def test_two_coordinate_map_node_by_node_matches_direct_sums():
    """A user map with two coordinates (bend + axial stretch) mixes every π* term."""

    def stretch_bend(x, q):
        cc = kinematics.PlanarConstantCurvature(0.3)
        return cc(x * jnp.array([1.0, 1.0, 1.0 + q[1]]), q[:1])

    vol = VOLUMES["cylinder"]
    body = sr.SoftBody(
        stretch_bend,
        vol,
        900.0,
        n_q=2,
        pivot=(0, 0, 0.3),
        contact_points=((0.04, 0, 0.3), (0, 0.04, 0.3)),
    )
    rng = np.random.default_rng(5)
    q, qd, qdd = (jnp.asarray(rng.normal(size=2)) * 0.5 for _ in range(3))
    w, a, dw = (jnp.asarray(rng.normal(size=3)) for _ in range(3))
    _, got = _body_terms(body, q, qd, qdd, w, a, dw)
    for x, y in zip(got, _direct_wrench(body, q, qd, qdd, w, a, dw)):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


def test_velocity_terms_alone_equal_zero_accelerations_to_the_bit():
    """`dalembert_wrench` with `q̈_B`, `a`, `ω̇` left out (`None`, the articulated recursion's
    `β_i`) gives the wrench at zero accelerations exactly, on a soft body with two coordinates
    and on a rigid body, and the program has fewer products."""
    vol = VOLUMES["cylinder"]
    soft = sr.SoftBody(
        lambda x, q: kinematics.PlanarConstantCurvature(0.3)(
            x * jnp.array([1, 1, 1 + q[1]]), q[:1]
        ),
        vol,
        900.0,
        n_q=2,
        pivot=(0, 0, 0.3),
        contact_points=((0.04, 0, 0.3), (0, 0.04, 0.3)),
    )
    rigid = sr.RigidBody(mass=1.5, com=(0.01, 0.02, 0.1), inertia=np.diag([0.02, 0.03, 0.01]))
    rng = np.random.default_rng(11)
    for body in (soft, rigid):
        n = body.n_q
        q, qd = (jnp.asarray(rng.normal(size=n)) * 0.5 for _ in range(2))
        w = jnp.asarray(rng.normal(size=3))

        def wrench(qdd, a, dw, body=body, q=q, qd=qd, w=w):
            moments, data = body.position_terms(q)
            return dalembert_wrench(moments, body.velocity_terms(data, q, qd), qd, qdd, w, a, dw)

        full = jax.jit(functools.partial(wrench, jnp.zeros(n), jnp.zeros(3), jnp.zeros(3)))
        alone = jax.jit(functools.partial(wrench, None, None, None))
        for x, y in zip(alone(), full()):
            np.testing.assert_array_equal(x, y)
        assert alone.lower().as_text().count("dot_general") < full.lower().as_text().count(
            "dot_general"
        )


def test_rod_rows_robot_matches_euler_lagrange():
    rod = sr.SoftBody(kinematics.PlanarConstantCurvature(0.3), VOLUMES["tube"], 1100.0)
    robot = sr.Robot(
        [sr.Link(joints.Revolute((1.0, 0.2, 0.0)), rod), sr.Link(joints.Fixed(), rod)],
        gravity=(0.0, -3.0, -9.81),
    )
    rng = np.random.default_rng(11)
    q, qd, qdd = (jnp.asarray(rng.normal(size=robot.n_q)) for _ in range(3))
    nu = sr.inverse_dynamics(robot, q, qd, qdd)
    np.testing.assert_allclose(
        nu, sr.lagrangian.inverse_dynamics(robot, q, qd, qdd), rtol=1e-12, atol=1e-14
    )
    np.testing.assert_allclose(
        sr.kinetic_energy(robot, q, qd), sr.lagrangian.kinetic_energy(robot, q, qd), rtol=1e-13
    )


def test_rows_take_any_sections_weights_and_densities():
    """A rod on a rule of axial rows is integrated row by row whatever the rows' sections,
    weights and densities (a node moved within its row, weights rescaled node by node, a
    density per node), equal to node by node; and so are the derivatives with respect to the
    weights, the density and the section coordinates (the rows' moments read every node)."""
    vol = VOLUMES["cylinder"]
    rng = np.random.default_rng(17)
    points = (
        vol.points.at[4, 0].add(1e-3).at[:, :2].multiply(1.0 + 0.1 * rng.random((vol.n_points, 2)))
    )
    weights = vol.weights * (1.0 + 0.5 * rng.random(vol.n_points))
    uneven = quadrature.QuadratureRule(
        points, weights, vol.pivot, vol.contact_a, vol.contact_b, n_axial=vol.n_axial
    )
    density = jnp.asarray(1000.0 + 300.0 * rng.random(vol.n_points))
    rod = sr.SoftBody(kinematics.PlanarConstantCurvature(0.3), uneven, density)
    nodes = _wrapped(rod)
    assert rod.sectioned and not nodes.sectioned
    q, qd, qdd = (jnp.asarray(rng.normal(size=1)) for _ in range(3))
    w, a, dw = (jnp.asarray(rng.normal(size=3)) for _ in range(3))
    for x, y in zip(
        _body_terms(rod, q, qd, qdd, w, a, dw), _body_terms(nodes, q, qd, qdd, w, a, dw)
    ):
        for u, v in zip(jax.tree_util.tree_leaves(x), jax.tree_util.tree_leaves(y)):
            np.testing.assert_allclose(u, v, rtol=0, atol=1e-13 * float(jnp.abs(v).max()))

    cc = kinematics.PlanarConstantCurvature(0.3)
    builds = {
        "rows": lambda rule, rho: sr.SoftBody(cc, rule, rho),
        "nodes": lambda rule, rho: sr.SoftBody(lambda x, q: cc(x, q), rule, rho, n_q=1),
    }

    def scalar(weights, density, points, build):
        rule = quadrature.QuadratureRule(
            points, weights, vol.pivot, vol.contact_a, vol.contact_b, n_axial=vol.n_axial
        )
        _, wrench = _body_terms(build(rule, density), q, qd, qdd, w, a, dw)
        return sum(jnp.sum(t * t) for t in wrench)

    # the uneven rule with its density per node, and the product rule with one density (where
    # the rows once read the section of row 0 only: other rows' weights had no derivative)
    for args in ((weights, density, points), (vol.weights, jnp.asarray(1100.0), vol.points)):
        grads = {
            name: jax.grad(scalar, argnums=(0, 1, 2))(*args, build)
            for name, build in builds.items()
        }
        for x, y in zip(grads["rows"][:2], grads["nodes"][:2]):
            np.testing.assert_allclose(x, y, rtol=1e-11, atol=1e-13 * float(jnp.abs(y).max()))
        # the section coordinates node by node; a row's x3 is its first node's (`n_axial`)
        sec_rows, sec_nodes = grads["rows"][2][:, :2], grads["nodes"][2][:, :2]
        np.testing.assert_allclose(
            sec_rows, sec_nodes, atol=1e-11 * float(jnp.abs(sec_nodes).max())
        )


TOY_TABLE = [
    # q, qd, qdd, F*x, F*z, T*y, π*  (validation.md §1, gravity excluded)
    (0.7, 1.3, -2.1, -0.899274331779, 0.793512424176, -0.583342206190, -0.224723747263),
    (-1.2, 0.4, 3.0, 1.23159047226, 0.891525185796, 0.842759619364, 0.322433185720),
]


@pytest.mark.parametrize("row", TOY_TABLE)
def test_toy_dalembert_resultants(row):
    q, qd, qdd, fx, fz, ty, pi = row
    # 10 axial Gauss nodes integrate the trigonometric integrands to ~1e-14 for |q| <= 1.2;
    # the map is affine in (x1, x2), so a degree-2 section rule is exact.
    body = sr.SoftBody(
        kinematics.PlanarConstantCurvature(1.0), quadrature.cylinder(1.0, 1.0, 10, 2, 3), 1.0
    )
    robot = sr.Robot([sr.Link(joints.Fixed(), body)])
    force, moment, gen = sr.dalembert_wrenches(
        robot, jnp.array([q]), jnp.array([qd]), jnp.array([qdd])
    )
    np.testing.assert_allclose(
        [force[0, 0], force[0, 2], moment[0, 1], gen[0][0]], [fx, fz, ty, pi], rtol=1e-10
    )
    np.testing.assert_allclose([force[0, 1], moment[0, 0], moment[0, 2]], 0.0, atol=1e-14)


def test_planar_cc_strain_matches_its_backbone():
    """`R' = R skew(κ)`, `r' = R ν` along the backbone, by forward differences of `backbone`."""
    cc = kinematics.PlanarConstantCurvature(0.4)
    q = jnp.array([1.3])
    x3 = jnp.array([0.1, 0.25])
    _, rot = cc.backbone(x3, q)
    _, (dr, drot) = jax.jvp(lambda s: cc.backbone(s, q), (x3,), (jnp.ones(2),))
    for k in range(2):
        xi = cc.strain(x3[k], q)
        kappa = xi[:3]
        skew = jnp.array(
            [[0, -kappa[2], kappa[1]], [kappa[2], 0, -kappa[0]], [-kappa[1], kappa[0], 0]]
        )
        np.testing.assert_allclose(drot[k], rot[k] @ skew, atol=1e-14)
        np.testing.assert_allclose(dr[k], rot[k] @ xi[3:], atol=1e-14)
