"""Rod families (ConstantCurvature3D, PlanarPCS, SpatialPCS, Cosserat) against independent oracles.

Oracles: the SE(3) exponential of the strain twist (`scipy.linalg.expm`) and its exact first
and second derivatives from block-triangular exponentials; the closed-form 3D constant-curvature
tip; an adaptive ODE solution of `g' = g ξ^` (`scipy.integrate.solve_ivp`).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm

import softrigid as sr
from softrigid import joints, quadrature
from softrigid import kinematics as km
from softrigid.materials import CosseratRod

L = 0.4
RNG = np.random.default_rng(20240603)
POINTS = np.column_stack(
    [RNG.uniform(-0.03, 0.03, 5), RNG.uniform(-0.03, 0.03, 5), RNG.uniform(0.0, L, 5)]
)
POINTS[0] = (0.02, -0.01, L)  # on the distal face


def hat(xi):
    """4×4 matrix of a twist (κ, ν)."""
    k, v = xi[:3], xi[3:]
    m = np.zeros((4, 4))
    m[:3, :3] = [[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]]
    m[:3, 3] = v
    return m


def expm_oracle(x, xi0, dxi):
    """Value, Jacobian and Hessian of `f(q) = [exp(x3 (ξ0 + D q)^) (x1, x2, 0, 1)]_{1:3}`
    (strain affine in `q`, `dxi` = D (6, n)), from block-triangular exponentials:
    d exp(A + εE) = top-right of exp([[A, E], [0, A]]), and the second derivative is
    F(E1, E2) + F(E2, E1) with F the (1, 3) block of exp([[A, E1, 0], [0, A, E2], [0, 0, A]])."""
    a = x[2] * hat(xi0)
    es = [x[2] * hat(d) for d in dxi.T]
    p = np.array([x[0], x[1], 0.0, 1.0])
    z = np.zeros((4, 4))
    value = (expm(a) @ p)[:3]
    jac = np.stack([(expm(np.block([[a, e], [z, a]]))[:4, 4:] @ p)[:3] for e in es], -1)
    n = len(es)
    hess = np.zeros((3, n, n))
    for i in range(n):
        for j in range(n):
            big = np.block([[a, es[i], z], [z, a, es[j]], [z, z, a]])
            f_ij = expm(big)[:4, 8:] @ p
            hess[:, i, j] += f_ij[:3]
            hess[:, j, i] += f_ij[:3]
    return value, jac, hess


@jax.jit
def derivatives(kin, x, q):
    f = lambda y: kin(x, y)  # noqa: E731
    return f(q), jax.jacfwd(f)(q), jax.hessian(f)(q)


def strain_matrix(kin, n):
    """(ξ0, D) with ξ(q) = ξ0 + D q for a family with constant affine strain."""
    xi0 = np.asarray(kin.strain(0.0, jnp.zeros(n)))
    d = np.asarray(jax.jacfwd(lambda q: kin.strain(0.0, q))(jnp.zeros(n)))
    return xi0, d


def cc3d_strain(q, length=L):
    q3 = q[2] if len(q) == 3 else 0.0
    return np.array([-q[1] / length, q[0] / length, 0, 0, 0, 1 + q3 / length])


FAMILIES = [
    ("cc3d", km.ConstantCurvature3D(L)),
    ("cc3d-inextensible", km.ConstantCurvature3D(L, elongation=False)),
    ("pcs", km.PlanarPCS(L)),
    ("pcs-bend-axial", km.PlanarPCS(L, strains=("axial", "bend"), rest_strain=(0.5, 0.1, 1.2))),
    ("cosserat-constant", km.Cosserat(L, km.Monomial(L, 0, ("bend", "twist", "shear", "axial")))),
    ("spatial-pcs", km.SpatialPCS(L)),
    (
        "spatial-pcs-subset",
        km.SpatialPCS(
            L, strains=("axial", "twist", "bend1"), rest_strain=(0.3, -0.2, 0.5, 0.1, 0.0, 1.1)
        ),
    ),
]


@pytest.mark.parametrize(("name", "kin"), FAMILIES, ids=[f[0] for f in FAMILIES])
@pytest.mark.parametrize("at_zero", [True, False], ids=["q=0", "random-q"])
def test_value_jacobian_hessian_match_expm(name, kin, at_zero):
    n = kin.n_q
    q = np.zeros(n) if at_zero else RNG.uniform(-1.5, 1.5, n)
    xi0, d = strain_matrix(kin, n)
    # the affine strain oracle is itself checked against the family's documented strain
    if name.startswith("cc3d"):
        np.testing.assert_allclose(xi0 + d @ q, cc3d_strain(q), rtol=0, atol=1e-15)
    for x in POINTS:
        value, jac, hess = derivatives(kin, jnp.asarray(x), jnp.asarray(q))
        ref_v, ref_j, ref_h = expm_oracle(x, xi0 + d @ q, d)
        np.testing.assert_allclose(value, ref_v, rtol=0, atol=2e-15)
        np.testing.assert_allclose(jac, ref_j, rtol=0, atol=1e-14)
        np.testing.assert_allclose(hess, ref_h, rtol=0, atol=1e-13)


REST = [*FAMILIES[:3], FAMILIES[5]]


@pytest.mark.parametrize(("name", "kin"), REST, ids=[f[0] for f in REST])
def test_rest_configuration_is_the_reference(name, kin):
    q0 = jnp.zeros(kin.n_q)
    out = kin.map_points(jnp.asarray(POINTS), q0)
    np.testing.assert_allclose(out, POINTS, rtol=0, atol=1e-16)


@pytest.mark.parametrize(("name", "kin"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_third_derivative_finite_at_zero(name, kin):
    """Elasticity needs ∂³f/∂q³ at q = 0: finite, and equal to the difference quotient of the
    exact Hessian oracle."""
    x = POINTS[1]
    third = jax.jit(jax.jacfwd(jax.hessian(lambda y: kin(jnp.asarray(x), y))))(jnp.zeros(kin.n_q))
    assert np.all(np.isfinite(third))
    xi0, d = strain_matrix(kin, kin.n_q)
    eps = 1e-4
    for j in range(kin.n_q):
        dq = np.zeros(kin.n_q)
        dq[j] = eps
        hp = expm_oracle(x, xi0 + d @ dq, d)[2]
        hm = expm_oracle(x, xi0 - d @ dq, d)[2]
        np.testing.assert_allclose(third[..., j], (hp - hm) / (2 * eps), rtol=0, atol=1e-8)


def test_cc3d_closed_form_tip():
    kin = km.ConstantCurvature3D(L)
    for theta, psi, q3 in [(0.9, 0.3, 0.05), (2.5, -2.0, -0.1), (1e-9, 1.0, 0.0), (0.0, 0.0, 0.2)]:
        q = jnp.array([theta * np.cos(psi), theta * np.sin(psi), q3])
        rot, tip = kin.distal_pose(q)
        lam = L * (1 + q3 / L)
        c = 2 * np.sin(theta / 2) ** 2 / theta if theta else 0.0  # (1 − cos θ)/θ, no cancellation
        s = np.sin(theta) / theta if theta else 1.0
        np.testing.assert_allclose(
            tip, lam * np.array([c * np.cos(psi), c * np.sin(psi), s]), rtol=0, atol=1e-16
        )
        # R = Rz(ψ) Ry(θ) Rz(−ψ): the tip tangent is (sin θ cos ψ, sin θ sin ψ, cos θ)
        rz = lambda a: np.array(  # noqa: E731
            [[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]]
        )
        ry = np.array(
            [[np.cos(theta), 0, np.sin(theta)], [0, 1, 0], [-np.sin(theta), 0, np.cos(theta)]]
        )
        np.testing.assert_allclose(rot, rz(psi) @ ry @ rz(-psi), rtol=0, atol=1e-15)
        np.testing.assert_allclose(rot.T @ rot, np.eye(3), rtol=0, atol=1e-15)
        np.testing.assert_allclose(np.linalg.det(rot), 1.0, rtol=0, atol=1e-15)


def test_cc3d_rotational_symmetry():
    """Bending in the direction ψ + α is bending in ψ rotated by α about x3, points included."""
    kin = km.ConstantCurvature3D(L)
    q = jnp.array([0.8, -0.5, 0.03])
    for alpha in (0.4, 2.0, -1.3):
        rz = jnp.array(
            [[np.cos(alpha), -np.sin(alpha), 0], [np.sin(alpha), np.cos(alpha), 0], [0, 0, 1]]
        )
        q_rot = jnp.concatenate([rz[:2, :2] @ q[:2], q[2:]])
        pts = jnp.asarray(POINTS)
        lhs = kin.map_points(pts @ rz.T, q_rot)
        rhs = kin.map_points(pts, q) @ rz.T
        np.testing.assert_allclose(lhs, rhs, rtol=0, atol=1e-16)


def test_pcs_strain_subsets_and_rest_strain():
    full = km.PlanarPCS(L)
    sub = km.PlanarPCS(L, strains=("axial", "bend"))
    assert sub.n_q == 2
    x = jnp.asarray(POINTS[2])
    np.testing.assert_allclose(
        sub(x, jnp.array([0.2, 1.1])), full(x, jnp.array([1.1, 0.0, 0.2])), rtol=0, atol=1e-16
    )
    curved = km.PlanarPCS(L, strains=("bend",), rest_strain=(2.0, 0.0, 1.0))
    np.testing.assert_allclose(
        curved(x, jnp.array([0.5])), full(x, jnp.array([2.5, 0.0, 0.0])), rtol=0, atol=1e-16
    )
    np.testing.assert_allclose(
        curved.strain(0.1, jnp.array([0.5])), [0, 2.5, 0, 0, 0, 1.0], rtol=0, atol=0
    )


def test_spatial_pcs_strain_subsets_and_rest_strain():
    full = km.SpatialPCS(L)
    sub = km.SpatialPCS(L, strains=("axial", "bend", 2))
    assert sub.n_q == 4 and sub.components == (5, 0, 1, 2)
    x = jnp.asarray(POINTS[2])
    q = jnp.array([0.2, 1.1, -0.4, 0.7])
    np.testing.assert_allclose(
        sub(x, q), full(x, jnp.array([1.1, -0.4, 0.7, 0.0, 0.0, 0.2])), rtol=0, atol=1e-16
    )
    rest = (0.5, 0.0, 0.0, 0.0, 0.1, 1.0)
    curved = km.SpatialPCS(L, strains="twist", rest_strain=rest)
    np.testing.assert_allclose(
        curved.strain(0.1, jnp.array([0.5])), [0.5, 0.0, 0.5, 0.0, 0.1, 1.0], rtol=0, atol=0
    )


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: km.SpatialPCS(L, strains=("kink",)), "unknown strain"),
        (lambda: km.SpatialPCS(L, strains=()), "at least one"),
        (lambda: km.SpatialPCS(L, strains=("bend1", "bend")), "selected twice"),
        (lambda: km.SpatialPCS(L, rest_strain=(0.0, 1.0)), "rest_strain"),
        (lambda: km.SpatialPCS(0.0), "length must be finite and positive"),
        (lambda: km.PlanarPCS(L, strains=("twist",)), "unknown strain"),
        (lambda: km.PlanarPCS(L, strains=()), "at least one"),
        (lambda: km.PlanarPCS(L, strains=("bend", "bend")), "twice"),
        (lambda: km.PlanarPCS(-1.0), "length must be finite and positive"),
        (lambda: km.ConstantCurvature3D(L, elongation=1), "elongation must be a bool"),
        (lambda: km.Cosserat(L, km.Monomial(L, 1), n_steps=0), "n_steps"),
        (lambda: km.Cosserat(L, lambda X: jnp.zeros((5, 2))), r"\(6, n\)"),
        (lambda: km.Cosserat(L, km.Monomial(L, 1), rest_strain=lambda X: jnp.zeros(3)), r"\(6,\)"),
        (lambda: km.Monomial(L, 1, strains=("bend", "kink")), "unknown strain"),
        (lambda: km.Legendre(L, (1, 2), strains=("bend",)), "one degree per entry"),
        (lambda: km.Chebyshev(L, 1, strains=(0, 0)), "selected twice"),
        (lambda: km.Monomial(L, 1.5), "degree must be a non-negative integer, or one per"),
        (lambda: km.Monomial(L, 1, strains=None), "strains must be a name, an index"),
        (lambda: km.SpatialPCS(L, strains=None), "strains must be a name, an index"),
        (lambda: km.PlanarPCS(L, strains=None), "strains must be a name or a sequence"),
        (
            lambda: km.Cosserat(L, km.Monomial(L, 1), rest_strain=lambda X: jnp.zeros(6) + 1j),
            "rest_strain '<lambda>' must return a floating-point array",
        ),
        (
            lambda: km.FunctionBasis(lambda X: jnp.zeros((6, 1)) + 1j),
            "strain basis '<lambda>' must return a floating-point array",
        ),
        (lambda: km.FunctionBasis(lambda X: jnp.zeros((6, 1)), n=True), "not n=True"),
        (
            lambda: km.FunctionBasis(lambda X: jnp.zeros((6, 1)), breakpoints="0.5"),
            "breakpoints must be real numbers",
        ),
        (lambda: km.PiecewiseConstant(L, 0), "n_pieces"),
        (lambda: km.FunctionBasis(lambda X: jnp.zeros((6, 2)), breakpoints=(1.5,)), r"\(0, 1\)"),
    ],
)
def test_invalid_input_is_rejected(build, message):
    with pytest.raises((ValueError, TypeError), match=message):
        build()


def test_bases_values_and_selection():
    s = 0.3
    legendre = np.polynomial.legendre.legvander(np.array([2 * s - 1]), 3)[0]
    chebyshev = np.polynomial.chebyshev.chebvander(np.array([2 * s - 1]), 3)[0]
    cases = [
        (km.Monomial(L, 3, strains="twist"), s ** np.arange(4)),
        (km.Legendre(L, 3, strains="twist"), legendre),
        (km.Chebyshev(L, 3, strains="twist"), chebyshev),
        (km.PiecewiseConstant(L, 4, strains="twist"), np.array([0, 1.0, 0, 0])),
    ]
    for basis, expected in cases:
        phi = np.asarray(basis(s * L))
        assert phi.shape == (6, 4)
        np.testing.assert_allclose(phi[2], expected, rtol=0, atol=1e-15)
        assert not np.any(np.delete(phi, 2, axis=0))
    # per-strain selection and degrees: bending (κ1, κ2) quadratic, elongation linear
    basis = km.Legendre(L, (2, 1), strains=("bend", "axial"))
    phi = np.asarray(basis(s * L))
    assert basis.n == 8 and phi.shape == (6, 8)
    np.testing.assert_allclose(phi[0, :3], legendre[:3], atol=1e-15)
    np.testing.assert_allclose(phi[1, 3:6], legendre[:3], atol=1e-15)
    np.testing.assert_allclose(phi[5, 6:], legendre[:2], atol=1e-15)
    assert not np.any(phi[2:5]) and np.count_nonzero(phi) == 8
    # the last piece is closed at s = 1
    np.testing.assert_allclose(np.asarray(km.PiecewiseConstant(L, 4, "twist")(L))[2], [0, 0, 0, 1])


def test_cosserat_equals_closed_forms():
    """A constant strain is integrated exactly: Cosserat = ConstantCurvature3D / PlanarPCS."""
    pts = jnp.asarray(POINTS)
    cc = km.ConstantCurvature3D(L)
    rod = km.Cosserat(L, km.Legendre(L, 0, ("bend", "axial")), n_steps=3)
    for q in (jnp.array([1.2, -0.7, 0.08]), jnp.array([3.0, 2.0, -0.1])):
        q_rod = jnp.array([-q[1] / L, q[0] / L, q[2] / L])
        np.testing.assert_allclose(rod.map_points(pts, q_rod), cc.map_points(pts, q), atol=1e-13)
        for a, b in zip(rod.distal_pose(q_rod), cc.distal_pose(q)):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)
    pcs = km.PlanarPCS(L)
    planar = km.Cosserat(L, km.Monomial(L, 0, ("bend2", "shear1", "axial")), n_steps=5)
    q = jnp.array([4.0, 0.3, -0.2])
    np.testing.assert_allclose(planar.map_points(pts, q), pcs.map_points(pts, q), atol=1e-13)
    spatial = km.SpatialPCS(L, strains=(2, 0, 1, 5, 3, 4))
    rod = km.Cosserat(L, km.Monomial(L, 0, (2, 0, 1, 5, 3, 4)), n_steps=1)
    q = jnp.array([2.0, -3.0, 1.5, 0.2, 0.1, -0.3])
    np.testing.assert_allclose(spatial.map_points(pts, q), rod.map_points(pts, q), atol=1e-15)
    for a, b in zip(spatial.distal_pose(q), rod.distal_pose(q)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-15)


def test_spatial_pcs_robot_equals_the_cosserat_rod():
    """In a robot (a revolute joint, two segments, the Cosserat rod material): the inverse
    dynamics, mass matrix and internal forces of `SpatialPCS` segments equal those of the
    constant-strain Cosserat rod (one Magnus step; the Cosserat family's recursion is checked
    against the Euler–Lagrange baseline in `test_families_robot.py`), at a random state and at
    `κ = 0`."""
    length = 0.15
    volume = quadrature.cylinder(0.02, length, n_axial=3, n_radial=1, n_angular=3)
    material = CosseratRod(2e5, 7e4, eta=0.02)

    def robot(kin):
        body = sr.SoftBody(kin, volume, density=1000.0, material=material)
        links = [sr.Link(joints.Revolute((0, 1, 0)), body), sr.Link(joints.Fixed(), body)]
        return sr.Robot(links, gravity=(0.3, -1.0, -9.81))

    strains = ("bend", "twist", "shear", "axial")
    pcs = robot(km.SpatialPCS(length, strains=strains))
    rod = robot(km.Cosserat(length, km.Monomial(length, 0, strains), n_steps=1))
    rng = np.random.default_rng(11)
    scale = np.concatenate([[1.0], np.tile([3.0, 3.0, 3.0, 0.2, 0.2, 0.2], 2)])
    q = jnp.asarray(scale * rng.uniform(-1.0, 1.0, 13))
    qd, qdd = jnp.asarray(rng.normal(size=13)), jnp.asarray(rng.normal(size=13))
    for x in (q, jnp.zeros(13)):
        for a, b in zip(
            sr.mass_inverse_dynamics(pcs, x, qd, qdd), sr.mass_inverse_dynamics(rod, x, qd, qdd)
        ):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * float(jnp.abs(b).max()))


def test_piecewise_constant_strain_is_exact_across_pieces():
    """Two pieces: g(L) = exp(L/2 ξ1^) exp(L/2 ξ2^), with the step grid split at the breakpoint
    (n_steps = 3 does not put a node at L/2 by itself)."""
    basis = km.PiecewiseConstant(L, 2, ("bend", "twist", "axial"))
    rod = km.Cosserat(L, basis, n_steps=3)
    assert 0.5 in rod.grid
    q = jnp.array([1.0, -2.0, 0.5, 3.0, 0.4, -0.1, 0.2, 0.05])  # (κ1 ×2, κ2 ×2, κ3 ×2, ν3 ×2)
    xi = [np.array([q[j], q[2 + j], q[4 + j], 0, 0, 1 + q[6 + j]]) for j in range(2)]
    g = expm(0.5 * L * hat(xi[0])) @ expm(0.5 * L * hat(xi[1]))
    rot, t = rod.distal_pose(q)
    np.testing.assert_allclose(rot, g[:3, :3], rtol=0, atol=1e-14)
    np.testing.assert_allclose(t, g[:3, 3], rtol=0, atol=1e-14)


def reference_pose(rod, q):
    """`g(L)` of `g' = g ξ^` by an adaptive 8th-order Runge–Kutta (independent of Magnus)."""
    strain = jax.jit(rod.strain)

    def rhs(s, y):
        g = y.reshape(4, 4)
        return (g @ hat(np.asarray(strain(s, q)))).ravel()

    sol = solve_ivp(rhs, (0, L), np.eye(4).ravel(), method="DOP853", rtol=1e-13, atol=1e-14)
    return sol.y[:, -1].reshape(4, 4)


def test_cosserat_fourth_order_convergence():
    # a generator of its own: the module's RNG state depends on which tests drew before
    rng = np.random.default_rng(20240603)
    basis = km.Chebyshev(L, 2, ("bend", "twist", "shear", "axial"))
    q = jnp.asarray(rng.uniform(-4, 4, basis.n)).at[-3:].multiply(0.05)
    ref = reference_pose(km.Cosserat(L, basis), q)
    errors = []
    for n in (2, 4, 8, 16):
        rot, t = km.Cosserat(L, basis, n_steps=n).distal_pose(q)
        errors.append(np.abs(rot - ref[:3, :3]).max() + np.abs(t - ref[:3, 3]).max())
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 13) & (ratios < 19)), (errors, ratios)
    rot, _ = km.Cosserat(L, basis, n_steps=2).distal_pose(q)
    np.testing.assert_allclose(rot.T @ rot, np.eye(3), atol=1e-15)


def test_cosserat_points_are_consistent_and_differentiable():
    """`__call__`, `map_points` with and without rows, `backbone` and the distal frame describe one
    map; the Jacobian matches central differences."""
    basis = km.Legendre(L, 1, ("bend", "shear", "axial"))
    rod = km.Cosserat(L, basis, n_steps=3)
    q = jnp.asarray(RNG.uniform(-2, 2, basis.n)).at[-2:].multiply(0.1)
    section = jnp.array([[0.01, 0.0], [0.0, -0.02], [-0.015, 0.01]])
    x3 = jnp.array([0.0, 0.07, L / 3, 0.31, L])
    rule = jnp.concatenate(
        [
            jnp.broadcast_to(section[None], (5, 3, 2)),
            jnp.broadcast_to(x3[:, None, None], (5, 3, 1)),
        ],
        -1,
    ).reshape(-1, 3)

    @jax.jit
    def views(q):
        # every description of the map, in one compiled program
        return (
            rod.map_points(rule, q, n_axial=5),
            rod.map_points(rule, q),
            jax.vmap(rod, in_axes=(0, None))(rule, q),
            rod.backbone(x3, q),
            rod.distal_pose(q),
        )

    rows, plain, single, (r, rot), (rot_l, t_l) = views(q)
    np.testing.assert_allclose(rows, plain, rtol=0, atol=1e-16)
    np.testing.assert_allclose(rows, single, rtol=0, atol=1e-16)
    np.testing.assert_allclose(rows.reshape(5, 3, 3)[:, 0], r + rot[:, :, 0] * 0.01, atol=1e-16)
    np.testing.assert_allclose(r[-1], t_l, atol=1e-16)
    np.testing.assert_allclose(rot[-1], rot_l, atol=1e-16)
    jac = jax.jit(jax.jacfwd(lambda y: rod.map_points(rule, y, n_axial=5)))(q)
    mapped = jax.jit(lambda y: rod.map_points(rule, y))
    eps = 1e-6
    for j in range(basis.n):
        dq = jnp.zeros(basis.n).at[j].set(eps)
        fd = (mapped(q + dq) - mapped(q - dq)) / (2 * eps)
        np.testing.assert_allclose(jac[..., j], fd, rtol=0, atol=1e-9)


def test_cosserat_called_with_float32_under_x64_promotes():
    # a float32 point and q with the float64 length: the scan's float32 carry against its
    # float64 increments failed JAX's carry type check (the other families promote)
    rod = km.Cosserat(0.2, km.Legendre(0.2, 1, strains=("bend",)), n_steps=2)
    x, q = np.array([0.01, 0.0, 0.1]), np.full(4, 0.1)
    single = rod(jnp.asarray(x, jnp.float32), jnp.asarray(q, jnp.float32))
    assert single.dtype == jnp.float64
    np.testing.assert_allclose(single, rod(jnp.asarray(x), jnp.asarray(q)), rtol=1e-7)


def test_cosserat_derivatives_at_zero_with_varying_strain():
    """At q = 0 (straight rod, zero curvature everywhere) the Jacobian and Hessian of a varying
    basis are finite and equal the difference quotients of the value and of the Jacobian."""
    basis = km.Chebyshev(L, 2, ("bend", "twist", "shear", "axial"))
    rod = km.Cosserat(L, basis, n_steps=2)
    x = jnp.asarray(POINTS[0])
    value_fn = jax.jit(lambda y: rod(x, y))
    jac_fn = jax.jit(jax.jacfwd(value_fn))
    zero = jnp.zeros(basis.n)
    jac, hess = jac_fn(zero), jax.jit(jax.hessian(value_fn))(zero)
    assert np.all(np.isfinite(jac)) and np.all(np.isfinite(hess))
    eps = 1e-5
    for j in (0, 4, 7, 11):
        dq = zero.at[j].set(eps)
        np.testing.assert_allclose(
            jac[:, j], (value_fn(dq) - value_fn(-dq)) / (2 * eps), rtol=0, atol=1e-10
        )
        np.testing.assert_allclose(
            hess[:, :, j], (jac_fn(dq) - jac_fn(-dq)) / (2 * eps), rtol=0, atol=1e-9
        )


def test_numpy_scalars_are_options_and_booleans_are_not_counts():
    assert km.ConstantCurvature3D(L, elongation=np.True_).n_q == 3
    assert km.FunctionKinematics(lambda x, q: x, np.int64(2)).n_q == 2
    with pytest.raises(ValueError, match="n_q must be a non-negative integer, got True"):
        km.FunctionKinematics(lambda x, q: x, True)
    with pytest.raises(ValueError, match="n_q=True contradicts PlanarConstantCurvature.n_q=1"):
        sr.SoftBody(km.PlanarConstantCurvature(L), quadrature.segment(L, 3), 1.0, n_q=True)
