"""Rigid bodies, given by their inertial parameters (or integrated from a volume)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from ._body import Body, MassMoments, VelocityMoments
from ._checks import as_placement, as_scalar, as_vector, check_density
from ._module import is_concrete, module, static
from .quadrature._rule import QuadratureRule

__all__ = ["RigidBody"]


def _check_inertia(inertia: Array) -> None:
    if not is_concrete(inertia):
        return
    i = np.asarray(inertia)
    if not np.all(np.isfinite(i)):
        raise ValueError("RigidBody: inertia must be finite")
    if not np.allclose(i, i.T, atol=1e-12 * max(1.0, np.abs(i).max())):
        raise ValueError("RigidBody: inertia must be symmetric")
    ev = np.linalg.eigvalsh(i)
    tol = 1e-12 * max(1.0, ev.max())
    if ev.min() < -tol:
        raise ValueError(f"RigidBody: inertia must be positive semi-definite, eigenvalues {ev}")
    if ev[0] + ev[1] < ev[2] - tol:
        raise ValueError(
            f"RigidBody: principal moments {ev} violate the triangle inequality "
            "(no mass distribution has them)"
        )


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
        inertia = jnp.asarray(inertia, dtype=float)
        if inertia.shape != (3, 3):
            raise ValueError(f"RigidBody: inertia must have shape (3, 3), got {inertia.shape}")
        _check_inertia(inertia)
        object.__setattr__(self, "inertia", inertia)
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

    def map_points(self, q: Array, points: Array) -> Array:
        """Points of a rigid body are given in its proximal frame: the identity."""
        del q
        return points

    def mass_points(self, q: Array) -> tuple[Array, Array]:
        """The centre of mass `(1, 3)` in the proximal frame and the mass `(1,)`."""
        del q
        return self.com[None], self.mass[None]
