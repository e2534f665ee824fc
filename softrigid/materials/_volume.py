"""The check that a body map preserves volume (`det F = 1`), for incompressible laws."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .._cache import jit
from .._module import is_concrete, rounding_tolerance
from ..kinematics._base import kinematics_name
from ._gradient import deformation_gradient

if TYPE_CHECKING:
    from .._soft_body import SoftBody

__all__ = ["check_volume_preserving", "volume_preserving_at_run_time"]

# Volume preservation is checked at q = 0 and at these many seeded random configurations.
_VP_SAMPLES = 3
_VP_SCALE = 0.05
_VP_TOL = 1e-8
_REDUCED_PRECISION = (  # float32 GPU products default to TensorFloat-32 (det F off by ~1e-3)
    " In float32 on a GPU, JAX multiplies matrices in TensorFloat-32 (about 1e-3) by default: "
    "evaluate with jax.default_matmul_precision('highest')."
)
# A sample outside the map's valid range (`valid(x, q)`) is halved at most this many times.
_VP_HALVINGS = 30


class _Geometry(NamedTuple):
    """What `det F` depends on: a body's map and its volume (not its density or material,
    which may be traced while these are concrete, e.g. a modulus given inside `jit`)."""

    kinematics: Any
    volume: Any

    @property
    def n_q(self) -> int:
        return int(self.kinematics.n_q)


def _seeded_configurations(n_q: int) -> np.ndarray:
    """`q = 0` and `_VP_SAMPLES` seeded `q ~ 0.05 N(0, I)` `(1 + _VP_SAMPLES, n_q)`."""
    rng = np.random.default_rng(0)
    random = _VP_SCALE * rng.standard_normal((_VP_SAMPLES, n_q))
    return np.concatenate([np.zeros((1, n_q)), random])


def _sample_configurations(body: _Geometry) -> np.ndarray:
    """`_seeded_configurations`; a map with a valid range (an LVP composition's `valid(x, q)`,
    e.g. a source whose coordinate in m² must keep its cavity open) gets each random sample
    halved until it is valid at every quadrature node."""
    qs = _seeded_configurations(body.n_q)
    if getattr(body.kinematics, "valid", None) is not None:
        for _ in range(_VP_HALVINGS):
            out = ~np.asarray(_inside(body, jnp.asarray(qs[1:])))
            if not out.any():
                break
            qs[1:][out] /= 2.0
    return qs


@jit
def _inside(body: _Geometry, qs: Array) -> Array:
    """Whether each configuration of `qs` `(S, n_q)` is in the map's valid range at every
    quadrature node `(S,)`: one compiled program, loaded from the persistent cache in a later
    process (on the helicoid segment's 165 nodes 0.19 s with the cache and 0.43 s without,
    where the same evaluation op by op took 0.82 and 3.7 s, measured 2026-11-29)."""
    valid = body.kinematics.valid
    return jax.vmap(lambda q: jnp.all(jax.vmap(valid, (0, None))(body.volume.points, q)))(qs)


@jit
def _jacobian_determinants(body: _Geometry, qs: Array) -> Array:
    """`det F` at the quadrature nodes `(S, K)` for the configurations `qs` `(S, n_q)`."""
    return jax.vmap(lambda q: jnp.linalg.det(deformation_gradient(body, q)))(qs)


def volume_preserving_at_run_time(body: SoftBody, where: str) -> tuple[Array, str] | None:
    """For a body whose map or volume is traced (built inside `jit`), where
    `check_volume_preserving` cannot read values: the run-time condition `(bad, message)`
    that `det F = 1` fails at a quadrature node at `q = 0` or at the seeded samples of
    `check_volume_preserving` (those outside the map's valid range, where `det F` is not
    finite, are skipped: they cannot be halved into it at run time); the material attaches it
    to its parameters (`SoftBody`). `None` for a concrete one, checked at once instead."""
    geometry = _Geometry(body.kinematics, body.volume)
    if is_concrete(geometry):
        check_volume_preserving(body, where)
        return None
    qs = _seeded_configurations(body.n_q)
    det = _jacobian_determinants(geometry, jnp.asarray(qs, body.volume.points.dtype))
    off = jnp.abs(det - 1.0) > rounding_tolerance(det, _VP_TOL)
    bad = jnp.any(off[1:] & jnp.isfinite(det[1:])) | jnp.any(off[0] | ~jnp.isfinite(det[0]))
    name = kinematics_name(body.kinematics)
    return bad, (
        f"{where} needs a volume-preserving body map, but {name!r} has det F ≠ 1 at q = 0 or "
        "at seeded configurations"
    )


def check_volume_preserving(body: SoftBody, where: str) -> None:
    """Raise `ValueError` unless `det F = 1` (to 1e-8, or 100 units of float32 rounding in
    float32) at every quadrature node of `body` at `q = 0` and at three seeded random
    configurations `q ~ 0.05 N(0, I)` (halved into the map's valid range when it has one): a
    necessary test, cheap enough for every build; made whenever the map and the volume are
    concrete (a modulus or a density traced inside `jit` does not skip it), skipped when
    they are traced."""
    geometry = _Geometry(body.kinematics, body.volume)
    if not is_concrete(geometry):
        return
    name = kinematics_name(body.kinematics)
    qs = _sample_configurations(geometry)
    dets = np.asarray(_jacobian_determinants(geometry, jnp.asarray(qs)))
    for q, det in zip(qs, dets):
        if not np.all(np.isfinite(det)):
            raise ValueError(
                f"{where}: the deformation gradient of {name!r} is not finite at q = {q.tolist()}"
            )
        err = float(np.max(np.abs(det - 1.0)))
        if err > rounding_tolerance(det, _VP_TOL):
            raise ValueError(
                f"{where} needs a volume-preserving body map, but {name!r} has "
                f"max |det F − 1| = {err:.3g} at q = {np.round(q, 4).tolist()}. An incompressible "
                "law on such a map gives a force at rest and a wrong stiffness. Use a "
                "volume-preserving (LVP) map, or CompressibleNeoHookean / SaintVenantKirchhoff."
                + (_REDUCED_PRECISION if det.dtype == np.float32 else "")
            )
