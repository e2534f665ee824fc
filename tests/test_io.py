"""Export to ParaView files (softrigid.io): meshes per body, positions, round trips, surfaces.

Oracles: world positions of every mesh node written out in NumPy from the closed forms (a
revolute joint, planar constant-curvature bodies handing on their distal frames, a rigid
placement), the rest configuration reproducing the material coordinates, exact float64 round
trips through VTU / PVD / XDMF, and the area and enclosed volume of a box's surface."""

import warnings
import xml.etree.ElementTree as ET

import jax.numpy as jnp
import meshio
import numpy as np
import pytest

import softrigid as sr
import softrigid.io as sio
from softrigid import joints, meshing
from softrigid.kinematics import PlanarConstantCurvature
from softrigid.quadrature import QuadratureRule, box, cylinder, from_mesh, segment, tube

L = 0.1
R = 0.02


@pytest.fixture(scope="module")
def robot():
    """Revolute (y) + Gauss cylinder (planar CC) | meshed tube | rigid body | segment (planar
    CC) | Gauss box (planar CC)."""
    kin = PlanarConstantCurvature(L)
    return sr.Robot(
        [
            sr.Link(joints.Revolute([0.0, 1.0, 0.0]), sr.SoftBody(kin, cylinder(R, L), 1000.0)),
            sr.Link(
                joints.Fixed(),
                sr.SoftBody(kin, from_mesh(meshing.tube(0.01, R, L, 1, 12, 2)), 1000.0),
            ),
            sr.Link(
                joints.Fixed(),
                sr.RigidBody(0.2, [0.0, 0.0, 0.05], np.eye(3) * 1e-4, (np.eye(3), [0, 0, L])),
            ),
            sr.Link(joints.Fixed(), sr.SoftBody(kin, segment(L), 0.3)),
            sr.Link(joints.Fixed(), sr.SoftBody(kin, box((0.02, 0.01, L), 2), 1000.0)),
        ]
    )


@pytest.fixture(scope="module")
def link_mesh():
    """A user mesh for the rigid link (in its proximal frame)."""
    return meshing.box((0.01, 0.01, L), (1, 1, 2))


Q = np.array([0.3, 0.5, -0.4, 0.9, 0.7])


# ------------------------------------------------------------------ meshes per body


def test_body_meshes_rules(robot, link_mesh):
    refs = sio.body_meshes(robot)
    cyl, tb, rigid, seg, bx = refs
    assert rigid is None  # a RigidBody has no geometry unless given one
    ref = meshing.cylinder(R, L)
    np.testing.assert_array_equal(cyl.points, ref.points)  # built-in geometry: the mesher's
    np.testing.assert_array_equal(cyl.cells_dict["tetra"], ref.cells_dict["tetra"])
    mesh = robot.links[1].body.volume.mesh  # a from_mesh volume: its own mesh
    np.testing.assert_array_equal(tb.points, mesh.points)
    assert set(seg.cells_dict) == {"line"}
    np.testing.assert_allclose(seg.points[:, 2], np.linspace(0, L, 21))
    np.testing.assert_allclose(np.ptp(bx.points, 0), [0.02, 0.01, L])
    given = sio.body_meshes(robot, {2: link_mesh})[2]
    assert given is link_mesh
    assert sio.body_meshes(robot, [None, None, link_mesh, None, None])[2] is link_mesh


