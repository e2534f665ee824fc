"""Bad input to the volumes, meshes and files: a clear error that names the argument or the file,
never a crash of the interpreter, a silent NaN or a raw error from deep inside.

Four classes: corrupt files (meshio calls `sys.exit` on some), unchecked construction (rules with
bad weights, duplicated or overlapping elements), unclear errors of the public functions of
`softrigid.quadrature`, `softrigid.meshing` and `softrigid.io`, and `contains`, the exact
membership test of a rule's reference volume (for tendons).
"""

import re
from pathlib import Path

import jax
import meshio
import numpy as np
import pytest

import softrigid as sr
import softrigid.io as sio
from softrigid import joints, meshing, quadrature
from softrigid.quadrature import (
    QuadratureRule,
    ReferenceMesh,
    box,
    contains,
    cylinder,
    distal_points,
    from_mesh,
    segment,
    tetrahedron,
    tetrahedron_rule,
    tube,
)

# a run-time check inside the caller's jit: JAX's runtime error, or a ValueError with the same
# text on a program's cached calls (JAX's fast path)
RUNTIME_ERRORS = (jax.errors.JaxRuntimeError, ValueError)
MESHES = Path(__file__).resolve().parents[1] / "meshes"
XML_NOT_A_MESH = '<?xml version="1.0"?>\n<library><book title="x"/></library>\n'
# a 2-layer meshed cylinder: 36 tetrahedra
_SMALL = meshing.cylinder(0.02, 0.1, n_radial=1, n_axial=2)
P, C = _SMALL.points, _SMALL.cells_dict["tetra"]


@pytest.fixture(scope="module")
def small():
    return P, C


def _bad_file(tmp_path: Path, kind: str) -> Path:
    """A corrupt mesh file of the given kind, written to `tmp_path`."""
    rng = np.random.default_rng(7)
    name, content = {
        "empty.vtu": ("empty.vtu", b""),
        "truncated.vtu": ("truncated.vtu", (MESHES / "helicoid.vtu").read_bytes()[:12000]),
        "random.vtu": ("random.vtu", rng.bytes(2000)),
        "random.msh": ("random.msh", rng.bytes(2000)),
        "random.mesh": ("random.mesh", rng.bytes(2000)),
        "random.vtk": ("random.vtk", rng.bytes(2000)),
        "random.xdmf": ("random.xdmf", rng.bytes(2000)),
        "xml.vtu": ("xml.vtu", XML_NOT_A_MESH.encode()),
        "xml.xdmf": ("xml.xdmf", XML_NOT_A_MESH.encode()),
        "unknown suffix": ("mesh.xyz", b"1 2 3\n"),
        "text read as empty": ("text.obj", b"hello world\n1 2 3\n"),
        "folder": ("folder.vtu", None),
    }[kind]
    path = tmp_path / name
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    return path


# ------------------------------------------------------- 1. corrupt files never crash


BAD_FILES = [
    "empty.vtu",
    "truncated.vtu",
    "random.vtu",
    "random.msh",
    "random.mesh",
    "random.vtk",
    "random.xdmf",
    "xml.vtu",
    "xml.xdmf",
    "unknown suffix",
    "text read as empty",
    "folder",
]


@pytest.mark.parametrize("kind", BAD_FILES)
def test_corrupt_mesh_file_is_a_value_error_naming_it(tmp_path, kind, capsys):
    path = _bad_file(tmp_path, kind)
    with pytest.raises(ValueError, match=rf"^from_mesh: .*{re.escape(path.name)}'"):  # no exit
        from_mesh(path)
    assert capsys.readouterr().out == ""  # meshio's printout goes into the message


def test_missing_mesh_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"from_mesh: mesh file '.*nothing\.vtu' not found"):
        from_mesh(tmp_path / "nothing.vtu")


def _pvd(tmp_path: Path, frame: str, time: str = "0.0") -> Path:
    path = tmp_path / "run.pvd"
    path.write_text(
        '<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1">\n<Collection>\n'
        f'<DataSet timestep="{time}" group="" part="0" file="{frame}"/>\n'
        "</Collection>\n</VTKFile>\n"
    )
    return path


