"""A structured tetrahedral mesher for the common reference volumes, and mesh topology helpers.

Every mesh is a stack of prisms: a triangulated cross-section (in `(x1, x2)`) is extruded along
`x3` and each prism is split into three tetrahedra. The split of prism `(a, b, c)` (section node
indices sorted, `′` the node one layer up) is

    (a, b, c, c′),  (a, b, b′, c′),  (a, a′, b′, c′),

which cuts every lateral quad face `(u, v, v′, u′)`, `u < v`, along the diagonal `u v′` whatever
the prism, so neighbouring prisms always agree and the mesh is conforming. Elements are returned
positively oriented (VTK / meshio convention: `(x1 − x0) × (x2 − x0) · (x3 − x0) > 0`).

Conventions as everywhere in softrigid: the axis is `x3 ∈ [0, L]`, the section is centred on it.
A circle of radius `R` is represented by the inscribed polygon of its outer ring (`n_angular`
sides), so the meshed area is `(n/2) R² sin(2π/n)`: a relative error
`1 − sin(2π/n)/(2π/n) ≈ (2π/n)²/6`, second moments about `2×` that (O(h²) in the mesh size).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import meshio
import numpy as np

from ._checks import as_count
from ._mesh_input import ceil_count, index_array, positive_float, real_array, sized_sequence
from ._sections import counter_clockwise, disk_section, rectangle_section, ring_section

__all__ = [
    "boundary_faces",
    "box",
    "cylinder",
    "disk_section",
    "extrude",
    "rectangle_section",
    "tet_volumes",
    "tube",
]

# Outward faces of a positively oriented tetrahedron (0, 1, 2, 3), and for tetra10 (VTK order:
# edges 4:(0,1) 5:(1,2) 6:(2,0) 7:(0,3) 8:(1,3) 9:(2,3)) the same faces as triangle6.
# the most elements `cylinder` and `tube` build at their default resolution
MAX_DEFAULT_ELEMENTS = 2_000_000
_TET_FACES = np.array([[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]])
_TET10_FACES = np.array(
    [[1, 2, 3, 5, 9, 8], [0, 3, 2, 7, 9, 6], [0, 1, 3, 4, 8, 7], [0, 2, 1, 6, 5, 4]]
)


def tet_volumes(points: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Signed volumes `(E,)` of the linear tetrahedra on the first four nodes of each cell:
    `V = det[x1 − x0, x2 − x0, x3 − x0] / 6`."""
    pts = real_array("tet_volumes: points", points)
    conn = index_array("tet_volumes: cells", cells)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"tet_volumes: points must have shape (N, 3), got {pts.shape}")
    if conn.ndim != 2 or conn.shape[1] not in (4, 10):
        raise ValueError(f"tet_volumes: cells must have shape (E, 4) or (E, 10), got {conn.shape}")
    if conn.size and conn.max() >= pts.shape[0]:
        raise ValueError(f"tet_volumes: cells reference nodes outside [0, {pts.shape[0]})")
    p = pts[conn[:, :4]]
    return np.linalg.det(p[:, 1:] - p[:, :1]) / 6.0


def boundary_faces(cells: np.ndarray) -> np.ndarray:
    """Boundary faces of a tetrahedral mesh: the faces that belong to exactly one element.

    Args:
        cells: `(E, 4)` linear (`tetra`) or `(E, 10)` quadratic (`tetra10`, VTK node order)
            positively oriented elements.

    Returns:
        `(F, 3)` triangles (or `(F, 6)` `triangle6` for `tetra10`), ordered counter-clockwise
        seen from outside (outward normals), in the order of first appearance.
    """
    cells = index_array("boundary_faces: cells", cells)
    if cells.ndim != 2 or cells.shape[1] not in (4, 10):
        raise ValueError(
            f"boundary_faces: cells must have shape (E, 4) or (E, 10), got {cells.shape}"
        )
    pattern = _TET_FACES if cells.shape[1] == 4 else _TET10_FACES
    faces = cells[:, pattern].reshape(-1, pattern.shape[1])
    key = np.sort(faces[:, :3], axis=1)
    _, first, counts = np.unique(key, axis=0, return_index=True, return_counts=True)
    return faces[np.sort(first[counts == 1])]


def _check_section(points: np.ndarray, tri: np.ndarray) -> None:
    """A `ValueError` for section triangles that overlap along an edge: oriented
    counter-clockwise, two triangles of a conforming triangulation run a shared edge in opposite
    directions, so a directed edge met twice is a repeated triangle or two on the same side of
    the edge (their prisms would overlap: the volume counted twice, silently)."""
    ccw = counter_clockwise(points, tri)
    directed = np.concatenate([ccw[:, [0, 1]], ccw[:, [1, 2]], ccw[:, [2, 0]]])
    edges, counts = np.unique(directed, axis=0, return_counts=True)
    if np.any(counts > 1):
        i, j = edges[np.argmax(counts > 1)]
        raise ValueError(
            f"extrude: section triangles overlap along the edge ({i}, {j}) (a repeated triangle, "
            "or two on the same side of an edge): give a conforming triangulation"
        )


