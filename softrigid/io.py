"""Export of deformed robots to ParaView-readable files, and surfaces for plotting.

Every body is drawn from a mesh of its reference volume, mapped to the world by
`softrigid.world_points` (the body's map `f(x, q_B)` and the chain's placement):

- a `meshes` entry given for the link (a `meshio.Mesh`, a file path or a `ReferenceMesh`; any
  cell types, e.g. an STL surface for a rigid link), in the body's material coordinates (for a
  `RigidBody`, its proximal frame);
- else, for a `SoftBody`, its volume's own mesh (`quadrature.from_mesh`) or a mesh of its
  built-in geometry from `softrigid.meshing` (`cylinder`, `tube`, `box`; a `segment` is drawn
  as a polyline on the axis);
- else the body is skipped: a `RigidBody` carries only mass, centre of mass and inertia, so it
  is drawn only from a mesh you give (a `SoftBody` on a rule of unknown geometry is skipped
  with a warning).

Files (all through meshio, all ParaView-readable; bodies merged into one mesh with the cell
field `link` and the point field `material_coordinates`):

- `write_state(path, robot, q)`: one configuration, any meshio format by suffix (`.vtu`).
- `write_trajectory(path, robot, t, q)`: a time series. `.pvd`: one compressed binary `.vtu`
  per frame (in the folder `<stem>/` next to the `.pvd`), the geometry moves. `.xdmf`: one
  file, the reference geometry (the robot at `q = 0`) with the point field `displacement`
  per step (apply ParaView's *Warp By Vector*) and `position`; data are stored as XML text
  (`data_format="HDF"` needs `h5py`).
"""

from __future__ import annotations

import functools
import os
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import meshio
import numpy as np
from jax import Array

from . import meshing
from ._chain import world_points
from ._model import Robot
from ._soft_body import SoftBody
from .quadrature import ReferenceMesh
from .quadrature._mesh import read_mesh, reader_errors

__all__ = [
    "body_meshes",
    "deformed_meshes",
    "read_trajectory",
    "surface",
    "write_state",
    "write_trajectory",
]

_CHUNK = 64  # most frames mapped per compiled call (a power of two)
_SEGMENT_DIVISIONS = 20


def _as_meshio(where: str, value: Any) -> meshio.Mesh:
    if isinstance(value, meshio.Mesh):
        return value
    if isinstance(value, ReferenceMesh):
        return value.to_meshio()
    if isinstance(value, (str, os.PathLike)):
        return read_mesh(value, where)
    raise TypeError(
        f"{where}: a mesh must be a meshio.Mesh, a ReferenceMesh or a file path, "
        f"got {type(value).__name__}"
    )


def _geometry_mesh(volume: Any) -> meshio.Mesh | None:
    """A mesh of a rule's reference volume, or `None` when its geometry is unknown."""
    if volume.geometry == "mesh":
        return volume.mesh.to_meshio()
    if volume.geometry is None or volume.dimensions is None:
        return None
    dims = [float(d) for d in np.asarray(volume.dimensions)]
    if volume.geometry == "cylinder":
        return meshing.cylinder(*dims)
    if volume.geometry == "tube":
        return meshing.tube(*dims)
    if volume.geometry == "box":
        h = 0.5 * min(dims[0], dims[1])
        return meshing.box(dims, tuple(max(1, round(s / h)) for s in dims))
    z = np.linspace(0.0, dims[0], _SEGMENT_DIVISIONS + 1)
    points = np.stack([np.zeros_like(z), np.zeros_like(z), z], -1)
    lines = np.stack([np.arange(_SEGMENT_DIVISIONS), np.arange(1, _SEGMENT_DIVISIONS + 1)], -1)
    return meshio.Mesh(points, [("line", lines)])


def _mesh_entries(robot: Robot, meshes: Any) -> list[Any]:
    n = robot.n_links
    if meshes is None:
        return [None] * n
    if isinstance(meshes, Mapping):
        bad = [k for k in meshes if not isinstance(k, int) or not 0 <= k < n]
        if bad:
            raise ValueError(f"meshes: keys must be link indices in [0, {n}), got {bad}")
        return [meshes.get(i) for i in range(n)]
    if isinstance(meshes, Sequence) and not isinstance(meshes, (str, bytes)):
        if len(meshes) != n:
            raise ValueError(f"meshes: expected one entry per link ({n}), got {len(meshes)}")
        return list(meshes)
    raise TypeError(
        "meshes must be None, a sequence with one entry per link, or a dict {link index: mesh}, "
        f"got {type(meshes).__name__}"
    )


