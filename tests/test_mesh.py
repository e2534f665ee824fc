"""Tetrahedral rules, meshed reference volumes, the structured mesher and the committed meshes.

Oracles: the moment formula of the unit tetrahedron `∫ x^a y^b z^c = a! b! c!/(a+b+c+3)!`; the
power-of-a-linear-form formula on any simplex (`∫_T ℓ^M = 6|T| M!/(M+3)! Σ_{|k|=M} Π ℓ(v_i)^k_i`);
closed forms of prisms over regular polygons (the exact geometry of a meshed cylinder) and of
the cylinder itself, with the inscribed-polygon error bound
`ε(m) = 1 − sin(2π/m)/(2π/m) ≈ (2π/m)²/6` (volume) and `≈ 2 ε(m)` (second moments).
"""

import itertools
import re
import warnings
from math import factorial
from pathlib import Path

import jax
import meshio
import numpy as np
import pytest
from scripts import load_script

import softrigid as sr
from softrigid import joints, meshing
from softrigid.kinematics import PlanarConstantCurvature
from softrigid.quadrature import (
    QuadratureRule,
    ReferenceMesh,
    cylinder,
    from_mesh,
    tetrahedron,
    tetrahedron_rule,
)
from softrigid.quadrature._distal import distal_points

MESHES = Path(__file__).resolve().parents[1] / "meshes"
RHO = 960.0
# the degree each rule actually reaches (degree 4 uses the degree-5 rule, 8 the conical n = 5)
REACHED = {1: 1, 2: 2, 3: 3, 4: 5, 5: 5, 6: 6, 7: 7, 8: 9}


def _unit_moment(a: int, b: int, c: int) -> float:
    return factorial(a) * factorial(b) * factorial(c) / factorial(a + b + c + 3)


def _rule_moment(rule: QuadratureRule, a: int, b: int, c: int) -> float:
    x = np.asarray(rule.points)
    return float(np.asarray(rule.weights) @ (x[:, 0] ** a * x[:, 1] ** b * x[:, 2] ** c))


def _linear_form_integral(vertices: np.ndarray, ell: np.ndarray, m: int) -> float:
    """∫_T (ℓ0 + ℓ·x)^M dV over the simplex with `vertices` (4, 3): ℓ is affine, so it is
    Σ λ_i ℓ(v_i) and the Dirichlet moments give 6|T| M!/(M+3)! Σ_{|k|=M} Π ℓ(v_i)^k_i."""
    values = ell[0] + vertices @ ell[1:]
    vol = abs(np.linalg.det(vertices[1:] - vertices[0])) / 6
    total = sum(
        np.prod(values ** np.array(k))
        for k in itertools.product(range(m + 1), repeat=4)
        if sum(k) == m
    )
    return 6 * vol * factorial(m) / factorial(m + 3) * total


@pytest.fixture(scope="module")
def random_tet():
    rng = np.random.default_rng(5)
    v = rng.normal(size=(4, 3))
    if np.linalg.det(v[1:] - v[0]) < 0:
        v = v[[0, 2, 1, 3]]
    return v


# ------------------------------------------------------------------ tetrahedral rules


@pytest.mark.parametrize("degree", range(1, 9))
def test_tet_rule_exact_on_unit_tetrahedron(degree):
    rule = tetrahedron(degree=degree)
    bary, w = tetrahedron_rule(degree)
    assert np.all(w > 0) and np.all(bary >= 0) and abs(w.sum() - 1) < 1e-15
    for a, b, c in itertools.product(range(degree + 1), repeat=3):
        if a + b + c <= degree:
            exact = _unit_moment(a, b, c)
            assert abs(_rule_moment(rule, a, b, c) - exact) < 2e-15 * exact * 6
    # one degree more than the rule reaches: some monomial is not integrated exactly
    d = REACHED[degree] + 1
    worst = max(
        abs(_rule_moment(rule, a, b, d - a - b) / _unit_moment(a, b, d - a - b) - 1)
        for a in range(d + 1)
        for b in range(d + 1 - a)
    )
    assert worst > 1e-6


@pytest.mark.parametrize("degree", range(1, 9))
def test_tet_rule_exact_on_random_tetrahedron(degree, random_tet):
    rule = tetrahedron(random_tet, degree)
    rng = np.random.default_rng(degree)
    for _ in range(6):
        ell = rng.normal(size=4)
        for m in range(degree + 1):
            exact = _linear_form_integral(random_tet, ell, m)
            x = np.asarray(rule.points)
            value = float(np.asarray(rule.weights) @ (ell[0] + x @ ell[1:]) ** m)
            scale = _linear_form_integral(random_tet, np.abs(ell), m) + abs(exact)
            assert abs(value - exact) < 1e-13 * scale


def test_tet_rule_errors():
    with pytest.raises(ValueError, match=r"degree must be an integer in \[1, 30\], got 0"):
        tetrahedron_rule(0)
    with pytest.raises(ValueError, match="degree must be an integer"):
        tetrahedron_rule(2.0)
    with pytest.raises(ValueError, match="positively oriented"):
        tetrahedron(np.eye(4, 3, k=-1)[[0, 2, 1, 3]])
    with pytest.raises(ValueError, match=r"vertices must have shape \(4, 3\)"):
        tetrahedron(np.zeros((3, 3)))


