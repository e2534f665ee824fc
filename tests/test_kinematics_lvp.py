"""Locally volume-preserving primitives (`softrigid.kinematics.lvp`) against independent oracles.

Oracles: first-order Taylor expansions of every primitive at `q = 0` written out by hand (the
Jacobian at the rest configuration), Richardson-extrapolated central differences (Hessians at
`q = 0`, Jacobians and Hessians at random `q`), closed forms for constant fields (the planar arc,
the 3D constant-curvature backbone of `ConstantCurvature3D` with the section root from
`numpy.roots`), and the volume of the deformed body by the divergence theorem on its surface
(`V = (1/3) ∮ f · cof(F) N dA`, which does not assume `det F = 1`).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import quad

import softrigid as sr
from softrigid import kinematics as km
from softrigid._ad import second_directional
from softrigid._module import module, static
from softrigid.kinematics import lvp

L = 0.4
R_OUT, R_IN = 0.05, 0.02

# Test-side copies of the modes' coefficients (rows: modes, columns: powers of s = z / L)
C_QUAD = np.eye(3)  # 1, s, s²
C_LIN = np.array([[0.0, 1.0]])  # s
C_STRETCH = np.array([[0.0, 1.0, -1.0], [0.0, 0.0, 1.0]])  # s (1 − s), s²
C_SQUARE = np.array([[0.0, 0.0, 1.0]])  # s²


def poly(c):
    return lvp.Polynomial(c.tolist(), L)


def m_of(c, z):
    """Modes, their integrals ∫_0^z and double integrals ∫_0^z ∫_0^s (NumPy, closed form)."""
    s = z / L
    k = np.arange(c.shape[1])
    return (
        c @ s**k,
        L * (c @ (s ** (k + 1) / (k + 1))),
        L * L * (c @ (s ** (k + 2) / ((k + 1) * (k + 2)))),
    )


def first_order(kind, c, x, **kw):
    """Hand-written `∂h/∂q` `(3, n)` at `q = 0` of one primitive with polynomial modes `c`."""
    m, i1, i2 = m_of(c, x[2])
    x1, x2 = x[0], x[1]
    zero = np.zeros_like(m)
    if kind == "twist":  # δφ (−y, x, 0)
        return np.stack([-x2 * m, x1 * m, zero])
    if kind == "stretch":  # (−x δλ/2, −y δλ/2, ∫ δλ)
        return np.stack([-x1 * m / 2, -x2 * m / 2, i1])
    if kind == "shear1":
        return np.stack([m, zero, zero])
    if kind == "shear2":
        return np.stack([zero, m, zero])
    if kind == "bend":  # about x2: (∫θ + κ x²/2, 0, −x θ)
        return np.stack([i2 + m * x1**2 / 2, zero, -x1 * i1])
    if kind == "bend_x1":  # about x1: (0, −∫θ − κ y²/2, y θ)
        return np.stack([zero, -i2 - m * x2**2 / 2, x2 * i1])
    if kind == "bend3d_k1":  # ∫Θ × e3 + Θ × ρ − ρ u/2, u = (2/3) κ1 y
        return np.stack([-x1 * x2 * m / 3, -i2 - x2**2 * m / 3, x2 * i1])
    if kind == "bend3d_k2":  # u = −(2/3) κ2 x
        return np.stack([i2 + x1**2 * m / 3, x1 * x2 * m / 3, -x1 * i1])
    if kind == "source":  # (x, y, 0) g / (2 r²)
        r2 = x1 * x1 + x2 * x2
        return np.stack([x1 * m / (2 * r2), x2 * m / (2 * r2), zero])
    raise ValueError(kind)


def fmodes(z):
    return jnp.stack([jnp.cos(z / L), jnp.sin(2.0 * z / L)])


# name: (map, per-coordinate scale of random q, hollow points, first-order oracle parts)
# oracle parts: (kind, coefficients, positions in q)
CASES = {
    "twist": (lvp.Twist(poly(C_QUAD)), 1.5, False, [("twist", C_QUAD, [0, 1, 2])]),
    "stretch": (lvp.Stretch(poly(C_STRETCH)), 0.6, False, [("stretch", C_STRETCH, [0, 1])]),
    "shear": (
        lvp.Shear(poly(C_QUAD), poly(C_LIN)),
        0.05,
        False,
        [("shear1", C_QUAD, [0, 1, 2]), ("shear2", C_LIN, [3])],
    ),
    "shear_x2_only": (lvp.Shear(modes2=poly(C_LIN)), 0.05, False, [("shear2", C_LIN, [0])]),
    "bend": (lvp.Bend(poly(C_QUAD)), 1.5, False, [("bend", C_QUAD, [0, 1, 2])]),
    "bend_x1": (lvp.Bend(poly(C_QUAD), axis=1), 1.5, False, [("bend_x1", C_QUAD, [0, 1, 2])]),
    "bend3d": (
        lvp.Bend3D(poly(C_QUAD), poly(C_LIN), poly(C_STRETCH)),
        np.array([1.5, 1.5, 1.5, 2.0, 0.5, 0.5]),
        False,
        [
            ("bend3d_k1", C_QUAD, [0, 1, 2]),
            ("bend3d_k2", C_LIN, [3]),
            ("stretch", C_STRETCH, [4, 5]),
        ],
    ),
    "bend3d_function_modes": (
        lvp.Bend3D(modes2=lvp.FunctionModes(fmodes, n_gauss=12), n_gauss=12),
        2.0,
        False,
        None,
    ),
    "source": (lvp.Source(poly(C_SQUARE)), 0.5 * R_IN**2, True, [("source", C_SQUARE, [0])]),
    "composite": (
        lvp.compose(
            lvp.Stretch(poly(C_STRETCH)),
            lvp.Source(poly(C_SQUARE)),
            lvp.Twist(poly(C_LIN)),
            lvp.compose(lvp.Shear(poly(C_LIN), poly(C_LIN)), lvp.Bend(poly(C_LIN), axis=1)),
            lvp.Bend(poly(C_QUAD)),
        ),
        np.array([0.5, 0.5, 0.5 * R_IN**2, 1.5, 0.05, 0.05, 1.5, 1.0, 1.0, 1.0]),
        True,
        [
            ("stretch", C_STRETCH, [0, 1]),
            ("source", C_SQUARE, [2]),
            ("twist", C_LIN, [3]),
            ("shear1", C_LIN, [4]),
            ("shear2", C_LIN, [5]),
            ("bend_x1", C_LIN, [6]),
            ("bend", C_QUAD, [7, 8, 9]),
        ],
    ),
    "helicoid_segment": (
        lvp.helicoid_segment(L),
        np.array([0.5, 1.5, 3.0, 1.5, 3.0, 1.5, 0.05, 0.05]),
        False,
        [
            ("stretch", C_STRETCH[:1], [0]),
            # κ = (q_a + x3 q_b) / L: modes 1/L and s
            ("bend3d_k1", np.array([[1 / L, 0.0], [0.0, 1.0]]), [1, 2]),
            ("bend3d_k2", np.array([[1 / L, 0.0], [0.0, 1.0]]), [3, 4]),
            ("twist", C_LIN, [5]),
            ("shear1", C_LIN, [6]),
            ("shear2", C_LIN, [7]),
        ],
    ),
    "gripper": (
        lvp.gripper(L),
        np.array([0.6, 0.5 * R_IN**2]),
        True,
        [("stretch", C_SQUARE, [0]), ("source", C_SQUARE, [1])],
    ),
}
NAMES = list(CASES)
# the derivative tests skip the second Bend3D (its Hessian is the slowest to compile)
DERIVATIVE_NAMES = [name for name in NAMES if name != "bend3d_function_modes"]
# at q = 0 the helicoid segment (a composition of the primitives above, 20–40 s) is slow: the
# composition's rule at zero is `composite`'s, and the helicoid's own zero-curvature case runs
# end to end in tests/test_families_robot.py
AT_ZERO = [
    pytest.param(name, marks=pytest.mark.slow) if name == "helicoid_segment" else name
    for name in DERIVATIVE_NAMES
]


def points(hollow, n=6):
    """Random material points in the tube `R_IN ≤ r ≤ R_OUT` (hollow) or the cylinder `r ≤ R_OUT`
    (with a point on the axis), including the end faces; seeded by the arguments, so a test sees
    the same points whichever tests ran before it."""
    rng = np.random.default_rng([314159, n, int(hollow)])
    r = rng.uniform(R_IN if hollow else 0.0, R_OUT, n)
    a = rng.uniform(0, 2 * np.pi, n)
    z = rng.uniform(0, L, n)
    z[:2] = (0.0, L)
    if not hollow:
        r[2] = 0.0
    return np.column_stack([r * np.cos(a), r * np.sin(a), z])


def random_q(name, seed):
    kin, scale, _, _ = CASES[name]
    return jnp.asarray(np.random.default_rng(seed).uniform(-1, 1, kin.n_q) * scale)


@jax.jit
def determinants(kin, xs, q):
    return jax.vmap(lambda x: jnp.linalg.det(jax.jacfwd(kin, 0)(x, q)))(xs)


@jax.jit
def derivatives(kin, x, q):
    f = lambda y: kin(x, y)  # noqa: E731
    return f(q), jax.jacfwd(f)(q), jax.jacfwd(jax.jacfwd(f))(q)


@jax.jit
def batch_values(kin, x, qs):
    return jax.vmap(lambda y: kin(x, y))(qs)


@jax.jit
def batch_jacobians(kin, x, qs):
    return jax.vmap(lambda y: jax.jacfwd(kin, 1)(x, y))(qs)


def richardson(batched, kin, x, q, scale):
    """`∂g/∂q` `(..., n)` of `g = batched(kin, x, ·)` by central differences with steps
    `h = 1e-3 scale` and one Richardson step (error `O(h⁴)`), all shifted arguments in one
    batch."""
    n = q.shape[0]
    h = 1e-3 * np.broadcast_to(scale, (n,))
    shifts = np.concatenate([np.diag(h) * s for s in (1.0, -1.0, 0.5, -0.5)])
    g = np.asarray(batched(kin, x, q + jnp.asarray(shifts)))
    g = g.reshape(4, n, *g.shape[1:])
    shape = (n,) + (1,) * (g.ndim - 2)
    d_h, d_h2 = (g[0] - g[1]) / (2 * h.reshape(shape)), (g[2] - g[3]) / h.reshape(shape)
    return np.moveaxis((4 * d_h2 - d_h) / 3, 0, -1)


@pytest.mark.parametrize("name", NAMES)
def test_volume_preserving_at_random_points_and_configurations(name):
    """det(∂f/∂x) = 1 to rounding, at q = 0 and at three random configurations."""
    kin, _, hollow, _ = CASES[name]
    xs = jnp.asarray(points(hollow))
    for seed in (None, 1, 2, 3):
        q = jnp.zeros(kin.n_q) if seed is None else random_q(name, seed)
        det = np.asarray(determinants(kin, xs, q))
        np.testing.assert_allclose(det, 1.0, rtol=0, atol=2e-14)


@pytest.mark.parametrize("name", AT_ZERO)
def test_derivatives_at_zero_are_exact(name):
    """f(x, 0) = x; the Jacobian at q = 0 equals the first-order Taylor expansion written by hand
    (columns of a composition add up); the Hessian is finite and equals differences of the
    Jacobian."""
    kin, scale, hollow, parts = CASES[name]
    zero = jnp.zeros(kin.n_q)
    for x in points(hollow, 3):
        value, jac, hess = derivatives(kin, jnp.asarray(x), zero)
        np.testing.assert_allclose(value, x, rtol=0, atol=4e-16)
        assert np.all(np.isfinite(jac)) and np.all(np.isfinite(hess))
        if parts is not None:
            expected = np.zeros((3, kin.n_q))
            for kind, c, cols in parts:
                expected[:, cols] += first_order(kind, c, x)
            np.testing.assert_allclose(jac, expected, rtol=2e-15, atol=1e-16)
        fd = richardson(batch_jacobians, kin, jnp.asarray(x), zero, scale)
        np.testing.assert_allclose(hess, fd, rtol=0, atol=1e-9 * max(1.0, np.abs(hess).max()))


@pytest.mark.parametrize("name", DERIVATIVE_NAMES)
def test_derivatives_at_random_configurations(name):
    kin, scale, hollow, _ = CASES[name]
    x = jnp.asarray(points(hollow, 4)[3])
    q = random_q(name, 7)
    value, jac, hess = derivatives(kin, x, q)
    np.testing.assert_allclose(value, batch_values(kin, x, q[None])[0], rtol=0, atol=1e-16)
    np.testing.assert_allclose(jac, richardson(batch_values, kin, x, q, scale), rtol=0, atol=1e-10)
    fd = richardson(batch_jacobians, kin, x, q, scale)
    np.testing.assert_allclose(hess, fd, rtol=0, atol=1e-9 * max(1.0, np.abs(hess).max()))


N_SURFACE = (48, 24, 10)


def test_deformed_volume_is_the_reference_volume():
    """The volume of the image, by the divergence theorem on the deformed surface pulled back
    (Nanson: n da = cof(F) N dA), equals the reference volume at random configurations: the
    mass of an LVP body does not depend on q."""
    n_t, n_z, n_r = N_SURFACE
    t = 2 * np.pi * np.arange(n_t) / n_t
    gz, wz = np.polynomial.legendre.leggauss(n_z)
    gz, wz = L * (gz + 1) / 2, L * wz / 2

    def surface(r_in):
        gr, wr = np.polynomial.legendre.leggauss(n_r)
        gr, wr = r_in + (R_OUT - r_in) * (gr + 1) / 2, (R_OUT - r_in) * wr / 2
        pts, normals, weights = [], [], []
        radii = [(R_OUT, 1.0)] + ([(r_in, -1.0)] if r_in > 0 else [])
        for rad, sign in radii:  # lateral faces
            tt, zz = np.meshgrid(t, gz, indexing="ij")
            ww = np.outer(np.full(n_t, 2 * np.pi / n_t), wz) * rad
            pts.append(np.stack([rad * np.cos(tt), rad * np.sin(tt), zz], -1).reshape(-1, 3))
            normals.append(sign * np.stack([np.cos(tt), np.sin(tt), 0 * tt], -1).reshape(-1, 3))
            weights.append(ww.ravel())
        for zc, sign in ((0.0, -1.0), (L, 1.0)):  # end faces
            tt, rr = np.meshgrid(t, gr, indexing="ij")
            ww = np.outer(np.full(n_t, 2 * np.pi / n_t), wr * gr)
            pts.append(np.stack([rr * np.cos(tt), rr * np.sin(tt), zc + 0 * tt], -1).reshape(-1, 3))
            normals.append(np.tile([0.0, 0.0, sign], (ww.size, 1)))
            weights.append(ww.ravel())
        return [jnp.asarray(np.concatenate(a)) for a in (pts, normals, weights)]

    @jax.jit
    def volume(kin, pts, normals, weights, q):
        def flux(x, n):
            f, jac = kin(x, q), jax.jacfwd(kin, 0)(x, q)
            cof = jnp.linalg.det(jac) * jnp.linalg.inv(jac).T
            return f @ (cof @ n)

        return jnp.sum(weights * jax.vmap(flux)(pts, normals)) / 3.0

    for name in ("composite", "helicoid_segment", "gripper"):
        kin, _, hollow, _ = CASES[name]
        r_in = R_IN if hollow else 0.0
        reference = np.pi * (R_OUT**2 - r_in**2) * L
        pts, normals, weights = surface(r_in)
        assert abs(volume(kin, pts, normals, weights, jnp.zeros(kin.n_q)) / reference - 1) < 1e-13
        for seed in (11, 12):
            q = random_q(name, seed)
            v = float(volume(kin, pts, normals, weights, q))
            assert abs(v / reference - 1) < 1e-9, (name, v / reference - 1)


def test_planar_bend_constant_curvature_closed_form():
    """A constant curvature κ: the backbone is the arc ((1 − cos κz)/κ, 0, sin κz/κ) and the
    section coordinate ρ = (1 − √(1 − 2κx))/κ along the normal (cos κz, 0, −sin κz)."""
    bend = lvp.Bend(lvp.Polynomial([[1.0]], L))
    for kappa in (-3.0, 0.7, 4.0):
        for x in points(False, 3):
            th = kappa * x[2]
            rho = (1 - np.sqrt(1 - 2 * kappa * x[0])) / kappa
            expected = np.array(
                [(1 - np.cos(th)) / kappa + rho * np.cos(th), x[1], np.sin(th) / kappa]
            ) + np.array([0.0, 0.0, -rho * np.sin(th)])
            np.testing.assert_allclose(
                bend(jnp.asarray(x), jnp.array([kappa])), expected, atol=1e-15
            )


def test_bend3d_constant_strain_closed_form():
    """Constant (κ1, κ2, ν3): the backbone is the 3D constant-curvature arc of
    `ConstantCurvature3D` (q1 = κ2 L, q2 = −κ1 L, q3 = (ν3 − 1) L) and the section is scaled by
    1/(ψ √ν3), ψ the largest real root of ψ³ − ψ − u, u = (2/3)(κ1 y − κ2 x)/ν3^{3/2}."""
    one = lvp.Polynomial([[1.0]], L)
    bend = lvp.Bend3D(one, one, one)
    cc = km.ConstantCurvature3D(L)
    for k1, k2, dnu in ((2.0, -1.0, 0.2), (-4.0, 3.0, -0.3), (0.0, 5.0, 0.0)):
        nu = 1 + dnu
        for k, x in enumerate(points(False, 4)):
            rot, r = cc.frames(jnp.array([x[2]]), jnp.array([k2 * L, -k1 * L, dnu * L]))
            u = (2 / 3) * (k1 * x[1] - k2 * x[0]) / nu**1.5
            roots = np.roots([1.0, 0.0, -1.0, -u])
            psi = roots[np.abs(roots.imag) < 1e-12].real.max()
            expected = np.asarray(r[0] + rot[0] @ np.array([x[0], x[1], 0.0]) / (psi * np.sqrt(nu)))
            got = bend(jnp.asarray(x), jnp.array([k1, k2, dnu]))
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15, err_msg=str(k))
        rot_b, r_b = bend.backbone_frame(jnp.asarray(L), jnp.array([k1, k2, dnu]))
        rot_c, r_c = cc.distal_pose(jnp.array([k2 * L, -k1 * L, dnu * L]))
        np.testing.assert_allclose(rot_b, rot_c, atol=1e-15)
        np.testing.assert_allclose(r_b, r_c, atol=1e-15)


def test_chebyshev_integral_is_exact_on_polynomials():
    """The Chebyshev integration matrix integrates the interpolant exactly: for a polynomial of
    degree < m sampled at the m nodes, the series equals its antiderivative from −1."""
    from softrigid.kinematics.lvp._bend3d import chebyshev_basis, chebyshev_integral

    m = 12
    y, p = chebyshev_integral(m)
    poly = np.polynomial.Polynomial(np.random.default_rng(0).normal(size=m))  # degree m − 1
    anti = poly.integ(lbnd=-1.0)
    coefficients = jnp.asarray(p @ poly(y))
    for t in (-1.0, -0.3, 0.2, 1.0):
        got = chebyshev_basis(jnp.asarray(t), m + 1) @ coefficients
        np.testing.assert_allclose(got, anti(t), rtol=0, atol=1e-14)


def test_chebyshev_basis_derivatives_equal_numpy_to_third_order():
    """The basis's custom JVP (`T' = E T`) gives the derivatives of every order: jacfwd up to
    the third and jacrev equal NumPy's `chebder` of each `T_k`, endpoints included."""
    from numpy.polynomial import chebyshev as cheb

    from softrigid.kinematics.lvp._bend3d import chebyshev_basis

    count = 21
    for y in (-1.0, -0.73, 0.0, 0.41, 1.0):
        fn = functools.partial(chebyshev_basis, count=count)
        for order in range(4):
            want = [cheb.chebval(y, cheb.chebder(np.eye(count)[k], order)) for k in range(count)]
            np.testing.assert_allclose(fn(jnp.asarray(y)), want, rtol=1e-13, atol=1e-11)
            fn = jax.jacfwd(fn)
        want = [cheb.chebval(y, cheb.chebder(np.eye(count)[k])) for k in range(count)]
        rev = jax.jacrev(functools.partial(chebyshev_basis, count=count))(jnp.asarray(y))
        np.testing.assert_allclose(rev, want, rtol=1e-13, atol=1e-11)


def test_bend3d_per_body_backbone_equals_the_per_point_rule():
    """Inside a composition that knows its length (`helicoid_segment`) the bend's backbone is a
    per-body Chebyshev series: the map, its q-Jacobian and a second directional derivative equal the per-point
    Gauss rule (the same composition without a length) to rounding, with the preceding stretch
    moving the axial range; points outside [0, L] are rejected by `check`."""
    lean = lvp.helicoid_segment(L)
    per_point = lvp.Composite(lean.primitives, lean.index, lean.n_q, None)
    assert lean.length is not None
    rng = np.random.default_rng(3)

    x = jnp.asarray(points(False, 12))

    @jax.jit
    def values(k, q):
        # the map, its q-Jacobian and a second directional derivative at every point
        def second(p):
            return second_directional(lambda y: k(p, y), q, q + 0.1)

        return (
            jax.vmap(k, (0, None))(x, q),
            jax.vmap(jax.jacfwd(k, 1), (0, None))(x, q),
            jax.vmap(second)(x),
        )

    for scale in (0.0, 0.3, 1.0):
        q = jnp.asarray(scale * rng.standard_normal(8)).at[0].set(0.5 * scale)
        for got, ref in zip(values(lean, q), values(per_point, q)):
            np.testing.assert_allclose(got, ref, rtol=0, atol=2e-13)
    with pytest.raises(ValueError, match="spans x3"):
        lean.check(jnp.array([[0.0, 0.0, 1.5 * L]]), jnp.zeros(8))


def test_bend3d_series_derivative_is_the_exact_tangent():
    """With a coarse backbone series (6 nodes) the positions carry its interpolation error, but
    `∂f/∂x` uses the exact tangent (the series' custom JVP): `det ∂f/∂x = 1` to rounding, and the
    `x`-Jacobian equals the per-point rule's (20 Gauss nodes) to rounding."""
    lean = lvp.helicoid_segment(L)
    prims = list(lean.primitives)
    bend = prims[3]
    prims[3] = lvp.Bend3D(bend.modes1, bend.modes2, n_gauss=20, n_series=6)
    coarse = lvp.Composite(tuple(prims), lean.index, lean.n_q, lean.length)
    per_point = lvp.Composite(tuple(prims), lean.index, lean.n_q, None)
    x = jnp.asarray(points(False, 12))
    q = jnp.asarray([0.3, 1.5, -2.0, -1.0, 3.0, 0.5, 0.01, -0.02])

    def jac_x(k):
        return jax.vmap(jax.jacfwd(k, 0), (0, None))(x, q)

    positions = jax.vmap(coarse, (0, None))(x, q) - jax.vmap(per_point, (0, None))(x, q)
    assert np.abs(positions).max() > 1e-9  # the series is coarse
    np.testing.assert_allclose(jac_x(coarse), jac_x(per_point), rtol=0, atol=1e-13)
    np.testing.assert_allclose(jnp.linalg.det(jac_x(coarse)), 1.0, rtol=0, atol=1e-13)


def test_bend3d_series_derivatives_along_the_point_and_the_coordinates_together():
    """The series' JVP leaves out a term whose tangent is a symbolic zero (`q`-derivatives hold
    the point, `x`-derivatives the series coefficients); with tangents along both at once, and
    in the mixed second derivative `∂²f/∂x∂q`, it equals the per-point Gauss rule to rounding."""
    lean = lvp.helicoid_segment(L)
    per_point = lvp.Composite(lean.primitives, lean.index, lean.n_q, None)
    rng = np.random.default_rng(5)
    x = jnp.asarray(points(False, 12))
    q = jnp.asarray(0.5 * rng.standard_normal(8))
    dx, dq = jnp.asarray(rng.standard_normal(3)), jnp.asarray(rng.standard_normal(8))

    @jax.jit
    def values(k):
        def joint(p):
            return jax.jvp(k, (p, q), (dx, dq))[1]

        return jax.vmap(joint)(x), jax.vmap(jax.jacfwd(jax.jacfwd(k, 1), 0), (0, None))(x, q)

    got, ref = values(lean), values(per_point)
    assert np.abs(ref[1]).max() > 0.1  # the mixed derivative is not trivially zero
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_polynomial_fields_by_horner_equal_the_modes_and_stay_transpose_free():
    """`Polynomial.field` / `field_integral` (Horner's rule on `Cᵀ q`) equal the generic
    `m(z) · q` and `(∫ m) · q` with their derivatives, and vectorized over points, tangents and
    links (the nesting of the dynamics' node terms) they leave no batch axes to transpose: the
    stacked powers and dots did (25 transposes here), and XLA's reshape mover moved each one
    operation per simplifier round (25 rounds on the helicoid robot's programs)."""
    rng = np.random.default_rng(3)
    m = lvp.Polynomial(rng.normal(size=(2, 4)), 0.1)
    zs, q0 = jnp.asarray(rng.uniform(0.0, 0.1, 7)), jnp.asarray(rng.normal(size=2))
    for name in ("field", "field_integral"):
        fast, generic = getattr(lvp.Polynomial, name), getattr(lvp.Modes, name)

        def terms(impl):
            one = lambda z, q: impl(m, z, q)  # noqa: E731
            # value, ∂/∂q, ∂/∂z and ∂²/∂z∂q at every point
            return [
                jax.vmap(fn, in_axes=(0, None))(zs, q0)
                for fn in (one, jax.jacfwd(one, 1), jax.grad(one), jax.jacfwd(jax.grad(one), 1))
            ]

        for a, b in zip(terms(fast), terms(generic)):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)

        def nested(impl):
            def point(z, q):
                a, b = impl(m, z, q), impl(m, 0.5 * z, q)
                return a * a + b * b

            def per_link(qq):
                inner = lambda y: jax.vmap(lambda z: point(z, y))(zs)  # noqa: E731
                return jax.jacfwd(lambda x: jax.jvp(inner, (x,), (x,))[1])(qq)

            return str(jax.make_jaxpr(jax.vmap(per_link))(jnp.stack([q0, q0, q0])))

        assert nested(fast).count("transpose") <= 1
        assert nested(generic).count("transpose") > 10  # what the test guards against


def test_psi_root():
    """ψ³ − ψ = u on the branch ψ(0) = 1 against numpy.roots, derivatives against the implicit
    function theorem (ψ' = 1/(3ψ² − 1), ψ'' = −6ψ ψ'³), NaN below u = −2/√27."""
    u_min = -2 / np.sqrt(27)
    us = np.array([u_min, u_min + 1e-6, -0.3, -1e-9, 0.0, 1e-9, 0.2, 2 / np.sqrt(27), 0.5, 3.0])
    psi = np.asarray(jax.vmap(lvp.psi_root)(jnp.asarray(us)))
    for u, p in zip(us, psi):
        assert abs(p**3 - p - u) < 1e-15 and p > 1 / np.sqrt(3), (u, p)
        roots = np.roots([1.0, 0.0, -1.0, -u])
        ref = roots[np.abs(roots.imag) < 1e-6].real.max()
        if u > u_min + 1e-3:  # one Newton step polishes the eigenvalue solver's root
            ref -= (ref**3 - ref - u) / (3 * ref**2 - 1)
        # near u = −2/√27 the root is ill-conditioned (two roots merge)
        tol = 1e-7 if u < u_min + 1e-3 else 4e-15
        assert abs(p - ref) < tol, (u, p, ref)
    d1 = jax.jit(jax.vmap(jax.grad(lvp.psi_root)))
    d2 = jax.jit(jax.vmap(jax.grad(jax.grad(lvp.psi_root))))
    inner = jnp.asarray(us[1:])
    p = psi[1:]
    np.testing.assert_allclose(d1(inner), 1 / (3 * p * p - 1), rtol=1e-13)
    np.testing.assert_allclose(d2(inner), -6 * p / (3 * p * p - 1) ** 3, rtol=1e-12)
    assert np.isnan(lvp.psi_root(jnp.asarray(u_min - 1e-6)))
    assert np.isnan(jax.grad(lvp.psi_root)(jnp.asarray(u_min - 1e-6)))


def test_gripper_cavity_volume():
    """Stretch then source on the bore r = r_i: the cavity's volume is
    ∫ π (r_i²/λ(z) + g(Λ(z))) λ(z) dz over the reference length (independent quadrature)."""
    grip = lvp.gripper(L)
    for q1, q2 in ((0.3, 2e-4), (-0.4, -1e-4)):

        def integrand(z, q1=q1, q2=q2):
            lam = 1 + q1 * (z / L) ** 2  # λ
            big_lam = z + q1 * L * (z / L) ** 3 / 3  # Λ = ∫ λ
            return np.pi * (R_IN**2 / lam + q2 * (big_lam / L) ** 2) * lam

        expected, _ = quad(integrand, 0.0, L, epsabs=1e-16, epsrel=1e-14)
        got = grip.cavity_volume(jnp.array([q1, q2]), R_IN, L)
        np.testing.assert_allclose(got, expected, rtol=1e-13)
    with pytest.raises(ValueError, match="Bend acts before a Source"):
        lvp.compose(lvp.Bend(poly(C_LIN)), lvp.Source(poly(C_SQUARE))).cavity_volume(
            jnp.zeros(2), R_IN, L
        )
    # its arguments are checked (a short q read clamped indices, a negative length gave a
    # negative volume)
    q = jnp.array([-0.4, -1e-4])  # the loop's last state: a list is read as that array
    np.testing.assert_allclose(grip.cavity_volume([-0.4, -1e-4], R_IN, L), got, rtol=1e-15)
    for args, error, message in [
        ((q[:1], R_IN, L), ValueError, r"cavity_volume: q must have shape \(2,\)"),
        ((q, np.nan, L), ValueError, "inner_radius must be finite"),
        ((q, -R_IN, L), ValueError, "inner_radius must be non-negative"),
        ((q, R_IN, -L), ValueError, "length must be finite and positive"),
        ((q, R_IN, "0.1"), TypeError, "length must be real numbers"),
    ]:
        with pytest.raises(error, match=message):
            grip.cavity_volume(*args)


def test_composition_order_and_shared_coordinates():
    """`compose` applies its first primitive first, flattens nested compositions, and places
    coordinates by `coordinates=` (shared positions allowed)."""
    twist, bend = lvp.Twist(poly(C_LIN)), lvp.Bend(poly(C_QUAD))
    comp = lvp.compose(twist, lvp.compose(bend))
    assert comp.n_q == 4 and len(comp.primitives) == 2
    x, q = jnp.array([0.03, -0.01, 0.25]), jnp.array([0.8, 1.0, -0.5, 0.7])
    np.testing.assert_allclose(comp(x, q), bend(twist(x, q[:1]), q[1:]), atol=0)
    shared = lvp.compose(twist, bend, coordinates=((0,), (0, 1, 0)))
    assert shared.n_q == 2
    np.testing.assert_allclose(
        shared(x, jnp.array([0.4, -1.0])),
        bend(twist(x, jnp.array([0.4])), jnp.array([0.4, -1.0, 0.4])),
        atol=0,
    )


def test_valid_range_gives_nan_and_check_names_the_condition():
    """Outside the valid range the map is NaN, `valid` is False and `check` raises a ValueError
    naming the primitive and its condition; inside, `check` passes."""
    bend = lvp.Bend(lvp.Polynomial([[1.0]], L))
    x = jnp.array([0.04, 0.0, 0.2])
    q_bad = jnp.array([1 / (2 * 0.04) + 0.5])  # 2κx > 1
    assert np.all(np.isnan(bend(x, q_bad)[::2])) and not bool(bend.valid(x, q_bad))
    bend.check(x[None], jnp.array([5.0]))
    with pytest.raises(ValueError, match=r"Bend: .*2κ\(z\) x < 1"):
        bend.check(jnp.stack([-x, x]), q_bad)

    stretch = lvp.Stretch(lvp.Polynomial([[0.0, 1.0]], L))
    q_bad = jnp.array([-2.0])  # λ(L) = −1
    assert np.isnan(stretch(jnp.array([0.01, 0.0, L]), q_bad)[0])
    with pytest.raises(ValueError, match=r"Stretch: .*λ\(z\) = 1 \+ m\(z\)·q > 0"):
        stretch.check(jnp.array([[0.0, 0.0, 0.1], [0.01, 0.0, L]]), q_bad)

    b3 = lvp.Bend3D(modes2=lvp.Polynomial([[1.0]], L))
    k_max = 3 / 2 * (2 / np.sqrt(27)) / 0.04  # u = −(2/3) κ x reaches −2/√27 at x = 0.04
    inside, outside = jnp.array([0.97 * k_max]), jnp.array([1.03 * k_max])
    assert np.all(np.isfinite(b3(x, inside))) and bool(b3.valid(x, inside))
    assert np.all(np.isnan(b3(x, outside))) and not bool(b3.valid(x, outside))
    with pytest.raises(ValueError, match="Bend3D: .*ν3 > 0 and u"):
        b3.check(x[None], outside)

    source = lvp.Source(lvp.Polynomial([[1.0]], L))
    ring = jnp.array([0.02, 0.0, 0.1])
    g_bad = jnp.array([-(0.02**2) * 1.5])
    assert np.isnan(source(ring, g_bad)[0])
    np.testing.assert_array_equal(source(jnp.array([0.0, 0.0, L]), g_bad), [0.0, 0.0, L])
    with pytest.raises(ValueError, match=r"Source: .*off the axis"):
        source.check(jnp.array([[0.0, 0.0, 0.1]]), jnp.array([1e-4]))

    grip = lvp.gripper(L)
    with pytest.raises(ValueError, match=r"primitive 1 of the composition: Source"):
        grip.check(jnp.array([[0.03, 0.0, 0.1], [0.02, 0.0, L]]), jnp.array([0.0, -(0.03**2)]))
    helicoid = lvp.helicoid_segment(L)
    assert bool(helicoid.valid(ring, jnp.zeros(8)))
    # q is checked: a short one was clamped and reported valid, a NaN one passed
    with pytest.raises(ValueError, match=r"Composite.valid: q must have shape \(8,\)"):
        helicoid.valid(ring, jnp.zeros(3))
    with pytest.raises(ValueError, match=r"Composite.check: q must have shape \(2,\)"):
        grip.check(ring[None], jnp.zeros(1))
    with pytest.raises(ValueError, match="primitive 0 of the composition: Stretch: q must be fin"):
        grip.check(ring[None], jnp.array([np.nan, 0.0]))


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: lvp.Polynomial([1.0, 2.0]), ValueError, r"shape \(n_modes, degree \+ 1\)"),
        (lambda: lvp.Polynomial([[1.0]], -1.0), ValueError, "length must be finite and positive"),
        (lambda: lvp.FunctionModes(3.0), TypeError, "fn must be callable"),
        (lambda: lvp.FunctionModes(lambda z: z), ValueError, r"must return a \(n,\) vector"),
        (lambda: lvp.FunctionModes(fmodes, n_gauss=0), ValueError, "n_gauss must be an integer"),
        (lambda: lvp.Twist("modes"), TypeError, "Twist: modes must be a lvp.Modes"),
        (lambda: lvp.Shear(), ValueError, "Shear: give modes1"),
        (lambda: lvp.Bend(fmodes, axis=3), ValueError, "axis must be the integer 1 or 2"),
        (lambda: lvp.Bend(fmodes, axis=True), ValueError, "axis must be the integer 1 or 2"),
        (lambda: lvp.Bend(fmodes, axis=1.0), ValueError, "axis must be the integer 1 or 2"),
        (lambda: lvp.Polynomial([[True, False]]), TypeError, "coefficients must be real numbers"),
        (lambda: lvp.Polynomial([[0, 1j]]), TypeError, "coefficients must be real numbers"),
        (lambda: lvp.Polynomial([[1.0]], "0.3"), TypeError, "length must be real numbers"),
        (lambda: lvp.helicoid_segment(True), TypeError, "length must be real numbers, got bool"),
        (lambda: lvp.Bend(fmodes, n_gauss=1.5), ValueError, "Bend: n_gauss"),
        (lambda: lvp.Bend3D(stretch_modes=fmodes), ValueError, r"Bend3D: give modes1 \(κ1\)"),
        (lambda: lvp.compose(), ValueError, "at least one primitive"),
        (lambda: lvp.compose(km.PlanarPCS(L)), TypeError, "primitive 0 must be a"),
        (
            lambda: lvp.compose(lvp.Twist(fmodes), coordinates=((0,), (1,))),
            ValueError,
            "coordinates has 2 entries for 1 primitives",
        ),
        (
            lambda: lvp.compose(lvp.Twist(fmodes), coordinates=((0,),)),
            ValueError,
            "has 2 coordinates",
        ),
        (
            lambda: lvp.compose(lvp.Twist(fmodes), coordinates=((0, 2),)),
            ValueError,
            "without gaps",
        ),
        (lambda: lvp.helicoid_segment(0.0), ValueError, "helicoid_segment: length"),
        (lambda: lvp.gripper([0.1, 0.2]), ValueError, "gripper: length must be a scalar"),
        # a source (a cavity that grows) on a solid body: its stretch grows as 1/r at the axis
        (
            lambda: sr.SoftBody(lvp.gripper(0.1), sr.quadrature.cylinder(0.02, 0.1), 960.0),
            ValueError,
            r"has a Source .* axis point \(0, 0, 0.00555556\) is inside its cylinder volume",
        ),
        (
            lambda: sr.SoftBody(
                lvp.Source(lvp.Polynomial([[1.0]], 0.1)), sr.quadrature.box((0.02, 0.02, 0.1)), 9.0
            ),
            ValueError,
            "Source has a Source",
        ),
    ],
)
def test_invalid_input_is_rejected(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_a_composition_passes_components_and_takes_a_users_primitive():
    # a composition hands each primitive the point's coordinates as scalars
    # (`apply_components`); a primitive that only defines `__call__` goes through the
    # default, and the composition equals applying the primitives one after the other
    @module
    class Lift(lvp.Primitive):
        n_q: int = static(default=1)

        def __call__(self, x, q):
            return jnp.stack([x[0], x[1] + q[0] * x[2] ** 2, x[2]])

    twist, bend = lvp.Twist(poly(C_LIN)), lvp.Bend3D(poly(C_LIN), poly(C_LIN))
    comp = lvp.compose(twist, Lift(), bend, length=L)
    x, q = jnp.array([0.004, -0.003, 0.25]), jnp.array([0.3, 0.2, 0.4, -0.5])
    manual = bend(Lift()(twist(x, q[:1]), q[1:2]), q[2:])
    np.testing.assert_allclose(comp(x, q), manual, rtol=1e-13, atol=1e-16)
    jac = jax.jacfwd(comp, argnums=(0, 1))(x, q)
    want = jax.jacfwd(lambda y, p: bend(Lift()(twist(y, p[:1]), p[1:2]), p[2:]), (0, 1))(x, q)
    for got, ref in zip(jac, want):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-15)
