"""Gauss product rules on the built-in volumes (segment, box, cylinder, tube).

Oracles: exact monomial integrals (closed forms below), textbook mass / centre of mass / inertia
of a cylinder, a tube and a box, and the exactness limits stated in the docstrings (a monomial
one degree above them must fail, so the exactness checks can fail).
"""

from math import gamma

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid.quadrature import QuadratureRule, box, cylinder, segment, tube

RHO = 1070.0


def _integrate(rule: QuadratureRule, a: int, b: int, c: int) -> float:
    x = np.asarray(rule.points)
    return float(np.sum(np.asarray(rule.weights) * x[:, 0] ** a * x[:, 1] ** b * x[:, 2] ** c))


def _interval(k: int, lo: float, hi: float) -> float:
    """∫_lo^hi t^k dt."""
    return (hi ** (k + 1) - lo ** (k + 1)) / (k + 1)


def _annulus(a: int, b: int, r_in: float, r_out: float) -> float:
    """∫ x^a y^b dA over r_in ≤ r ≤ r_out: angular factor 2Γ((a+1)/2)Γ((b+1)/2)/Γ((a+b+2)/2)
    (zero unless a and b are even) times ∫ r^(a+b+1) dr."""
    if a % 2 or b % 2:
        return 0.0
    angular = 2.0 * gamma((a + 1) / 2) * gamma((b + 1) / 2) / gamma((a + b + 2) / 2)
    return angular * _interval(a + b + 1, r_in, r_out)


def _rel_err(value: float, exact: float, scale: float) -> float:
    return abs(value - exact) / scale


def _mass_properties(rule: QuadratureRule, rho: float) -> tuple[float, np.ndarray, np.ndarray]:
    """m = Σ ρ w, c = Σ ρ w x / m, I_c = Σ ρ w (|r|² 1 − r rᵀ), r = x − c."""
    m_k = rho * np.asarray(rule.weights)
    x = np.asarray(rule.points)
    mass = m_k.sum()
    com = m_k @ x / mass
    r = x - com
    inertia = np.einsum(
        "k,kij->ij", m_k, (r * r).sum(1)[:, None, None] * np.eye(3) - np.einsum("ki,kj->kij", r, r)
    )
    return mass, com, inertia


# ---------------------------------------------------------------- exactness on monomials


@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_segment_exact_to_degree_2n_minus_1(order):
    length = 0.37
    rule = segment(length, order)
    for k in range(2 * order):
        exact = _interval(k, 0.0, length)
        assert _rel_err(_integrate(rule, 0, 0, k), exact, exact) < 1e-13
    k = 2 * order  # one degree too many: Gauss–Legendre is not exact
    exact = _interval(k, 0.0, length)
    assert _rel_err(_integrate(rule, 0, 0, k), exact, exact) > 1e-6
    np.testing.assert_allclose(float(rule.volume), length, rtol=1e-15)


def test_box_exact_per_direction_and_fails_above():
    a, b, length = 0.03, 0.05, 0.2
    orders = (2, 3, 4)
    rule = box((a, b, length), orders)

    def exact(i, j, k):
        return _interval(i, -a / 2, a / 2) * _interval(j, -b / 2, b / 2) * _interval(k, 0.0, length)

    for i in range(2 * orders[0]):
        for j in range(2 * orders[1]):
            for k in range(2 * orders[2]):
                scale = a * b * length * (a / 2) ** i * (b / 2) ** j * length**k  # ∫ |monomial|
                assert _rel_err(_integrate(rule, i, j, k), exact(i, j, k), scale) < 1e-13
    for i, j, k in ((2 * orders[0], 0, 0), (0, 2 * orders[1], 0), (0, 0, 2 * orders[2])):
        e = exact(i, j, k)
        assert _rel_err(_integrate(rule, i, j, k), e, e) > 1e-6


