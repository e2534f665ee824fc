"""Files of deformed robots (`softrigid.io`): one configuration in any meshio format, time
series as ParaView collections (`.pvd`, a `.vtu` per frame) or XDMF, and reading them back."""

from __future__ import annotations

import glob
import importlib.util
import os
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import meshio
import numpy as np

from .._mesh_input import real_array
from .._model import Robot
from ..quadrature._mesh import read_mesh, reader_errors
from ._bodies import _configurations, _merge, _positions, reference_meshes

__all__ = ["read_trajectory", "write_state", "write_trajectory"]


def _path(where: str, path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{where}: path must be a str or a Path, got {type(path).__name__}")
    return Path(path)


def _stamp(path: Path) -> tuple[int, int] | None:
    """`(size, modification time in ns)` of an existing file, else `None`."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


def _write_mesh(where: str, path: Path, mesh: meshio.Mesh, **options: Any) -> None:
    """`meshio.write`, its failures (an unknown suffix, cells the format cannot hold) a
    `ValueError` naming the file, with the partial file it left removed (a file that was there
    before and that the failed write did not touch is kept); `OSError`s (no such folder, no
    permission) pass unchanged."""
    before = _stamp(path)
    try:
        meshio.write(path, mesh, **options)
    except OSError:
        raise
    except (Exception, SystemExit) as err:
        if _stamp(path) != before:
            path.unlink(missing_ok=True)
        raise ValueError(
            f"{where}: cannot write {str(path)!r} ({type(err).__name__}: {err})"
        ) from None


def write_state(path: str | os.PathLike, robot: Robot, q: Any, meshes: Any = None) -> None:
    """Write the robot at configuration `q` to one mesh file (format by suffix; `.vtu` opens
    in ParaView): all drawn bodies at their world positions, cell field `link` (link index),
    point field `material_coordinates`. A format meshio cannot write (an unknown suffix, cells
    it cannot hold) is a `ValueError` naming the file: formats other than `.vtu`, `.vtk` and
    XDMF are read back, and a file that lost cells (meshio leaves out, with a printed warning,
    the cells a surface format such as `.stl`, `.off` or `.ply` cannot hold) is removed. XDMF
    needs `h5py` (meshio's writer imports it; refused up front without it)."""
    path = _path("write_state", path)
    if path.suffix.lower() in (".xdmf", ".xmf") and importlib.util.find_spec("h5py") is None:
        raise ValueError(
            f"write_state: {path.name}: meshio's XDMF writer needs h5py (pip install h5py); "
            "`.vtu` needs nothing, and write_trajectory writes XDMF with its data inline"
        )
    refs = reference_meshes(robot, meshes, stacklevel=3)
    q = _configurations(robot, q, batched=False)
    merged = _merge(refs)
    merged.point_data["material_coordinates"] = merged.points
    merged.points = _positions(robot, q[None], refs)[0]
    _write_mesh("write_state", path, merged)
    if path.suffix.lower() not in _HOLDS_ALL_CELLS:
        _check_written(path, merged)


# the suffixes whose meshio writers keep every cell type (the others are read back), and the
# one meshio (5.3) writes but cannot read
_HOLDS_ALL_CELLS = (".vtu", ".vtk", ".xdmf", ".xmf")
_WRITE_ONLY = (".svg",)


def _check_written(path: Path, mesh: meshio.Mesh) -> None:
    """Read `path` back: a `ValueError` naming the file (and the file removed) where meshio
    cannot read it (its DOLFIN XML writer, for one, writes integer fields as `np.int64(0)`,
    its TetGen writer vector fields as `[0. 0. 0.]`) or where it holds fewer cells than
    `mesh` (a format may convert cell types, e.g. Tecplot's tetrahedra to degenerate
    hexahedra, but not drop cells)."""
    if path.suffix.lower() in _WRITE_ONLY:  # nothing to compare
        return
    try:
        back = meshio.read(path)
    except (Exception, SystemExit) as err:
        path.unlink()
        raise ValueError(
            f"write_state: meshio wrote {str(path)!r} but cannot read it back "
            f"({type(err).__name__}: {err}); the file was removed: write a .vtu"
        ) from None
    written = sum(len(block.data) for block in mesh.cells)
    held = sum(len(block.data) for block in back.cells)
    if held < written:
        path.unlink()
        kinds = ", ".join(dict.fromkeys(block.type for block in mesh.cells))
        raise ValueError(
            f"write_state: {str(path)!r} holds {held} of the robot's {written} cells "
            f"({kinds}): meshio left out those its format cannot hold (the file was removed); "
            "write a .vtu"
        )


def _times(t: Any, n: int) -> np.ndarray:
    if n == 0:
        raise ValueError("write_trajectory: the trajectory has no configurations (q has 0 rows)")
    times = real_array("t", t, finite=False)
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
        t: `(S,)` times, non-decreasing (equal times, e.g. both sides of a switch, are
            separate frames in the file, but ParaView shows one frame per time); q:
            `(S, n_q)` configurations (e.g. a `softrigid.Trajectory`'s `t` and `q`).
        meshes: as in `body_meshes`.
        data_format: XDMF only: `"XML"` (inline text, exact float64 round trip, no extra
            dependency) or `"HDF"` (needs `h5py`; refused for `.pvd`).

    Every frame carries the cell field `link` and the point field `material_coordinates`.
    """
    path = _path("write_trajectory", path)
    suffix = path.suffix.lower()
    if suffix not in (".pvd", ".xdmf"):
        raise ValueError(f"write_trajectory: path must end in .pvd or .xdmf, got {path.name!r}")
    if data_format not in ("XML", "HDF"):  # whatever the suffix: a typo is not ignored
        raise ValueError(
            f"write_trajectory: data_format must be 'XML' or 'HDF', got {data_format!r}"
        )
    if suffix == ".pvd" and data_format == "HDF":  # a .vtu per frame, written as XML
        raise ValueError(
            f"write_trajectory: {path.name}: data_format='HDF' applies to .xdmf files only (a "
            ".pvd series is written as one .vtu per frame); write .xdmf for HDF5 data"
        )
    if suffix == ".xdmf" and data_format == "HDF" and importlib.util.find_spec("h5py") is None:
        raise ValueError(
            f"write_trajectory: {path.name}: data_format='HDF' needs h5py (pip install h5py); "
            "data_format='XML' writes the same data inline"
        )
    refs = reference_meshes(robot, meshes, stacklevel=3)
    qs = _configurations(robot, q, batched=True)
    times = _times(t, qs.shape[0])
    merged = _merge(refs)
    material = np.asarray(merged.points, dtype=float)
    positions = _positions(robot, qs, refs)
    if suffix == ".pvd":
        _write_pvd(path, merged, material, times, positions)
    else:
        try:
            reference = _positions(robot, np.zeros((1, robot.n_q)), refs)[0]
        except ValueError as err:  # the frames checked out: the trouble is at q = 0
            raise ValueError(
                f"write_trajectory: {path.name}: an XDMF file's reference geometry is the robot "
                f"at q = 0, where its positions cannot be computed ({err}); write `.pvd` (no "
                "reference) for a robot not defined at q = 0"
            ) from None
        _write_xdmf(path, merged, material, reference, times, positions, data_format)


def _write_pvd(
    path: Path,
    merged: meshio.Mesh,
    material: np.ndarray,
    times: np.ndarray,
    positions: list[np.ndarray],
) -> None:
    folder = path.with_suffix("")
    if not path.parent.is_dir():  # as every other file written: no folder is made up
        raise FileNotFoundError(f"write_trajectory: no folder {str(path.parent)!r}")
    folder.mkdir(exist_ok=True)
    # frames of an earlier, longer series under the same name would outlive it
    for old in folder.glob(f"{glob.escape(folder.name)}_[0-9][0-9][0-9][0-9][0-9][0-9].vtu"):
        if int(old.stem[-6:]) >= len(times):
            old.unlink()
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


# the cell types meshio's XDMF reader can read in a mixed topology (meshio 5.3)
_MIXED_READABLE = {"vertex", "line", "triangle", "quad", "tetra", "pyramid", "wedge", "hexahedron"}


class _SeriesWriter(meshio.xdmf.TimeSeriesWriter):
    """meshio's XDMF time-series writer with its HDF5 file next to the `.xdmf` (meshio 5.3
    opens `<stem>.h5` in the working directory, while the `.xdmf` refers to it by name, i.e.
    next to itself: the series could not be read back, and a file of that name in the working
    directory was overwritten)."""

    def __enter__(self) -> _SeriesWriter:
        if self.data_format == "HDF":
            import h5py

            self.h5_filename = str(self.filename.with_suffix(".h5"))
            self.h5_file = h5py.File(self.h5_filename, "w")
        return self


def _write_xdmf(
    path: Path,
    merged: meshio.Mesh,
    material: np.ndarray,
    reference: np.ndarray,
    times: np.ndarray,
    positions: list[np.ndarray],
    data_format: str,
) -> None:
    cells, links = _one_block_per_type(merged.cells, merged.cell_data["link"])
    dropped = sorted({b.type for b in cells} & {"line", "vertex"})
    if len(cells) > 1 and dropped:
        # meshio's time-series writer gives lines and vertices in a mixed topology no node
        # count (or a broken one), which XDMF requires there
        warnings.warn(
            f"write_trajectory: {' and '.join(dropped)} cells (segment bodies, point markers) "
            "are left out of a mixed-topology XDMF file; write a .pvd to keep them",
            UserWarning,
            stacklevel=3,
        )
        keep = [k for k, b in enumerate(cells) if b.type not in dropped]
        cells, links = [cells[k] for k in keep], [links[k] for k in keep]
    higher = sorted({b.type for b in cells} - _MIXED_READABLE)
    if len(cells) > 1 and higher:
        # valid XDMF (the format numbers these types in a mixed topology), but meshio's reader
        # lacks their sizes there, so read_trajectory cannot read the file back
        warnings.warn(
            f"write_trajectory: {', '.join(higher)} cells in a mixed-topology XDMF file: valid "
            "XDMF, but meshio and read_trajectory cannot read it back; write a .pvd to read "
            "the trajectory in Python",
            UserWarning,
            stacklevel=3,
        )
    with _SeriesWriter(path, data_format=data_format) as writer:
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
    if cells[0].type in ("line", "vertex"):  # (then the only block: the others are dropped)
        _nodes_per_element(path, cells[0].data.shape[1])


def _one_block_per_type(
    cells: list[meshio.CellBlock], links: list[np.ndarray]
) -> tuple[list[meshio.CellBlock], list[np.ndarray]]:
    """The cell blocks merged by type (in order of first appearance), with their `link`
    values: meshio's time-series writer makes several blocks a mixed topology even of one type
    (two segment bodies' lines failed there with a NumPy broadcast error)."""
    kinds = list(dict.fromkeys(b.type for b in cells))
    merged = [
        meshio.CellBlock(k, np.concatenate([b.data for b in cells if b.type == k])) for k in kinds
    ]
    by_kind = [np.concatenate([v for b, v in zip(cells, links) if b.type == k]) for k in kinds]
    return merged, by_kind


def _nodes_per_element(path: Path, nodes: int) -> None:
    """Give the file's `Polyline` or `Polyvertex` topology its `NodesPerElement`, which XDMF
    requires (ParaView's reader refuses the file without it) and meshio's time-series writer
    leaves out."""
    tree = ET.parse(path)
    for topology in tree.iter("Topology"):
        topology.set("NodesPerElement", str(nodes))
    tree.write(path)


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
            if not np.isfinite(times[-1]):
                raise ValueError(time)
        except (TypeError, ValueError):
            raise ValueError(
                f"read_trajectory: DataSet {k} of {str(path)!r} has no valid timestep "
                f"(got {time!r})"
            ) from None
        if not file:
            raise ValueError(f"read_trajectory: DataSet {k} of {str(path)!r} names no file")
        files.append(path.parent / file)
    return np.array(times, dtype=float), files
