"""Composition of LVP primitives into one body map `f = h_P ∘ … ∘ h_1`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ..._checks import as_float, as_indices, as_scalar
from ..._module import is_concrete, module, rounding_tolerance, static
from .._base import _check_q
from .._rod import check_length
from ._primitives import Primitive, Shear, Source, Stretch, Twist

__all__ = ["Composite", "compose"]


@module
class Composite(Primitive):
    """The composition `f = h_P ∘ … ∘ h_1` of LVP primitives (`h_1` acts first on `x`), one
    body map with `det(∂f/∂x) = 1`. Build it with `compose`.

    Attributes:
        primitives: `(h_1, …, h_P)`.
        index: for each primitive, the positions of its coordinates in the body's `q`.
        length: the body's axial range `[0, L]` of material points, or `None`. With it, each
            primitive sees the axial range of its input (the image of `[0, L]` under the
            stretches before it), which lets `Bend3D` compute its backbone once per body
            instead of once per point; points outside `[0, L]` are outside the valid range.
    """

    primitives: tuple[Primitive, ...]
    index: tuple[tuple[int, ...], ...] = static()
    n_q: int = static()
    length: Array | None = None

    def needs_hollow(self) -> bool:
        return any(prim.needs_hollow() for prim in self.primitives)

    def _parts(self, q: Array) -> list[Array]:
        return [q[np.asarray(idx, dtype=int)] for idx in self.index]

    def _prepared(self, parts: list[Array]) -> list[Any]:
        """Each primitive's per-body work, given the axial range of its input (`prepare`)."""
        span, out = self.length, []
        for prim, qp in zip(self.primitives, parts):
            out.append(prim.prepare(qp, span))
            span = None if span is None else prim.axial_span(span, qp)
        return out

    def __call__(self, x: Array, q: Array) -> Array:
        # the per-body work depends on q only: under vmap over points it is done once
        parts = self._parts(q)
        y = (x[0], x[1], x[2])
        for prim, qp, prepared in zip(self.primitives, parts, self._prepared(parts)):
            y = prim.apply_components(y, qp, prepared)
        return jnp.stack(y)

    def valid(self, x: Array, q: Array) -> Array:
        ok = jnp.asarray(True)
        if self.length is not None:
            tol = 1e-9 * self.length
            ok = (x[2] >= -tol) & (x[2] <= self.length + tol)
        for prim, qp in zip(self.primitives, self._parts(q)):
            ok = ok & prim.valid(x, qp)
            x = prim(x, qp)
        return ok

    def check(self, points: Array, q: Array) -> None:
        """Raise a `ValueError` naming the first primitive whose valid range a point of
        `points` `(K, 3)` leaves at `q` (call outside `jit`)."""
        x = jnp.asarray(points)
        if self.length is not None and is_concrete(self.length):
            ell, z = float(self.length), np.asarray(x)[:, 2]
            tol = rounding_tolerance(x, 1e-9)
            outside = (z < -tol * ell) | (z > ell * (1 + tol))
            if outside.any():
                raise ValueError(
                    f"the composition spans x3 ∈ [0, {ell:.6g}]; material point "
                    f"{np.asarray(x)[np.argmax(outside)].tolist()} lies outside"
                )
        for p, (prim, qp) in enumerate(zip(self.primitives, self._parts(jnp.asarray(q)))):
            try:
                prim.check(x, qp)
            except ValueError as err:
                raise ValueError(f"primitive {p} of the composition: {err}") from None
            x = jax.vmap(prim, in_axes=(0, None))(x, qp)

    def cavity_volume(self, q: Array, inner_radius: Any, length: Any) -> Array:
        """Volume of the cavity `{r < inner_radius, 0 ≤ z ≤ length}` (reference coordinates)
        after the map: `π r_i² L + Σ_sources π ∫ g` over the cavity's axial extent at each
        source (moved by the stretches before it). Needs every primitive before the last
        `Source` to be a `Stretch`, `Twist`, `Shear` or `Source` (they map axial slabs to
        slabs); the primitives after it preserve the cavity's volume."""
        sources = [p for p, prim in enumerate(self.primitives) if isinstance(prim, Source)]
        last = sources[-1] if sources else -1
        for prim in self.primitives[:last]:
            if not isinstance(prim, (Stretch, Twist, Shear, Source)):
                raise ValueError(
                    f"cavity_volume: a {type(prim).__name__} acts before a Source; the cavity's "
                    "axial extent is then not a slab"
                )
        q = as_float(q, "cavity_volume: q")
        _check_q(self, "cavity_volume", q)
        ri = as_scalar("cavity_volume: inner_radius", inner_radius, nonnegative=True)
        length = check_length("cavity_volume", length)
        z0, z1 = jnp.zeros((), q.dtype), length.astype(q.dtype)
        volume = jnp.pi * ri * ri * z1
        for prim, qp in zip(self.primitives[: last + 1], self._parts(q)):
            if isinstance(prim, Stretch):
                z0, z1 = prim.axial_map(z0, qp), prim.axial_map(z1, qp)
            elif isinstance(prim, Source):
                volume = volume + prim.injected_volume(qp, z0, z1)
        return volume