def extrude(
    section_points: np.ndarray,
    triangles: np.ndarray,
    z: Sequence[float],
    *,
    keep: np.ndarray | None = None,
    twist: float = 0.0,
) -> meshio.Mesh:
    """Extrude a triangulated section along `x3` into a conforming tetrahedral mesh.

    Args:
        section_points: `(P, 2)` section nodes `(x1, x2)`.
        triangles: `(T, 3)` section triangles.
        z: `(n + 1,)` increasing `x3` levels of the `n` prism layers.
        keep: optional `(n, T)` booleans, which prisms exist (to carve cavities); nodes no
            kept prism uses are dropped.
        twist: rotation rate of the section about `x3` [rad per unit length]: the node at level
            `z` is rotated by `twist · z` (a helicoidal extrusion; keep the rotation per layer
            small, the element faces stay flat).

    Returns:
        A `meshio.Mesh` with one `tetra` block of positively oriented elements.

    Raises:
        TypeError: inputs that are not numbers (or `keep` not booleans).
        ValueError: bad shapes, non-finite values, fractional or negative node indices,
            non-increasing levels, or an element that comes out degenerate (for instance too
            much twist per layer).
    """
    sec = real_array("extrude: section_points", section_points)
    tri = index_array("extrude: triangles", triangles)
    levels = real_array("extrude: z", z)
    twist = real_array("extrude: twist", twist)
    if twist.shape != ():
        raise ValueError(f"extrude: twist must be a scalar, got shape {twist.shape}")
    twist = float(twist)
    if sec.ndim != 2 or sec.shape[1] != 2:
        raise ValueError(f"extrude: section_points must have shape (P, 2), got {sec.shape}")
    if tri.ndim != 2 or tri.shape[1] != 3 or tri.size == 0:
        raise ValueError(f"extrude: triangles must have shape (T, 3), T >= 1, got {tri.shape}")
    if tri.max() >= sec.shape[0]:
        raise ValueError("extrude: triangles reference nodes outside section_points")
    if levels.ndim != 1 or levels.size < 2 or np.any(np.diff(levels) <= 0):
        raise ValueError("extrude: z must be at least two strictly increasing levels")
    _check_section(sec, tri)
    n_layers, n_tri, n_sec = levels.size - 1, tri.shape[0], sec.shape[0]
    if keep is None:
        keep = np.ones((n_layers, n_tri), dtype=bool)
    keep = np.asarray(keep)
    if keep.dtype.kind not in "biu" or not np.all((keep == 0) | (keep == 1)):
        raise TypeError(f"extrude: keep must be booleans (or 0/1), got {keep.dtype} {keep}")
    keep = keep.astype(bool)
    if keep.shape != (n_layers, n_tri):
        raise ValueError(f"extrude: keep must have shape ({n_layers}, {n_tri}), got {keep.shape}")
    if not keep.any():
        raise ValueError("extrude: keep drops every element: the mesh would be empty")
    # Node of section index s at level k: k·P + s. Sorted section indices fix the split.
    a, b, c = np.sort(tri, axis=1).T
    layer, t = np.nonzero(keep)
    lo, hi = layer * n_sec, (layer + 1) * n_sec
    A, B, C = a[t] + lo, b[t] + lo, c[t] + lo
    A1, B1, C1 = a[t] + hi, b[t] + hi, c[t] + hi
    cells = np.concatenate(
        [np.stack(v, -1) for v in ((A, B, C, C1), (A, B, B1, C1), (A, A1, B1, C1))]
    )
    zz = np.repeat(levels, n_sec)
    xy = np.tile(sec, (levels.size, 1))
    used, cells = np.unique(cells, return_inverse=True)
    cells = cells.reshape(-1, 4)
    zz, xy = zz[used], xy[used]
    # orient on the straight prisms, then twist: an element the twist turns over is an error
    vol = tet_volumes(np.column_stack([xy, zz]), cells)
    cells[vol < 0] = cells[vol < 0][:, [0, 2, 1, 3]]
    angle = twist * zz
    cos, sin = np.cos(angle), np.sin(angle)
    pts = np.stack([cos * xy[:, 0] - sin * xy[:, 1], sin * xy[:, 0] + cos * xy[:, 1], zz], -1)
    vol = tet_volumes(pts, cells)
    # degenerate relative to each element's own size (its longest edge h: |V| ≤ 1e-10 h³, as
    # `quadrature.from_mesh` reads meshes), so slender meshes of small elements pass
    corners = pts[cells]
    edges = corners[:, [0, 0, 0, 1, 1, 2]] - corners[:, [1, 2, 3, 2, 3, 3]]
    h = np.sqrt(np.max(np.sum(edges * edges, axis=-1), axis=1))
    bad = vol <= 1e-10 * h**3
    if np.any(bad):
        raise ValueError(
            f"extrude: {int(np.sum(bad))} elements come out degenerate or inverted "
            "(too much twist per layer, or a degenerate section)"
        )
    return meshio.Mesh(pts, [("tetra", cells)])