def test_body_meshes_errors(robot, link_mesh):
    with pytest.raises(ValueError, match=r"meshes: expected one entry per link \(5\), got 2"):
        sio.body_meshes(robot, [None, None])
    with pytest.raises(ValueError, match=r"keys must be link indices in \[0, 5\), got \[7\]"):
        sio.body_meshes(robot, {7: link_mesh})
    with pytest.raises(TypeError, match="a mesh must be a meshio.Mesh, a ReferenceMesh"):
        sio.body_meshes(robot, {0: 3.0})
    assert sio.body_meshes(robot, {np.int64(2): link_mesh})[2] is link_mesh  # NumPy indices
    bad = meshio.Mesh(link_mesh.points * np.nan, link_mesh.cells)
    with pytest.raises(ValueError, match=r"link 2: mesh points must be finite"):
        sio.body_meshes(robot, {2: bad})
    # complex points lost their imaginary parts in the written file
    complex_points = meshio.Mesh(link_mesh.points + 5j, link_mesh.cells)
    with pytest.raises(TypeError, match=r"link 2: mesh points must be real, got dtype complex"):
        sio.body_meshes(robot, {2: complex_points})
    rigid = sr.RigidBody(1.0, np.zeros(3), np.eye(3))
    rigid_only = sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), rigid)])
    with pytest.raises(ValueError, match="no body has a mesh to draw.*rigid bodies need meshes="):
        sio.write_state("unused.vtu", rigid_only, np.zeros(1))


def test_soft_body_without_known_geometry_warns():
    rule = QuadratureRule(np.array([[0.0, 0.0, 0.05]]), np.array([1e-4]))
    kin = PlanarConstantCurvature(L)
    body = sr.SoftBody(kin, rule, 1000.0)  # the family gives its distal pose exactly
    rob = sr.Robot([sr.Link(joints.Fixed(), body)])
    with pytest.warns(UserWarning, match=r"link 0: the soft body's volume has no known geometry"):
        assert sio.body_meshes(rob) == (None,)


# ------------------------------------------------------------------ positions


def test_deformed_meshes_positions(robot, link_mesh):
    meshes = sio.deformed_meshes(robot, Q, {2: link_mesh})
    refs = sio.body_meshes(robot, {2: link_mesh})
    expected = _world(Q, refs)
    start = 0
    for mesh, ref in zip(meshes, refs):
        n = len(ref.points)
        np.testing.assert_allclose(mesh.points, expected[start : start + n], rtol=0, atol=1e-15)
        np.testing.assert_array_equal(mesh.point_data["material_coordinates"], ref.points)
        assert [c.type for c in mesh.cells] == [c.type for c in ref.cells]
        start += n


def test_rest_configuration_reproduces_the_material_coordinates():
    # one soft body at q = 0 with an identity joint: world positions = material coordinates
    rob = sr.Robot(
        [sr.Link(joints.Fixed(), sr.SoftBody(PlanarConstantCurvature(L), tube(0.01, R, L), 1.0))]
    )
    (mesh,) = sio.deformed_meshes(rob, np.zeros(1))
    np.testing.assert_allclose(mesh.points, mesh.point_data["material_coordinates"], atol=1e-17)


def test_errors_on_configurations(robot):
    with pytest.raises(ValueError, match=r"q must have shape \(n_q,\) with n_q = 5, got \(4,\)"):
        sio.deformed_meshes(robot, np.zeros(4))
    with pytest.raises(ValueError, match="q contains non-finite values"):
        sio.deformed_meshes(robot, np.full(5, np.nan))
    # a finite state whose map overflows: the run-time check's ValueError (was JAX's error)
    with pytest.raises(ValueError, match="links_world_points: non-finite value"):
        sio.deformed_meshes(robot, np.full(5, 1e300))


# ------------------------------------------------------------------ files and round trips


def _cc(x: np.ndarray, q: float) -> np.ndarray:
    """Planar constant curvature (bodies.md): θ = q x3/L,
    f = (L (cos θ − 1)/q + x1 cos θ, x2, (L + q x1) sin θ / q)."""
    if q == 0.0:
        return x
    th = q * x[:, 2] / L
    return np.stack(
        [
            L * (np.cos(th) - 1) / q + x[:, 0] * np.cos(th),
            x[:, 1],
            (L + q * x[:, 0]) * np.sin(th) / q,
        ],
        -1,
    )


def _ry(a: float) -> np.ndarray:
    return np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])


