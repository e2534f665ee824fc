"""The built-in reference volumes' rules: a segment, a box, a cylinder and a tube, as Gauss
tensor products in material coordinates (the conventions of `softrigid.quadrature._rule`)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from .._checks import as_count, traced_check
from .._module import is_concrete
from ._gauss import gauss_legendre
from ._rule import QuadratureRule

__all__ = ["box", "cylinder", "segment", "tube"]


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
