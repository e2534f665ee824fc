"""Rigid bodies, given by their inertial parameters (or integrated from a volume)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from ._body import Body, MassMoments, VelocityMoments
from ._checks import as_float, as_placement, as_scalar, as_vector, check_density, raise_if
from ._module import is_concrete, module, static
from .quadrature._rule import QuadratureRule

__all__ = ["RigidBody"]


_INERTIA_FAULTS = (
    "must be finite",
    "must be symmetric",
    "must be positive semi-definite",
    "has principal moments that violate the triangle inequality (no mass distribution has them)",
)


def _inertia_faults(inertia: Any, xp: Any) -> tuple[Any, Any]:
    """Which of `_INERTIA_FAULTS` `inertia` has `(4,)`, and its principal moments; with `xp`
    NumPy (a concrete tensor, at build time) or `jax.numpy` (a traced one)."""
    finite = xp.all(xp.isfinite(inertia))
    i = xp.where(finite, inertia, 0.0)
    scale = xp.maximum(1.0, xp.abs(i).max())
    # in units of the largest entry above 1 (the same tests; moments near the largest float,
    # 1e308, overflowed in the sums and passed the triangle inequality as inf)
    unit = i / scale
    asymmetric = xp.any(xp.abs(unit - unit.T) > 1e-12 + 1e-5 * xp.abs(unit.T))
    ev = xp.linalg.eigvalsh(unit)
    tol = 1e-12 * xp.maximum(1.0 / scale, ev[2])
    faults = xp.stack([~finite, asymmetric, ev[0] < -tol, ev[0] + ev[1] < ev[2] - tol])
    return faults, ev * scale


def _check_inertia(inertia: Array) -> Array:
    """A valid inertia tensor (symmetric, positive semi-definite, principal moments satisfying
    the triangle inequality): checked at build time when concrete, by a run-time check naming
    the fault when traced (a body built inside `jit`)."""
    messages = tuple(f"RigidBody: inertia {fault}" for fault in _INERTIA_FAULTS)
    if not is_concrete(inertia):
        faults, _ = _inertia_faults(inertia, jnp)
        return raise_if(inertia, jnp.any(faults), jnp.argmax(faults), messages)
    faults, ev = _inertia_faults(np.asarray(inertia), np)
    if faults.any():
        k = int(np.argmax(faults))
        raise ValueError(messages[k] + (f", principal moments {ev}" if k >= 2 else ""))
    return inertia


@module
class RigidBody(Body):
    """A rigid body given by its inertial parameters.

    Args:
        mass: `m > 0` [kg].
        com: `(3,)` centre of mass in the body's proximal frame.
        inertia: `(3, 3)` inertia tensor about the centre of mass, proximal-frame axes
            (symmetric, positive semi-definite, principal moments satisfying the triangle
            inequality).
        distal: placement of the distal frame (where the next joint attaches) in the proximal
            frame: `None` (identity), a 4×4 matrix or a `(R, t)` pair.

    Its mass moments about the origin of `S_i` (`softrigid._body`): with `c = R_dᵀ (com − t_d)`
    and `I_O = R_dᵀ I_c R_d + m (|c|² 1 − c cᵀ)`, `s = m c` and `P = ½ tr(I_O) 1 − I_O`.
    """

    mass: Array
    com: Array
    inertia: Array
    distal_rotation: Array
    distal_translation: Array
    n_q: int = static(default=0, init=False)

    def __init__(self, mass: Any, com: Any, inertia: Any, distal: Any = None) -> None:
        object.__setattr__(self, "n_q", 0)
        object.__setattr__(self, "mass", as_scalar("RigidBody: mass", mass, positive=True))
        object.__setattr__(self, "com", as_vector("RigidBody: com", com, 3))
        inertia = as_float(inertia, "RigidBody: inertia")
        if inertia.shape != (3, 3):
            raise ValueError(f"RigidBody: inertia must have shape (3, 3), got {inertia.shape}")
        object.__setattr__(self, "inertia", _check_inertia(inertia))
        rot, trans = as_placement("RigidBody: distal", distal)
        object.__setattr__(self, "distal_rotation", rot)
        object.__setattr__(self, "distal_translation", trans)

    @classmethod
    def from_volume(
        cls, volume: QuadratureRule, density: Any = None, distal: Any = None
    ) -> RigidBody:
        """The rigid body occupying `volume` with `density` (scalar or per node; `None` takes
        the volume's own). `distal` defaults to the translation to the volume's pivot (the
        centre of its distal face), or the identity when the volume has none."""
        if not isinstance(volume, QuadratureRule):
            raise TypeError(
                f"RigidBody.from_volume: volume must be a QuadratureRule, got {type(volume).__name__}"
            )
        masses = volume.weights * check_density("RigidBody.from_volume", density, volume)
        mass = jnp.sum(masses)
        com = masses @ volume.points / mass
        r = volume.points - com
        inertia = jnp.einsum(
            "k,kij->ij",
            masses,
            jnp.sum(r * r, -1)[:, None, None] * jnp.eye(3) - r[:, :, None] * r[:, None, :],
        )
        if distal is None and volume.pivot is not None:
            distal = (jnp.eye(3), volume.pivot)
        return cls(mass, com, inertia, distal)

    def distal_pose(self, q: Array) -> tuple[Array, Array]:
        del q
        return self.distal_rotation, self.distal_translation

    def position_terms(self, q: Array) -> tuple[MassMoments, None]:
        # c = R_dᵀ (com − t_d),  I_O = R_dᵀ I_c R_d + m (|c|² 1 − c cᵀ),  P = ½ tr(I_O) 1 − I_O
        dtype = q.dtype
        rot, trans = self.distal_rotation, self.distal_translation
        c = rot.T @ (self.com - trans)
        eye = jnp.eye(3, dtype=dtype)
        inertia = rot.T @ self.inertia @ rot + self.mass * (jnp.dot(c, c) * eye - jnp.outer(c, c))
        second = 0.5 * jnp.trace(inertia) * eye - inertia
        moments = MassMoments(
            self.mass.astype(dtype),
            (self.mass * c).astype(dtype),
            second.astype(dtype),
            jnp.zeros((0, 3), dtype),
            jnp.zeros((0, 3, 3), dtype),
            jnp.zeros((0, 0, 3, 3), dtype),
        )
        return moments, None

    def velocity_terms(self, data: None, q: Array, qd: Array) -> VelocityMoments:
        del data, qd
        return self.zero_velocity_terms(q.dtype)

    def velocity_moments_rate(self, data: None, d_data: None, qd: Array) -> VelocityMoments:
        """No coordinates: the moments are zero, and so is their derivative."""
        del data, d_data
        zero = self.zero_velocity_terms(qd.dtype)
        return VelocityMoments(*(jnp.zeros((*m.shape, 0), qd.dtype) for m in zero))

    def map_points(self, q: Array, points: Array) -> Array:
        """Points of a rigid body are given in its proximal frame: the identity."""
        del q
        return points

    def mass_points(self, q: Array) -> tuple[Array, Array]:
        """The centre of mass `(1, 3)` in the proximal frame and the mass `(1,)`."""
        del q
        return self.com[None], self.mass[None]