# ------------------------------------------------------------------ the structured mesher


def _check_mesh(mesh: meshio.Mesh) -> tuple[np.ndarray, np.ndarray]:
    """Positive elements; a conforming, closed, outward boundary (∮ x·n dA = 3 V)."""
    cells = mesh.cells_dict["tetra"]
    vol = meshing.tet_volumes(mesh.points, cells)
    assert np.all(vol > 0)
    faces = meshing.boundary_faces(cells)
    # conforming: every face is shared by two elements or is on the boundary
    all_faces = np.sort(
        cells[:, [[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]]].reshape(-1, 3), axis=1
    )
    _, counts = np.unique(all_faces, axis=0, return_counts=True)
    assert counts.max() == 2 and np.sum(counts == 1) == len(faces)
    # closed: every boundary edge is used by two boundary faces in opposite directions
    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    assert {tuple(e) for e in edges} == {tuple(e) for e in edges[:, ::-1]}
    p = mesh.points[faces]
    normal_area = 0.5 * np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    np.testing.assert_allclose(np.sum(normal_area * p.mean(1)), 3 * vol.sum(), rtol=1e-12)
    return cells, vol


def _polygon(m: int, r: float) -> tuple[float, float]:
    """Area and polar second moment of the regular m-gon inscribed in a circle of radius r."""
    x = 2 * np.pi / m
    return m / 2 * r**2 * np.sin(x), m * r**4 / 12 * np.sin(x) * (2 + np.cos(x))


def test_mesher_shapes_are_valid_and_exact_polygon_prisms():
    r, length = 0.02, 0.1
    cyl = meshing.cylinder(r, length, n_radial=2, n_axial=3)
    cells, vol = _check_mesh(cyl)
    assert len(cells) == 3 * 6 * 2**2 * 3
    np.testing.assert_allclose(vol.sum(), _polygon(12, r)[0] * length, rtol=1e-13)
    ri, ro = 0.012, 0.02
    tb = meshing.tube(ri, ro, length, n_radial=2, n_angular=20, n_axial=2)
    _, vol = _check_mesh(tb)
    n_in = round(20 * ri / ro)
    area = _polygon(20, ro)[0] - _polygon(n_in, ri)[0]
    np.testing.assert_allclose(vol.sum(), area * length, rtol=1e-13)
    bx = meshing.box((0.02, 0.03, 0.1), (2, 3, 2))
    cells, vol = _check_mesh(bx)
    assert len(cells) == 6 * 2 * 3 * 2
    np.testing.assert_allclose(vol.sum(), 0.02 * 0.03 * 0.1, rtol=1e-13)
    # a twisted extrusion stays valid and conforming
    pts, tri = meshing.rectangle_section(0.04, 0.008, 4, 2)
    _check_mesh(meshing.extrude(pts, tri, np.linspace(0, 0.1, 11), twist=np.pi / 0.1))


def test_mesher_errors():
    section, triangles = meshing.rectangle_section(1.0, 1.0, 1, 1)
    with pytest.raises(ValueError, match="extrude: keep drops every element"):
        meshing.extrude(section, triangles, [0.0, 1.0], keep=np.zeros((1, 2), bool))
    with pytest.raises(ValueError, match=r"tube: inner_radius \(0.02\) must be smaller"):
        meshing.tube(0.02, 0.01, 0.1)
    with pytest.raises(ValueError, match="cylinder: radius must be a finite positive number"):
        meshing.cylinder(-1.0, 0.1)
    with pytest.raises(ValueError, match="cylinder: n_radial must be an integer >= 1"):
        meshing.cylinder(0.02, 0.1, n_radial=0)
    with pytest.raises(ValueError, match=r"box: divisions must be \(n1, n2, n3\)"):
        meshing.box((1, 1, 1), (2, 2))
    with pytest.raises(ValueError, match="radii must be strictly increasing"):
        meshing.disk_section([0.0, 0.02, 0.01], 12)
    pts, tri = meshing.rectangle_section(0.04, 0.008, 4, 1)
    with pytest.raises(ValueError, match="extrude: 8 elements come out degenerate or inverted"):
        meshing.extrude(pts, tri, [0.0, 0.01], twist=np.pi / 0.01)  # half a turn in one layer
    with pytest.raises(ValueError, match=r"extrude: keep must have shape \(1, 8\)"):
        meshing.extrude(pts, tri, [0.0, 0.01], keep=np.ones((2, 8), bool))
    # overlapping section triangles made overlapping prisms (the volume counted twice, silently)
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    for bad in ([[0, 1, 2], [0, 2, 3], [2, 1, 0]], [[0, 1, 2], [0, 1, 3]]):
        with pytest.raises(ValueError, match=r"section triangles overlap along the edge"):
            meshing.extrude(square, bad, [0.0, 1.0])
    with pytest.raises(ValueError, match=r"boundary_faces: cells must have shape"):
        meshing.boundary_faces(np.zeros((2, 3), int))


