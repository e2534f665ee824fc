"""Quadrature rules over tetrahedral meshes (any format meshio reads).

`from_mesh` maps a tetrahedral rule (`_tetra.py`) onto every element:

    ∫_V g dV ≈ Σ_e Σ_k |det J_e(ξ_k)| / 6 · w_k · g(x_e(ξ_k)),

with `x_e(ξ) = Σ_a N_a(ξ) X_a` the element map (affine for `tetra`, quadratic isoparametric for
`tetra10`) and `ξ` the coordinates on the unit tetrahedron (volume 1/6).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import meshio
import numpy as np

from .. import meshing
from ._rule import QuadratureRule
from ._tetra import check_degree, tetrahedron_rule

__all__ = ["ReferenceMesh", "distal_points", "from_mesh", "tetrahedron"]

_TET_TYPES = {"tetra": 4, "tetra10": 10}
_LIST = 20  # indices listed in an error message


class ReferenceMesh:
    """The tetrahedral mesh a rule was built from: nodes and element blocks, read-only.

    Hashable and compared by content (a SHA-1 of the arrays), so it can sit in a static pytree
    field: two rules from the same mesh have equal tree structures. The constructor checks
    finite `(N, 3)` points, `tetra`/`tetra10` blocks of the right width with node indices in
    range, and no duplicated element (`ValueError` naming the field or the elements).

    Attributes:
        points: `(N, 3)` node coordinates (only nodes used by the elements).
        cells: tuple of `(cell_type, (E_b, n_b) node indices)`, `cell_type` in
            `("tetra", "tetra10")` (VTK node order).
    """

    __slots__ = ("_digest", "cells", "points")

    def __init__(self, points: np.ndarray, cells: tuple[tuple[str, np.ndarray], ...]) -> None:
        pts = meshing._real_array("ReferenceMesh: points", points, finite=False)
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
            arr = _connectivity(f"ReferenceMesh: cells[{b}]", kind, conn, pts.shape[0])
            arr.setflags(write=False)
            blocks.append((kind, arr))
            sha.update(kind.encode())
            sha.update(arr.tobytes())
        if not blocks:
            raise ValueError("ReferenceMesh: cells must hold at least one tetra or tetra10 block")
        _check_duplicates("ReferenceMesh", np.concatenate([c[:, :4] for _, c in blocks]))
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


def _indices(mask: np.ndarray) -> str:
    idx = np.flatnonzero(mask)
    text = ", ".join(str(i) for i in idx[:_LIST])
    return f"[{text}{', ...' if idx.size > _LIST else ''}]"


def _connectivity(name: str, kind: Any, conn: Any, n_points: int) -> np.ndarray:
    """A `tetra`/`tetra10` connectivity `(E, 4)`/`(E, 10)` with indices in `[0, n_points)`."""
    if kind not in _TET_TYPES:
        raise ValueError(f"{name}: cell type must be 'tetra' or 'tetra10', got {kind!r}")
    arr = meshing._index_array(f"{name}: {kind} cells", conn)
    width = _TET_TYPES[kind]
    if arr.ndim != 2 or arr.shape[1] != width:
        raise ValueError(f"{name}: {kind} cells must have shape (E, {width}), got {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= n_points):
        raise ValueError(f"{name}: {kind} cells reference nodes outside [0, {n_points})")
    return arr


def _check_duplicates(where: str, corner: np.ndarray) -> None:
    """Refuse elements on the same four corner nodes as an earlier one, in any order (the same
    tetrahedron listed twice, or once per orientation): their volume would count twice."""
    key = np.sort(corner, axis=1)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    original = first[inverse.reshape(-1)]
    repeated = original != np.arange(corner.shape[0])
    if repeated.any():
        idx = np.flatnonzero(repeated)[:_LIST]
        pairs = ", ".join(f"{i} = {original[i]}" for i in idx)
        more = ", ..." if repeated.sum() > _LIST else ""
        raise ValueError(
            f"{where}: {int(repeated.sum())} duplicated tetrahedra (the same four nodes as an "
            f"earlier element, in any order: the volume would count twice) at element indices "
            f"{_indices(repeated)} (duplicate = original: {pairs}{more})"
        )


def _check_overlaps(where: str, corner: np.ndarray) -> None:
    """Refuse positively oriented elements that share a face and lie on the same side of it
    (they overlap): in a valid mesh a shared face is seen with opposite orientations."""
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
            f"{where}: {int(elements.sum())} overlapping tetrahedra (two elements on the same "
            f"side of a shared face: the volume would count twice) at element indices "
            f"{_indices(elements)}"
        )


@contextlib.contextmanager
def reader_errors(message: str) -> Iterator[None]:
    """Any failure inside the block, `SystemExit` included, becomes `ValueError(message
    (the reader's output and error))`: meshio prints a reader's error and calls `sys.exit(1)`
    on some bad files, which `except Exception` cannot catch."""
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            yield
    except (Exception, SystemExit) as err:
        printed = " ".join(captured.getvalue().split())
        raised = "" if isinstance(err, SystemExit) else f"{type(err).__name__}: {err}"
        detail = "; ".join(m for m in (printed, raised) if m) or "no message"
        raise ValueError(f"{message} ({detail})") from None


def read_mesh(path: Any, where: str) -> meshio.Mesh:
    """`meshio.read(path)` with clear errors: `FileNotFoundError` for a missing file, else a
    `ValueError` naming the file (empty, not a file, or the reader's message)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(
            f"{where}: a mesh file path must be a str or a Path, got {type(path).__name__}"
        )
    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"{where}: mesh file {str(file)!r} not found")
    if not file.is_file():
        raise ValueError(f"{where}: {str(file)!r} is not a file")
    if file.stat().st_size == 0:
        raise ValueError(f"{where}: mesh file {str(file)!r} is empty")
    with reader_errors(f"{where}: cannot read the mesh file {str(file)!r}"):
        return meshio.read(file)