def _world(q, refs):
    """World positions of the fixture robot's mesh nodes, in NumPy: a revolute joint R_y(q0),
    then each planar-CC body maps its nodes and hands on its distal frame (R_y(−q), f(0,0,L)),
    the rigid body places its nodes and its distal frame (1, (0, 0, L))."""
    rot, trans = _ry(q[0]), np.zeros(3)
    coords = {0: q[1], 1: q[2], 3: q[3], 4: q[4]}
    out = []
    for i, mesh in enumerate(refs):
        if i == 2:
            local, dist_r, dist_t = mesh.points, np.eye(3), np.array([0, 0, L])
        else:
            qi = coords[i]
            local = _cc(np.asarray(mesh.points), qi)
            dist_r, dist_t = _ry(-qi), _cc(np.array([[0.0, 0.0, L]]), qi)[0]
        out.append(local @ rot.T + trans)
        rot, trans = rot @ dist_r, trans + rot @ dist_t
    return np.concatenate(out)


def test_write_state_round_trip(robot, link_mesh, tmp_path):
    path = tmp_path / "state.vtu"
    sio.write_state(path, robot, Q, {2: link_mesh})
    assert (
        path.read_bytes().startswith(b"<?xml") and b'type="UnstructuredGrid"' in path.read_bytes()
    )
    back = meshio.read(path)
    refs = sio.body_meshes(robot, {2: link_mesh})
    np.testing.assert_allclose(back.points, _world(Q, refs), rtol=0, atol=1e-15)
    material = np.concatenate([m.points for m in refs])
    np.testing.assert_array_equal(back.point_data["material_coordinates"], material)
    links = np.concatenate(back.cell_data["link"])
    counts = [sum(len(c.data) for c in m.cells) for m in refs]
    np.testing.assert_array_equal(links, np.repeat(np.arange(5), counts))


@pytest.fixture(scope="module")
def trajectory():
    t = np.linspace(0.0, 0.4, 5)
    q = Q[None] * np.linspace(0.0, 1.0, 5)[:, None] + 0.05 * np.sin(7.0 * t)[:, None]
    return t, q


def test_pvd_trajectory_round_trip(robot, link_mesh, trajectory, tmp_path):
    t, q = trajectory
    path = tmp_path / "run.pvd"
    sio.write_trajectory(path, robot, t, q, {2: link_mesh})
    root = ET.parse(path).getroot()  # the ParaView collection format
    assert root.tag == "VTKFile" and root.get("type") == "Collection"
    files = [d.get("file") for d in root.iter("DataSet")]
    assert files == [f"run/run_{k:06d}.vtu" for k in range(5)]
    assert all((tmp_path / f).is_file() for f in files)
    times, frames = sio.read_trajectory(path)
    np.testing.assert_array_equal(times, t)
    bad = tmp_path / "nan.pvd"  # a non-finite time was read without complaint
    bad.write_text(path.read_text().replace('timestep="0.0"', 'timestep="nan"', 1))
    with pytest.raises(ValueError, match="DataSet 0 of .* has no valid timestep \\(got 'nan'\\)"):
        sio.read_trajectory(bad)
    refs = sio.body_meshes(robot, {2: link_mesh})
    material = np.concatenate([m.points for m in refs])
    for qk, frame in zip(q, frames):
        np.testing.assert_allclose(frame.points, _world(qk, refs), rtol=0, atol=1e-15)
        np.testing.assert_array_equal(frame.point_data["material_coordinates"], material)
    first = meshio.read(tmp_path / files[0])
    np.testing.assert_array_equal(first.points, frames[0].points)  # every value kept