# -------------------------------------------------- meshed volumes vs closed forms


def _mass_properties(rule: QuadratureRule, rho: float = RHO):
    m_k = rho * np.asarray(rule.weights)
    x = np.asarray(rule.points)
    mass = m_k.sum()
    com = m_k @ x / mass
    r = x - com
    outer = np.einsum("ki,kj->kij", r, r)
    inertia = np.einsum("k,kij->ij", m_k, (r * r).sum(1)[:, None, None] * np.eye(3) - outer)
    return mass, com, inertia


def _prism(area: float, polar: float, length: float, rho: float = RHO):
    """Mass and central inertia of a prism of section (area, polar moment J, Ixx = Iyy = J/2)."""
    m = rho * area * length
    ixx = rho * (polar / 2 * length + area * length**3 / 12)
    return m, np.diag([ixx, ixx, rho * polar * length])


def test_slender_meshes_and_default_resolution_limits():
    # the degeneracy test is relative to each element's own size: a 0.1 mm section extruded
    # to 1 m with a first layer of its own size was refused as "degenerate" (the tolerance was
    # taken from the whole mesh's extent: 1e-12 m³ against elements of 1.7e-13 m³)
    section, triangles = meshing.rectangle_section(1e-4, 1e-4, 1, 1)
    mesh = meshing.extrude(section, triangles, [0.0, 1e-4, 1.0])
    volumes = meshing.tet_volumes(mesh.points, mesh.cells[0].data)
    assert np.all(volumes > 0)
    np.testing.assert_allclose(volumes.sum(), 1e-8, rtol=1e-12)
    # a default resolution past 2e6 elements is refused before anything is allocated (a
    # 1e-12 m radius asked for 21.8 TiB; a tube of a thin wall built ~1e8 elements)
    with pytest.raises(ValueError, match=r"cylinder: the default resolution .* pass n_axial"):
        meshing.cylinder(1e-12, 1.0)
    with pytest.raises(
        ValueError, match=r"tube: the default resolution .* pass n_axial and n_angular"
    ):
        meshing.tube(1.0 - 1e-12, 1.0, 1.0)
    # many rings with the default sides: refused before the section is built (it took 5 s
    # for 1000 rings, minutes for more), also where n_axial is given
    with pytest.raises(ValueError, match=r"n_angular = 18000 sides\) gives 1.62e\+08 elements"):
        meshing.cylinder(0.1, 1.0, n_radial=3000, n_axial=1)


def test_meshed_box_is_exact():
    a, b, length = 0.02, 0.03, 0.1
    mass, com, inertia = _mass_properties(from_mesh(meshing.box((a, b, length), (1, 2, 3))))
    m = RHO * a * b * length
    np.testing.assert_allclose(mass, m, rtol=1e-13)
    np.testing.assert_allclose(com, [0, 0, length / 2], atol=1e-15)
    exact = np.diag([b**2 + length**2, a**2 + length**2, a**2 + b**2]) * m / 12
    np.testing.assert_allclose(inertia, exact, atol=1e-13 * exact.max())


@pytest.mark.parametrize("n_radial", [1, 2, 4])
def test_meshed_cylinder_within_polygon_bound(n_radial):
    # the mesh is exactly the prism over the inscribed m-gon (m = 6 n): to rounding against
    # that, and within the stated bound against the cylinder
    r, length, m = 0.02, 0.1, 6 * n_radial
    rule = from_mesh(meshing.cylinder(r, length, n_radial=n_radial, n_axial=2), degree=2)
    mass, com, inertia = _mass_properties(rule)
    m_poly, i_poly = _prism(*_polygon(m, r), length)
    np.testing.assert_allclose(mass, m_poly, rtol=1e-13)
    np.testing.assert_allclose(com, [0, 0, length / 2], atol=1e-15)
    np.testing.assert_allclose(inertia, i_poly, atol=1e-13 * i_poly.max())
    eps = 1 - np.sin(2 * np.pi / m) / (2 * np.pi / m)
    m_cyl = RHO * np.pi * r**2 * length
    i_cyl = np.diag([m_cyl * (3 * r**2 + length**2) / 12] * 2 + [m_cyl * r**2 / 2])
    np.testing.assert_allclose(1 - mass / m_cyl, eps, rtol=1e-10)  # the area error is ε
    rel = 1 - np.diag(inertia) / np.diag(i_cyl)
    assert np.all(rel > 0) and np.all(rel <= 2 * eps)


