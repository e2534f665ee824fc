"""Soft bodies: a map `f(x, q_B)` over a reference volume with a density (and a material).

The position-level terms are the body's mass moments (`softrigid._body`), computed from the
quadrature nodes `p_k = R_Bᵀ (f(x_k, q_B) − t_B)` in the distal frame `S_i` and their Jacobians
`J_k`, node by node or, for a rod on a rule of axial rows, row by row with the rows'
moments (exactly: a rod's nodes are affine in the section coordinates; `softrigid._rows`).
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._ad import directional_pair, value_and_jacfwd
from ._body import Body, MassMoments, Pose, VelocityMoments
from ._checks import check_density, check_material_point, traced_check
from ._math import normalize, rmatvec, vee
from ._module import is_concrete, module, rounding_tolerance, static
from ._rows import (
    Rows,
    integrates_by_rows,
    row_moments_rate,
    row_position_level,
    row_velocity_level,
)
from .kinematics._base import Kinematics, as_kinematics, check_indices, kinematics_name
from .kinematics._subclass import check_kinematics
from .materials._base import Material
from .quadrature._geometry import contains, has_geometry, within_envelope
from .quadrature._rule import QuadratureRule

__all__ = ["SoftBody"]


class Nodes(NamedTuple):
    """A body's nodes at the position level, tangent-leading: `u[0] = p_k`, `u[j] = J_k e_j`
    `(1 + n, K, 3)`, with the node masses `(K,)`."""

    u: Array
    weights: Array


def _frame_axes(points: Array) -> Array:
    # n1 = (f_a − f_J)/|·|, n2 = Gram–Schmidt of (f_b − f_J), n3 = n1 × n2 (eqs. 5–7)
    n1 = normalize(points[1] - points[0])
    u2 = points[2] - points[0]
    n2 = normalize(u2 - jnp.dot(u2, n1) * n1)
    return jnp.stack([n1, n2, jnp.cross(n1, n2)], axis=1)


def _node_moments(h: Array, data: Nodes) -> VelocityMoments:
    """`Σ m h`, `Σ m p × h`, `Σ m J_jᵀ h` of `h` `(K, 3)` (linear in `h`)."""
    # U = Σ m h u_bᵀ (3, 1 + n, 3): Σ m p × h = vee(U_p − U_pᵀ), Σ m J_jᵀ h = tr U_j
    big_u = jnp.einsum("ki,k,bkj->ibj", h, data.weights, data.u)
    return VelocityMoments(
        data.weights @ h, 2.0 * vee(big_u[:, 0]), jnp.einsum("iji->j", big_u[:, 1:])
    )


@module
class SoftBody(Body):
    """A deformable body: a map `f(x, q_B)` over a reference volume with a density.

    Args:
        kinematics: a `softrigid.kinematics` family, or any callable `f(x (3,), q (n_q,)) -> (3,)`
            (then give `n_q`, and `params` if it takes `f(x, q, params)`).
        volume: a `softrigid.quadrature.QuadratureRule` over the reference volume.
        density: scalar or `(K,)` per node [kg/m³]; `None` takes the volume's own.
        material: a `softrigid.materials.Material` (elastic energy and damping), or `None`.
        n_q, params: for plain-function kinematics.
        pivot: material point `x_J` of the distal pivot (default: the volume's pivot).
        contact_points: `(x_a, x_b)` two points of the distal contact area with
            `(x_a − x_J) ⟂ (x_b − x_J)` (default: the volume's).

    The distal frame `S_i`: when the family gives its distal pose exactly
    (`Kinematics.exact_distal`), that pose; otherwise origin `f(x_J)` and axes from
    `n1 ∝ f(x_a) − f(x_J)`, `n2 ∝ f(x_b) − f(x_J)` (made orthogonal to `n1` by Gram–Schmidt,
    which changes nothing when the contact area does not deform), `n3 = n1 × n2`, rotated by the
    constant reference axes so that at the reference configuration `S_i` is the proximal frame
    translated to the pivot.
    """

    kinematics: Kinematics
    volume: QuadratureRule
    density: Array
    material: Material | None
    frame_points: Array | None
    frame_axes: Array | None
    n_q: int = static(default=0, init=False)
    sectioned: bool = static(default=False, init=False)

    def __init__(
        self,
        kinematics: Any,
        volume: QuadratureRule,
        density: Any = None,
        material: Any = None,
        *,
        n_q: int | None = None,
        params: Any = None,
        pivot: Any = None,
        contact_points: Any = None,
    ) -> None:
        kin = as_kinematics(kinematics, n_q, params)
        check_kinematics(kin)
        if not isinstance(volume, QuadratureRule):
            raise TypeError(
                f"SoftBody: volume must be a QuadratureRule, got {type(volume).__name__}"
            )
        if volume.n_points == 0:
            raise ValueError("SoftBody: volume has no nodes: the body would have no mass")
        object.__setattr__(self, "kinematics", kin)
        object.__setattr__(self, "volume", volume)
        object.__setattr__(self, "n_q", kin.n_q)
        object.__setattr__(self, "density", check_density("SoftBody", density, volume))
        if material is not None and not isinstance(material, Material):
            raise TypeError(
                "SoftBody: material must be a softrigid.materials.Material, "
                f"got {type(material).__name__}"
            )
        object.__setattr__(self, "material", material)
        if kin.exact_distal and (pivot is not None or contact_points is not None):
            raise ValueError(
                f"SoftBody: {type(kin).__name__} gives its distal pose exactly; "
                "pivot and contact_points do not apply"
            )
        if kin.exact_distal:
            object.__setattr__(self, "frame_points", None)
            object.__setattr__(self, "frame_axes", None)
        else:
            points = self._frame_points(volume, pivot, contact_points)
            object.__setattr__(self, "frame_points", points)
            object.__setattr__(self, "frame_axes", _frame_axes(points))
        _check_length(kin, volume)
        _check_hollow(kin, volume)
        self._check_indices()
        object.__setattr__(self, "sectioned", integrates_by_rows(kin, volume))
        if material is not None:
            check = material.validate(self)
            if check is not None:  # traced: a run-time check where the material is used
                object.__setattr__(self, "material", traced_check(material, *check))

    def _check_indices(self) -> None:
        """`check_indices` of a user map at the nodes and the frame points (where concrete)."""
        nodes = (self.volume.points,) + (() if self.frame_points is None else (self.frame_points,))
        points = np.vstack([np.asarray(p) for p in nodes]) if is_concrete(nodes) else None
        check_indices(self.kinematics, points=points)

    @staticmethod
    def _frame_points(volume: QuadratureRule, pivot: Any, contact_points: Any) -> Array:
        pivot = volume.pivot if pivot is None else pivot
        if contact_points is None:
            contact_points = (volume.contact_a, volume.contact_b)
        if getattr(contact_points, "shape", None) == (2, 3):  # one (2, 3) array of the pair
            contact_points = (contact_points[0], contact_points[1])
        if not isinstance(contact_points, (tuple, list)) or len(contact_points) != 2:
            raise ValueError("SoftBody: contact_points must be a pair (x_a, x_b) of (3,) points")
        if pivot is None or contact_points[0] is None or contact_points[1] is None:
            raise ValueError(
                "SoftBody: this volume defines no distal pivot/contact points; "
                "give pivot= and contact_points=(x_a, x_b)"
            )
        pts = jnp.stack(
            [
                check_material_point("SoftBody: pivot", pivot),
                check_material_point("SoftBody: contact_points[0]", contact_points[0]),
                check_material_point("SoftBody: contact_points[1]", contact_points[1]),
            ]
        )
        # a segment is a line: its contact points lie off it (the map is defined around it)
        if is_concrete(pts) and has_geometry(volume) and volume.geometry != "segment":
            outside = ~within_envelope(volume, np.asarray(pts), tol=rounding_tolerance(pts, 1e-9))
            if outside.any():
                which = ("pivot", "contact_points[0]", "contact_points[1]")[int(np.argmax(outside))]
                raise ValueError(
                    f"SoftBody: {which} {np.asarray(pts)[np.argmax(outside)].tolist()} lies outside "
                    f"the body's {volume.geometry} volume"
                )
        if is_concrete(pts):
            p = np.asarray(pts)
            da, db = p[1] - p[0], p[2] - p[0]
            na, nb = np.linalg.norm(da), np.linalg.norm(db)
            if na < 1e-12 or nb < 1e-12:
                raise ValueError("SoftBody: contact points must differ from the pivot")
            # the body's size from its nodes, where they are concrete (a rule built from traced
            # sizes under an eager `vmap` or `grad` is not, while the points given here are)
            nodes = volume.points if is_concrete(volume.points) else p
            size = np.max(np.linalg.norm(np.asarray(nodes) - p[0], axis=1), initial=0.0)
            if min(na, nb) < 1e-6 * size:
                warnings.warn(
                    f"SoftBody: a contact point lies {min(na, nb):.2g} from the pivot "
                    f"({min(na, nb) / size:.1g} of the body's size {size:.2g}): the distal "
                    "frame, from the differences of their images, loses accuracy in proportion "
                    "(measured: 1e-8 relative in the inverse dynamics at 1e-9 of the size); "
                    "place them farther from the pivot",
                    stacklevel=3,
                )
            if abs(da @ db) > 1e-9 * na * nb:
                raise ValueError(
                    "SoftBody: contact points must be orthogonal about the pivot, "
                    f"(x_a − x_J)·(x_b − x_J) = {da @ db:.3g} (eq. 4)"
                )
        return pts

    @property
    def mass_weights(self) -> Array:
        """`m_k = ρ_k w_k` (K,), summing to the body mass."""
        return self.density * self.volume.weights

    def distal_pose(self, q: Array) -> tuple[Array, Array]:
        """Pose `(R_B, t_B)` of the distal frame in the proximal frame (eqs. 5–7)."""
        if self.kinematics.exact_distal:
            return self.kinematics.distal_pose(q)
        return self._pose_from(self.kinematics.map_points(self.frame_points, q))

    def _pose_from(self, images: Array) -> tuple[Array, Array]:
        # R_B = N(q) N(0)ᵀ, t_B = f(x_J, q), from the images of (x_J, x_a, x_b)
        return _frame_axes(images) @ self.frame_axes.T, images[0]

    def map_points(self, q: Array, points: Array) -> Array:
        """`f(x, q_B)` for material points `(M, 3)`, in the proximal frame."""
        return self.kinematics.map_points(points, q)

    def posed_points(self, q: Array, points: Array) -> tuple[Pose, Array]:
        """The distal pose and `f(x, q_B)` of `points` from one call of the map with the frame
        points (a `Composite`'s `prepare` done once), or the kinematics' exact distal pose."""
        if self.kinematics.exact_distal:
            return self.distal_pose(q), self.map_points(q, points)
        frame = self.frame_points.astype(points.dtype)
        images = self.kinematics.map_points(jnp.concatenate([frame, points]), q)
        return self._pose_from(images[: len(frame)]), images[len(frame) :]

    def _nodes(self, q: Array) -> tuple[Array, Pose]:
        """The quadrature nodes in `S_i` and the distal pose `(R_B, t_B)` they were placed with
        (one backbone evaluation per axial row). Without rows the frame points are mapped in
        the same call as the nodes, so a map's per-body work (a `Composite`'s `prepare`) is
        done once, for the nodes and the pose and their derivatives."""
        n_axial = self.volume.n_axial
        if self.kinematics.exact_distal or n_axial is not None:
            rot, trans = self.distal_pose(q)
            pts = self.kinematics.map_points(self.volume.points, q, n_axial)
        else:
            k = self.volume.points.shape[0]
            both = jnp.concatenate([self.volume.points, self.frame_points.astype(q.dtype)])
            images = self.kinematics.map_points(both, q)
            pts, (rot, trans) = images[:k], self._pose_from(images[k:])
        return rmatvec(rot, pts - trans), (rot, trans)

    def _node_terms(self, q: Array) -> tuple[Pose, Pose, MassMoments, Nodes]:
        (points, pose), (jac, d_pose) = value_and_jacfwd(self._nodes, q, tangent_axis=0)
        u = jnp.concatenate([points[None], jac])
        w = self.mass_weights
        # Σ m u_a (1 + n, 3),  Σ m u_a u_bᵀ (1 + n, 3, 1 + n, 3)
        first = jnp.einsum("k,aki->ai", w, u)
        second = jnp.einsum("aki,k,bkj->aibj", u, w, u)
        moments = MassMoments(
            mass=jnp.sum(w),
            first=first[0],
            second=second[0, :, 0],
            jac_first=first[1:],
            jac_second=second[1:, :, 0],
            jac_jac=jnp.transpose(second[1:, :, 1:], (0, 2, 1, 3)),
        )
        d_pose = tuple(jnp.moveaxis(d, 0, -1) for d in d_pose)
        return pose, d_pose, moments, Nodes(u, w)

    def position_level(self, q: Array) -> tuple[Pose, Pose, MassMoments, Rows | Nodes]:
        """The distal pose and its Jacobian from the same forward pass as the mass moments of
        `u = (p, J e_1, …, J e_n)` (computed once per `q`)."""
        if not self.sectioned:
            return self._node_terms(q)
        return row_position_level(self, q)

    def position_terms(self, q: Array) -> tuple[MassMoments, Rows | Nodes]:
        """Mass moments of `u = (p, J e_1, …, J e_n)` (computed once per `q`)."""
        return self.position_level(q)[2:]

    def velocity_level(
        self, data: Rows | Nodes, q: Array, qd: Array
    ) -> tuple[Pose, Pose, VelocityMoments]:
        """The distal pose's directional derivatives from the same jvp of a jvp as the moments
        of `h_k = ∂²p_k/∂q²[q̇, q̇]`, the velocity part of the nodes' relative acceleration
        (computed once per `(q, q̇)`): `Σ m h`, `Σ m p × h`, `Σ m J_jᵀ h`."""
        if isinstance(data, Nodes):
            (_, rate), (h, bias) = directional_pair(self._nodes, q, qd)
            return rate, bias, _node_moments(h, data)
        return row_velocity_level(self, data, q, qd)

    def velocity_moments_rate(
        self, data: Rows | Nodes, d_data: Rows | Nodes, qd: Array
    ) -> VelocityMoments:
        """`∂V/∂q̇_j = V(2 ∂²p[q̇, e_j])` (`Body.velocity_moments_rate`), from the tangents of
        the nodes' (or the rows') Jacobians."""
        if isinstance(data, Nodes):
            # 2 ∂²p[q̇, e_j] = 2 Σ_k ∂(J e_k)/∂q_j q̇_k  (K, 3, n)
            dh = 2.0 * jnp.einsum("bkij,b->kij", d_data.u[1:], qd.astype(d_data.u.dtype))
            return jax.vmap(lambda h: _node_moments(h, data), in_axes=-1, out_axes=-1)(dh)
        return row_moments_rate(self, data, d_data, qd)

    def velocity_terms(self, data: Rows | Nodes, q: Array, qd: Array) -> VelocityMoments:
        """Moments of `h_k = ∂²p_k/∂q²[q̇, q̇]` (see `velocity_level`)."""
        return self.velocity_level(data, q, qd)[2]

    def integrals(
        self, q: Array, qd: Array
    ) -> tuple[MassMoments, VelocityMoments, tuple[Array, Array, Array]]:
        """Every integral over the body's rule that the dynamics take at `(q, q̇)`: the mass
        moments of `u = (p, J e_1, …, J e_n)` (`position_terms`), the moments of
        `h = ∂²p/∂q²[q̇, q̇]` (`velocity_terms`) and the internal force with its derivatives
        `(s, ∂s/∂q, ∂s/∂q̇)` (`internal_force_derivatives`). Each is linear in the rule's
        weights, and together they fix the body's part in any chain (its distal frame comes
        from points, not weights): `quadrature.empirical` fitted to them at sampled states
        gives a rule that serves the body wherever it is linked (README, "Empirical
        cubature")."""
        moments, data = self.position_terms(q)
        return moments, self.velocity_terms(data, q, qd), self.internal_force_derivatives(q, qd)

    def mass_points(self, q: Array) -> tuple[Array, Array]:
        """The quadrature nodes mapped to the proximal frame, `f(x_k, q)` (K, 3), and their
        masses `m_k` (K,)."""
        return self.kinematics.map_points(
            self.volume.points, q, self.volume.n_axial
        ), self.mass_weights

    def posed_mass_points(self, q: Array) -> tuple[Pose, tuple[Array, Array]]:
        """The distal pose and `mass_points`, the nodes mapped with the frame points in one
        call where the pose comes from the map and the rule has no rows (`posed_points`)."""
        if self.volume.n_axial is not None:
            return self.distal_pose(q), self.mass_points(q)
        pose, points = self.posed_points(q, self.volume.points)
        return pose, (points, self.mass_weights)

    def elastic_energy(self, q: Array) -> Array:
        """`U(q_B)` of the body's material (zero without one)."""
        if self.material is None:
            return super().elastic_energy(q)
        return self.material.energy(self, q)

    def dissipation(self, q: Array, qd: Array) -> Array:
        """`R(q_B, q̇_B)` of the body's material (zero without one)."""
        if self.material is None:
            return super().dissipation(q, qd)
        return self.material.dissipation(self, q, qd)

    def internal_force(self, q: Array, qd: Array) -> Array:
        """`s_B = ∂U/∂q_B + ∂R/∂q̇_B` of the body's material (zero without one)."""
        if self.material is None:
            return jnp.zeros_like(q)
        return self.material.internal_force(self, q, qd)

    def damping_matrix(self, q: Array, qd: Array) -> Array:
        """`∂s_B/∂q̇_B` `(n_q, n_q)` of the body's material (zero without one)."""
        if self.material is None:
            return jnp.zeros((q.shape[0], q.shape[0]), q.dtype)
        return self.material.damping_matrix(self, q, qd)

    def internal_force_derivatives(self, q: Array, qd: Array) -> tuple[Array, Array, Array]:
        """`(s_B, ∂s_B/∂q_B, ∂s_B/∂q̇_B)` of the body's material (zeros without one)."""
        if self.material is None:
            return super().internal_force_derivatives(q, qd)
        return self.material.internal_force_derivatives(self, q, qd)


def _check_length(kin: Kinematics, volume: QuadratureRule) -> None:
    """A family's length `L` must be the volume's (the `x3` of its distal pivot)."""
    length = getattr(kin, "length", None)
    if length is None or volume.pivot is None or not is_concrete(length, volume.pivot):
        return
    ell, span = float(np.asarray(length)), float(np.asarray(volume.pivot)[2])
    if abs(ell - span) > 1e-9 * max(abs(ell), abs(span), 1e-12):
        raise ValueError(
            f"SoftBody: the kinematics {type(kin).__name__} has length {ell:.6g} but the volume "
            f"spans x3 ∈ [0, {span:.6g}] (its distal pivot); build both with the same length"
        )


def _check_hollow(kin: Kinematics, volume: QuadratureRule) -> None:
    """A map with a `Source` (`R² = r² + g`: a cavity grows) needs a volume that leaves out its
    axis: on a solid one it tears the material at `r = 0`, where its stretch grows as `1/r`
    (checked at nine points of the axis, for a volume whose geometry is known)."""
    needs = getattr(kin, "needs_hollow", None)
    if needs is None or not needs() or not is_concrete(volume) or not has_geometry(volume):
        return
    top = volume.pivot[2] if volume.pivot is not None else np.max(np.asarray(volume.points)[:, 2])
    z = (np.arange(9) + 0.5) / 9 * float(np.asarray(top))
    axis = np.column_stack([np.zeros(9), np.zeros(9), z])
    inside = contains(volume, axis)
    if inside.any():
        raise ValueError(
            f"SoftBody: the kinematics {kinematics_name(kin)} has a Source (a cavity that grows), "
            f"which needs a hollow body, but the axis point (0, 0, {z[np.argmax(inside)]:.6g}) "
            f"is inside its {volume.geometry} volume: use a tube or a mesh with the cavity"
        )