@pytest.mark.parametrize(
    "case, error, message",
    [
        ("corrupt frame", ValueError, r"read_trajectory: frame 1: cannot read .*bad\.vtu'"),
        ("empty frame", ValueError, r"read_trajectory: frame 1: mesh file .*bad\.vtu' is empty"),
        ("missing frame", FileNotFoundError, r"frame 1: mesh file .*bad\.vtu' not found"),
        ("bad timestep", ValueError, r"DataSet 1 of '.*run\.pvd' has no valid timestep"),
        ("corrupt pvd", ValueError, r"'.*run\.pvd' is not a valid \.pvd \(XML\) file"),
        ("xml pvd", ValueError, r"'.*run\.pvd' is not a ParaView collection"),
        ("empty pvd", ValueError, r"'.*run\.pvd' is empty"),
        ("missing pvd", FileNotFoundError, r"read_trajectory: file '.*run\.pvd' not found"),
        ("corrupt xdmf", ValueError, r"cannot read the XDMF time series '.*run\.xdmf'"),
        ("xml xdmf", ValueError, r"cannot read the XDMF time series '.*run\.xdmf'"),
    ],
)
def test_corrupt_trajectory_file(tmp_path, small, case, error, message):
    good = tmp_path / "good.vtu"
    meshio.write(good, meshio.Mesh(small[0], [("tetra", small[1])]))
    path = tmp_path / ("run.xdmf" if "xdmf" in case else "run.pvd")
    if case in ("corrupt frame", "empty frame", "missing frame", "bad timestep"):
        path.write_text(
            '<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1"><Collection>'
            '<DataSet timestep="0.0" file="good.vtu"/>'
            f'<DataSet timestep="{"x" if case == "bad timestep" else "0.1"}" file="bad.vtu"/>'
            "</Collection></VTKFile>\n"
        )
        if case == "corrupt frame":
            content = good.read_bytes()
            (tmp_path / "bad.vtu").write_bytes(content[: len(content) // 2])
        elif case == "empty frame":
            (tmp_path / "bad.vtu").write_bytes(b"")
    elif case in ("corrupt pvd", "corrupt xdmf"):
        path.write_bytes(np.random.default_rng(3).bytes(500))
    elif case in ("xml pvd", "xml xdmf"):
        path.write_text(XML_NOT_A_MESH)
    elif case == "empty pvd":
        path.write_bytes(b"")
    with pytest.raises(error, match=message):
        sio.read_trajectory(path)


def test_valid_handwritten_pvd_reads(tmp_path, small):
    meshio.write(tmp_path / "f.vtu", meshio.Mesh(small[0], [("tetra", small[1])]))
    times, frames = sio.read_trajectory(_pvd(tmp_path, "f.vtu", "0.5"))
    assert times.tolist() == [0.5] and np.array_equal(frames[0].points, small[0])


# ---------------------------------------------- 2. unchecked construction (silent wrong results)


def _rule_args(**change):
    return {"points": np.zeros((4, 3)), "weights": np.ones(4)} | change


@pytest.mark.parametrize(
    "change, error, message",
    [
        ({"weights": np.array([1.0, -1.0, 1.0, 1.0])}, ValueError, "weights must be finite and positive"),
        ({"weights": np.array([1.0, 0.0, 1.0, 1.0])}, ValueError, r"weights .* 1 entries .*at 1;"),
        ({"weights": np.array([1.0, np.nan, 1.0, 1.0])}, ValueError, "weights must be finite"),
        ({"weights": np.full(4, np.inf)}, ValueError, "weights must be finite"),
        ({"points": np.array([[0, 0, 0], [0, np.inf, 0], [0, 0, 1], [1, 0, 0.0]])}, ValueError, r"points must be finite; .*at \(1, 1\)"),
        ({"points": np.full((4, 3), np.nan)}, ValueError, "points must be finite"),
        ({"points": np.zeros(12)}, ValueError, r"points must have shape \(K, 3\)"),
        ({"weights": np.ones((4, 1))}, ValueError, r"weights must have shape \(4,\)"),
        ({"points": "abc"}, TypeError, "points must be an array of real numbers, got str"),
        ({"weights": ["1", "1", "1", "1"]}, TypeError, "weights must be an array of real numbers"),
        ({"weights": np.ones(4, complex)}, TypeError, "weights must be an array of real numbers, got complex128"),
        ({"pivot": np.array([0.0, np.nan, 0.0])}, ValueError, "pivot must be finite"),
        ({"pivot": np.zeros(4)}, ValueError, r"pivot must have shape \(3,\)"),
        ({"contact_a": [np.inf, 0.0, 0.0]}, ValueError, "contact_a must be finite"),
        ({"contact_b": np.zeros((3, 1))}, ValueError, r"contact_b must have shape \(3,\)"),
        ({"contact_b": "xyz"}, TypeError, "contact_b must be an array of real numbers"),
        ({"density": -np.ones(4)}, ValueError, "density must be finite and positive"),
        ({"density": np.full(4, np.nan)}, ValueError, "density must be finite and positive"),
        ({"geometry": "cylinder", "dimensions": [0.1]}, ValueError, r"dimensions must be \(R, L\)"),
        ({"geometry": "box", "dimensions": [0.1, -1, 1]}, ValueError, "dimensions must be finite and positive"),
        ({"dimensions": [1.0]}, ValueError, "dimensions must be None for geometry=None"),
        ({"geometry": 3}, ValueError, "geometry must be one of"),
        ({"n_axial": 2.0}, TypeError, "n_axial must be an int"),
        ({"n_axial": 0}, ValueError, "n_axial=0 does not divide"),
    ],
)  # fmt: skip
def test_rule_construction_is_checked(change, error, message):
    with pytest.raises(error, match=f"QuadratureRule: {message}"):
        QuadratureRule(**_rule_args(**change))


@pytest.mark.parametrize(
    "build, bad, message",
    [
        (lambda v: QuadratureRule(np.zeros((2, 3)), v * np.ones(2)).volume, -1.0, "weights must be finite and positive"),
        (lambda v: QuadratureRule(v * np.ones((2, 3)), np.ones(2)).points.sum(), np.nan, "points must be finite"),
        (lambda v: QuadratureRule(np.zeros((2, 3)), np.ones(2), density=v * np.ones(2)).density.sum(), np.inf, "density must be finite and positive"),
        (lambda v: QuadratureRule(np.zeros((1, 3)), np.ones(1), geometry="segment", dimensions=v * np.ones(1)).dimensions.sum(), -1.0, "dimensions must be finite and positive"),
    ],
)  # fmt: skip
def test_rule_checks_run_under_tracing(build, bad, message):
    # a rule built inside jit from traced values gets the same checks at run time
    fn = jax.jit(build)
    assert float(fn(1.0)) == pytest.approx(float(build(1.0)), rel=1e-14)
    with pytest.raises(RUNTIME_ERRORS, match=f"QuadratureRule: {message}"):
        jax.block_until_ready(fn(bad))


@pytest.mark.parametrize(
    "build, bad, message",
    [
        (lambda v: cylinder(v, 1.0, 1, 1, 3).volume, -1.0, "cylinder: radius must be finite and positive"),
        (lambda v: box((v, v, 1.0)).volume, -1.0, r"box: size\[0\] must be finite and positive"),
        (lambda v: tube(v, 2.0, 1.0).volume, -1.0, "tube: inner_radius must be finite and positive"),
        (lambda v: tube(0.5, v, 1.0).volume, 0.25, "tube: inner_radius must be smaller than outer_radius"),
        (lambda v: segment(v).volume, np.nan, "segment: length must be finite and positive"),
    ],
)  # fmt: skip
def test_built_in_rules_check_traced_sizes(build, bad, message):
    # A negative radius, or two negative box sides, gave positive weights: the rule's mass
    # matrix under jit equalled the positive size's (eagerly, a ValueError).
    fn = jax.jit(build)
    assert float(fn(1.0)) == pytest.approx(float(build(1.0)), rel=1e-14)
    with pytest.raises(RUNTIME_ERRORS, match=message):
        jax.block_until_ready(fn(bad))


def _duplicate(cells: np.ndarray, case: str) -> np.ndarray:
    """`cells` with element 3 listed again (after element 9) in some node order."""
    order = {
        "same order": [0, 1, 2, 3],
        "even permutation": [1, 2, 0, 3],  # same orientation
        "odd permutation": [0, 2, 1, 3],  # the other orientation: same nodes, inverted
        "reversed": [3, 2, 1, 0],  # even: same orientation
    }[case]
    return np.concatenate([cells[:10], cells[3:4, order], cells[10:]])


DUPLICATES = ["same order", "even permutation", "odd permutation", "reversed"]


@pytest.mark.parametrize("case", DUPLICATES)
def test_duplicated_elements_are_refused(small, case):
    points, cells = small
    bad = _duplicate(cells, case)
    message = r"1 duplicated tetrahedra .* at element indices \[10\] \(.*: 10 = 3\)"
    with pytest.raises(ValueError, match="from_mesh: the mesh has " + message):
        from_mesh(meshio.Mesh(points, [("tetra", bad)]))
    with pytest.raises(ValueError, match="ReferenceMesh: the mesh has " + message):
        ReferenceMesh(points, (("tetra", bad),))


def test_duplicate_across_tetra_and_tetra10_blocks(small):
    points, cells = small
    mid = [(0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3)]
    element = points[cells[5]]
    quad = np.concatenate([element, [(element[i] + element[j]) / 2 for i, j in mid]])
    pts = np.concatenate([points, quad[4:]])
    t10 = np.concatenate([cells[5], len(points) + np.arange(6)])[None]
    mesh = meshio.Mesh(pts, [("tetra", cells), ("tetra10", t10)])
    with pytest.raises(ValueError, match=r"duplicated tetrahedra .* \[36\] .*36 = 5"):
        from_mesh(mesh)


def _through_copies(points: np.ndarray, cells: np.ndarray, case: str) -> tuple:
    """Element 3 listed again at the end (index 36) on copies of some of its nodes, written at
    the same coordinates (or within 1e-12 of the mesh size)."""
    copied, order, shift = {
        "all four nodes copied": ([0, 1, 2, 3], [0, 1, 2, 3], 0.0),
        "one node copied": ([2], [0, 1, 2, 3], 0.0),
        "copies in the other orientation": ([0, 3], [1, 0, 2, 3], 0.0),
        "copies off by 1e-12 of the size": ([0, 1, 2, 3], [0, 1, 2, 3], 1e-12),
    }[case]
    element = cells[3].copy()
    extra = points[element[copied]] + shift * np.ptp(points, axis=0).max()
    element[copied] = len(points) + np.arange(len(copied))
    return np.concatenate([points, extra]), np.concatenate([cells, element[None, order]])


@pytest.mark.parametrize(
    "case",
    [
        "all four nodes copied",
        "one node copied",
        "copies in the other orientation",
        "copies off by 1e-12 of the size",
    ],
)
def test_duplicates_through_coincident_nodes_are_refused(small, tmp_path, case):
    # the mass would double: merged nodes at the same coordinates reveal the duplicate
    points, cells = _through_copies(*small, case)
    path = tmp_path / "twice.vtu"
    meshio.write(path, meshio.Mesh(points, [("tetra", cells)]))
    message = r"1 duplicated tetrahedra .* coincident nodes.* \[36\] \(.*: 36 = 3\)"
    with pytest.raises(ValueError, match=f"from_mesh: {re.escape(repr(str(path)))} has {message}"):
        from_mesh(path)
    with pytest.raises(ValueError, match="ReferenceMesh: the mesh has " + message):
        ReferenceMesh(points, (("tetra", cells),))


def test_a_seam_of_coincident_nodes_is_a_valid_mesh(small):
    # element 3 moved onto copies of its nodes (no element listed twice): the same volume
    points, cells = small
    copies, seam = _through_copies(points, cells, "all four nodes copied")
    seam = np.concatenate([seam[:3], seam[-1:], seam[4:-1]])
    rule = from_mesh(meshio.Mesh(copies, [("tetra", seam)]))
    reference = from_mesh(meshio.Mesh(points, [("tetra", cells)]))
    np.testing.assert_allclose(float(rule.volume), float(reference.volume), rtol=1e-14)


def test_overlapping_elements_are_refused():
    # two positive tetrahedra on the same side of their shared face (0, 1, 2)
    points = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0.2, 0.2, 0.5]], float)
    cells = np.array([[0, 1, 2, 3], [0, 1, 2, 4]])
    with pytest.raises(
        ValueError, match=r"from_mesh: the mesh has 2 overlapping tetrahedra .*\[0, 1\]"
    ):
        from_mesh(meshio.Mesh(points, [("tetra", cells)]))
    # on opposite sides they are a valid mesh
    points[4, 2] = -0.5
    rule = from_mesh(meshio.Mesh(points, [("tetra", np.array([[0, 1, 2, 3], [0, 2, 1, 4]]))]))
    np.testing.assert_allclose(float(rule.volume), 1 / 6 + 0.5 / 6, rtol=1e-14)


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda p, c: ReferenceMesh(p[:, :2], (("tetra", c),)), ValueError, r"ReferenceMesh: points must be finite with shape \(N, 3\)"),
        (lambda p, c: ReferenceMesh(p, (("triangle", c[:, :3]),)), ValueError, r"ReferenceMesh: cells\[0\]: cell type must be 'tetra' or 'tetra10'"),
        (lambda p, c: ReferenceMesh(p, (("tetra", c[:, :3]),)), ValueError, r"cells\[0\]: tetra cells must have shape \(E, 4\)"),
        (lambda p, c: ReferenceMesh(p, (("tetra", c + 100),)), ValueError, r"cells\[0\]: tetra cells reference nodes outside"),
        (lambda p, c: ReferenceMesh(p, (("tetra", c + 0.5),)), ValueError, r"cells\[0\]: tetra cells must hold integer node indices"),
        (lambda p, c: ReferenceMesh(p, ()), ValueError, "ReferenceMesh: cells must hold at least one"),
        (lambda p, c: ReferenceMesh(p, "tetra"), TypeError, "ReferenceMesh: cells must be a sequence"),
        (lambda p, c: ReferenceMesh(p, (c,)), TypeError, r"ReferenceMesh: cells\[0\] must be a \(cell_type, connectivity\) pair"),
        (lambda p, c: ReferenceMesh("points", (("tetra", c),)), TypeError, "ReferenceMesh: points must be an array of real numbers"),
        (lambda p, c: tetrahedron([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]]), ValueError, r"tetrahedron: vertices are degenerate"),
        (lambda p, c: tetrahedron(np.eye(4, 3, k=-1)[[0, 2, 1, 3]]), ValueError, "tetrahedron: vertices must be positively oriented"),
    ],
)  # fmt: skip
def test_mesh_construction_is_checked(small, make, error, message):
    with pytest.raises(error, match=message):
        make(*small)