@pytest.mark.parametrize(
    ("make", "inner", "m_out", "m_in"),
    [
        # a hexagonal tube whose middle ring (5 sides at r = 0.017) let the inner ring's
        # corners through its sides: the strip overlapped itself ("section triangles overlap")
        (lambda: meshing.tube(0.014, 0.02, 0.1, n_angular=6, n_axial=1), 0.014, 6, 4),
        # a disk whose inner rings (3 and 3 nodes, r = 1/6 and 2/6 of R) touched
        (lambda: meshing.cylinder(0.02, 0.1, n_radial=6, n_angular=6, n_axial=1), 0.0, 6, 1),
    ],
)
def test_coarse_rings_are_raised_to_nest(make, inner, m_out, m_in):
    # the middle rings get the nodes they need to lie inside the next ring: the mesh is the
    # prism over the outer polygon less the inner one, to rounding
    mass, _, inertia = _mass_properties(from_mesh(make(), degree=2))
    (a_out, j_out), (a_in, j_in) = _polygon(m_out, 0.02), _polygon(max(m_in, 3), inner)
    m_poly, i_poly = _prism(a_out - a_in, j_out - j_in, 0.1)
    np.testing.assert_allclose(mass, m_poly, rtol=1e-13)
    np.testing.assert_allclose(inertia, i_poly, atol=1e-13 * i_poly.max())


def test_too_few_sides_for_a_thin_wall_are_refused_by_name():
    # 8 sides of radius 0.02 come within 0.0185 of the axis, inside the middle ring (0.019):
    # the strip overlapped itself, refused by extrude naming an edge of a triangulation the
    # user never gave; disk_section returned the overlapping triangles
    with pytest.raises(ValueError, match=r"tube: n_angular = 8 sides are too few .* >= 10"):
        meshing.tube(0.018, 0.02, 0.1, n_angular=8)
    with pytest.raises(ValueError, match=r"disk_section: n_angular = 6 .* use n_angular >= 7"):
        meshing.disk_section([0.016, 0.018, 0.02], 6)
    assert meshing.tube(0.018, 0.02, 0.1, n_angular=10).cells[0].data.shape[0] > 0


def test_meshed_cylinder_converges_at_second_order():
    r, length = 0.02, 0.1
    m_cyl = RHO * np.pi * r**2 * length
    izz = m_cyl * r**2 / 2
    errors = []
    for n in (2, 4, 8, 16):
        mass, _, inertia = _mass_properties(from_mesh(meshing.cylinder(r, length, n, n_axial=1)))
        errors.append((abs(mass - m_cyl) / m_cyl, abs(inertia[2, 2] - izz) / izz))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 3.8) & (ratios < 4.05))  # O(h²): halving h divides the error by 4


def test_meshed_tube_within_polygon_bound():
    ri, ro, length = 0.012, 0.02, 0.05
    m_out = 24
    m_in = round(m_out * ri / ro)
    rule = from_mesh(meshing.tube(ri, ro, length, n_radial=2, n_angular=m_out, n_axial=2))
    mass, com, inertia = _mass_properties(rule)
    (a_out, j_out), (a_in, j_in) = _polygon(m_out, ro), _polygon(m_in, ri)
    m_poly, i_poly = _prism(a_out - a_in, j_out - j_in, length)
    np.testing.assert_allclose(mass, m_poly, rtol=1e-13)
    np.testing.assert_allclose(com, [0, 0, length / 2], atol=1e-15)
    np.testing.assert_allclose(inertia, i_poly, atol=1e-13 * i_poly.max())
    # against the tube: each polygon's error is bounded by its own ε
    eps_out, eps_in = (1 - np.sin(2 * np.pi / k) / (2 * np.pi / k) for k in (m_out, m_in))
    m_tube = RHO * np.pi * (ro**2 - ri**2) * length
    bound = RHO * np.pi * length * (eps_out * ro**2 + eps_in * ri**2)
    assert abs(mass - m_tube) <= bound


# ----------------------------------------------------------------------- from_mesh


def test_from_mesh_rule_layout_and_distal_points():
    r, length = 0.02, 0.1
    mesh = meshing.cylinder(r, length, n_radial=3, n_axial=1)  # an 18-gon: a vertex at 0°
    rule = from_mesh(mesh, degree=3)
    assert rule.n_points == 10 * len(mesh.cells_dict["tetra"]) and rule.geometry == "mesh"
    assert rule.mesh == ReferenceMesh(mesh.points, (("tetra", mesh.cells_dict["tetra"]),))
    pivot, a, b = (np.asarray(p) for p in (rule.pivot, rule.contact_a, rule.contact_b))
    np.testing.assert_allclose(pivot, [0, 0, length], atol=1e-17)
    np.testing.assert_allclose(a, [r, 0, length], atol=1e-17)  # on the rim, at a vertex
    np.testing.assert_allclose(b, [0, r * np.cos(np.pi / 18), length], atol=1e-17)  # mid-edge
    # equal meshes give equal (hashable) tree structures: jit caches are shared
    same = from_mesh(meshio.Mesh(mesh.points.copy(), [("tetra", mesh.cells_dict["tetra"])]), 3)
    assert jax.tree_util.tree_structure(same) == jax.tree_util.tree_structure(rule)
    assert hash(same.mesh) == hash(rule.mesh)
    other = from_mesh(meshing.cylinder(r, length, n_radial=3, n_axial=2), 3)
    assert other.mesh != rule.mesh


