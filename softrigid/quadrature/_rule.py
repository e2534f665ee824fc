"""Quadrature rules over reference volumes, in material coordinates.

Conventions (`bodies.md`): the body axis is `x3 ∈ [0, L]`, `(x1, x2)` are cross-section
coordinates centred on the axis, the proximal face is `x3 = 0` and the distal pivot is `(0, 0, L)`.
A rule integrates `∫_V g(x) dV ≈ Σ_k w_k g(x_k)`; its weights are volume weights (`Σ w_k = V`),
the density multiplies them in the body.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax.numpy as jnp
import numpy as np
from jax import Array

from .._checks import traced_check
from .._module import is_concrete, module, static

if TYPE_CHECKING:
    from ._reference_mesh import ReferenceMesh

__all__ = ["GEOMETRIES", "QuadratureRule"]

# The reference volumes a rule can describe, and the meaning of `dimensions` for each.
GEOMETRIES = {
    "segment": "(L,)",
    "box": "(a, b, L)",
    "cylinder": "(R, L)",
    "tube": "(R_inner, R_outer, L)",
    "mesh": "None (the geometry is the `mesh` field)",
}


# Length of `dimensions` per built-in geometry.
_N_DIMENSIONS = {"segment": 1, "box": 3, "cylinder": 2, "tube": 3}


def _field(name: str, value: object) -> Array:
    """A float array of a rule's field; a `TypeError` naming it when it holds no real numbers."""
    if is_concrete(value):
        dtype = None if isinstance(value, (str, bytes)) else np.asarray(value).dtype
        if dtype is None or dtype.kind not in "iuf":
            got = type(value).__name__ if dtype is None or dtype.kind == "O" else dtype
            raise TypeError(f"QuadratureRule: {name} must be an array of real numbers, got {got}")
    return jnp.asarray(value, dtype=float)


def _check_rows(points: np.ndarray, n_axial: int) -> None:
    """A `ValueError` unless the points, axial-major in `n_axial` rows, share one `x3` per row
    (to `1e-10` of the rule's extent): the bodies map a row's nodes with one backbone frame."""
    x3 = points[:, 2].reshape(n_axial, -1)
    spread = np.ptp(x3, axis=1)
    extent = max(float(np.ptp(points)), float(np.abs(points).max()), np.finfo(float).tiny)
    if np.any(spread > 1e-10 * extent):
        row = int(np.argmax(spread))
        raise ValueError(
            f"QuadratureRule: n_axial={n_axial} says the points are {n_axial} axial-major rows "
            f"of one x3 each, but row {row} spans x3 = {x3[row].min():.6g} … "
            f"{x3[row].max():.6g}: order the points by row, or leave n_axial out"
        )


def _check_finite(name: str, value: Array, positive: bool = False) -> Array:
    """`value`, finite (and positive): checked at build time when concrete, by a run-time check
    when traced (a rule built inside `jit`)."""
    what = "finite and positive" if positive else "finite"
    traced = not is_concrete(value)
    xp, arr = (jnp, value) if traced else (np, np.asarray(value))
    bad = ~xp.isfinite(arr) | (arr <= 0) if positive else ~xp.isfinite(arr)
    if traced:
        return traced_check(value, bad, f"QuadratureRule: {name} must be {what}")
    if bad.any():
        where = np.argwhere(bad)[:5]
        text = ", ".join(
            str(tuple(int(i) for i in w)) if w.size > 1 else str(int(w[0])) for w in where
        )
        more = ", ..." if bad.sum() > 5 else ""
        raise ValueError(
            f"QuadratureRule: {name} must be {what}; {int(bad.sum())} entries are not "
            f"(at {text}{more}; e.g. {float(arr[tuple(where[0])])})"
        )
    return value