# ------------------------------------------- 3. every public function names its bad argument


def _bad_rule_calls():
    return [
        (lambda: segment("0.1"), TypeError, "segment: length must be a real number"),
        (lambda: segment(None), TypeError, "segment: length must be a real number"),
        (lambda: segment(-0.1), ValueError, "segment: length must be finite and positive"),
        (lambda: segment(0.1, "4"), ValueError, "segment: order must be an integer >= 1"),
        (lambda: segment(0.1, 4.0), ValueError, "segment: order must be an integer >= 1"),
        (lambda: box(0.1), TypeError, r"box: size must be \(a, b, L\), got float"),
        (lambda: box("abc"), TypeError, r"box: size must be \(a, b, L\), got str"),
        (lambda: box((0.1, 0.1, np.nan)), ValueError, r"box: size\[2\] must be finite and positive"),
        (lambda: box((0.1, "b", 0.1)), TypeError, r"box: size\[1\] must be a real number"),
        (lambda: box(np.ones((3, 1))), ValueError, r"box: size must be \(a, b, L\)"),
        (lambda: box((0.1, 0.1, 0.1), None), TypeError, "box: order must be an int or three ints"),
        (lambda: box((0.1, 0.1, 0.1), True), TypeError, "box: order must be an int or three ints"),
        (lambda: box((0.1, 0.1, 0.1), (2, 2, 2.5)), ValueError, r"box: order\[2\] must be an integer"),
        (lambda: cylinder("r", 0.1), TypeError, "cylinder: radius must be a real number"),
        (lambda: cylinder(0.02, np.nan), ValueError, "cylinder: length must be finite and positive"),
        (lambda: cylinder(0.02, 0.1, n_axial=-2), ValueError, "cylinder: n_axial must be an integer >= 1"),
        (lambda: cylinder(0.02, 0.1, n_radial=1.5), ValueError, "cylinder: n_radial must be an integer"),
        (lambda: tube(-0.01, 0.02, 0.1), ValueError, "tube: inner_radius must be finite and positive"),
        (lambda: tube(0.01, [0.02], 0.1), ValueError, "tube: outer_radius must be a scalar"),
        (lambda: tube(0.01, 0.02, 0.1, n_angular="8"), ValueError, "tube: n_angular must be an integer"),
        (lambda: tetrahedron_rule(2.5), ValueError, "tetrahedron_rule: degree must be an integer"),
        (lambda: tetrahedron_rule(31), ValueError, r"tetrahedron_rule: degree must be an integer in \[1, 30\]"),
        (lambda: tetrahedron(degree="2"), ValueError, "tetrahedron: degree must be an integer"),
        (lambda: tetrahedron("abcd"), TypeError, "tetrahedron: vertices must be an array of real"),
        (lambda: tetrahedron(np.full((4, 3), np.nan)), ValueError, "tetrahedron: vertices must be finite"),
        (lambda: from_mesh(None), TypeError, "from_mesh: expected a meshio.Mesh or a file path"),
    ]  # fmt: skip