def compose(
    *primitives: Primitive,
    coordinates: Sequence[Sequence[int]] | None = None,
    length: Any = None,
) -> Composite:
    """Compose LVP primitives into one body map `f = h_P ∘ … ∘ h_1` (`h_1 = primitives[0]`
    acts first).

    Args:
        *primitives: the primitives (nested compositions are flattened).
        coordinates: optional, for each primitive the positions of its coordinates in the body's
            `q` (a primitive with `n` coordinates takes `n` positions; positions may be shared,
            every position in `0 … n_q − 1` must be used). Default: concatenated in order.
        length: optional axial range `[0, L]` of the body's material points (see `Composite`);
            give it when the volume spans `x3 ∈ [0, L]`, so a `Bend3D` is evaluated per body.

    Returns:
        A `Composite` (a `Kinematics`) with `n_q` coordinates.
    """
    if not primitives:
        raise ValueError("compose: give at least one primitive")
    for p, prim in enumerate(primitives):
        if not isinstance(prim, Primitive):
            raise TypeError(
                f"compose: primitive {p} must be a softrigid.kinematics.lvp primitive, got "
                f"{type(prim).__name__}"
            )
    if coordinates is None:
        index, start = [], 0
        for prim in primitives:
            index.append(tuple(range(start, start + prim.n_q)))
            start += prim.n_q
    else:
        index = [as_indices(f"compose: coordinates[{p}]", idx) for p, idx in enumerate(coordinates)]
        if len(index) != len(primitives):
            raise ValueError(
                f"compose: coordinates has {len(index)} entries for {len(primitives)} primitives"
            )
        for p, (prim, idx) in enumerate(zip(primitives, index)):
            if len(idx) != prim.n_q:
                raise ValueError(
                    f"compose: primitive {p} ({type(prim).__name__}) has {prim.n_q} coordinates, "
                    f"got positions {idx}"
                )
        used = sorted({i for idx in index for i in idx})
        if used and (used[0] < 0 or used != list(range(used[-1] + 1))):
            raise ValueError(
                f"compose: coordinate positions must cover 0 … n_q − 1 without gaps, got {used}"
            )
    flat, flat_index = [], []
    for prim, idx in zip(primitives, index):
        if isinstance(prim, Composite):
            for inner, inner_idx in zip(prim.primitives, prim.index):
                flat.append(inner)
                flat_index.append(tuple(idx[i] for i in inner_idx))
        else:
            flat.append(prim)
            flat_index.append(idx)
    n_q = 1 + max((i for idx in flat_index for i in idx), default=-1)
    if length is not None:
        length = check_length("compose", length)
    return Composite(tuple(flat), tuple(flat_index), n_q, length)
