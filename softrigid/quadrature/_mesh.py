"""Quadrature rules over tetrahedral meshes (any format meshio reads).

`from_mesh` maps a tetrahedral rule (`_tetra.py`) onto every element:

    ∫_V g dV ≈ Σ_e Σ_k |det J_e(ξ_k)| / 6 · w_k · g(x_e(ξ_k)),

with `x_e(ξ) = Σ_a N_a(ξ) X_a` the element map (affine for `tetra`, quadratic isoparametric for
`tetra10`) and `ξ` the coordinates on the unit tetrahedron (volume 1/6).
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import meshio
import numpy as np

from .._mesh_input import real_array
from ._distal import distal_points
from ._reference_mesh import (
    TET_TYPES,
    ReferenceMesh,
    check_duplicates,
    check_overlaps,
    connectivity,
    index_list,
    merge_coincident,
)
from ._rule import QuadratureRule
from ._tetra import check_degree, tetrahedron_rule

__all__ = ["from_mesh", "read_mesh", "reader_errors", "tetrahedron"]


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
                real_array(
                    f"from_mesh: cell field {density!r}", mesh.cell_data[density][b], finite=False
                )
                for b in blocks
            ]
        )
        if rho.ndim == 2 and rho.shape[1] == 1:
            rho = rho[:, 0]
        what = f"cell field {density!r}"
    else:
        rho = real_array("from_mesh: density", density, finite=False)
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
            f"from_mesh: {what} must be finite and positive; elements {index_list(bad)} are not"
        )
    return rho


def _other_volume_cell(kind: str) -> bool:
    """A meshio cell type of a 3-D element other than `tetra`/`tetra10` (hexahedra, wedges,
    pyramids, higher-order tetrahedra, VTK's Lagrange cells)."""
    if kind in TET_TYPES:
        return False
    families = ("tetra", "hexahedron", "wedge", "pyramid")
    lagrange = ("TETRAHEDRON", "HEXAHEDRON", "WEDGE", "PYRAMID")
    return kind.rstrip("0123456789") in families or kind in {f"VTK_LAGRANGE_{k}" for k in lagrange}


def from_mesh(mesh_or_path: Any, degree: int = 2, density: Any = None) -> QuadratureRule:
    """A quadrature rule over a tetrahedral mesh.

    Reads any format meshio reads (`.msh`, `.vtu`, `.vtk`, `.xdmf`, `.med`, `.inp`, TetGen
    `.node`/`.ele`, …) or takes a `meshio.Mesh`. Its `tetra` (linear) and `tetra10` (quadratic,
    VTK node order, isoparametric) blocks are the volume; surface and line cells (triangles,
    quads, lines, points) are ignored, and other volume cells (hexahedra, wedges, pyramids,
    higher-order tetrahedra) are refused rather than left out of the volume. Coordinates are
    the body's material coordinates (softrigid's convention: axis `x3 ∈ [0, L]`, section
    centred).

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
            carries the reader's error; meshio's `sys.exit` is caught); no tetrahedra; volume
            cells other than `tetra`/`tetra10` (their types and counts are named); points
            not 3-D; non-finite coordinates; node indices out of range or not integers;
            duplicated elements (the same four corner points in any order, either
            orientation, through the same or coincident nodes),
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
    points = real_array("from_mesh: mesh points", mesh.points, finite=False)
    if points.size == 0:
        raise ValueError(
            f"from_mesh: {source} has no points/tetrahedra (an empty mesh, or a file that is "
            "not a mesh in the format of its suffix)"
        )
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(
            f"from_mesh: the points of {source} must have shape (N, 3), got {points.shape}"
        )
    others = Counter(c.type for c in mesh.cells if _other_volume_cell(c.type) for _ in c.data)
    if others:
        found = ", ".join(f"{n} {kind}" for kind, n in sorted(others.items()))
        raise ValueError(
            f"from_mesh: {source} has volume cells other than tetrahedra ({found}), which "
            "would be left out of the volume and mass: only tetra and tetra10 cells are "
            "integrated; mesh the body with tetrahedra (or split these cells into tetrahedra)"
        )
    blocks = [i for i, c in enumerate(mesh.cells) if c.type in TET_TYPES and len(c.data)]
    if not blocks:
        types = sorted({c.type for c in mesh.cells if len(c.data)}) or ["none"]
        raise ValueError(
            f"from_mesh: {source} has no tetrahedra (tetra or tetra10 cells); "
            f"cell types found: {', '.join(types)}"
        )
    bad_nodes = ~np.all(np.isfinite(points), axis=1)
    if bad_nodes.any():
        raise ValueError(
            f"from_mesh: {source} has non-finite node coordinates (NaN or inf) at nodes "
            f"{index_list(bad_nodes)}"
        )
    cells = [
        (
            mesh.cells[b].type,
            connectivity("from_mesh", mesh.cells[b].type, mesh.cells[b].data, points.shape[0]),
        )
        for b in blocks
    ]
    used = np.unique(np.concatenate([c.ravel() for _, c in cells]))
    if used.size < points.shape[0]:
        unused = np.ones(points.shape[0], dtype=bool)
        unused[used] = False
        warnings.warn(
            f"from_mesh: {int(unused.sum())} nodes are used by no tetrahedron and are ignored "
            f"(nodes {index_list(unused)})",
            UserWarning,
            stacklevel=2,
        )
    # Compact the nodes to those the tetrahedra use.
    remap = np.full(points.shape[0], -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    points = points[used]
    cells = [(kind, remap[conn]) for kind, conn in cells]
    corner = np.concatenate([conn[:, :4] for _, conn in cells])
    merged = merge_coincident(points)[corner]
    check_duplicates("from_mesh", source, merged)

    nodes, weights, min_vol = [], [], []
    for kind, conn in cells:
        x, wk, v = _element_rule(kind, points[conn], bary, w)
        nodes.append(x.reshape(-1, 3))
        weights.append(wk.reshape(-1))
        min_vol.append(v)
    min_vol = np.concatenate(min_vol)
    edges = points[corner][:, [1, 2, 3, 2, 3, 3]] - points[corner][:, [0, 0, 0, 1, 1, 2]]
    h = np.linalg.norm(edges, axis=-1).max(1)
    degenerate = np.abs(min_vol) <= 1e-10 * h**3
    inverted = (min_vol < 0) & ~degenerate
    if degenerate.any():
        raise ValueError(
            f"from_mesh: {source} has {int(degenerate.sum())} degenerate tetrahedra (zero "
            f"volume) at element indices {index_list(degenerate)}"
        )
    if inverted.any():
        hint = ""
        if inverted.all():
            hint = (
                "; every element is inverted, so the file uses the opposite vertex order: "
                "swap two vertices of every element, e.g. cells[:, [0, 2, 1, 3]]"
            )
        raise ValueError(
            f"from_mesh: {source} has {int(inverted.sum())} inverted tetrahedra (negative "
            "volume: vertices not ordered right-handed) at element indices "
            f"{index_list(inverted)}{hint}"
        )
    check_overlaps("from_mesh", source, merged)
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
        else real_array("tetrahedron: vertices", vertices, finite=False)
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