def _bad_mesh_calls():
    points, cells, mesh = P, C, _SMALL
    return [
        (lambda: from_mesh(mesh, degree=-1), ValueError, "from_mesh: degree must be an integer"),
        (lambda: from_mesh(mesh, degree=2.0), ValueError, "from_mesh: degree must be an integer"),
        (lambda: from_mesh(mesh, density=["a"] * 36), TypeError, "from_mesh: density must be an array of real"),
        (lambda: from_mesh(mesh, density=np.nan), ValueError, "from_mesh: density must be finite and positive"),
        (lambda: from_mesh(mesh, density=np.ones(35)), ValueError, r"from_mesh: density must have one value per tetrahedron \(36,\)"),
        (lambda: from_mesh(meshio.Mesh(points, [("tetra", cells + 0.5)])), ValueError, "from_mesh: tetra cells must hold integer node indices"),
        (lambda: from_mesh(meshio.Mesh(points, [("tetra", cells[:, :3])])), ValueError, r"from_mesh: tetra cells must have shape \(E, 4\)"),
        (lambda: from_mesh(meshio.Mesh(points.astype(str), [("tetra", cells)])), TypeError, "from_mesh: mesh points must be an array of real numbers"),
        (lambda: distal_points(points[:, :2], cells), ValueError, r"distal_points: points must be finite with shape \(N, 3\)"),
        (lambda: distal_points(points, cells[:, :3]), ValueError, r"distal_points: cells must have shape \(E, 4\) or \(E, 10\)"),
        (lambda: distal_points(points, cells + 1000), ValueError, "distal_points: cells reference nodes outside"),
        (lambda: distal_points(points, "cells"), TypeError, "distal_points: cells must be an array of node indices"),
        (lambda: meshing.cylinder("0.02", 0.1), TypeError, "cylinder: radius must be a finite positive number"),
        (lambda: meshing.cylinder(0.02, np.nan), ValueError, "cylinder: length must be a finite positive number"),
        (lambda: meshing.cylinder(0.02, 0.1, n_axial=0), ValueError, "cylinder: n_axial must be an integer >= 1"),
        (lambda: meshing.cylinder(0.02, 0.1, n_angular=2), ValueError, "cylinder: n_angular must be an integer >= 3"),
        (lambda: meshing.tube(0.01, 0.02, -0.1), ValueError, "tube: length must be a finite positive number"),
        (lambda: meshing.tube(0.01, 0.02, 0.1, n_axial=1.5), ValueError, "tube: n_axial must be an integer >= 1"),
        (lambda: meshing.box(0.1), TypeError, r"box: size must be \(a, b, L\), got float"),
        (lambda: meshing.box((0.1, 0.1, True)), TypeError, r"box: size\[2\] must be a finite positive number"),
        (lambda: meshing.box((0.1, 0.1, 0.1), 2), TypeError, r"box: divisions must be \(n1, n2, n3\)"),
        (lambda: meshing.box((0.1, 0.1, 0.1), (2, 2, 0)), ValueError, r"box: divisions\[2\] must be an integer >= 1"),
        (lambda: meshing.disk_section("abc", 6), TypeError, "disk_section: radii must be an array of real numbers"),
        (lambda: meshing.disk_section([0.0, np.nan], 6), ValueError, "disk_section: radii must be finite"),
        (lambda: meshing.disk_section([0.0, 0.1], 2.5), ValueError, "disk_section: n_angular must be an integer >= 3"),
        (lambda: meshing.rectangle_section(0.1, -0.1, 2, 2), ValueError, "rectangle_section: height must be a finite positive"),
        (lambda: meshing.rectangle_section(0.1, 0.1, 2, None), ValueError, "rectangle_section: n2 must be an integer"),
        (lambda: meshing.extrude(points[:, :2], [[0, 1, 2.5]], [0, 1]), ValueError, "extrude: triangles must hold integer node indices"),
        (lambda: meshing.extrude(points[:, :2], [[0, 1, -2]], [0, 1]), ValueError, "extrude: triangles must hold non-negative node indices"),
        (lambda: meshing.extrude(points[:, :2], [[0, 1, 2]], [0, np.nan]), ValueError, "extrude: z must be finite"),
        (lambda: meshing.extrude(points[:, :2], [[0, 1, 2]], [0, 1], twist=np.nan), ValueError, "extrude: twist must be finite"),
        (lambda: meshing.extrude(points[:, :2], [[0, 1, 2]], [0, 1], twist="1"), TypeError, "extrude: twist must be an array of real numbers"),
        (lambda: meshing.extrude("pts", [[0, 1, 2]], [0, 1]), TypeError, "extrude: section_points must be an array of real"),
        (lambda: meshing.extrude(points[:, :2], [[0, 1, 2]], [0, 1], keep=[["a"]]), TypeError, "extrude: keep must be booleans"),
        (lambda: meshing.extrude(points[:, :2], [[0, 1, 2]], [0, 1], keep=[[2]]), TypeError, r"extrude: keep must be booleans \(or 0/1\)"),
        (lambda: meshing.tet_volumes(points, cells[:, :3]), ValueError, r"tet_volumes: cells must have shape \(E, 4\)"),
        (lambda: meshing.tet_volumes(points, cells + 1000), ValueError, "tet_volumes: cells reference nodes outside"),
        (lambda: meshing.tet_volumes(points[:, :2], cells), ValueError, r"tet_volumes: points must have shape \(N, 3\)"),
        (lambda: meshing.boundary_faces(cells + 0.5), ValueError, "boundary_faces: cells must hold integer node indices"),
        (lambda: meshing.boundary_faces("cells"), TypeError, "boundary_faces: cells must be an array of node indices"),
        (lambda: sio.surface(meshio.Mesh(points, [("tetra", cells + 1000)])), ValueError, "surface: tetra cells reference nodes outside"),
        (lambda: sio.surface(points), TypeError, "surface: expected a meshio.Mesh"),
        (lambda: sio.read_trajectory(None), TypeError, "read_trajectory: path must be a str or a Path"),
        (lambda: sio.read_trajectory("run.vtu"), ValueError, r"read_trajectory: path must end in \.pvd or \.xdmf"),
        (lambda: sio.body_meshes("robot"), TypeError, "robot must be a softrigid.Robot, got str"),
    ]  # fmt: skip