@pytest.mark.parametrize("name", ["gripper", "helicoid"])
def test_symmetric_distal_face_is_centred_exactly(name):
    # the area centroid of these symmetric faces is 1e-18 m off the axis by rounding; the
    # gripper's source map divides by r², which turned that into a mass-matrix entry of −2e18:
    # the pivot lies on the axis exactly
    mesh = meshio.read(MESHES / f"{name}.vtu")
    pivot, _, _ = distal_points(mesh.points, mesh.cells_dict["tetra"])
    assert pivot[0] == 0.0 and pivot[1] == 0.0
    # an off-axis face keeps its offset: translated by 1e-6 m, the pivot moves with it
    shifted = mesh.points + np.array([1e-6, 0.0, 0.0])
    moved, _, _ = distal_points(shifted, mesh.cells_dict["tetra"])
    np.testing.assert_allclose(moved[:2], [1e-6, 0.0], atol=1e-18)


def test_from_mesh_without_flat_distal_face():
    # a single tetrahedron with its apex on top: no distal face, so no default frame points
    rule = from_mesh(meshio.Mesh(np.eye(4, 3, k=-1), [("tetra", np.array([[0, 1, 2, 3]]))]))
    assert rule.pivot is None and rule.contact_a is None
    kin = PlanarConstantCurvature(1.0)
    with pytest.raises(ValueError, match="give pivot= and contact_points="):
        sr.SoftBody(lambda x, q: kin(x, q), rule, density=RHO, n_q=1)


def test_from_mesh_density():
    mesh = meshing.box((0.02, 0.02, 0.04), (1, 1, 2))
    n = len(mesh.cells_dict["tetra"])
    rho = np.linspace(900.0, 1100.0, n)
    mesh.cell_data["rho"] = [rho]
    vol = meshing.tet_volumes(mesh.points, mesh.cells_dict["tetra"])
    for density in ("rho", rho):
        rule = from_mesh(mesh, degree=2, density=density)
        np.testing.assert_allclose(np.asarray(rule.density), np.repeat(rho, 4))
        np.testing.assert_allclose(_mass_properties(rule, np.asarray(rule.density))[0], rho @ vol)
    body = sr.SoftBody(PlanarConstantCurvature(0.04), from_mesh(mesh, density="rho"))
    np.testing.assert_allclose(float(np.sum(body.mass_weights)), rho @ vol, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(from_mesh(mesh, density=1000.0).density), 1000.0)
    with pytest.raises(
        ValueError, match=r"no cell field 'E' in the mesh \(cell fields: \['rho'\]\)"
    ):
        from_mesh(mesh, density="E")
    with pytest.raises(ValueError, match=r"one value per tetrahedron \(12,\), got \(3,\)"):
        from_mesh(mesh, density=np.ones(3))
    bad = rho.copy()
    bad[[2, 5]] = -1.0
    with pytest.raises(ValueError, match=r"finite and positive; elements \[2, 5\] are not"):
        from_mesh(mesh, density=bad)


@pytest.fixture(scope="module")
def small_mesh():
    return meshing.cylinder(0.02, 0.1, n_radial=1, n_axial=2)


def test_from_mesh_reports_inverted_elements(small_mesh, tmp_path):
    cells = small_mesh.cells_dict["tetra"].copy()
    cells[[3, 7]] = cells[[3, 7]][:, [0, 2, 1, 3]]
    path = tmp_path / "inverted.vtu"
    meshio.write(path, meshio.Mesh(small_mesh.points, [("tetra", cells)]))
    message = r" has 2 inverted tetrahedra .* at element indices \[3, 7\]$"
    with pytest.raises(ValueError, match=f"from_mesh: {re.escape(repr(str(path)))}{message}"):
        from_mesh(path)
    flipped = small_mesh.cells_dict["tetra"][:, [0, 2, 1, 3]]
    with pytest.raises(ValueError, match=r"every element is inverted.*cells\[:, \[0, 2, 1, 3\]\]"):
        from_mesh(meshio.Mesh(small_mesh.points, [("tetra", flipped)]))


def test_from_mesh_reports_degenerate_elements(small_mesh):
    cells = small_mesh.cells_dict["tetra"].copy()
    cells[4, 3] = cells[4, 2]  # a repeated vertex: zero volume
    with pytest.raises(ValueError, match=r"1 degenerate tetrahedra \(zero volume\) .*\[4\]"):
        from_mesh(meshio.Mesh(small_mesh.points, [("tetra", cells)]))


def test_from_mesh_reports_file_without_tetrahedra(small_mesh, tmp_path):
    faces = meshing.boundary_faces(small_mesh.cells_dict["tetra"])
    path = tmp_path / "surface.vtk"
    meshio.write(path, meshio.Mesh(small_mesh.points, [("triangle", faces)]))
    with pytest.raises(ValueError, match="has no tetrahedra .*; cell types found: triangle"):
        from_mesh(path)