@pytest.mark.parametrize("n_radial", [1, 2, 3])
def test_cylinder_exact_to_stated_degree(n_radial):
    # Exact for degree d in (x1, x2) when n_angular > d and 2 n_radial − 1 ≥ d + 1.
    radius, length, n_axial = 0.02, 0.1, 3
    rule = cylinder(radius, length, n_axial=n_axial, n_radial=n_radial)
    d_max = 2 * n_radial - 2
    scale = np.pi * radius**2 * length
    for d in range(d_max + 1):
        for i in range(d + 1):
            for k in range(2 * n_axial):
                exact = _annulus(i, d - i, 0.0, radius) * _interval(k, 0.0, length)
                value = _integrate(rule, i, d - i, k)
                assert _rel_err(value, exact, scale * radius**d * length**k) < 1e-13
    # radial limit: x1^(d_max + 2) needs 2 n_radial − 1 ≥ d + 1 (with enough angular nodes)
    wide = cylinder(radius, length, n_axial=1, n_radial=n_radial, n_angular=4 * n_radial + 4)
    d = d_max + 2
    exact = _annulus(d, 0, 0.0, radius) * length
    assert _rel_err(_integrate(wide, d, 0, 0), exact, exact) > 1e-6


def test_cylinder_angular_limit():
    # n_angular = 4 nodes: exact for trigonometric degree < 4, so x1^4 (frequency 4) fails
    radius, length = 0.5, 1.0
    rule = cylinder(radius, length, n_axial=1, n_radial=4, n_angular=4)
    for i in range(4):
        exact = _annulus(i, 3 - i, 0.0, radius) * length
        assert abs(_integrate(rule, i, 3 - i, 0) - exact) < 1e-15
    exact = _annulus(4, 0, 0.0, radius) * length
    assert _rel_err(_integrate(rule, 4, 0, 0), exact, exact) > 1e-3


def test_tube_exact_to_stated_degree():
    r_in, r_out, length = 0.012, 0.02, 0.05
    n_radial, n_axial = 3, 2
    rule = tube(r_in, r_out, length, n_axial=n_axial, n_radial=n_radial)
    scale = np.pi * r_out**2 * length
    for d in range(2 * n_radial - 1):
        for i in range(d + 1):
            for k in range(2 * n_axial):
                exact = _annulus(i, d - i, r_in, r_out) * _interval(k, 0.0, length)
                value = _integrate(rule, i, d - i, k)
                assert _rel_err(value, exact, scale * r_out**d * length**k) < 1e-13
    wide = tube(r_in, r_out, length, n_axial=1, n_radial=n_radial, n_angular=20)
    d = 2 * n_radial  # radial polynomial r^(2n+1): one degree above Gauss exactness
    exact = _annulus(d, 0, r_in, r_out) * length
    assert _rel_err(_integrate(wide, d, 0, 0), exact, exact) > 1e-9


# ------------------------------------------------------- mass, centre of mass, inertia


def _check_mass_properties(rule, mass, com, inertia):
    m, c, i = _mass_properties(rule, RHO)
    np.testing.assert_allclose(m, mass, rtol=1e-13)
    np.testing.assert_allclose(c, com, rtol=0, atol=1e-14 * np.abs(com).max())
    np.testing.assert_allclose(i, inertia, rtol=0, atol=1e-13 * np.abs(inertia).max())
    # the engine's own reduction (RigidBody.from_volume) agrees
    body = sr.RigidBody.from_volume(rule, RHO)
    np.testing.assert_allclose(float(body.mass), mass, rtol=1e-13)
    np.testing.assert_allclose(
        np.asarray(body.inertia), inertia, atol=1e-13 * np.abs(inertia).max()
    )


def test_cylinder_mass_properties():
    r, length = 0.02, 0.3
    m = RHO * np.pi * r**2 * length
    ixx = m * (3 * r**2 + length**2) / 12
    _check_mass_properties(
        cylinder(r, length, n_axial=2, n_radial=2),
        m,
        np.array([0.0, 0.0, length / 2]),
        np.diag([ixx, ixx, m * r**2 / 2]),
    )


