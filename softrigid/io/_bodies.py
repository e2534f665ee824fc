"""The bodies' meshes for export (`softrigid.io`): the reference mesh of every link's body
(given, from its volume's mesh or from its built-in geometry), their world positions at
configurations (mapped in compiled, power-of-two-padded batches), the merged mesh with the cell
field `link`, and boundary surfaces for plotting."""

from __future__ import annotations

import functools
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import meshio
import numpy as np
from jax import Array

from .. import meshing
from .._cache import jit
from .._chain import links_world_points
from .._checks import is_real_dtype
from .._mesh_input import ceil_count, real_array
from .._model import Robot
from .._reports import raise_runtime_errors
from .._sections import nesting_count
from .._soft_body import SoftBody
from ..quadrature import ReferenceMesh
from ..quadrature._mesh import read_mesh

__all__ = ["body_meshes", "deformed_meshes", "reference_meshes", "surface"]

_CHUNK = 64  # most frames mapped per compiled call (a power of two)
_SEGMENT_DIVISIONS = 20
# the most elements of the mesh drawn for a built-in geometry (cylinder, tube, box), and the
# most sides of a tube's drawn section
DRAW_ELEMENTS = 200_000
_DRAW_SIDES = 96


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
    """A mesh of a rule's reference volume, or `None` when its geometry is unknown. Built-in
    geometries get `softrigid.meshing`'s default resolution, coarsened where that would exceed
    `DRAW_ELEMENTS` (a slender rod, a thin plate or wall: longer, flatter elements; a drawing,
    not an integration mesh)."""
    if volume.geometry == "mesh":
        return volume.mesh.to_meshio()
    if volume.geometry is None or volume.dimensions is None:
        return None
    dims = [float(d) for d in np.asarray(volume.dimensions)]
    if volume.geometry == "cylinder":
        # meshing.cylinder's default section: 3 rings, 18 sides (54 triangles, 3 tetrahedra
        # each per layer), layers as high as the ring spacing
        layers = _layers(dims[1], dims[0] / 3, 3 * 54)
        return meshing.cylinder(*dims, n_radial=3, n_angular=18, n_axial=layers)
    if volume.geometry == "tube":
        h = 0.5 * (dims[1] - dims[0])  # 2 rings, meshing.tube's default
        sides = min(max(6, ceil_count(2.0 * math.pi * dims[1] / h)), _DRAW_SIDES)
        # a wall thinner than 1e-3 of its radius: more sides, so the middle ring lies inside
        # the outer polygon
        sides = max(sides, nesting_count(dims[1] - h, dims[1]))
        layers = _layers(dims[2], h, 12 * sides)
        return meshing.tube(*dims, n_radial=2, n_angular=sides, n_axial=layers)
    if volume.geometry == "box":
        return meshing.box(dims, _box_divisions(dims))
    z = np.linspace(0.0, dims[0], _SEGMENT_DIVISIONS + 1)
    points = np.stack([np.zeros_like(z), np.zeros_like(z), z], -1)
    lines = np.stack([np.arange(_SEGMENT_DIVISIONS), np.arange(1, _SEGMENT_DIVISIONS + 1)], -1)
    return meshio.Mesh(points, [("line", lines)])


def _layers(length: float, h: float, per_layer: int) -> int:
    """Layers about `h` high along `length`, at most `DRAW_ELEMENTS` elements in all."""
    return max(1, min(ceil_count(length / h), DRAW_ELEMENTS // per_layer))


def _box_divisions(dims: list[float]) -> tuple[int, ...]:
    """Cells about half the section's smaller side wide (six tetrahedra each), wider where
    that would exceed `DRAW_ELEMENTS` (a thin plate)."""
    h = 0.5 * min(dims[0], dims[1])
    while True:
        counts = tuple(max(1, round(s / h)) for s in dims)
        if 6 * math.prod(counts) <= DRAW_ELEMENTS:
            return counts
        h *= 1.25


def _mesh_entries(robot: Robot, meshes: Any) -> list[Any]:
    n = robot.n_links
    if meshes is None:
        return [None] * n
    if isinstance(meshes, Mapping):
        index = (int, np.integer)
        bad = [
            k for k in meshes if not isinstance(k, index) or isinstance(k, bool) or not 0 <= k < n
        ]
        if bad:
            raise ValueError(f"meshes: keys must be link indices in [0, {n}), got {bad}")
        by_link = {int(k): v for k, v in meshes.items()}
        return [by_link.get(i) for i in range(n)]
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
    return reference_meshes(robot, meshes, stacklevel=3)


def reference_meshes(robot: Robot, meshes: Any, stacklevel: int) -> tuple[meshio.Mesh | None, ...]:
    """`body_meshes`, its warnings `stacklevel` frames up (the public caller's caller)."""
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
                    stacklevel=stacklevel,
                )
        else:
            mesh = None
        if mesh is not None:
            raw = np.asarray(mesh.points)
            if not is_real_dtype(raw.dtype):
                # (a complex mesh lost its imaginary parts in the file)
                raise TypeError(f"link {i}: mesh points must be real, got dtype {raw.dtype}")
            pts = raw.astype(float)
            if pts.ndim != 2 or pts.shape[1] != 3 or not np.all(np.isfinite(pts)):
                raise ValueError(f"link {i}: mesh points must be finite with shape (N, 3)")
            _check_cells(f"link {i}", mesh)
            mesh = _drawn_cells(f"link {i}", mesh)
        out.append(mesh)
    return tuple(out)


@functools.partial(jit, static_argnames="links")
def _world_batch(
    robot: Robot, qs: Array, points: tuple[Array, ...], links: tuple[int, ...]
) -> tuple[Array, ...]:
    return jax.vmap(lambda q: links_world_points(robot, q, links, points))(qs)


def _positions(
    robot: Robot, qs: np.ndarray, refs: Sequence[meshio.Mesh | None]
) -> list[np.ndarray]:
    """World node positions `(S, N, 3)` of all drawn bodies, concatenated over bodies."""
    links = tuple(i for i, m in enumerate(refs) if m is not None)
    if not links:
        return [np.zeros((0, 3)) for _ in range(qs.shape[0])]
    dtype = jax.dtypes.canonicalize_dtype(qs.dtype)  # float32 where x64 is off
    points = tuple(jnp.asarray(refs[i].points, dtype=dtype) for i in links)
    frames = []
    for start in range(0, qs.shape[0], _CHUNK):
        chunk = qs[start : start + _CHUNK]
        # pad to a power of two: few distinct batch sizes, few compilations
        pad = (1 << (chunk.shape[0] - 1).bit_length()) - chunk.shape[0]
        batch = np.concatenate([chunk, np.repeat(chunk[-1:], pad, 0)])
        # a run-time check that fires (a non-finite state or map) as a ValueError
        world = raise_runtime_errors(
            lambda b=batch: _world_batch(robot, jnp.asarray(b), points, links)
        )
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


def _configurations(robot: Robot, q: Any, batched: bool) -> np.ndarray:
    arr = real_array("q", q, finite=False)
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
    refs = reference_meshes(robot, meshes, stacklevel=3)
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


def _drawn_cells(where: str, mesh: meshio.Mesh) -> meshio.Mesh:
    """`mesh` without its empty cell blocks (which the file writers cannot take); a mesh left
    without cells is a `ValueError` naming it."""
    blocks = [b for b in mesh.cells if len(b.data)]
    if not blocks:
        raise ValueError(
            f"{where}: the mesh has no cells to draw (give vertex cells to draw its points)"
        )
    return mesh if len(blocks) == len(mesh.cells) else meshio.Mesh(mesh.points, blocks)


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