def test_from_mesh_refuses_volume_cells_it_would_leave_out(small_mesh):
    # A hexahedron between tetrahedra (sharing their nodes) used to be dropped silently:
    # the volume and the mass came out a third short.
    pts, cells = small_mesh.points, small_mesh.cells_dict["tetra"]
    hexahedra = np.arange(8)[None]
    wedges = np.arange(6)[None].repeat(2, 0)
    mesh = meshio.Mesh(pts, [("tetra", cells), ("hexahedron", hexahedra), ("wedge", wedges)])
    with pytest.raises(ValueError, match=r"volume cells other than tetrahedra \(1 hexahedron, 2 "):
        from_mesh(mesh)
    with pytest.raises(ValueError, match=r"\(3 tetra20\), which would be left out"):
        from_mesh(meshio.Mesh(pts, [("tetra", cells), ("tetra20", np.zeros((3, 20), int))]))
    # surface cells and an empty tetrahedral block are not volume: ignored
    faces = meshing.boundary_faces(cells)
    mixed = meshio.Mesh(
        pts, [("tetra", np.zeros((0, 4), int)), ("triangle", faces), ("tetra", cells)]
    )
    assert float(from_mesh(mixed).weights.sum()) == float(from_mesh(small_mesh).weights.sum())
    with pytest.raises(ValueError, match="has no tetrahedra .*; cell types found: triangle$"):
        from_mesh(meshio.Mesh(pts, [("tetra", np.zeros((0, 4), int)), ("triangle", faces)]))


def test_from_mesh_other_input_errors(small_mesh):
    pts, cells = small_mesh.points, small_mesh.cells_dict["tetra"]
    bad = pts.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match=r"non-finite node coordinates .* at nodes \[5\]"):
        from_mesh(meshio.Mesh(bad, [("tetra", cells)]))
    with pytest.raises(ValueError, match=r"reference nodes outside \[0, 3\)"):
        from_mesh(meshio.Mesh(pts[:3], [("tetra", cells)]))
    with pytest.raises(ValueError, match=r"the points of the mesh must have shape \(N, 3\)"):
        from_mesh(meshio.Mesh(pts[:, :2], [("tetra", cells)]))
    with pytest.raises(TypeError, match="expected a meshio.Mesh or a file path, got int"):
        from_mesh(3)
    with pytest.raises(ValueError, match="degree must be an integer in"):
        from_mesh(small_mesh, degree=0)