def test_tube_mass_properties():
    ri, ro, length = 0.012, 0.02, 0.05
    m = RHO * np.pi * (ro**2 - ri**2) * length
    ixx = m * (3 * (ro**2 + ri**2) + length**2) / 12
    _check_mass_properties(
        tube(ri, ro, length, n_axial=2, n_radial=2),
        m,
        np.array([0.0, 0.0, length / 2]),
        np.diag([ixx, ixx, m * (ro**2 + ri**2) / 2]),
    )


def test_box_mass_properties():
    a, b, length = 0.03, 0.05, 0.2
    m = RHO * a * b * length
    _check_mass_properties(
        box((a, b, length), 2),
        m,
        np.array([0.0, 0.0, length / 2]),
        np.diag([m * (b**2 + length**2), m * (a**2 + length**2), m * (a**2 + b**2)]) / 12,
    )


def test_segment_mass_properties():
    # a rod of linear density λ: m = λ L, I = m L² / 12 about the transverse axes
    length, lam = 0.4, 0.3
    m, c, i = _mass_properties(segment(length, 2), lam)
    np.testing.assert_allclose(m, lam * length, rtol=1e-14)
    np.testing.assert_allclose(c, [0, 0, length / 2], atol=1e-15)
    np.testing.assert_allclose(i, np.diag([1, 1, 0]) * m * length**2 / 12, atol=1e-16)


# ---------------------------------------------------- structure, geometry and tracing


@pytest.mark.parametrize(
    "rule, dims",
    [
        (segment(0.4, 3), [0.4]),
        (box((0.03, 0.05, 0.2), (2, 3, 4)), [0.03, 0.05, 0.2]),
        (cylinder(0.02, 0.3, 3, 2), [0.02, 0.3]),
        (tube(0.01, 0.02, 0.3, 3, 2), [0.01, 0.02, 0.3]),
    ],
)
def test_rule_structure(rule, dims):
    # axial-major rows sharing x3; distal points orthogonal about the pivot on the face x3 = L
    length = dims[-1]
    rows = np.asarray(rule.points).reshape(rule.n_axial, -1, 3)
    assert np.all(rows[:, :, 2] == rows[:, :1, 2])
    assert np.all(np.diff(rows[:, 0, 2]) > 0)
    pivot, a, b = (np.asarray(p) for p in (rule.pivot, rule.contact_a, rule.contact_b))
    np.testing.assert_array_equal(pivot, [0, 0, length])
    assert a[2] == b[2] == length
    assert abs((a - pivot) @ (b - pivot)) == 0
    assert np.all(np.asarray(rule.weights) > 0)
    np.testing.assert_allclose(np.asarray(rule.dimensions), dims, rtol=1e-15)
    assert rule.geometry in ("segment", "box", "cylinder", "tube") and rule.mesh is None


def test_rules_trace_under_grad():
    # dm/dR = 2 ρ π R L and dm/dL = ρ π R² for the cylinder rule built inside grad
    def mass(r, length):
        return RHO * cylinder(r, length, n_axial=2, n_radial=2).volume

    r, length = 0.02, 0.3
    dr, dl = jax.grad(mass, argnums=(0, 1))(r, length)
    np.testing.assert_allclose(float(dr), 2 * RHO * np.pi * r * length, rtol=1e-13)
    np.testing.assert_allclose(float(dl), RHO * np.pi * r**2, rtol=1e-13)

    def tube_mass(ri):
        return RHO * tube(ri, 0.02, 0.3, n_axial=2, n_radial=2).volume

    np.testing.assert_allclose(
        float(jax.grad(tube_mass)(0.01)), -2 * RHO * np.pi * 0.01 * 0.3, rtol=1e-13
    )
    box_grad = jax.grad(lambda a: box((a, 0.05, 0.2), 2).volume)(0.03)
    np.testing.assert_allclose(float(box_grad), 0.05 * 0.2, rtol=1e-14)