def test_xdmf_trajectory_round_trip(robot, link_mesh, trajectory, tmp_path):
    t, q = trajectory
    path = tmp_path / "run.xdmf"
    with pytest.warns(UserWarning, match="line cells .* left out of a mixed-topology XDMF"):
        sio.write_trajectory(path, robot, t, q, {2: link_mesh})
    times, frames = sio.read_trajectory(path)
    np.testing.assert_array_equal(times, t)
    refs = sio.body_meshes(robot, {2: link_mesh})
    with meshio.xdmf.TimeSeriesReader(path) as reader:
        points, cells = reader.read_points_cells()
    np.testing.assert_allclose(points, _world(np.zeros(5), refs), rtol=0, atol=1e-16)  # q = 0
    assert "line" not in {b.type for b in cells}  # the segment body's polyline
    counts = [0 if i == 3 else sum(len(c.data) for c in m.cells) for i, m in enumerate(refs)]
    for qk, frame in zip(q, frames):
        np.testing.assert_allclose(frame.points, _world(qk, refs), rtol=0, atol=1e-15)
        np.testing.assert_array_equal(frame.point_data["displacement"], frame.points - points)
        links = np.concatenate(frame.cell_data["link"])
        np.testing.assert_array_equal(links, np.repeat(np.arange(5), counts))


def test_xdmf_hdf_series_keeps_its_data_next_to_it(
    robot, link_mesh, trajectory, tmp_path, monkeypatch
):
    # meshio's time-series writer opened `<stem>.h5` in the working directory while the
    # .xdmf refers to it next to itself: the series could not be read back, and a file of that
    # name in the working directory was overwritten
    pytest.importorskip("h5py")
    t, q = trajectory
    out, cwd = tmp_path / "out", tmp_path / "cwd"
    out.mkdir()
    cwd.mkdir()
    (cwd / "run.h5").write_bytes(b"the user's own file")
    monkeypatch.chdir(cwd)
    with pytest.warns(UserWarning, match="line cells"):
        sio.write_trajectory(out / "run.xdmf", robot, t, q, {2: link_mesh}, data_format="HDF")
    assert (cwd / "run.h5").read_bytes() == b"the user's own file"
    times, frames = sio.read_trajectory(out / "run.xdmf")
    np.testing.assert_array_equal(times, t)
    refs = sio.body_meshes(robot, {2: link_mesh})
    for qk, frame in zip(q, frames):
        np.testing.assert_allclose(frame.points, _world(qk, refs), rtol=0, atol=1e-15)