@pytest.mark.parametrize("call, error, message", _bad_rule_calls())
def test_bad_arguments_of_the_rules(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("call, error, message", _bad_mesh_calls())
def test_bad_arguments_of_meshes_and_files(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.fixture(scope="module")
def one_link():
    """A revolute joint and a rigid body (drawn from a given mesh): no compilation needed to
    reach the argument checks."""
    body = sr.RigidBody(0.1, [0.0, 0.0, 0.05], np.eye(3) * 1e-4)
    return sr.Robot([sr.Link(joints.Revolute([0.0, 1.0, 0.0]), body)])


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda r, m, p: sio.deformed_meshes(r, "0.3", [m]), TypeError, "q must be an array of real numbers"),
        (lambda r, m, p: sio.deformed_meshes(r, [[0.3]], [m]), ValueError, r"q must have shape \(n_q,\)"),
        (lambda r, m, p: sio.deformed_meshes(r, [0.3], [p / "missing.vtu"]), FileNotFoundError, r"meshes\[0\]: mesh file .*missing\.vtu' not found"),
        (lambda r, m, p: sio.deformed_meshes(r, [0.3], [_bad_file(p, "random.vtu")]), ValueError, r"meshes\[0\]: cannot read the mesh file '.*random\.vtu'"),
        (lambda r, m, p: sio.deformed_meshes(r, [0.3], [3.0]), TypeError, r"meshes\[0\]: a mesh must be a meshio.Mesh"),
        (lambda r, m, p: sio.deformed_meshes(r, [0.3], {1: m}), ValueError, r"meshes: keys must be link indices in \[0, 1\)"),
        (lambda r, m, p: sio.deformed_meshes("robot", [0.3]), TypeError, "robot must be a softrigid.Robot"),
        (lambda r, m, p: sio.body_meshes(r, [meshio.Mesh(m.points, [("tetra", m.cells[0].data + 999)])]), ValueError, "link 0: tetra cells reference nodes outside"),
        (lambda r, m, p: sio.write_state(3, r, [0.3], [m]), TypeError, "write_state: path must be a str or a Path"),
        (lambda r, m, p: sio.write_trajectory(p / "run.pvd", r, ["a"], [[0.3]], [m]), TypeError, "t must be an array of real numbers"),
        (lambda r, m, p: sio.write_trajectory(p / "run.xdmf", r, [0.0], [[0.3]], [m], data_format="HDF5"), ValueError, "write_trajectory: data_format must be 'XML' or 'HDF'"),
        (lambda r, m, p: sio.write_trajectory(None, r, [0.0], [[0.3]], [m]), TypeError, "write_trajectory: path must be a str or a Path"),
    ],
)  # fmt: skip
def test_bad_arguments_of_the_writers(one_link, tmp_path, call, error, message):
    mesh = meshing.box((0.01, 0.01, 0.1), (1, 1, 1))
    with pytest.raises(error, match=message):
        call(one_link, mesh, tmp_path)


