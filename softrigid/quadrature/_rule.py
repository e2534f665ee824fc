"""Quadrature rules over reference volumes, in material coordinates.

Conventions (`bodies.md`): the body axis is `x3 ∈ [0, L]`, `(x1, x2)` are cross-section
coordinates centred on the axis, the proximal face is `x3 = 0` and the distal pivot is `(0, 0, L)`.
A rule integrates `∫_V g(x) dV ≈ Σ_k w_k g(x_k)`; its weights are volume weights (`Σ w_k = V`),
the density multiplies them in the body.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from .._checks import as_count, traced_check
from .._module import is_concrete, module, static
from ._gauss import gauss_legendre

if TYPE_CHECKING:
    from ._reference_mesh import ReferenceMesh

__all__ = ["GEOMETRIES", "QuadratureRule", "box", "cylinder", "segment", "tube"]

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


def _check_positive(name: str, value: object) -> float | Array:
    """A positive finite scalar: a Python float when concrete (rules are then built in NumPy,
    with no JAX dispatch or compilation), the tracer itself under a transformation."""
    if not is_concrete(value):
        if jnp.shape(value) != ():
            raise ValueError(f"{name} must be a scalar, got shape {jnp.shape(value)}")
        traced = jnp.asarray(value, dtype=float)
        # a run-time check on the size itself: a negative radius or a pair of negative box
        # sides still gives positive weights, so no later check would see it
        bad = ~jnp.isfinite(traced) | (traced <= 0)
        return traced_check(traced, bad, f"{name} must be finite and positive")
    arr = None if isinstance(value, (str, bytes)) or value is None else np.asarray(value)
    if arr is None or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    if arr.shape != ():
        raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    concrete = float(arr)
    if not np.isfinite(concrete) or concrete <= 0:
        raise ValueError(f"{name} must be finite and positive, got {concrete}")
    return concrete


def _sizes(name: str, size: object, n: int, what: str) -> tuple[object, ...]:
    """`n` sizes given as a sequence or an array of shape `(n,)`."""
    if isinstance(size, (str, bytes)) or not hasattr(size, "__len__"):
        raise TypeError(f"{name} must be {what}, got {type(size).__name__} {size!r}")
    if getattr(size, "ndim", 1) != 1 or len(size) != n:
        raise ValueError(f"{name} must be {what}, got {size!r}")
    return tuple(size[i] for i in range(n))


def _xp(*values: object) -> Any:
    """NumPy when every size is concrete, `jax.numpy` when one is traced (differentiable)."""
    return np if is_concrete(*values) else jnp


def _axial_product(z: Array, wz: Array, section: Array, ws: Array) -> tuple[Array, Array]:
    """Tensor product, axial-major: rows of equal `x3`."""
    xp = _xp(z, wz, section, ws)
    na, ns = z.shape[0], section.shape[0]
    pts = xp.concatenate(
        [
            xp.broadcast_to(section[None], (na, ns, 2)),
            xp.broadcast_to(z[:, None, None], (na, ns, 1)),
        ],
        axis=-1,
    ).reshape(na * ns, 3)
    return pts, (wz[:, None] * ws[None, :]).reshape(na * ns)


def segment(length: float, order: int = 4) -> QuadratureRule:
    """Gauss–Legendre rule on the axis `x3 ∈ [0, length]` (`x1 = x2 = 0`); weights sum to the
    length, so a body on it takes a density per unit length. Exact for polynomials in `x3` of
    degree `2·order − 1`."""
    order = as_count("segment: order", order)
    length = _check_positive("segment: length", length)
    xp = _xp(length)
    z, wz = gauss_legendre(order)
    zeros = np.zeros(order)
    pts = xp.stack([zeros, zeros, length * z], axis=-1)
    return QuadratureRule(
        pts,
        length * wz,
        pivot=xp.stack([0.0, 0.0, length]),
        contact_a=xp.stack([length, 0.0, length]),
        contact_b=xp.stack([0.0, length, length]),
        n_axial=order,
        geometry="segment",
        dimensions=xp.stack([length]),
    )


def box(size: tuple[float, float, float], order: int | tuple[int, int, int] = 3) -> QuadratureRule:
    """Gauss–Legendre product rule on `[−a/2, a/2] × [−b/2, b/2] × [0, L]`, `size = (a, b, L)`.

    `order` is the number of nodes per direction (an int or one per direction); the rule is
    exact for polynomials of degree `2·order − 1` in each direction.
    """
    size = _sizes("box: size", size, 3, "(a, b, L)")
    a, b, length = (_check_positive(f"box: size[{i}]", s) for i, s in enumerate(size))
    if isinstance(order, (int, np.integer)) and not isinstance(order, bool):
        orders = (order,) * 3
    else:
        orders = _sizes("box: order", order, 3, "an int or three ints")
    n1, n2, n3 = (as_count(f"box: order[{i}]", o) for i, o in enumerate(orders))
    xp = _xp(a, b, length)
    x1, w1 = gauss_legendre(n1)
    x2, w2 = gauss_legendre(n2)
    sx = a * (x1 - 0.5)
    sy = b * (x2 - 0.5)
    section = xp.stack(xp.meshgrid(sx, sy, indexing="ij"), -1).reshape(-1, 2)
    ws = (a * b) * np.outer(w1, w2).reshape(-1)
    dimensions = xp.stack([a, b, length])
    return _prism(section, ws, length, n3, 0.5 * xp.minimum(a, b), "box", dimensions)


def _prism(
    section: Array,
    ws: Array,
    length: Array,
    n_axial: int,
    reach: Array,
    geometry: str,
    dimensions: Array,
) -> QuadratureRule:
    """The product of a section rule `(section (S, 2), ws (S,))` with Gauss–Legendre on
    `x3 ∈ [0, length]`; default distal points at distance `reach` from the pivot."""
    xp = _xp(section, ws, length, reach)
    z, wz = gauss_legendre(n_axial)
    pts, w = _axial_product(length * z, length * wz, section, ws)
    return QuadratureRule(
        pts,
        w,
        pivot=xp.stack([0.0, 0.0, length]),
        contact_a=xp.stack([reach, 0.0, length]),
        contact_b=xp.stack([0.0, reach, length]),
        n_axial=n_axial,
        geometry=geometry,
        dimensions=dimensions,
    )


def _annulus(
    inner: Array,
    outer: Array,
    length: Array,
    n_axial: int,
    n_radial: int,
    n_angular: int,
    geometry: str,
    dimensions: Array,
) -> QuadratureRule:
    xp = _xp(inner, outer, length)
    r, wr = gauss_legendre(n_radial)
    rad = inner + (outer - inner) * r
    wrad = (outer - inner) * wr * rad  # radial weight r
    ang = 2.0 * np.pi * np.arange(n_angular) / n_angular
    wang = 2.0 * np.pi / n_angular  # uniform periodic rule: exact for trig degree < n_angular
    section = xp.stack(
        [
            (rad[:, None] * np.cos(ang)[None, :]).reshape(-1),
            (rad[:, None] * np.sin(ang)[None, :]).reshape(-1),
        ],
        -1,
    )
    ws = xp.repeat(wrad * wang, n_angular)
    return _prism(section, ws, length, n_axial, outer, geometry, dimensions)


def cylinder(
    radius: float,
    length: float,
    n_axial: int = 4,
    n_radial: int = 2,
    n_angular: int | None = None,
) -> QuadratureRule:
    """Solid cylinder `x1² + x2² ≤ radius²`, `x3 ∈ [0, length]`.

    Gauss–Legendre in `x3` (`n_axial` nodes) and in `r ∈ [0, radius]` with the weight `r`
    (`n_radial` nodes), and a uniform periodic rule in the angle (`n_angular` nodes, default
    `2·n_radial + 1`). A polynomial of degree `d` in `(x1, x2)` is integrated exactly when
    `n_angular > d` and `2·n_radial − 1 ≥ d + 1`; in `x3` up to degree `2·n_axial − 1`.
    """
    n_axial = as_count("cylinder: n_axial", n_axial)
    n_radial = as_count("cylinder: n_radial", n_radial)
    n_angular = as_count(
        "cylinder: n_angular", 2 * n_radial + 1 if n_angular is None else n_angular
    )
    radius = _check_positive("cylinder: radius", radius)
    length = _check_positive("cylinder: length", length)
    return _annulus(
        0.0,
        radius,
        length,
        n_axial,
        n_radial,
        n_angular,
        "cylinder",
        _xp(radius, length).stack([radius, length]),
    )


def tube(
    inner_radius: float,
    outer_radius: float,
    length: float,
    n_axial: int = 4,
    n_radial: int = 2,
    n_angular: int | None = None,
) -> QuadratureRule:
    """Hollow cylinder `inner_radius² ≤ x1² + x2² ≤ outer_radius²`, `x3 ∈ [0, length]`; the
    same product rule as `cylinder` with `r ∈ [inner_radius, outer_radius]`."""
    n_axial = as_count("tube: n_axial", n_axial)
    n_radial = as_count("tube: n_radial", n_radial)
    n_angular = as_count("tube: n_angular", 2 * n_radial + 1 if n_angular is None else n_angular)
    inner = _check_positive("tube: inner_radius", inner_radius)
    outer = _check_positive("tube: outer_radius", outer_radius)
    length = _check_positive("tube: length", length)
    if not is_concrete(inner, outer):
        outer = traced_check(
            outer, ~(inner < outer), "tube: inner_radius must be smaller than outer_radius"
        )
    elif not inner < outer:
        raise ValueError(
            f"tube: inner_radius ({float(inner)}) must be smaller than outer_radius ({float(outer)})"
        )
    return _annulus(
        inner,
        outer,
        length,
        n_axial,
        n_radial,
        n_angular,
        "tube",
        _xp(inner, outer, length).stack([inner, outer, length]),
    )