@module
class QuadratureRule:
    """Points and volume weights of a quadrature rule over a reference volume.

    Attributes:
        points: `(K, 3)` material coordinates of the nodes.
        weights: `(K,)` volume weights, `Σ w_k = volume`.
        pivot: `(3,)` default distal pivot (centre of the distal face), or `None`.
        contact_a, contact_b: `(3,)` default points of the distal contact area with
            `(a − pivot) ⟂ (b − pivot)`, or `None`.
        density: `(K,)` density at the nodes when the volume carries one (meshes), else `None`.
        n_axial: when not `None`, the points are ordered axial-major in `n_axial` rows of equal
            size that share the same `x3` (tensor-product rules); families with a backbone may use
            it to evaluate the backbone once per row.
        geometry: which reference volume the rule covers, when known (static): `"segment"`,
            `"box"`, `"cylinder"`, `"tube"` (sizes in `dimensions`) or `"mesh"` (a `from_mesh`
            rule, the mesh in `mesh`); `softrigid.io` draws the body from it.
        dimensions: the sizes of a built-in geometry (see `GEOMETRIES`), traced like the points.
        mesh: the `ReferenceMesh` a `from_mesh` rule was built from (static; hashed and compared
            by content, so equal meshes give equal tree structures).

    Raises:
        TypeError: a field that holds no real numbers (strings, complex, objects).
        ValueError: wrong shapes; non-finite points, pivot or contact points; weights or
            density that are not finite and positive (a zero or negative weight is a wrong
            mass, never a valid rule: repeat a node with split weights to pad a rule);
            `dimensions` that do not fit `geometry`. Values are checked when concrete; a rule
            built inside `jit` from traced values gets the same checks at run time.
    """

    points: Array
    weights: Array
    pivot: Array | None = None
    contact_a: Array | None = None
    contact_b: Array | None = None
    density: Array | None = None
    n_axial: int | None = static(default=None)
    geometry: str | None = static(default=None)
    dimensions: Array | None = None
    mesh: ReferenceMesh | None = static(default=None)

    def __post_init__(self) -> None:
        points = _field("points", self.points)
        weights = _field("weights", self.weights)
        if points.ndim != 2 or points.shape[1] != 3:
            raise ValueError(f"QuadratureRule: points must have shape (K, 3), got {points.shape}")
        if weights.shape != (points.shape[0],):
            raise ValueError(
                f"QuadratureRule: weights must have shape ({points.shape[0]},), got {weights.shape}"
            )
        if self.n_axial is not None:
            if not isinstance(self.n_axial, (int, np.integer)) or isinstance(self.n_axial, bool):
                raise TypeError(f"QuadratureRule: n_axial must be an int, got {self.n_axial!r}")
            if self.n_axial < 1 or points.shape[0] % self.n_axial:
                raise ValueError(
                    f"QuadratureRule: n_axial={self.n_axial} does not divide the "
                    f"{points.shape[0]} points"
                )
        object.__setattr__(self, "points", _check_finite("points", points))
        object.__setattr__(self, "weights", _check_finite("weights", weights, positive=True))
        if self.n_axial is not None and is_concrete(points):
            _check_rows(np.asarray(points), self.n_axial)
        for name in ("pivot", "contact_a", "contact_b"):
            value = getattr(self, name)
            if value is not None:
                value = _field(name, value)
                if value.shape != (3,):
                    raise ValueError(
                        f"QuadratureRule: {name} must have shape (3,), got {value.shape}"
                    )
                object.__setattr__(self, name, _check_finite(name, value))
        if self.density is not None:
            density = _field("density", self.density)
            if density.shape != weights.shape:
                raise ValueError(
                    f"QuadratureRule: density must have shape {weights.shape}, got {density.shape}"
                )
            object.__setattr__(self, "density", _check_finite("density", density, positive=True))
        if self.geometry is not None and (
            not isinstance(self.geometry, str) or self.geometry not in GEOMETRIES
        ):
            raise ValueError(
                f"QuadratureRule: geometry must be one of {sorted(GEOMETRIES)} or None, "
                f"got {self.geometry!r}"
            )
        if self.dimensions is not None:
            dimensions = _field("dimensions", self.dimensions)
            size = _N_DIMENSIONS.get(self.geometry)
            if size is None or dimensions.shape != (size,):
                raise ValueError(
                    f"QuadratureRule: dimensions must be {GEOMETRIES.get(self.geometry, 'None')} "
                    f"for geometry={self.geometry!r}, got shape {dimensions.shape}"
                )
            dimensions = _check_finite("dimensions", dimensions, positive=True)
            object.__setattr__(self, "dimensions", dimensions)
        if (self.geometry == "mesh") != (self.mesh is not None):
            raise ValueError('QuadratureRule: geometry="mesh" goes with a mesh, and only with one')

    @property
    def n_points(self) -> int:
        """Number of quadrature nodes `K`."""
        return self.points.shape[0]

    @property
    def volume(self) -> Array:
        """`Σ w_k`, the volume (or length, for a segment rule)."""
        return jnp.sum(self.weights)