def body_meshes(robot: Robot, meshes: Any = None) -> tuple[meshio.Mesh | None, ...]:
    """The reference mesh of every link's body, in its material coordinates (rules in the
    module docstring).

    Args:
        robot: a `softrigid.Robot`.
        meshes: `None`, a sequence with one entry per link, or a dict `{link index: mesh}`;
            an entry is `None`, a `meshio.Mesh`, a `ReferenceMesh` or a mesh file path.

    Returns:
        One `meshio.Mesh` (or `None`: nothing to draw) per link.
    """
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a softrigid.Robot, got {type(robot).__name__}")
    out = []
    for i, (link, given) in enumerate(zip(robot.links, _mesh_entries(robot, meshes))):
        if given is not None:
            mesh = _as_meshio(f"meshes[{i}]", given)
        elif isinstance(link.body, SoftBody):
            mesh = _geometry_mesh(link.body.volume)
            if mesh is None:
                warnings.warn(
                    f"link {i}: the soft body's volume has no known geometry; "
                    f"give meshes[{i}] to draw it",
                    UserWarning,
                    stacklevel=2,
                )
        else:
            mesh = None
        if mesh is not None:
            pts = np.asarray(mesh.points, dtype=float)
            if pts.ndim != 2 or pts.shape[1] != 3 or not np.all(np.isfinite(pts)):
                raise ValueError(f"link {i}: mesh points must be finite with shape (N, 3)")
            _check_cells(f"link {i}", mesh)
        out.append(mesh)
    return tuple(out)


@functools.partial(jax.jit, static_argnames="links")
def _world_batch(
    robot: Robot, qs: Array, points: tuple[Array, ...], links: tuple[int, ...]
) -> tuple[Array, ...]:
    def one(q: Array) -> tuple[Array, ...]:
        return tuple(world_points(robot, q, i, p) for i, p in zip(links, points))

    return jax.vmap(one)(qs)


def _positions(
    robot: Robot, qs: np.ndarray, refs: Sequence[meshio.Mesh | None]
) -> list[np.ndarray]:
    """World node positions `(S, N, 3)` of all drawn bodies, concatenated over bodies."""
    links = tuple(i for i, m in enumerate(refs) if m is not None)
    if not links:
        return [np.zeros((0, 3)) for _ in range(qs.shape[0])]
    points = tuple(jnp.asarray(refs[i].points, dtype=qs.dtype) for i in links)
    frames = []
    for start in range(0, qs.shape[0], _CHUNK):
        chunk = qs[start : start + _CHUNK]
        # pad to a power of two: few distinct batch sizes, few compilations
        pad = (1 << (chunk.shape[0] - 1).bit_length()) - chunk.shape[0]
        batch = np.concatenate([chunk, np.repeat(chunk[-1:], pad, 0)])
        world = _world_batch(robot, jnp.asarray(batch), points, links)
        merged = np.concatenate([np.asarray(w) for w in world], axis=1)
        frames.append(merged[: chunk.shape[0]])
    return list(np.concatenate(frames))


def _merge(refs: Sequence[meshio.Mesh | None]) -> meshio.Mesh:
    """All drawn bodies as one mesh in material coordinates, with the `link` cell field."""
    points, cells, link_data = [], [], []
    offset = 0
    for i, mesh in enumerate(refs):
        if mesh is None:
            continue
        points.append(np.asarray(mesh.points, dtype=float))
        for block in mesh.cells:
            cells.append((block.type, np.asarray(block.data) + offset))
            link_data.append(np.full(len(block.data), i, dtype=np.int64))
        offset += points[-1].shape[0]
    if not points:
        raise ValueError(
            "no body has a mesh to draw: soft bodies on from_mesh / cylinder / tube / box / "
            "segment volumes are drawn automatically, rigid bodies need meshes={index: mesh}"
        )
    return meshio.Mesh(np.concatenate(points), cells, cell_data={"link": link_data})