def _degree_rule(where: str, degree: Any) -> tuple[np.ndarray, np.ndarray]:
    return tetrahedron_rule(check_degree(where, degree))


def _load(mesh_or_path: Any) -> meshio.Mesh:
    if isinstance(mesh_or_path, meshio.Mesh):
        return mesh_or_path
    if isinstance(mesh_or_path, (str, os.PathLike)):
        return read_mesh(mesh_or_path, "from_mesh")
    raise TypeError(
        f"from_mesh: expected a meshio.Mesh or a file path, got {type(mesh_or_path).__name__}"
    )


def _shape_functions(bary: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quadratic tetrahedron (VTK tetra10 order): `N (K, 10)` and `∂N/∂ξ (K, 10, 3)` with
    `ξ = (λ1, λ2, λ3)`, `λ0 = 1 − ξ1 − ξ2 − ξ3`."""
    lam = bary
    edges = [(0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3)]
    # ∂λ/∂ξ: λ0 → (−1, −1, −1), λi → e_i
    dlam = np.array([[-1.0, -1.0, -1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    n_vert = lam * (2.0 * lam - 1.0)  # N_i = λ_i (2 λ_i − 1)
    dn_vert = (4.0 * lam - 1.0)[:, :, None] * dlam[None]
    n_edge = np.stack([4.0 * lam[:, i] * lam[:, j] for i, j in edges], -1)  # N = 4 λ_i λ_j
    dn_edge = np.stack(
        [4.0 * (lam[:, i, None] * dlam[j] + lam[:, j, None] * dlam[i]) for i, j in edges], 1
    )
    return np.concatenate([n_vert, n_edge], 1), np.concatenate([dn_vert, dn_edge], 1)


def _element_rule(
    kind: str, x: np.ndarray, bary: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes `(E, K, 3)`, weights `(E, K)` and the smallest `det J / 6` per element `(E,)`
    (checked at the rule's nodes and at the four vertices for curved elements)."""
    if kind == "tetra":
        vol = np.linalg.det(x[:, 1:4] - x[:, :1]) / 6.0
        return np.einsum("ki,eij->ekj", bary, x), vol[:, None] * w[None], vol
    shape, dshape = _shape_functions(bary)
    pts = np.einsum("ka,eaj->ekj", shape, x)
    jac = np.einsum("kas,eaj->ekjs", dshape, x)
    det = np.linalg.det(jac) / 6.0
    _, dvert = _shape_functions(np.eye(4))
    det_vert = np.linalg.det(np.einsum("kas,eaj->ekjs", dvert, x)) / 6.0
    return pts, det * w[None], np.minimum(det.min(1), det_vert.min(1))


def _density(density: Any, mesh: meshio.Mesh, blocks: list[int], n_elements: int) -> np.ndarray:
    if isinstance(density, str):
        if density not in mesh.cell_data:
            raise ValueError(
                f"from_mesh: no cell field {density!r} in the mesh "
                f"(cell fields: {sorted(mesh.cell_data) or 'none'})"
            )
        rho = np.concatenate(
            [
                meshing._real_array(
                    f"from_mesh: cell field {density!r}", mesh.cell_data[density][b], finite=False
                )
                for b in blocks
            ]
        )
        if rho.ndim == 2 and rho.shape[1] == 1:
            rho = rho[:, 0]
        what = f"cell field {density!r}"
    else:
        rho = meshing._real_array("from_mesh: density", density, finite=False)
        what = "density"
        if rho.ndim == 0:
            rho = np.full(n_elements, float(rho))
    if rho.shape != (n_elements,):
        raise ValueError(
            f"from_mesh: {what} must have one value per tetrahedron ({n_elements},), got {rho.shape}"
        )
    rho = rho.astype(float)
    bad = ~np.isfinite(rho) | (rho <= 0)
    if bad.any():
        raise ValueError(
            f"from_mesh: {what} must be finite and positive; elements {_indices(bad)} are not"
        )
    return rho


def _ray_exit(c: np.ndarray, u: np.ndarray, tri: np.ndarray) -> float:
    """Largest `t ≥ 0` with `c + t u` in the union of triangles `tri (F, 3, 2)` (0 if none):
    the ray is clipped against the three edge half-planes of every triangle."""
    t_lo = np.zeros(tri.shape[0])
    t_hi = np.full(tri.shape[0], np.inf)
    for i in range(3):
        a, b = tri[:, i], tri[:, (i + 1) % 3]
        e = b - a
        normal = np.stack([e[:, 1], -e[:, 0]], -1)  # outward for counter-clockwise triangles
        # inside: normal · (c + t u − a) ≤ 0
        num = -(normal @ c - np.einsum("fi,fi->f", normal, a))
        den = normal @ u
        with np.errstate(divide="ignore", invalid="ignore"):
            t = num / den
        t_hi = np.where(den > 0, np.minimum(t_hi, t), t_hi)
        t_lo = np.where(den < 0, np.maximum(t_lo, t), t_lo)
        t_hi = np.where((den == 0) & (num < 0), -np.inf, t_hi)
    hit = t_hi >= t_lo
    return float(t_hi[hit].max()) if hit.any() else 0.0


def distal_points(
    points: np.ndarray, cells: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Default distal pivot and contact points of a meshed body.

    The distal face is the part of the boundary in the plane `x3 = max x3` (within
    `1e-9 ×` the axial extent). The pivot is its area centroid `c`; with `u1`, `u2` the
    principal axes of its second area moment (`u1` the major one; `e1`, `e2` when the face is
    isotropic, e.g. a disk or a regular polygon; `u1 × u2 = e3`), the contact points are where
    the rays `c + t u1` and `c + t u2` leave the face, i.e. points on the face's rim, as the
    built-in volumes' `(R, 0, L)` and `(0, R, L)`.

    Args:
        points: `(N, 3)` nodes; cells: `(E, 4)` linear or `(E, 10)` quadratic tetrahedra (only
            their corner nodes are used).

    Returns:
        `(pivot, contact_a, contact_b)` `(3,)` each, or `None` when the mesh has no flat face at
        its maximal `x3` (then give `pivot=` and `contact_points=` to `SoftBody`).
    """
    points = meshing._real_array("distal_points: points", points, finite=False)
    if points.ndim != 2 or points.shape[1] != 3 or not np.all(np.isfinite(points)):
        raise ValueError(
            f"distal_points: points must be finite with shape (N, 3), got shape {points.shape}"
        )
    cells = meshing._index_array("distal_points: cells", cells)
    if cells.ndim != 2 or cells.shape[1] not in (4, 10) or cells.shape[0] == 0:
        raise ValueError(
            f"distal_points: cells must have shape (E, 4) or (E, 10), E >= 1, got {cells.shape}"
        )
    if cells.min() < 0 or cells.max() >= points.shape[0]:
        raise ValueError(f"distal_points: cells reference nodes outside [0, {points.shape[0]})")
    faces = meshing.boundary_faces(cells[:, :4])
    z = points[:, 2]
    top = z.max()
    tol = 1e-9 * max(np.ptp(z), np.ptp(points).max())
    faces = faces[np.all(z[faces] >= top - tol, axis=1)]
    if faces.shape[0] == 0:
        return None
    tri = points[faces][:, :, :2]
    e1, e2 = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    area = 0.5 * (e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])  # > 0: outward normal is +x3
    total = area.sum()
    if not total > 1e-12 * np.ptp(points).max() ** 2:
        return None
    c = (area[:, None] * tri.mean(1)).sum(0) / total
    # ∫_T x xᵀ dA = A/12 (Σ p_i p_iᵀ + s sᵀ), s = Σ p_i; then about the centroid
    s = tri.sum(1)
    second = (
        area[:, None, None]
        / 12.0
        * (np.einsum("fip,fiq->fpq", tri, tri) + s[:, :, None] * s[:, None, :])
    ).sum(0) - total * np.outer(c, c)
    ev, vec = np.linalg.eigh(second)
    if ev[1] - ev[0] <= 1e-9 * (ev[1] + ev[0]):
        u1 = np.array([1.0, 0.0])
    else:
        u1 = vec[:, 1] * np.sign(vec[np.argmax(np.abs(vec[:, 1])), 1])
    u2 = np.array([-u1[1], u1[0]])
    pivot = np.array([c[0], c[1], top])
    contact = []
    for u in (u1, u2):
        t = _ray_exit(c, u, tri)
        if t <= 0.0:  # centroid outside the face: use the farthest face node along u
            t = float(np.max((tri.reshape(-1, 2) - c) @ u))
        contact.append(np.array([*(c + t * u), top]))
    return pivot, contact[0], contact[1]


def from_mesh(mesh_or_path: Any, degree: int = 2, density: Any = None) -> QuadratureRule:
    """A quadrature rule over a tetrahedral mesh.

    Reads any format meshio reads (`.msh`, `.vtu`, `.vtk`, `.xdmf`, `.med`, `.inp`, TetGen
    `.node`/`.ele`, …) or takes a `meshio.Mesh`. Its `tetra` (linear) and `tetra10` (quadratic,
    VTK node order, isoparametric) blocks are the volume; other cells (surface triangles,
    lines, points) are ignored. Coordinates are the body's material coordinates (softrigid's
    convention: axis `x3 ∈ [0, L]`, section centred).

    Each element gets the `degree` tetrahedral rule (`tetrahedron_rule`), so a polynomial of
    that degree (in the element's reference coordinates) is integrated exactly: for linear
    elements, volume, centre of mass and inertia are exact from degree 2 on. For `tetra10`, the
    Jacobian determinant is a cubic, so the inertia needs degree 7 to be exact.

    Args:
        mesh_or_path: a `meshio.Mesh`, or a path of a mesh file.
        degree: polynomial degree of the rule per element (1 to 30; 1–6 symmetric with positive
            weights).
        density: `None` (give the density to the body), the name of a cell field of the mesh
            (one value per tetrahedron), an array `(E,)` over the tetrahedra (in block order),
            or a scalar; stored per node in `QuadratureRule.density`.

    Returns:
        A `QuadratureRule` with `E·K` nodes (element-major), `geometry="mesh"`, the compacted
        `ReferenceMesh` in `mesh`, and the default distal pivot and contact points of
        `distal_points` (or `None` when the mesh has no flat distal face).

    Raises:
        TypeError: not a mesh or a path; points, cells or density that are not numbers.
        FileNotFoundError: no file at the path.
        ValueError: a file that is empty, corrupt or not a mesh (the message names it and
            carries the reader's error; meshio's `sys.exit` is caught); no tetrahedra; points
            not 3-D; non-finite coordinates; node indices out of range or not integers;
            duplicated elements (the same four nodes in any order, either orientation),
            degenerate, inverted or overlapping elements (two on the same side of a shared
            face): their indices, counted over the tetrahedral blocks in order, are listed;
            a bad density.

    Warns:
        UserWarning: nodes used by no tetrahedron (typical of CAD exports: geometry points,
            surface-only nodes). They are harmless for the integrals, so they are dropped with
            a warning rather than an error.
    """
    mesh = _load(mesh_or_path)
    source = "the mesh" if isinstance(mesh_or_path, meshio.Mesh) else f"'{mesh_or_path}'"
    bary, w = _degree_rule("from_mesh", degree)
    points = meshing._real_array("from_mesh: mesh points", mesh.points, finite=False)
    if points.size == 0:
        raise ValueError(
            f"from_mesh: {source} has no points/tetrahedra (an empty mesh, or a file that is "
            "not a mesh in the format of its suffix)"
        )
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(
            f"from_mesh: the points of {source} must have shape (N, 3), got {points.shape}"
        )
    blocks = [i for i, c in enumerate(mesh.cells) if c.type in _TET_TYPES]
    if not blocks:
        types = sorted({c.type for c in mesh.cells}) or ["none"]
        raise ValueError(
            f"from_mesh: {source} has no tetrahedra (tetra or tetra10 cells); "
            f"cell types found: {', '.join(types)}"
        )
    bad_nodes = ~np.all(np.isfinite(points), axis=1)
    if bad_nodes.any():
        raise ValueError(
            f"from_mesh: non-finite node coordinates (NaN or inf) at nodes {_indices(bad_nodes)}"
        )
    cells = [
        (
            mesh.cells[b].type,
            _connectivity("from_mesh", mesh.cells[b].type, mesh.cells[b].data, points.shape[0]),
        )
        for b in blocks
    ]
    _check_duplicates("from_mesh", np.concatenate([conn[:, :4] for _, conn in cells]))
    used = np.unique(np.concatenate([c.ravel() for _, c in cells]))
    if used.size < points.shape[0]:
        unused = np.ones(points.shape[0], dtype=bool)
        unused[used] = False
        warnings.warn(
            f"from_mesh: {int(unused.sum())} nodes are used by no tetrahedron and are ignored "
            f"(nodes {_indices(unused)})",
            UserWarning,
            stacklevel=2,
        )
    # Compact the nodes to those the tetrahedra use.
    remap = np.full(points.shape[0], -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    points = points[used]
    cells = [(kind, remap[conn]) for kind, conn in cells]

    nodes, weights, min_vol = [], [], []
    for kind, conn in cells:
        x, wk, v = _element_rule(kind, points[conn], bary, w)
        nodes.append(x.reshape(-1, 3))
        weights.append(wk.reshape(-1))
        min_vol.append(v)
    min_vol = np.concatenate(min_vol)
    corner = np.concatenate([conn[:, :4] for _, conn in cells])
    edges = points[corner][:, [1, 2, 3, 2, 3, 3]] - points[corner][:, [0, 0, 0, 1, 1, 2]]
    h = np.linalg.norm(edges, axis=-1).max(1)
    degenerate = np.abs(min_vol) <= 1e-10 * h**3
    inverted = (min_vol < 0) & ~degenerate
    if degenerate.any():
        raise ValueError(
            f"from_mesh: {int(degenerate.sum())} degenerate tetrahedra (zero volume) at element "
            f"indices {_indices(degenerate)}"
        )
    if inverted.any():
        hint = ""
        if inverted.all():
            hint = (
                "; every element is inverted, so the file uses the opposite vertex order: "
                "swap two vertices of every element, e.g. cells[:, [0, 2, 1, 3]]"
            )
        raise ValueError(
            f"from_mesh: {int(inverted.sum())} inverted tetrahedra (negative volume: vertices "
            f"not ordered right-handed) at element indices {_indices(inverted)}{hint}"
        )
    _check_overlaps("from_mesh", corner)
    n_elements = corner.shape[0]
    rho = None
    if density is not None:
        rho = jnp.asarray(np.repeat(_density(density, mesh, blocks, n_elements), w.size))
    frame = distal_points(points, corner)
    pivot, contact_a, contact_b = (None, None, None) if frame is None else frame
    return QuadratureRule(
        jnp.asarray(np.concatenate(nodes)),
        jnp.asarray(np.concatenate(weights)),
        pivot=pivot,
        contact_a=contact_a,
        contact_b=contact_b,
        density=rho,
        geometry="mesh",
        mesh=ReferenceMesh(points, tuple(cells)),
    )


def tetrahedron(vertices: Any = None, degree: int = 2) -> QuadratureRule:
    """The `degree` rule on one tetrahedron (default: the unit one, `(0,0,0), e1, e2, e3`).

    Args:
        vertices: `(4, 3)` positively oriented vertices, or `None`.
        degree: exactness degree (see `from_mesh`).

    Returns:
        A `QuadratureRule` without pivot or contact points, weights summing to the volume.

    Raises:
        TypeError, ValueError: vertices that are not a finite `(4, 3)` array of numbers, or are
            degenerate (`|V| ≤ 1e-10 h³`, `h` the longest edge) or negatively oriented; a bad
            `degree`.
    """
    verts = (
        np.eye(4, 3, k=-1)
        if vertices is None
        else meshing._real_array("tetrahedron: vertices", vertices, finite=False)
    )
    if verts.shape != (4, 3):
        raise ValueError(f"tetrahedron: vertices must have shape (4, 3), got {verts.shape}")
    if not np.all(np.isfinite(verts)):
        raise ValueError("tetrahedron: vertices must be finite")
    vol = float(np.linalg.det(verts[1:] - verts[0]) / 6.0)
    h = max(np.linalg.norm(verts[i] - verts[j]) for i in range(4) for j in range(i))
    if abs(vol) <= 1e-10 * h**3:
        raise ValueError(f"tetrahedron: vertices are degenerate (zero volume, {vol:.3g})")
    if vol <= 0:
        raise ValueError(
            f"tetrahedron: vertices must be positively oriented (signed volume {vol:.3g})"
        )
    bary, w = _degree_rule("tetrahedron", degree)
    return QuadratureRule(jnp.asarray(bary @ verts), jnp.asarray(vol * w))
