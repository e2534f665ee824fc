"""Triangulated cross-sections for `softrigid.meshing.extrude`: disks and annuli of concentric
rings, and rectangles (points in `(x1, x2)`, triangles counter-clockwise)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ._checks import as_count
from ._mesh_input import positive_float, real_array

__all__ = [
    "counter_clockwise",
    "disk_section",
    "nesting_count",
    "rectangle_section",
    "ring_section",
]


def _ring_strip(a: np.ndarray, b: np.ndarray) -> list[tuple[int, int, int]]:
    """Triangles between two closed rings of node indices `a`, `b` (both starting at angle 0,
    uniformly spaced, counter-clockwise): advance on the ring whose next node comes first."""
    na, nb = len(a), len(b)
    tris = []
    i = j = 0
    while i < na or j < nb:
        advance_a = j == nb or (i < na and (i + 1) / na < (j + 1) / nb)
        if advance_a:
            tris.append((a[i % na], b[j % nb], a[(i + 1) % na]))
            i += 1
        else:
            tris.append((a[i % na], b[j % nb], b[(j + 1) % nb]))
            j += 1
    return tris


def nesting_count(inner: float, outer: float) -> int:
    """The fewest sides `m` of a regular polygon of radius `outer` that holds a ring of radius
    `inner` strictly inside: `inner < outer cos(π/m)` (the polygon's inscribed radius), with a
    margin of 1e-9 of `outer`."""
    return max(3, math.floor(math.pi / math.acos(inner / outer - 1e-9)) + 1)


def _ring_counts(where: str, radii: np.ndarray, n_angular: int) -> list[int]:
    """Nodes per ring: `max(3, round(n_angular r_j / r_max))`, raised where needed so that
    every ring lies strictly inside the next ring's polygon (a strip between two rings whose
    inner one pokes through the outer one's sides overlaps itself); the outer ring keeps
    `n_angular`, refused (a `ValueError` naming `where`) when it is too few for that."""
    counts = [1 if rj == 0 else max(3, round(n_angular * rj / radii[-1])) for rj in radii]
    for j in range(1, len(radii)):
        if radii[j - 1] == 0:
            continue
        need = nesting_count(radii[j - 1], radii[j])
        if j == len(radii) - 1 and n_angular < need:
            apothem = radii[j] * math.cos(math.pi / n_angular)
            raise ValueError(
                f"{where}: n_angular = {n_angular} sides are too few for rings of radii "
                f"{radii[j - 1]:.6g} and {radii[j]:.6g}: the inner ring's nodes would lie "
                f"outside the outer polygon (its sides come within {apothem:.6g} of the "
                f"axis); use n_angular >= {need}, or fewer rings (n_radial)"
            )
        counts[j] = max(counts[j], need)
    return counts


def disk_section(
    radii: Sequence[float], n_angular: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Triangulated disk or annulus made of concentric rings.

    Args:
        radii: increasing ring radii; a first radius `0` puts one node at the centre (a disk),
            otherwise the section is the annulus between the first and last radius.
        n_angular: nodes on the outer ring; ring `j` gets `max(3, round(n_angular r_j / r_max))`
            uniformly spaced nodes starting at angle 0 (so `6·j` nodes on ring `j` of a disk
            with `n_angular = 6·n` gives near-equilateral triangles), more where ring `j − 1`
            would otherwise poke through ring `j`'s polygon (`r_{j−1} ≥ r_j cos(π/m_j)`).

    Raises:
        ValueError: `n_angular` is too few for the outer ring to hold the one inside it
            (the message gives the least that does).

    Returns:
        `points (P, 2)`, counter-clockwise `triangles (T, 3)` and `band (T,)`, the index `j` of
        the ring interval `[r_j, r_{j+1}]` each triangle lies in.
    """
    r = real_array("disk_section: radii", radii)
    if r.ndim != 1 or r.size < 2 or r[0] < 0:
        raise ValueError(
            f"disk_section: radii must be >= 2 finite non-negative values, got {radii!r}"
        )
    if np.any(np.diff(r) <= 0):
        raise ValueError(f"disk_section: radii must be strictly increasing, got {radii!r}")
    return ring_section("disk_section", r, as_count("disk_section: n_angular", n_angular, 3))


def ring_section(
    where: str, r: np.ndarray, n_angular: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`disk_section` of checked radii `r`, its refusal of too few sides naming `where` (the
    public function that builds the section: `disk_section`, `cylinder`, `tube`)."""
    points: list[np.ndarray] = []
    rings: list[np.ndarray] = []
    start = 0
    for m, rj in zip(_ring_counts(where, r, n_angular), r):
        ang = 2.0 * np.pi * np.arange(m) / m
        points.append(np.stack([rj * np.cos(ang), rj * np.sin(ang)], -1))
        rings.append(np.arange(start, start + m))
        start += m
    tris, band = [], []
    for j in range(len(r) - 1):
        strip = _ring_strip(rings[j], rings[j + 1])
        if len(rings[j]) == 1:  # fan around the centre: drop the degenerate closing triangles
            strip = [t for t in strip if len(set(t)) == 3]
        tris += strip
        band += [j] * len(strip)
    pts = np.concatenate(points)
    tri = counter_clockwise(pts, np.array(tris, dtype=np.int64))
    return pts, tri, np.array(band, dtype=np.int64)


def rectangle_section(
    width: float, height: float, n1: int, n2: int
) -> tuple[np.ndarray, np.ndarray]:
    """Triangulated rectangle `[−width/2, width/2] × [−height/2, height/2]`: an `n1 × n2` grid,
    each cell cut along its diagonal. Returns `points (P, 2)` and counter-clockwise
    `triangles (2·n1·n2, 3)`."""
    width = positive_float("rectangle_section: width", width)
    height = positive_float("rectangle_section: height", height)
    n1 = as_count("rectangle_section: n1", n1)
    n2 = as_count("rectangle_section: n2", n2)
    x = np.linspace(-width / 2, width / 2, n1 + 1)
    y = np.linspace(-height / 2, height / 2, n2 + 1)
    pts = np.stack(np.meshgrid(x, y, indexing="ij"), -1).reshape(-1, 2)
    idx = np.arange(pts.shape[0]).reshape(n1 + 1, n2 + 1)
    a, b = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel()
    c, d = idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    tri = np.concatenate([np.stack([a, b, c], -1), np.stack([a, c, d], -1)])
    return pts, counter_clockwise(pts, tri)


def counter_clockwise(points: np.ndarray, tri: np.ndarray) -> np.ndarray:
    e1 = points[tri[:, 1]] - points[tri[:, 0]]
    e2 = points[tri[:, 2]] - points[tri[:, 0]]
    flip = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0] < 0
    tri = tri.copy()
    tri[flip] = tri[flip][:, [0, 2, 1]]
    return tri
