"""Point membership in the reference volume a rule describes (`rule.geometry`).

`contains(rule, x)` answers "is the material point `x` in the body?" from the exact geometry,
never from the quadrature nodes, so the answer does not depend on the rule's order:

| geometry | volume |
| --- | --- |
| `segment (L,)` | the axis `x1 = x2 = 0`, `0 ≤ x3 ≤ L` |
| `box (a, b, L)` | `|x1| ≤ a/2`, `|x2| ≤ b/2`, `0 ≤ x3 ≤ L` |
| `cylinder (R, L)` | `x1² + x2² ≤ R²`, `0 ≤ x3 ≤ L` |
| `tube (R_i, R_o, L)` | `R_i² ≤ x1² + x2² ≤ R_o²`, `0 ≤ x3 ≤ L` |
| `mesh` | the union of the tetrahedra of `rule.mesh` (barycentric test; `tetra10` elements by
  their straight corner tetrahedra) |

Every bound is widened by `tol · size`, `size` the largest dimension of the body (for a mesh,
the largest extent of its nodes): a point on the surface is inside.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial import ConvexHull, cKDTree

from .._mesh_input import real_array
from .._module import is_concrete
from ._rule import QuadratureRule

__all__ = ["INSIDE_TOL", "contains", "has_geometry", "region_outside", "within_envelope"]

# How far outside a volume a material point may lie, relative to the body's size (rounding of
# the geometry: a point on the surface is inside).
INSIDE_TOL = 1e-9


def has_geometry(rule: QuadratureRule) -> bool:
    """Whether `contains` can answer for `rule`: a known geometry with concrete sizes."""
    if rule.geometry == "mesh":
        return rule.mesh is not None
    return (
        rule.geometry is not None and rule.dimensions is not None and is_concrete(rule.dimensions)
    )


def within_envelope(rule: QuadratureRule, points: Any, tol: float = INSIDE_TOL) -> np.ndarray:
    """Whether material points lie in the volume of `rule` with its cavities filled: a tube's
    bore and a mesh's inner holes count as inside (the convex hull of a mesh's nodes). For the
    cavity of a hollow body (a pressure chamber) this is the region the body's map must cover.
    """
    x = _points(points).reshape(-1, 3)
    tol = _tolerance(tol)
    if rule.geometry == "tube" and has_geometry(rule):
        dims = np.asarray(rule.dimensions, dtype=float)
        return _in_solid("cylinder", dims[1:], x, tol * dims.max() / dims[1:].max())
    if rule.geometry == "mesh" and rule.mesh is not None:
        nodes = rule.mesh.points
        eps = tol * float(np.ptp(nodes, axis=0).max())
        # inside the convex hull: every facet's n·x + d ≤ 0 (unit normals: d is a distance)
        facets = ConvexHull(nodes).equations
        return (x @ facets[:, :3].T + facets[:, 3]).max(1) <= eps
    return contains(rule, x, tol)


def region_outside(rule: QuadratureRule, region: QuadratureRule, tol: float = INSIDE_TOL) -> Any:
    """A point of the reference volume of `region` outside the envelope of `rule`
    (`within_envelope`), or `None` when the whole region lies in it.

    The envelope is convex (a cylinder, a box, a segment, a mesh's convex hull), so the region
    lies in it when its extreme points do: the corners of a box region, the ends of a segment,
    the nodes of a mesh, and for a round region (cylinder, tube) the points of its two end rims
    farthest along each side normal of the envelope (any rim point against a round envelope).
    The answer follows the geometry, not the quadrature order; the region's quadrature nodes
    are tested too (the only points known of a region without geometry).
    """
    points = np.asarray(region.points, dtype=float).reshape(-1, 3)
    if has_geometry(region):
        points = np.concatenate([points, _extreme_points(region, _side_normals(rule))])
    outside = ~within_envelope(rule, points, tol)
    return points[np.argmax(outside)] if outside.any() else None


def _side_normals(rule: QuadratureRule) -> np.ndarray:
    """Unit section-plane directions `(D, 2)` in which the envelope of `rule` has flat sides
    (a box's, a mesh hull's facets), after `(1, 0)` (for a round envelope, any direction)."""
    if rule.geometry == "mesh" and rule.mesh is not None:
        normals = ConvexHull(rule.mesh.points).equations[:, :2]
    elif rule.geometry == "box":
        normals = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    else:
        normals = np.zeros((0, 2))
    size = np.linalg.norm(normals, axis=1)
    flat = normals[size > 1e-12] / size[size > 1e-12, None]
    return np.concatenate([[[1.0, 0.0]], flat])


def _extreme_points(region: QuadratureRule, normals: np.ndarray) -> np.ndarray:
    """The extreme points `(M, 3)` of the reference volume of `region` that decide whether it
    lies in a convex envelope with side `normals` (see `region_outside`)."""
    if region.geometry == "mesh":
        return region.mesh.points
    dims = np.asarray(region.dimensions, dtype=float)
    if region.geometry == "segment":
        section = np.zeros((1, 2))
    elif region.geometry == "box":
        section = 0.5 * dims[:2] * np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]])
    else:  # cylinder, tube: the outer rim
        section = dims[-2] * normals
    # every section point at both ends x3 = 0 and x3 = L
    ends = np.tile([0.0, dims[-1]], section.shape[0])
    return np.column_stack([np.repeat(section, 2, axis=0), ends])


def contains(rule: QuadratureRule, points: Any, tol: float = INSIDE_TOL) -> np.ndarray:
    """Whether material points lie in the reference volume of `rule`.

    Args:
        rule: a `QuadratureRule` whose `geometry` is known (the built-in volumes and
            `from_mesh` rules).
        points: `(M, 3)` (or `(3,)`) material coordinates.
        tol: tolerance relative to the body size (`≥ 0`): bounds are widened by `tol · size`.

    Returns:
        `(M,)` booleans (a scalar boolean array for one `(3,)` point).

    Raises:
        TypeError: `rule` is not a `QuadratureRule`; `points` or `tol` are not real numbers.
        ValueError: the rule carries no geometry; traced (non-concrete) dimensions; `points`
            not `(M, 3)` or not finite; `tol` negative or not finite.
    """
    if not isinstance(rule, QuadratureRule):
        raise TypeError(f"contains: rule must be a QuadratureRule, got {type(rule).__name__}")
    x = _points(points)
    tol = _tolerance(tol)
    if rule.geometry is None or (rule.geometry != "mesh" and rule.dimensions is None):
        raise ValueError(
            f"contains: the rule carries no geometry (geometry={rule.geometry!r}, dimensions "
            f"{'None' if rule.dimensions is None else 'given'}): build it with segment, box, "
            "cylinder, tube or from_mesh, or test the points yourself"
        )
    flat = x.reshape(-1, 3)
    if rule.geometry == "mesh":
        inside = _in_mesh(rule.mesh.points, rule.mesh.cells, flat, tol)
    else:
        if not is_concrete(rule.dimensions):
            raise ValueError("contains: the rule's dimensions are traced; call it outside jit")
        inside = _in_solid(rule.geometry, np.asarray(rule.dimensions, dtype=float), flat, tol)
    return inside.reshape(x.shape[:-1])


def _points(points: Any) -> np.ndarray:
    arr = real_array("contains: points", points)
    if arr.ndim not in (1, 2) or arr.shape[-1] != 3:
        raise ValueError(f"contains: points must have shape (M, 3) or (3,), got {arr.shape}")
    return arr


def _tolerance(tol: Any) -> float:
    arr = None if isinstance(tol, (str, bytes)) or tol is None else np.asarray(tol)
    if arr is None or arr.dtype.kind not in "iuf" or arr.shape != ():
        raise TypeError(f"contains: tol must be a real number, got {tol!r}")
    value = float(arr)
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"contains: tol must be finite and >= 0, got {value}")
    return value


def _in_solid(geometry: str, dims: np.ndarray, x: np.ndarray, tol: float) -> np.ndarray:
    """Segment, box, cylinder, tube: exact bounds widened by `eps = tol · max(dims)`."""
    eps = tol * float(dims.max())
    length = dims[-1]
    axial = (x[:, 2] >= -eps) & (x[:, 2] <= length + eps)
    r = np.hypot(x[:, 0], x[:, 1])
    if geometry == "segment":
        return axial & (r <= eps)
    if geometry == "box":
        a, b = dims[0], dims[1]
        return axial & (np.abs(x[:, 0]) <= a / 2 + eps) & (np.abs(x[:, 1]) <= b / 2 + eps)
    if geometry == "cylinder":
        return axial & (r <= dims[0] + eps)
    return axial & (r >= dims[0] - eps) & (r <= dims[1] + eps)  # tube


def _in_mesh(
    nodes: np.ndarray, cells: tuple[tuple[str, np.ndarray], ...], x: np.ndarray, tol: float
) -> np.ndarray:
    """In some tetrahedron: every barycentric coordinate `λ_i ≥ −eps |∇λ_i|` (the signed
    distance to face `i` is `λ_i / |∇λ_i|`), `eps = tol ·` the largest extent of the nodes.
    Only the elements whose centroid lies within their circumscribing radius (plus `eps`) of a
    point are tested (a k-d tree of the centroids)."""
    corner = np.concatenate([c[:, :4] for _, c in cells])
    v = nodes[corner]  # (E, 4, 3)
    eps = tol * float(np.ptp(nodes, axis=0).max())
    # λ_{1..3} = A⁻¹ (x − v0) with A = [v1 − v0, v2 − v0, v3 − v0]; λ0 = 1 − Σ λ_i
    inv = np.linalg.inv(np.swapaxes(v[:, 1:] - v[:, :1], 1, 2))  # rows: ∇λ_1..3
    grad = np.concatenate([-inv.sum(1, keepdims=True), inv], 1)  # (E, 4, 3)
    slack = eps * np.linalg.norm(grad, axis=-1)  # (E, 4)
    centroid = v.mean(1)
    reach = float(np.linalg.norm(v - centroid[:, None], axis=-1).max()) + eps
    candidates = cKDTree(centroid).query_ball_point(x, reach, return_sorted=False)
    counts = np.array([len(c) for c in candidates], dtype=np.int64)
    inside = np.zeros(x.shape[0], dtype=bool)
    if counts.sum() == 0:
        return inside
    point = np.repeat(np.arange(x.shape[0]), counts)
    element = np.concatenate([np.asarray(c, dtype=np.int64) for c in candidates])
    lam = np.einsum("nij,nj->ni", inv[element], x[point] - v[element, 0])
    lam = np.concatenate([1.0 - lam.sum(-1, keepdims=True), lam], -1)  # (pairs, 4)
    hit = np.all(lam >= -slack[element], -1)
    inside[point[hit]] = True
    return inside