def test_from_mesh_warns_and_drops_unreferenced_nodes(small_mesh):
    pts = np.concatenate([small_mesh.points, [[1.0, 1.0, 1.0], [2.0, 0.0, 0.0]]])
    mixed = meshio.Mesh(
        pts, [("vertex", np.array([[len(pts) - 1]])), ("tetra", small_mesh.cells_dict["tetra"])]
    )
    n = len(small_mesh.points)
    with pytest.warns(UserWarning, match=rf"2 nodes are used by no tetrahedron .*\[{n}, {n + 1}\]"):
        rule = from_mesh(mixed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clean = from_mesh(small_mesh)
    np.testing.assert_array_equal(np.asarray(rule.points), np.asarray(clean.points))
    assert rule.mesh == clean.mesh


@pytest.mark.parametrize(
    "name, options",
    [
        ("mesh.msh", {"file_format": "gmsh22", "binary": False}),
        ("mesh4.msh", {"file_format": "gmsh", "binary": True}),
        ("mesh.vtk", {}),
        ("mesh.vtu", {}),
        ("mesh.mesh", {}),
        ("mesh.inp", {}),
        ("mesh.node", {}),
    ],
)
def test_from_mesh_reads_files_of_any_format(small_mesh, tmp_path, name, options):
    path = tmp_path / name
    meshio.write(path, small_mesh, **options)
    rule, reference = from_mesh(path, degree=3), from_mesh(small_mesh, degree=3)
    np.testing.assert_array_equal(np.asarray(rule.points), np.asarray(reference.points))
    np.testing.assert_array_equal(np.asarray(rule.weights), np.asarray(reference.weights))
    assert rule.mesh == reference.mesh


# --------------------------------------------------------- quadratic (tetra10) elements


_EDGES = [(0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3)]  # VTK tetra10 order


def _tetra10(vertices: np.ndarray, phi) -> meshio.Mesh:
    """The quadratic element interpolating `phi` on the unit tetrahedron: nodes phi(vertices)
    and phi(edge midpoints). A quadratic phi is reproduced exactly by the element map."""
    nodes = np.concatenate([vertices, [(vertices[i] + vertices[j]) / 2 for i, j in _EDGES]])
    return meshio.Mesh(phi(nodes), [("tetra10", np.arange(10)[None])])


def test_tetra10_isoparametric_volume_and_centroid():
    # phi(x) = (x + α y², y + β z², z + γ x²): det Dphi = 1 + 8αβγ xyz (a cubic), so
    # V = 1/6 + 8αβγ/720 and ∫ phi_1 dV = ∫ (x + α y²)(1 + 8αβγ xyz) (a quintic)
    al, be, ga = 0.3, -0.2, 0.25

    def phi(p):
        x, y, z = p.T
        return np.stack([x + al * y**2, y + be * z**2, z + ga * x**2], -1)

    mesh = _tetra10(np.eye(4, 3, k=-1), phi)
    k = 8 * al * be * ga
    volume = 1 / 6 + k * _unit_moment(1, 1, 1)
    first = (
        _unit_moment(1, 0, 0)
        + al * _unit_moment(0, 2, 0)
        + k * (_unit_moment(2, 1, 1) + al * _unit_moment(1, 3, 1))
    )
    for degree, exact_first in ((3, False), (5, True)):
        rule = from_mesh(mesh, degree=degree)
        np.testing.assert_allclose(float(rule.volume), volume, rtol=1e-14)
        err = abs(_rule_moment(rule, 1, 0, 0) - first) / first
        assert (err < 1e-14) if exact_first else (err > 1e-9)
    # straight-sided tetra10 = the linear element
    straight = from_mesh(_tetra10(np.eye(4, 3, k=-1) * 2.0, lambda p: p), degree=2)
    np.testing.assert_allclose(float(straight.volume), 8 / 6, rtol=1e-14)


@pytest.mark.parametrize(
    "name, fmt",
    [("quadratic.msh", "gmsh22"), ("quadratic.inp", "abaqus"), ("quadratic.vtu", "vtu")],
)
def test_tetra10_node_order_survives_files(tmp_path, name, fmt):
    # gmsh and Abaqus order the midside nodes differently; meshio converts to VTK order
    mesh = _tetra10(np.eye(4, 3, k=-1), lambda p: p + 0.1 * np.sin(3.0 * p[:, [1, 2, 0]]))
    meshio.write(tmp_path / name, mesh, file_format=fmt)
    rule, reference = from_mesh(tmp_path / name, degree=4), from_mesh(mesh, degree=4)
    np.testing.assert_allclose(np.asarray(rule.points), np.asarray(reference.points), atol=1e-15)
    np.testing.assert_allclose(np.asarray(rule.weights), np.asarray(reference.weights), rtol=1e-14)


def test_tetra10_inverted_curved_element():
    # pull the midside node of edge (0, 1) far across the element: det J < 0 near vertex 0
    def phi(p):
        q = p.copy()
        q[4] = [0.5, 0.0, 2.0]
        return q

    with pytest.raises(ValueError, match=r"1 inverted tetrahedra .* \[0\]"):
        from_mesh(_tetra10(np.eye(4, 3, k=-1), phi))


# ---------------------------------------------------------------- committed meshes


COMMITTED = sorted(p for p in MESHES.iterdir() if p.suffix in (".vtu", ".msh", ".vtk", ".xdmf"))


def test_committed_meshes_exist():
    assert {p.name for p in COMMITTED} >= {"helicoid.vtu", "gripper.vtu"}


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_committed_mesh_reads_into_a_rule(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no unreferenced nodes
        rule = from_mesh(path, degree=2)
    assert rule.pivot is not None and float(rule.volume) > 0
    mesh = meshio.read(path)
    cells = mesh.cells_dict["tetra"]
    np.testing.assert_allclose(
        float(rule.volume), meshing.tet_volumes(mesh.points, cells).sum(), rtol=1e-13
    )
    assert mesh.points[:, 2].min() == 0.0  # the material convention: x3 ∈ [0, L]


def test_committed_meshes_match_their_generator_and_documentation():
    gen = load_script("meshes/generate.py", "generate")
    for name, mesh in (("helicoid", gen.helicoid()), ("gripper", gen.gripper())):
        stored = meshio.read(MESHES / f"{name}.vtu")
        np.testing.assert_array_equal(stored.points, mesh.points)
        np.testing.assert_array_equal(stored.cells_dict["tetra"], mesh.cells_dict["tetra"])
    helicoid = from_mesh(MESHES / "helicoid.vtu")
    assert helicoid.mesh.n_elements == 2688  # the paper: 2,749 per body
    r, t, length = gen.HELICOID_RADIUS, gen.HELICOID_THICKNESS, gen.HELICOID_LENGTH
    y = t / 2  # trimmed strip area ∫ 2√(R² − y²) dy over |y| ≤ T/2; twisting keeps volume
    exact = length * 2 * (y * np.sqrt(r**2 - y**2) + r**2 * np.arcsin(y / r))
    assert abs(float(helicoid.volume) / exact - 1) < 0.015
    np.testing.assert_allclose(np.asarray(helicoid.pivot), [0, 0, length], atol=1e-15)
    np.testing.assert_allclose(np.asarray(helicoid.contact_a), [r, 0, length], atol=1e-15)
    np.testing.assert_allclose(np.asarray(helicoid.contact_b), [0, y, length], atol=1e-15)
    gripper = from_mesh(MESHES / "gripper.vtu")
    ro, ri, length = gen.GRIPPER_RADIUS, gen.CHAMBER_RADIUS, gen.GRIPPER_LENGTH
    assert abs(float(gripper.volume) / (np.pi * (ro**2 - ri**2) * length) - 1) < 1e-3
    # hollow along its length (the source primitive needs r > 0): no node inside the chamber
    x = np.asarray(gripper.points)
    assert np.hypot(x[:, 0], x[:, 1]).min() > ri * np.cos(np.pi / 18) * 0.999
    # the capped variant: chamber x3 ∈ [0, L − cap], nothing inside it, a solid cap above
    capped = from_mesh(gen.gripper(cap_length=0.01))
    cup = np.pi * (ro**2 * length - ri**2 * (length - 0.01))
    assert abs(float(capped.volume) / cup - 1) < 0.005
    x = np.asarray(capped.points)
    r = np.hypot(x[:, 0], x[:, 1])
    assert not np.any((r < ri * np.cos(np.pi / 18)) & (x[:, 2] < length - 0.01))
    assert np.any(r < ri * 0.5)


# ------------------------------------------- dynamics on a Gauss vs a meshed cylinder


def _triangle_prism_rule(points2d, triangles, length, n_axial):
    """Oracle on the same polygonal prism as the mesh: the degree-2 triangle rule (Strang–Fix
    3 points) times Gauss–Legendre in x3 (independent of the tetrahedral code)."""
    bary = np.array([[2 / 3, 1 / 6, 1 / 6], [1 / 6, 2 / 3, 1 / 6], [1 / 6, 1 / 6, 2 / 3]])
    tri = points2d[triangles]
    e1, e2 = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    area = 0.5 * (e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])
    sec = np.einsum("ki,tij->tkj", bary, tri).reshape(-1, 2)
    w_sec = np.repeat(area / 3, 3)
    z, wz = np.polynomial.legendre.leggauss(n_axial)
    z, wz = length * (z + 1) / 2, length * wz / 2
    pts = np.concatenate([np.tile(sec, (n_axial, 1)), np.repeat(z, len(sec))[:, None]], 1)
    return QuadratureRule(
        pts,
        np.outer(wz, w_sec).reshape(-1),
        pivot=[0.0, 0.0, length],
        contact_a=[0.02, 0.0, length],
        contact_b=[0.0, 0.02, length],
    )


def _padded(rule: QuadratureRule, size: int) -> QuadratureRule:
    """The same rule on `size` nodes and without static extras, so rules of different origin
    share one tree structure (one compilation): node `k` is repeated `c_k` times with weight
    `w_k / c_k` (weights must stay positive), which leaves every integral unchanged."""
    copies = np.full(rule.n_points, size // rule.n_points)
    copies[: size % rule.n_points] += 1
    return QuadratureRule(
        np.repeat(np.asarray(rule.points), copies, axis=0),
        np.repeat(np.asarray(rule.weights) / copies, copies),
        pivot=rule.pivot,
        contact_a=rule.contact_a,
        contact_b=rule.contact_b,
    )


@pytest.fixture(scope="module")
def arm_dynamics():
    """ID and M of a revolute joint + a planar-CC soft cylinder (a plain function, so its
    distal frame comes from the volume's pivot and contact points) + a rigid tip mass, on
    three volumes: a Gauss cylinder, a meshed cylinder, and the oracle on the mesh's prism."""
    r, length, n_radial, n_layers = 0.02, 0.1, 2, 8
    kin = PlanarConstantCurvature(length)

    def f(x, qb):
        return kin(x, qb)

    tip = sr.RigidBody(0.05, [0.01, 0.0, 0.02], np.diag([2e-5, 3e-5, 1e-5]))
    q = np.array([0.4, 1.1])
    qd, qdd = np.array([-0.7, 1.3]), np.array([0.5, -2.0])
    pts2d, tri, _ = meshing.disk_section(np.linspace(0, r, n_radial + 1), 6 * n_radial)
    volumes = {
        "gauss": cylinder(r, length, n_axial=6, n_radial=3, n_angular=8),
        "mesh": from_mesh(meshing.cylinder(r, length, n_radial, n_axial=n_layers), degree=4),
        "prism": _triangle_prism_rule(pts2d, tri, length, 6),
    }
    size = max(v.n_points for v in volumes.values())
    out = {}
    for name, vol in volumes.items():
        body = sr.SoftBody(f, _padded(vol, size), density=RHO, n_q=1)
        robot = sr.Robot(
            [
                sr.Link(joints.Revolute([0.0, 1.0, 0.0]), body),
                sr.Link(joints.Fixed(), tip),
            ]
        )
        nu, mass = sr.mass_inverse_dynamics(robot, q, qd, qdd)
        out[name] = (np.asarray(nu), np.asarray(mass))
    eps = 1 - np.sin(2 * np.pi / (6 * n_radial)) / (2 * np.pi / (6 * n_radial))
    return out, eps


def test_meshed_and_gauss_cylinder_same_dynamics_up_to_the_polygon_bound(arm_dynamics):
    out, eps = arm_dynamics
    for k in range(2):  # ID, then M
        gauss, mesh = out["gauss"][k], out["mesh"][k]
        rel = np.abs(mesh - gauss).max() / np.abs(gauss).max()
        assert 0.1 * eps < rel <= 2 * eps  # the geometric error, not more (and not hidden)


def test_meshed_cylinder_dynamics_match_the_same_prism_to_quadrature_accuracy(arm_dynamics):
    # Same geometry, independent quadratures: only the smooth x3-dependence is approximated
    out, _ = arm_dynamics
    for k in range(2):
        oracle, mesh = out["prism"][k], out["mesh"][k]
        assert np.abs(mesh - oracle).max() <= 1e-9 * np.abs(oracle).max()  # measured 8e-12