def test_nothing_to_draw_is_not_an_error(one_link):
    assert sio.deformed_meshes(one_link, [0.3]) == (None,)


# ------------------------------------------------- 4. contains: the exact reference volume


def _cylinder_cases():
    length = 0.2  # R = 0.03
    return [
        ((0.025, 0.0, 0.1), True),  # rejected by the old order-dependent box with n_radial=1
        ((0.029, 0.029, 0.1), False),  # r = 0.041 > R, accepted by the old bounding box
        ((0.03, 0.0, 0.1), True),  # on the surface
        ((0.0, -0.03 * (1 + 1e-6), 0.1), False),
        ((0.03 / np.sqrt(2), 0.03 / np.sqrt(2), length), True),  # distal rim
        ((0.0, 0.0, -1e-6), False),
        ((0.0, 0.0, length + 1e-6), False),
    ]


@pytest.mark.parametrize("n_radial", [1, 2, 4])
def test_contains_cylinder_independent_of_the_rule_order(n_radial):
    points, expected = zip(*_cylinder_cases())
    rule = cylinder(0.03, 0.2, n_radial=n_radial)
    np.testing.assert_array_equal(contains(rule, np.array(points)), expected)


@pytest.mark.parametrize(
    "rule, point, inside",
    [
        (segment(0.2), (0.0, 0.0, 0.2), True),
        (segment(0.2), (0.0, 0.0, 0.0), True),
        (segment(0.2), (1e-6, 0.0, 0.1), False),
        (segment(0.2), (0.0, 0.0, 0.2 + 1e-6), False),
        (box((0.02, 0.04, 0.2)), (0.01, 0.02, 0.2), True),  # a corner: |x1| ≤ a/2, |x2| ≤ b/2
        (box((0.02, 0.04, 0.2)), (-0.01, -0.02, 0.0), True),
        (box((0.02, 0.04, 0.2)), (0.0101, 0.0, 0.1), False),
        (box((0.02, 0.04, 0.2)), (0.0, 0.0201, 0.1), False),
        (box((0.02, 0.04, 0.2)), (0.015, 0.0, 0.1), False),  # inside a 0.04 x 0.02 box
        (tube(0.01, 0.03, 0.2), (0.0, 0.0, 0.1), False),  # the bore
        (tube(0.01, 0.03, 0.2), (0.0099, 0.0, 0.1), False),
        (tube(0.01, 0.03, 0.2), (0.0, 0.01, 0.1), True),
        (tube(0.01, 0.03, 0.2), (0.02, 0.02, 0.0), True),
        (tube(0.01, 0.03, 0.2), (0.0, -0.0301, 0.1), False),
    ],
)
def test_contains_built_in_volumes(rule, point, inside):
    assert contains(rule, np.array([point])).tolist() == [inside]
    assert bool(contains(rule, point)) is inside  # one (3,) point