def _path(where: str, path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{where}: path must be a str or a Path, got {type(path).__name__}")
    return Path(path)


def _write_mesh(where: str, path: Path, mesh: meshio.Mesh, **options: Any) -> None:
    """`meshio.write`, its failures (an unknown suffix, cells the format cannot hold) a
    `ValueError` naming the file; `OSError`s (no such folder, no permission) pass unchanged."""
    try:
        meshio.write(path, mesh, **options)
    except OSError:
        raise
    except (Exception, SystemExit) as err:
        raise ValueError(
            f"{where}: cannot write {str(path)!r} ({type(err).__name__}: {err})"
        ) from None


def _configurations(robot: Robot, q: Any, batched: bool) -> np.ndarray:
    arr = meshing._real_array("q", q, finite=False)
    shape = "(S, n_q)" if batched else "(n_q,)"
    if arr.ndim != (2 if batched else 1) or arr.shape[-1] != robot.n_q:
        raise ValueError(f"q must have shape {shape} with n_q = {robot.n_q}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("q contains non-finite values (NaN or inf)")
    return arr


def deformed_meshes(robot: Robot, q: Any, meshes: Any = None) -> tuple[meshio.Mesh | None, ...]:
    """The bodies' meshes at configuration `q`, in world coordinates.

    Args:
        robot: a `softrigid.Robot`; q: `(n_q,)`; meshes: as in `body_meshes`.

    Returns:
        Per link a `meshio.Mesh` whose points are world positions `p = world_points(robot, q,
        i, x)` of its nodes `x`, with the point field `material_coordinates` (= `x`), or `None`.
    """
    refs = body_meshes(robot, meshes)
    q = _configurations(robot, q, batched=False)
    world = _positions(robot, q[None], refs)[0]
    out, start = [], 0
    for mesh in refs:
        if mesh is None:
            out.append(None)
            continue
        n = mesh.points.shape[0]
        out.append(
            meshio.Mesh(
                world[start : start + n],
                mesh.cells,
                point_data={"material_coordinates": np.asarray(mesh.points, dtype=float)},
            )
        )
        start += n
    return tuple(out)


def write_state(path: str | os.PathLike, robot: Robot, q: Any, meshes: Any = None) -> None:
    """Write the robot at configuration `q` to one mesh file (format by suffix; `.vtu` opens
    in ParaView): all drawn bodies at their world positions, cell field `link` (link index),
    point field `material_coordinates`. A format meshio cannot write (an unknown suffix, cells
    it cannot hold) is a `ValueError` naming the file."""
    path = _path("write_state", path)
    refs = body_meshes(robot, meshes)
    q = _configurations(robot, q, batched=False)
    merged = _merge(refs)
    merged.point_data["material_coordinates"] = merged.points
    merged.points = _positions(robot, q[None], refs)[0]
    _write_mesh("write_state", path, merged)


def _times(t: Any, n: int) -> np.ndarray:
    times = meshing._real_array("t", t, finite=False)
    if times.shape != (n,):
        raise ValueError(f"t must have shape ({n},), one time per configuration, got {times.shape}")
    if not np.all(np.isfinite(times)) or np.any(np.diff(times) < 0):
        raise ValueError("t must be finite and non-decreasing")
    return times


def write_trajectory(
    path: str | os.PathLike,
    robot: Robot,
    t: Any,
    q: Any,
    meshes: Any = None,
    *,
    data_format: str = "XML",
) -> None:
    """Write a trajectory as a ParaView time series.

    Args:
        path: `*.pvd` (a `.vtu` per frame in the folder `<stem>/` next to it; the geometry
            moves) or `*.xdmf` (one file: reference geometry at `q = 0` plus the point fields
            `displacement` and `position` per step; *Warp By Vector* shows the motion).
        robot: a `softrigid.Robot`.
        t: `(S,)` times, non-decreasing; q: `(S, n_q)` configurations (e.g. a
            `softrigid.Trajectory`'s `t` and `q`).
        meshes: as in `body_meshes`.
        data_format: XDMF only: `"XML"` (inline text, exact float64 round trip, no extra
            dependency) or `"HDF"` (needs `h5py`).

    Every frame carries the cell field `link` and the point field `material_coordinates`.
    """
    path = _path("write_trajectory", path)
    suffix = path.suffix.lower()
    if suffix not in (".pvd", ".xdmf"):
        raise ValueError(f"write_trajectory: path must end in .pvd or .xdmf, got {path.name!r}")
    if suffix == ".xdmf" and data_format not in ("XML", "HDF"):
        raise ValueError(
            f"write_trajectory: data_format must be 'XML' or 'HDF', got {data_format!r}"
        )
    refs = body_meshes(robot, meshes)
    qs = _configurations(robot, q, batched=True)
    times = _times(t, qs.shape[0])
    merged = _merge(refs)
    material = np.asarray(merged.points, dtype=float)
    positions = _positions(robot, qs, refs)
    if suffix == ".pvd":
        _write_pvd(path, merged, material, times, positions)
    else:
        reference = _positions(robot, np.zeros((1, robot.n_q)), refs)[0]
        _write_xdmf(path, merged, material, reference, times, positions, data_format)


def _write_pvd(
    path: Path,
    merged: meshio.Mesh,
    material: np.ndarray,
    times: np.ndarray,
    positions: list[np.ndarray],
) -> None:
    folder = path.with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)
    root = ET.Element("VTKFile", type="Collection", version="0.1", byte_order="LittleEndian")
    collection = ET.SubElement(root, "Collection")
    for k, (time, pos) in enumerate(zip(times, positions)):
        name = f"{folder.name}_{k:06d}.vtu"
        frame = meshio.Mesh(
            pos,
            merged.cells,
            point_data={"material_coordinates": material},
            cell_data=merged.cell_data,
        )
        _write_mesh("write_trajectory", folder / name, frame, file_format="vtu")
        ET.SubElement(
            collection,
            "DataSet",
            timestep=repr(float(time)),
            group="",
            part="0",
            file=f"{folder.name}/{name}",
        )
    ET.indent(root)
    ET.ElementTree(root).write(path, xml_declaration=True, encoding="utf-8")


def _write_xdmf(
    path: Path,
    merged: meshio.Mesh,
    material: np.ndarray,
    reference: np.ndarray,
    times: np.ndarray,
    positions: list[np.ndarray],
    data_format: str,
) -> None:
    cells, links = merged.cells, merged.cell_data["link"]
    if len({b.type for b in cells}) > 1 and any(b.type == "line" for b in cells):
        # meshio cannot write polylines inside a mixed XDMF topology
        warnings.warn(
            "write_trajectory: line cells (segment bodies) are left out of a mixed-topology "
            "XDMF file; write a .pvd to keep them",
            UserWarning,
            stacklevel=3,
        )
        keep = [k for k, b in enumerate(cells) if b.type != "line"]
        cells, links = [cells[k] for k in keep], [links[k] for k in keep]
    with meshio.xdmf.TimeSeriesWriter(path, data_format=data_format) as writer:
        writer.write_points_cells(reference, cells)
        for time, pos in zip(times, positions):
            writer.write_data(
                float(time),
                point_data={
                    "position": pos,
                    "displacement": pos - reference,
                    "material_coordinates": material,
                },
                cell_data={"link": links},
            )


def read_trajectory(path: str | os.PathLike) -> tuple[np.ndarray, list[meshio.Mesh]]:
    """Read a time series written by `write_trajectory`.

    Returns:
        `(t (S,), frames)`: one `meshio.Mesh` per time whose points are the world positions
        (for `.xdmf`: the stored `position` field) with the stored point and cell fields.

    Raises:
        FileNotFoundError: no file at `path` (or a frame file a `.pvd` lists is missing).
        ValueError: a suffix other than `.pvd`/`.xdmf`, or a file (or frame) that is empty,
            corrupt or not a time series; the message names the file.
    """
    path = _path("read_trajectory", path)
    suffix = path.suffix.lower()
    if suffix not in (".pvd", ".xdmf"):
        raise ValueError(f"read_trajectory: path must end in .pvd or .xdmf, got {path.name!r}")
    if not path.exists():
        raise FileNotFoundError(f"read_trajectory: file {str(path)!r} not found")
    if not path.is_file() or path.stat().st_size == 0:
        raise ValueError(f"read_trajectory: {str(path)!r} is empty or not a file")
    if suffix == ".pvd":
        times, files = _pvd_frames(path)
        return times, [read_mesh(f, f"read_trajectory: frame {k}") for k, f in enumerate(files)]
    times, frames = [], []
    with reader_errors(f"read_trajectory: cannot read the XDMF time series {str(path)!r}"):
        with meshio.xdmf.TimeSeriesReader(path) as reader:
            _, cells = reader.read_points_cells()
            for k in range(reader.num_steps):
                time, point_data, cell_data = reader.read_data(k)
                times.append(time)
                frames.append(meshio.Mesh(point_data["position"], cells, point_data, cell_data))
    return np.array(times, dtype=float), frames


def _pvd_frames(path: Path) -> tuple[np.ndarray, list[Path]]:
    """Times and frame files of a ParaView collection (`.pvd`)."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as err:
        raise ValueError(
            f"read_trajectory: {str(path)!r} is not a valid .pvd (XML) file: {err}"
        ) from None
    sets = root.findall("./Collection/DataSet")
    if root.tag != "VTKFile" or not sets:
        raise ValueError(
            f"read_trajectory: {str(path)!r} is not a ParaView collection "
            "(no VTKFile/Collection/DataSet entries)"
        )
    times, files = [], []
    for k, entry in enumerate(sets):
        time, file = entry.get("timestep"), entry.get("file")
        try:
            times.append(float(time))
        except (TypeError, ValueError):
            raise ValueError(
                f"read_trajectory: DataSet {k} of {str(path)!r} has no valid timestep "
                f"(got {time!r})"
            ) from None
        if not file:
            raise ValueError(f"read_trajectory: DataSet {k} of {str(path)!r} names no file")
        files.append(path.parent / file)
    return np.array(times, dtype=float), files


def _check_cells(where: str, mesh: meshio.Mesh) -> None:
    """Every cell block holds integer node indices within the mesh's points."""
    n = len(mesh.points)
    for block in mesh.cells:
        data = np.asarray(block.data)
        if data.dtype.kind not in "iu":
            raise ValueError(f"{where}: {block.type} cells must hold integer node indices")
        if data.size and (data.min() < 0 or data.max() >= n):
            raise ValueError(f"{where}: {block.type} cells reference nodes outside [0, {n})")


def surface(mesh: meshio.Mesh) -> meshio.Mesh:
    """The boundary surface of a tetrahedral mesh, for plotting.

    Tetrahedra give their boundary faces (`triangle`, or `triangle6` for `tetra10`) with
    outward normals; a mesh without tetrahedra keeps its `triangle` cells. Nodes are compacted
    to those the surface uses, and point fields follow them.

    Example (matplotlib): `s = surface(m); ax.plot_trisurf(*s.points.T,
    triangles=s.cells_dict["triangle"])`.
    """
    if not isinstance(mesh, meshio.Mesh):
        raise TypeError(f"surface: expected a meshio.Mesh, got {type(mesh).__name__}")
    _check_cells("surface", mesh)
    blocks = []
    for block in mesh.cells:
        if block.type == "tetra":
            blocks.append(("triangle", meshing.boundary_faces(block.data)))
        elif block.type == "tetra10":
            blocks.append(("triangle6", meshing.boundary_faces(block.data)))
    if not blocks:
        blocks = [(b.type, np.asarray(b.data)) for b in mesh.cells if b.type == "triangle"]
    if not blocks:
        types = sorted({b.type for b in mesh.cells}) or ["none"]
        raise ValueError(f"surface: the mesh has no tetrahedra or triangles (cells: {types})")
    used = np.unique(np.concatenate([c.ravel() for _, c in blocks]))
    remap = np.full(len(mesh.points), -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    return meshio.Mesh(
        np.asarray(mesh.points)[used],
        [(kind, remap[c]) for kind, c in blocks],
        point_data={k: np.asarray(v)[used] for k, v in mesh.point_data.items()},
    )