def _default_size(where: str, what: str, elements: int) -> None:
    if elements > MAX_DEFAULT_ELEMENTS:
        raise ValueError(
            f"{where}: the default resolution ({what}) gives {elements:.3g} elements, above "
            f"{MAX_DEFAULT_ELEMENTS:.0e}; pass n_axial and n_angular to choose the mesh"
        )


def _layers(
    where: str, length: float, n_axial: int | None, h: float, n_triangles: int
) -> np.ndarray:
    """`n_axial + 1` levels on `[0, length]`; by default layers of height about `h`, refused
    above `MAX_DEFAULT_ELEMENTS` elements (name `n_axial` to have them)."""
    if n_axial is None:
        n_axial = max(1, ceil_count(length / h))
        _default_size(where, f"n_axial = {n_axial} layers", 3 * n_triangles * n_axial)
    return np.linspace(0.0, length, as_count(f"{where}: n_axial", n_axial) + 1)


def cylinder(
    radius: float,
    length: float,
    n_radial: int = 3,
    n_angular: int | None = None,
    n_axial: int | None = None,
) -> meshio.Mesh:
    """Solid cylinder `x1² + x2² ≤ radius²`, `x3 ∈ [0, length]` (inscribed polygon section).

    Args:
        radius, length: dimensions.
        n_radial: rings across the radius.
        n_angular: sides of the outer polygon (default `6·n_radial`: near-equilateral
            section triangles); a `ValueError` gives the least that holds the ring inside it.
        n_axial: layers along `x3` (default: element height ≈ ring spacing).

    Returns:
        A `meshio.Mesh` of `3·T·n_axial` positively oriented `tetra` elements, `T` section
        triangles (`6·n_radial²` by default).
    """
    radius = positive_float("cylinder: radius", radius)
    length = positive_float("cylinder: length", length)
    n_radial = as_count("cylinder: n_radial", n_radial)
    if n_angular is None:
        n_angular = 6 * n_radial  # 6 n_radial² section triangles: checked before building
        _default_size("cylinder", f"n_angular = {n_angular} sides", 3 * n_radial * n_angular)
    n_angular = as_count("cylinder: n_angular", n_angular, 3)
    levels = _layers("cylinder", length, n_axial, radius / n_radial, n_radial * n_angular)
    radii = np.linspace(0.0, radius, n_radial + 1)
    pts, tri, _ = ring_section("cylinder", radii, n_angular)
    return extrude(pts, tri, levels)


def tube(
    inner_radius: float,
    outer_radius: float,
    length: float,
    n_radial: int = 2,
    n_angular: int | None = None,
    n_axial: int | None = None,
) -> meshio.Mesh:
    """Hollow cylinder `inner_radius² ≤ x1² + x2² ≤ outer_radius²`, `x3 ∈ [0, length]`.

    Both circles are inscribed polygons (`n_angular` sides outside, proportionally fewer
    inside, and more where a ring would otherwise poke through the next one's sides; too few
    outside for the ring inside it is a `ValueError` giving the least). Defaults: `n_angular`
    makes the section triangles about as wide as the ring spacing; `n_axial` makes the element
    height about the ring spacing.
    """
    inner = positive_float("tube: inner_radius", inner_radius)
    outer = positive_float("tube: outer_radius", outer_radius)
    length = positive_float("tube: length", length)
    if inner >= outer:
        raise ValueError(
            f"tube: inner_radius ({inner}) must be smaller than outer_radius ({outer})"
        )
    n_radial = as_count("tube: n_radial", n_radial)
    h = (outer - inner) / n_radial
    if n_angular is None:
        n_angular = max(6, ceil_count(2.0 * math.pi * outer / h))
        # a wall thin against its radius: 6 n_radial n_angular elements per layer
        _default_size("tube", f"n_angular = {n_angular} sides", 6 * n_radial * n_angular)
    n_angular = as_count("tube: n_angular", n_angular, 3)
    levels = _layers("tube", length, n_axial, h, 2 * n_radial * n_angular)  # ≥ its triangles
    radii = np.linspace(inner, outer, n_radial + 1)
    pts, tri, _ = ring_section("tube", radii, n_angular)
    return extrude(pts, tri, levels)


def box(size: Sequence[float], divisions: Sequence[int] = (2, 2, 4)) -> meshio.Mesh:
    """Box `[−a/2, a/2] × [−b/2, b/2] × [0, L]`, `size = (a, b, L)`, on an
    `n1 × n2 × n3` grid (`divisions`), six tetrahedra per grid cell (exact geometry)."""
    size = sized_sequence("box: size", size, 3, "(a, b, L)")
    divisions = sized_sequence("box: divisions", divisions, 3, "(n1, n2, n3)")
    a, b, length = (positive_float(f"box: size[{i}]", s) for i, s in enumerate(size))
    n1, n2, n3 = (as_count(f"box: divisions[{i}]", n) for i, n in enumerate(divisions))
    pts, tri = rectangle_section(a, b, n1, n2)
    return extrude(pts, tri, np.linspace(0.0, length, n3 + 1))
