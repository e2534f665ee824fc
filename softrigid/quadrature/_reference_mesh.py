"""The tetrahedral mesh a rule was built from (`ReferenceMesh`), and the checks every mesh passes:
connectivity in range, no element listed twice, no two elements overlapping across a face."""

from __future__ import annotations

import hashlib
from typing import Any

import meshio
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from .._mesh_input import index_array, real_array

__all__ = [
    "TET_TYPES",
    "ReferenceMesh",
    "check_duplicates",
    "check_overlaps",
    "connectivity",
    "index_list",
    "merge_coincident",
]

TET_TYPES = {"tetra": 4, "tetra10": 10}
_LIST = 20  # indices listed in an error message


class ReferenceMesh:
    """The tetrahedral mesh a rule was built from: nodes and element blocks, read-only.

    Hashable and compared by content (a SHA-1 of the arrays), so it can sit in a static pytree
    field: two rules from the same mesh have equal tree structures. The constructor checks
    finite `(N, 3)` points, `tetra`/`tetra10` blocks of the right width with node indices in
    range, and no duplicated element, also through coincident nodes (`ValueError` naming the
    field or the elements).

    Attributes:
        points: `(N, 3)` node coordinates (only nodes used by the elements).
        cells: tuple of `(cell_type, (E_b, n_b) node indices)`, `cell_type` in
            `("tetra", "tetra10")` (VTK node order).
    """

    __slots__ = ("_digest", "cells", "points")

    def __init__(self, points: np.ndarray, cells: tuple[tuple[str, np.ndarray], ...]) -> None:
        pts = real_array("ReferenceMesh: points", points, finite=False)
        if pts.ndim != 2 or pts.shape[1] != 3 or not np.all(np.isfinite(pts)):
            raise ValueError(
                f"ReferenceMesh: points must be finite with shape (N, 3), got shape {pts.shape}"
            )
        pts.setflags(write=False)
        if isinstance(cells, (str, bytes)) or not hasattr(cells, "__iter__"):
            raise TypeError(
                "ReferenceMesh: cells must be a sequence of (cell_type, connectivity) pairs, "
                f"got {type(cells).__name__}"
            )
        blocks = []
        sha = hashlib.sha1(pts.tobytes())
        for b, block in enumerate(cells):
            if not isinstance(block, (tuple, list)) or len(block) != 2:
                raise TypeError(
                    f"ReferenceMesh: cells[{b}] must be a (cell_type, connectivity) pair, "
                    f"got {type(block).__name__}"
                )
            kind, conn = block
            arr = connectivity(f"ReferenceMesh: cells[{b}]", kind, conn, pts.shape[0])
            arr.setflags(write=False)
            blocks.append((kind, arr))
            sha.update(kind.encode())
            sha.update(arr.tobytes())
        if not blocks:
            raise ValueError("ReferenceMesh: cells must hold at least one tetra or tetra10 block")
        corner = np.concatenate([c[:, :4] for _, c in blocks])
        check_duplicates("ReferenceMesh", "the mesh", merge_coincident(pts)[corner])
        self.points = pts
        self.cells = tuple(blocks)
        self._digest = sha.hexdigest()

    @property
    def n_elements(self) -> int:
        """Number of tetrahedra."""
        return sum(c.shape[0] for _, c in self.cells)

    def to_meshio(self) -> meshio.Mesh:
        """A new `meshio.Mesh` with these nodes and elements."""
        return meshio.Mesh(self.points.copy(), [(k, c.copy()) for k, c in self.cells])

    def __hash__(self) -> int:
        return hash(self._digest)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReferenceMesh) and other._digest == self._digest

    def __repr__(self) -> str:
        kinds = ", ".join(f"{c.shape[0]} {k}" for k, c in self.cells)
        return f"ReferenceMesh({self.points.shape[0]} nodes, {kinds})"


def index_list(mask: np.ndarray) -> str:
    idx = np.flatnonzero(mask)
    text = ", ".join(str(i) for i in idx[:_LIST])
    return f"[{text}{', ...' if idx.size > _LIST else ''}]"


def connectivity(name: str, kind: Any, conn: Any, n_points: int) -> np.ndarray:
    """A `tetra`/`tetra10` connectivity `(E, 4)`/`(E, 10)` with indices in `[0, n_points)`."""
    if kind not in TET_TYPES:
        raise ValueError(f"{name}: cell type must be 'tetra' or 'tetra10', got {kind!r}")
    arr = index_array(f"{name}: {kind} cells", conn)
    width = TET_TYPES[kind]
    if arr.ndim != 2 or arr.shape[1] != width:
        raise ValueError(f"{name}: {kind} cells must have shape (E, {width}), got {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= n_points):
        raise ValueError(f"{name}: {kind} cells reference nodes outside [0, {n_points})")
    return arr


def merge_coincident(points: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """One label per node `(N,)`: nodes closer than `tol ·` the largest extent of the nodes
    (coincident nodes, e.g. a node written twice) share a label, chains of them included; the
    others keep their own index. Element checks compare labels, not node indices."""
    eps = tol * float(np.ptp(points, axis=0).max()) if points.size else 0.0
    pairs = cKDTree(points).query_pairs(eps, output_type="ndarray")
    if pairs.size == 0:
        return np.arange(points.shape[0])
    n = points.shape[0]
    graph = coo_matrix((np.ones(pairs.shape[0]), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    return connected_components(graph, directed=False)[1]


def check_duplicates(where: str, source: str, corner: np.ndarray) -> None:
    """Refuse elements on the same four corner points as an earlier one, in any order (the same
    tetrahedron listed twice, once per orientation, or again through coincident nodes): their
    volume would count twice. `corner` `(E, 4)` holds the `merge_coincident` labels."""
    key = np.sort(corner, axis=1)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    original = first[inverse.reshape(-1)]
    repeated = original != np.arange(corner.shape[0])
    if repeated.any():
        idx = np.flatnonzero(repeated)[:_LIST]
        pairs = ", ".join(f"{i} = {original[i]}" for i in idx)
        more = ", ..." if repeated.sum() > _LIST else ""
        raise ValueError(
            f"{where}: {source} has {int(repeated.sum())} duplicated tetrahedra (the same four "
            "corner points as an earlier element, in any order, through the same or coincident "
            f"nodes: the volume would count twice) at element indices {index_list(repeated)} "
            f"(duplicate = original: {pairs}{more})"
        )


def check_overlaps(where: str, source: str, corner: np.ndarray) -> None:
    """Refuse positively oriented elements that share a face and lie on the same side of it
    (they overlap): in a valid mesh a shared face is seen with opposite orientations. `corner`
    `(E, 4)` holds the `merge_coincident` labels."""
    faces = corner[:, [[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]]].reshape(-1, 3)
    # the same oriented triangle: equal after rotating its smallest index to the front
    shift = np.argmin(faces, axis=1)
    rolled = np.stack([faces[np.arange(len(faces)), (shift + k) % 3] for k in range(3)], 1)
    _, inverse, counts = np.unique(rolled, axis=0, return_inverse=True, return_counts=True)
    clash = counts[inverse.reshape(-1)] > 1
    if clash.any():
        elements = np.zeros(corner.shape[0], dtype=bool)
        elements[np.flatnonzero(clash) // 4] = True
        raise ValueError(
            f"{where}: {source} has {int(elements.sum())} overlapping tetrahedra (two elements on the same "
            f"side of a shared face: the volume would count twice) at element indices "
            f"{index_list(elements)}"
        )