def test_xdmf_with_quadratic_cells_beside_others_warns_that_meshio_cannot_read_it(tmp_path):
    # the file is valid XDMF, but meshio's mixed-topology reader knows no tetra10 size: the
    # warning says so at write time, and read_trajectory's error names the file
    from softrigid.io._files import _write_xdmf

    tet10 = np.array([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]])
    mesh = meshio.Mesh(
        np.random.default_rng(0).random((10, 3)),
        [("tetra10", tet10), ("triangle", np.array([[0, 1, 2]]))],
        cell_data={"link": [np.array([0]), np.array([1])]},
    )
    path = tmp_path / "mixed.xdmf"

    def write(p, m):
        _write_xdmf(p, m, m.points, m.points, np.zeros(1), [m.points], "XML")

    with pytest.warns(UserWarning, match="tetra10 cells in a mixed-topology XDMF file: valid"):
        write(path, mesh)
    with pytest.raises(ValueError, match="cannot read the XDMF time series"):
        sio.read_trajectory(path)
    # one cell type: no mixed topology, no warning, read back
    single = meshio.Mesh(mesh.points, [("tetra10", tet10)], cell_data={"link": [np.array([0])]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write(tmp_path / "single.xdmf", single)
    times, frames = sio.read_trajectory(tmp_path / "single.xdmf")
    np.testing.assert_array_equal(times, [0.0])
    np.testing.assert_array_equal(frames[0].cells_dict["tetra10"], tet10)


@pytest.mark.parametrize(
    "args, message",
    [
        (("run.vtu", np.zeros(2), np.zeros((2, 5))), r"path must end in \.pvd or \.xdmf"),
        (("run.pvd", np.zeros(3), np.zeros((2, 5))), r"t must have shape \(2,\)"),
        (
            ("run.pvd", np.array([0.0, -1.0]), np.zeros((2, 5))),
            "t must be finite and non-decreasing",
        ),
        (("run.pvd", np.zeros(2), np.zeros(5)), r"q must have shape \(S, n_q\) with n_q = 5"),
        (("run.xdmf", np.zeros(0), np.zeros((0, 5))), "the trajectory has no configurations"),
    ],
)
def test_write_trajectory_errors(robot, tmp_path, args, message):
    path, t, q = args
    with pytest.raises(ValueError, match=message):
        sio.write_trajectory(tmp_path / path, robot, t, q)
    # a data_format typo is refused whatever the suffix (a .pvd path ignored it)
    with pytest.raises(ValueError, match="data_format must be 'XML' or 'HDF', got 'xml '"):
        sio.write_trajectory(
            tmp_path / "r.pvd", robot, np.zeros(2), np.zeros((2, 5)), data_format="xml "
        )
    # HDF5 for a .pvd series was accepted and ignored (its frames are .vtu)
    with pytest.raises(ValueError, match=r"r\.pvd: data_format='HDF' applies to \.xdmf files"):
        sio.write_trajectory(
            tmp_path / "r.pvd", robot, np.zeros(2), np.zeros((2, 5)), data_format="HDF"
        )
    with pytest.raises(ValueError, match=r"path must end in \.pvd or \.xdmf"):
        sio.read_trajectory(tmp_path / "x.vtu")


def test_write_state_names_a_file_meshio_cannot_write(robot, link_mesh, tmp_path):
    path = tmp_path / "state.unknown"
    path.write_text("the user's own file")  # untouched by the failed write: kept
    with pytest.raises(ValueError, match=r"write_state: cannot write '.*state\.unknown' .*format"):
        sio.write_state(path, robot, Q, {2: link_mesh})
    assert path.read_text() == "the user's own file"


@pytest.mark.parametrize(
    ("suffix", "message"),
    [
        # meshio wrote it without an error, a file it cannot read (DOLFIN XML's integer
        # fields as `np.int64(0)`): reported written
        (".xml", r"meshio wrote '.*state\.xml' but cannot read it back"),
        # meshio's TetGen and Nastran writers failed half way: their partial files stayed
        (".node", r"cannot write '.*state\.node'"),
        (".bdf", r"cannot write '.*state\.bdf'"),
    ],
)
def test_write_state_leaves_no_file_meshio_cannot_read(robot, tmp_path, suffix, message):
    path = tmp_path / f"state{suffix}"
    with pytest.raises(ValueError, match=message):
        sio.write_state(path, robot, Q, {2: meshing.box((0.01, 0.01, L), (1, 1, 2))})
    assert not path.exists()


# ------------------------------------------------------------------ surfaces


def test_surface_of_a_box():
    a, b, length = 0.02, 0.03, 0.1
    mesh = meshing.box((a, b, length), (2, 3, 4))
    mesh.point_data["id"] = np.arange(len(mesh.points))
    s = sio.surface(mesh)
    tri = s.cells_dict["triangle"]
    p = s.points[tri]
    normal = 0.5 * np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    area = np.linalg.norm(normal, axis=1).sum()
    np.testing.assert_allclose(area, 2 * (a * b + a * length + b * length), rtol=1e-13)
    # outward: ∮ x · n dA = 3 V
    np.testing.assert_allclose((normal * p.mean(1)).sum(), 3 * a * b * length, rtol=1e-13)
    # nodes compacted (the box's interior nodes are gone), point data follow them
    assert len(s.points) == np.unique(tri).size < len(mesh.points)
    np.testing.assert_array_equal(mesh.points[s.point_data["id"]], s.points)


def test_surface_of_quadratic_and_surface_meshes():
    nodes = np.concatenate(
        [
            np.eye(4, 3, k=-1),
            [[0.5, 0, 0], [0.5, 0.5, 0], [0, 0.5, 0], [0, 0, 0.5], [0.5, 0, 0.5], [0, 0.5, 0.5]],
        ]
    )
    s = sio.surface(meshio.Mesh(nodes, [("tetra10", np.arange(10)[None])]))
    assert s.cells_dict["triangle6"].shape == (4, 6)
    tri = meshio.Mesh(nodes[:3], [("triangle", np.array([[0, 1, 2]]))])
    assert sio.surface(tri).cells_dict["triangle"].shape == (1, 3)
    with pytest.raises(ValueError, match=r"no tetrahedra or triangles \(cells: \['line'\]\)"):
        sio.surface(meshio.Mesh(nodes[:2], [("line", np.array([[0, 1]]))]))
    with pytest.raises(TypeError, match="surface: expected a meshio.Mesh"):
        sio.surface(nodes)


# ------------------------------------------------------------------ files other readers take


def _segment_robot() -> sr.Robot:
    return sr.Robot(
        [sr.Link(joints.Fixed(), sr.SoftBody(PlanarConstantCurvature(L), segment(L), 0.3))]
    )


def test_xdmf_of_polylines_only_names_their_nodes_per_element(tmp_path):
    # XDMF requires NodesPerElement on a Polyline topology (ParaView's reader refuses the file
    # without it); meshio's time-series writer left it out
    path = tmp_path / "segment.xdmf"
    sio.write_trajectory(path, _segment_robot(), [0.0, 1.0], [[0.0], [0.5]])
    topology = ET.parse(path).getroot().find(".//Topology")
    assert topology.get("TopologyType") == "Polyline"
    assert topology.get("NodesPerElement") == "2"
    times, frames = sio.read_trajectory(path)
    np.testing.assert_array_equal(times, [0.0, 1.0])
    assert frames[1].cells_dict["line"].shape == (20, 2)
    # two segment bodies: their line blocks as one Polyline topology (two blocks of one type
    # made meshio write a mixed topology, and its lines failed there with a broadcast error)
    segment_link = _segment_robot().links[0]
    two = sr.Robot([segment_link, segment_link])
    sio.write_trajectory(path, two, [0.0], [[0.2, 0.5]])
    topology = ET.parse(path).getroot().find(".//Topology")
    assert (topology.get("TopologyType"), topology.get("NodesPerElement")) == ("Polyline", "2")
    _, frames = sio.read_trajectory(path)
    np.testing.assert_array_equal(frames[0].cell_data["link"][0], np.repeat([0, 1], 20))
    drawn = sio.deformed_meshes(two, [0.2, 0.5])
    np.testing.assert_allclose(
        frames[0].points, np.concatenate([m.points for m in drawn]), atol=1e-15
    )


def test_xdmf_leaves_vertex_cells_out_of_a_mixed_topology(tmp_path):
    # meshio's time-series writer gives a vertex no node count in a mixed topology, where
    # XDMF requires one: a reader that follows the format loses its place in the stream
    rigid = sr.RigidBody(0.5, (0, 0, 0.05), np.eye(3) * 1e-3, (np.eye(3), (0, 0, L)))
    rob = sr.Robot(
        [
            sr.Link(joints.Revolute((0.0, 1.0, 0.0)), rigid),
            sr.Link(joints.Fixed(), sr.SoftBody(PlanarConstantCurvature(L), cylinder(R, L), 1e3)),
        ]
    )
    markers = meshio.Mesh(np.array([[0, 0, 0.0], [0, 0, L]]), [("vertex", np.array([[0], [1]]))])
    path = tmp_path / "markers.xdmf"
    with pytest.warns(UserWarning, match="vertex cells .* left out of a mixed-topology XDMF"):
        sio.write_trajectory(path, rob, [0.0], np.zeros((1, rob.n_q)), {0: markers})
    _, frames = sio.read_trajectory(path)
    assert {b.type for b in frames[0].cells} == {"tetra"}
    # alone, the markers are a Polyvertex topology with its NodesPerElement
    alone = sr.Robot([sr.Link(joints.Revolute((0.0, 1.0, 0.0)), rigid)])
    sio.write_trajectory(tmp_path / "alone.xdmf", alone, [0.0], np.zeros((1, 1)), {0: markers})
    topology = ET.parse(tmp_path / "alone.xdmf").getroot().find(".//Topology")
    assert (topology.get("TopologyType"), topology.get("NodesPerElement")) == ("Polyvertex", "1")


@pytest.mark.parametrize(
    "volume",
    [cylinder(2e-4, 1.0), box((0.1, 1e-4, 1.0), 2), tube(0.0099, 0.01, 1.0)],
    ids=["slender cylinder", "thin plate", "thin-walled tube"],
)
def test_drawn_meshes_of_slender_geometries_stay_small(volume):
    # meshing's default resolution would need 2.4e6 (the cylinder: refused), 4.8e8 (the
    # plate) and 4e8 (the tube) elements: a drawing is coarsened to DRAW_ELEMENTS
    from softrigid.io._bodies import DRAW_ELEMENTS

    rob = sr.Robot(
        [sr.Link(joints.Fixed(), sr.SoftBody(PlanarConstantCurvature(1.0), volume, 1e3))]
    )
    (mesh,) = sio.body_meshes(rob)
    count = sum(len(b.data) for b in mesh.cells)
    assert 0.1 * DRAW_ELEMENTS < count <= DRAW_ELEMENTS
    lo, hi = mesh.points.min(0), mesh.points.max(0)
    assert lo[2] == 0.0 and hi[2] == 1.0  # the whole length drawn


def test_drawn_mesh_of_an_ordinary_cylinder_is_meshings_default():
    (mesh, *_) = sio.body_meshes(
        sr.Robot(
            [sr.Link(joints.Fixed(), sr.SoftBody(PlanarConstantCurvature(L), cylinder(R, L), 1e3))]
        )
    )
    np.testing.assert_array_equal(
        mesh.cells_dict["tetra"], meshing.cylinder(R, L).cells_dict["tetra"]
    )


@pytest.mark.parametrize("suffix", [".stl", ".off", ".ply"])
def test_write_state_refuses_a_format_that_drops_the_cells(robot, link_mesh, tmp_path, suffix):
    # meshio writes these surface formats without the tetrahedra (a printed warning only)
    path = tmp_path / f"state{suffix}"
    with pytest.raises(ValueError, match=r"holds \d+ of the robot's \d+ cells .*write a \.vtu"):
        sio.write_state(path, robot, Q, {2: link_mesh})
    assert not path.exists()
    sio.write_state(tmp_path / "state.inp", robot, Q, {2: link_mesh})  # Abaqus holds them all
    back = meshio.read(tmp_path / "state.inp")
    assert sum(len(b.data) for b in back.cells) == sum(
        len(b.data) for m in sio.body_meshes(robot, {2: link_mesh}) if m for b in m.cells
    )


def test_pvd_needs_its_folder_and_removes_frames_of_a_longer_series(robot, tmp_path):
    with pytest.raises(FileNotFoundError, match="no folder"):
        sio.write_trajectory(tmp_path / "missing" / "run.pvd", robot, [0.0], np.zeros((1, 5)))
    path = tmp_path / "run.pvd"
    sio.write_trajectory(path, robot, np.arange(4.0), np.zeros((4, 5)))
    (tmp_path / "run" / "notes.txt").write_text("kept")
    sio.write_trajectory(path, robot, np.arange(2.0), np.zeros((2, 5)))
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "notes.txt",
        "run_000000.vtu",
        "run_000001.vtu",
    ]
    assert len(sio.read_trajectory(path)[1]) == 2


def test_user_meshes_without_cells(robot, tmp_path):
    box_mesh = meshing.box((0.01, 0.01, L), (1, 1, 1))
    empty_first = meshio.Mesh(
        box_mesh.points,
        [("triangle", np.zeros((0, 3), int)), ("tetra", box_mesh.cells_dict["tetra"])],
    )
    sio.write_state(tmp_path / "s.vtu", robot, Q, {2: empty_first})  # the empty block left out
    assert "triangle" not in meshio.read(tmp_path / "s.vtu").cells_dict
    with pytest.raises(ValueError, match="link 2: the mesh has no cells to draw"):
        sio.write_state(tmp_path / "s.vtu", robot, Q, {2: meshio.Mesh(box_mesh.points, [])})


def test_geometry_warning_points_at_the_callers_line(tmp_path):
    rule = QuadratureRule(np.array([[0.0, 0.0, 0.05]]), np.array([1e-4]))
    rob = sr.Robot(
        [
            sr.Link(joints.Fixed(), sr.SoftBody(PlanarConstantCurvature(L), rule, 1000.0)),
            sr.Link(joints.Fixed(), sr.SoftBody(PlanarConstantCurvature(L), segment(L), 0.3)),
        ]
    )
    for call in (
        lambda: sio.body_meshes(rob),
        lambda: sio.deformed_meshes(rob, np.zeros(2)),
        lambda: sio.write_state(tmp_path / "s.vtu", rob, np.zeros(2)),
    ):
        with pytest.warns(UserWarning, match="no known geometry") as record:
            call()
        assert record[0].filename == __file__


def test_float32_drawing_equals_float64_and_writes_without_warnings(tmp_path):
    """With x64 off a cylinder's sizes round to float32 (0.2 / (0.02 / 3) = 30.0000011): the
    drawing had 31 layers instead of 30 (1,184 nodes for 1,147), and writing a trajectory
    warned that a float64 array was truncated."""
    import jax

    def draw_and_write(folder):
        body = sr.SoftBody(PlanarConstantCurvature(0.2), cylinder(0.02, 0.2, 3, 1, 3), 1000.0)
        robot = sr.Robot([sr.Link(joints.Fixed(), body)])
        path = tmp_path / folder / "run.pvd"
        path.parent.mkdir()
        sio.write_trajectory(path, robot, np.array([0.0, 0.1]), np.array([[0.0], [0.5]]))
        return sio.body_meshes(robot)[0].points.shape, sio.read_trajectory(path)[1][1].points

    shape, points = draw_and_write("double")
    with jax.enable_x64(False), warnings.catch_warnings():
        warnings.simplefilter("error")
        single_shape, single_points = draw_and_write("single")
    assert single_shape == shape
    np.testing.assert_allclose(single_points, points, atol=1e-6)
    assert (
        meshing.tube(0.01, 0.02, 0.2).points.shape
        == meshing.tube(
            float(np.float32(0.01)), float(np.float32(0.02)), float(np.float32(0.2))
        ).points.shape
    )


def test_xdmf_needs_h5py_or_a_robot_defined_at_zero(robot, tmp_path, monkeypatch):
    # write_state's XDMF failed inside meshio ("No module named 'h5py'") after the robot was
    # drawn; a trajectory's XDMF reference at q = 0 of a map undefined there was named as a
    # generic non-finite value of links_world_points
    import importlib.util

    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "h5py" else found(name, *a)
    )
    with pytest.raises(ValueError, match=r"s.xdmf: meshio's XDMF writer needs h5py"):
        sio.write_state(tmp_path / "s.xdmf", robot, np.zeros(robot.n_q))
    assert not (tmp_path / "s.xdmf").exists()
    monkeypatch.undo()
    body = sr.SoftBody(
        lambda x, q: x * (1.0 + jnp.log(q[0])), cylinder(0.01, 0.1), density=1000.0, n_q=1
    )
    log_map = sr.Robot([sr.Link(joints.Fixed(), body)])
    sio.write_trajectory(tmp_path / "f.pvd", log_map, [0.0, 1.0], [[1.0], [1.2]])
    with pytest.raises(ValueError, match=r"f.xdmf: an XDMF file's reference geometry is the robot"):
        sio.write_trajectory(tmp_path / "f.xdmf", log_map, [0.0, 1.0], [[1.0], [1.2]])