def test_contains_tolerance_is_relative_to_the_body():
    for scale in (1e-3, 1.0, 1e3):
        rule = cylinder(0.03 * scale, 0.2 * scale)
        just_out = np.array([[0.03 * scale * (1 + 1e-7), 0.0, 0.1 * scale]])
        assert not contains(rule, just_out)[0]
        assert contains(rule, just_out, tol=1e-6)[0]


def test_contains_mesh():
    # a 12-gon prism: the exact mesh geometry, not the circle it approximates
    rule = from_mesh(meshing.cylinder(0.03, 0.2, n_radial=2))
    apothem = 0.03 * np.cos(np.pi / 12)
    points = np.array(
        [
            [0.025, 0.0, 0.1],
            [0.03, 0.0, 0.2],  # a vertex of the distal face
            [apothem * np.cos(np.pi / 12), apothem * np.sin(np.pi / 12), 0.1],  # mid-side
            [0.0299 * np.cos(np.pi / 12), 0.0299 * np.sin(np.pi / 12), 0.1],  # in the disk only
            [0.029, 0.029, 0.1],
            [0.0, 0.0, -1e-6],
            [0.0, 0.0, 0.0],
        ]
    )
    expected = [True, True, True, False, False, False, True]
    np.testing.assert_array_equal(contains(rule, points), expected)
    # the committed twisted helicoid: its own nodes are inside, far points are not
    heli = from_mesh(MESHES / "helicoid.vtu")
    nodes = heli.mesh.points
    centre = nodes.mean(0)
    assert contains(heli, nodes).all()
    assert contains(heli, np.asarray(heli.points)).all()
    assert not contains(heli, centre + 2 * np.ptp(nodes, axis=0)[None]).any()


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: contains(QuadratureRule(np.zeros((1, 3)), np.ones(1)), np.zeros((1, 3))), ValueError, "contains: the rule carries no geometry"),
        (lambda: contains("rule", np.zeros((1, 3))), TypeError, "contains: rule must be a QuadratureRule"),
        (lambda: contains(segment(1.0), np.zeros((2, 2))), ValueError, r"contains: points must have shape \(M, 3\)"),
        (lambda: contains(segment(1.0), [[0.0, np.nan, 0.0]]), ValueError, "contains: points must be finite"),
        (lambda: contains(segment(1.0), "xyz"), TypeError, "contains: points must be an array of real numbers"),
        (lambda: contains(segment(1.0), np.zeros(3), tol=-1.0), ValueError, "contains: tol must be finite and >= 0"),
        (lambda: contains(segment(1.0), np.zeros(3), tol="1e-9"), TypeError, "contains: tol must be a real number"),
    ],
)  # fmt: skip
def test_contains_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_contains_is_exported():
    assert quadrature.contains is contains