# ------------------------------------------------------------------------ input errors


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: segment(-1.0), "segment: length must be finite and positive"),
        (lambda: segment(np.nan), "segment: length must be finite and positive"),
        (lambda: segment([1.0, 2.0]), "segment: length must be a scalar"),
        (lambda: segment(1.0, 0), r"segment: order must be an integer >= 1, got 0"),
        (lambda: segment(1.0, 2.5), r"segment: order must be an integer >= 1, got 2.5"),
        (lambda: segment(1.0, True), r"segment: order must be an integer >= 1, got True"),
        (lambda: box((1.0, 2.0)), r"box: size must be \(a, b, L\)"),
        (lambda: box((1.0, 0.0, 2.0)), r"box: size\[1\] must be finite and positive"),
        (lambda: box((1.0, 1.0, 1.0), (2, 2)), "box: order must be an int or three ints"),
        (lambda: box((1.0, 1.0, 1.0), (2, 0, 2)), r"box: order\[1\] must be an integer >= 1"),
        (lambda: cylinder(0.02, 0.1, n_radial=0), "cylinder: n_radial must be an integer >= 1"),
        (lambda: cylinder(0.02, 0.1, n_angular=0), "cylinder: n_angular must be an integer"),
        (lambda: cylinder(-0.02, 0.1), "cylinder: radius must be finite and positive"),
        (lambda: cylinder(0.02, np.inf), "cylinder: length must be finite and positive"),
        (lambda: tube(0.02, 0.01, 0.1), r"tube: inner_radius \(0.02\) must be smaller"),
        (lambda: tube(0.02, 0.02, 0.1), "must be smaller than outer_radius"),
        (lambda: tube(0.0, 0.02, 0.1), "tube: inner_radius must be finite and positive"),
        (lambda: tube(0.01, 0.02, 0.1, n_axial=-1), "tube: n_axial must be an integer >= 1"),
    ],
)
def test_rule_input_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"points": np.zeros((4, 2))}, r"points must have shape \(K, 3\), got \(4, 2\)"),
        ({"weights": np.ones(3)}, r"weights must have shape \(4,\), got \(3,\)"),
        ({"n_axial": 3}, "n_axial=3 does not divide the 4 points"),
        (
            {
                "points": np.array([[0, 0, 0.1], [0.01, 0, 0.1], [0, 0, 0.2], [0, 0.01, 0.3]]),
                "n_axial": 2,
            },
            r"row 1 spans x3 = 0.2 … 0.3: order the points by row",
        ),
        ({"pivot": np.zeros(2)}, r"pivot must have shape \(3,\)"),
        ({"contact_b": np.zeros((1, 3))}, r"contact_b must have shape \(3,\)"),
        ({"density": np.ones(5)}, r"density must have shape \(4,\), got \(5,\)"),
        ({"geometry": "sphere"}, "geometry must be one of"),
        ({"geometry": "mesh"}, 'geometry="mesh" goes with a mesh'),
    ],
)
def test_quadrature_rule_validation(kwargs, message):
    args = {"points": np.zeros((4, 3)), "weights": np.ones(4)} | kwargs
    with pytest.raises(ValueError, match=message):
        QuadratureRule(**args)


def test_rule_is_a_pytree_with_static_structure():
    rule = cylinder(0.02, 0.3, 3, 2)
    leaves, tree = jax.tree_util.tree_flatten(rule)
    rebuilt = jax.tree_util.tree_unflatten(tree, [2 * leaf for leaf in leaves])
    np.testing.assert_allclose(np.asarray(rebuilt.weights), 2 * np.asarray(rule.weights))
    assert rebuilt.geometry == "cylinder" and rebuilt.n_axial == 3
    # equal structure for equal construction: jit caches are shared
    assert tree == jax.tree_util.tree_structure(cylinder(0.03, 0.2, 3, 2))
    assert jnp.shape(rule.dimensions) == (2,)
