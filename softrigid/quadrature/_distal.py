"""The default distal pivot and contact points of a meshed body (its flat distal face)."""

from __future__ import annotations

import numpy as np

from .. import meshing
from .._mesh_input import index_array, real_array

__all__ = ["distal_points"]


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
    `1e-9 ×` the axial extent). The pivot is its area centroid `c` (an in-plane coordinate
    within `1e-12 ×` the face's width of 0 is set to 0: symmetric faces are centred exactly); with `u1`, `u2` the
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
    points = real_array("distal_points: points", points, finite=False)
    if points.ndim != 2 or points.shape[1] != 3 or not np.all(np.isfinite(points)):
        raise ValueError(
            f"distal_points: points must be finite with shape (N, 3), got shape {points.shape}"
        )
    cells = index_array("distal_points: cells", cells)
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
    # a centroid on an axis up to rounding (a symmetric face) lies on it exactly: maps that are
    # singular on the axis (e.g. the LVP source's 1/r²) must not see a 1e-18 m offset there
    c = np.where(np.abs(c) <= 1e-12 * np.ptp(tri.reshape(-1, 2), axis=0).max(), 0.0, c)
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
