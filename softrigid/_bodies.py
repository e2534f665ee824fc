"""Bodies: rigid (mass, centre of mass, inertia) and soft (a map `f(x, q)` over a volume).

A body owns everything of the recursion that happens inside it (`algorithm.md`):
- its distal pose `T_B(q_B)` in its proximal frame;
- the position-level terms (`body_position`), computed once per state: for a soft body the nodes
  `p_k = R_Bᵀ (f(x_k, q_B) − t_B)` in its distal frame `S_i` and their Jacobians
  `J_k = ∂p_k/∂q_B`; for a rigid body its mass, first moment and inertia about the origin of
  `S_i`;
- the D'Alembert resultants given the motion `(ω_i, a_i, ω̇_i)` of `S_i` (`inertial_wrench`).
"""

from __future__ import annotations

import abc
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._ad import second_directional, value_and_jacfwd
from ._checks import as_placement, as_scalar
from ._math import normalize, rmatvec, vee
from ._module import is_concrete, module, static
from .kinematics._base import Kinematics, as_kinematics, check_map
from .quadrature._rule import QuadratureRule

__all__ = ["Body", "Material", "RigidBody", "SoftBody"]


class Material(abc.ABC):
    """A material law of a soft body: an elastic energy and a Rayleigh dissipation function.

    Internal stresses have zero resultant on the body, so they enter the dynamics only through
    `s = ∂U/∂q_B + ∂R/∂q̇_B` in the rows of the body coordinates (`algorithm.md`).
    """

    @abc.abstractmethod
    def energy(self, body: SoftBody, q: Array) -> Array:
        """Elastic energy `U(q_B)` of `body` (scalar)."""

    def dissipation(self, body: SoftBody, q: Array, qd: Array) -> Array:
        """Rayleigh function `R(q_B, q̇_B) ≥ 0`, quadratic in `q̇_B` (default: no damping)."""
        del body, q, qd
        return jnp.zeros(())

    def validate(self, body: SoftBody) -> None:  # noqa: B027 - optional hook, no-op by default
        """Called when a `SoftBody` is built with this material; raise on an invalid pairing."""


class _Wrench(NamedTuple):
    force: Array  # F* (3,)
    moment: Array  # T* about the origin of S_i (3,)
    generalized: Array  # π* (n_B,)


class RigidPosition(NamedTuple):
    mass: Array  # m
    moment1: Array  # m c, first moment about the origin of S_i, in S_i
    inertia: Array  # I_O = Σ m_k (|p|² I − p pᵀ) about the origin of S_i, in S_i


class Rows(NamedTuple):
    """The body's integration rows: `u = z_r (1, x1, x2)` is affine in the section coordinates.

    Node by node `z_r = u_k` (k = 1 column, `M3 = [[1]]`); rod by rows `z_r = [a_r | A_r]`
    (3 columns) with the section's normalized moment matrix `M3 = [[1, s1ᵀ], [s1, S2]]`, so
    that `Σ m u = Σ_r w_r z_r M3 e_1` and `Σ m u uᵀ = Σ_r w_r z_r M3 z_rᵀ`, exactly.
    """

    z: Array  # (R, 3 + 3n, k)
    weights: Array  # (R,) masses of the rows / nodes
    m3: Array  # (k, k)


class SoftPosition(NamedTuple):
    """Position-level terms of a soft body, with `u_k = (p_k, J_k e_1, …, J_k e_n)`:"""

    mass: Array  # m = Σ m_k
    first: Array  # Σ m_k u_k (3 + 3n,): s = Σ m p, then Σ m J_j
    second: Array  # Σ m_k u_k u_kᵀ: Σ m p pᵀ, Q_j = Σ m J_j pᵀ, B_jl = Σ m J_j J_lᵀ
    rows: Rows


class SoftBias(NamedTuple):
    """Velocity-level terms of a soft body, from `h_k = ∂²p_k/∂q²[q̇, q̇]`."""

    first: Array  # Σ m_k h_k (3,)
    second: Array  # Σ m_k h_k u_kᵀ (3, 3 + 3n)


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
class RigidBody:
    """A rigid body given by its inertial parameters.

    Args:
        mass: `m > 0` [kg].
        com: `(3,)` centre of mass in the body's proximal frame.
        inertia: `(3, 3)` inertia tensor about the centre of mass, proximal-frame axes
            (symmetric, positive semi-definite, principal moments satisfying the triangle
            inequality).
        distal: placement of the distal frame (where the next joint attaches) in the proximal
            frame: `None` (identity), a 4×4 matrix or a `(R, t)` pair.
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
        com = jnp.asarray(com, dtype=float)
        if com.shape != (3,):
            raise ValueError(f"RigidBody: com must have shape (3,), got {com.shape}")
        inertia = jnp.asarray(inertia, dtype=float)
        if inertia.shape != (3, 3):
            raise ValueError(f"RigidBody: inertia must have shape (3, 3), got {inertia.shape}")
        _check_inertia(inertia)
        object.__setattr__(self, "com", com)
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
        masses = volume.weights * _density("RigidBody.from_volume", density, volume)
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

    def body_position(self, q: Array) -> RigidPosition:
        # Inertial parameters in S_i: c_i = R_dᵀ (c − t_d), I_O = R_dᵀ I_c R_d + m (|c_i|² I − c_i c_iᵀ)
        rot, trans = self.distal_rotation, self.distal_translation
        c = rot.T @ (self.com - trans)
        inertia = rot.T @ self.inertia @ rot + self.mass * (
            jnp.dot(c, c) * jnp.eye(3) - jnp.outer(c, c)
        )
        return RigidPosition(self.mass, self.mass * c, inertia)

    def body_bias(self, pos: RigidPosition, q: Array, qd: Array) -> Array:
        del pos, qd
        return jnp.zeros(0, q.dtype)

    def zero_bias(self, dtype: Any) -> Array:
        return jnp.zeros(0, dtype)

    def inertial_wrench(
        self, pos: RigidPosition, bias: Array, qd: Array, qdd: Array, w: Array, a: Array, dw: Array
    ) -> _Wrench:
        del bias, qd, qdd
        s = pos.moment1
        # F* = −(m a + ω̇ × s + ω × (ω × s)),  s = m c
        force = -(pos.mass * a + jnp.cross(dw, s) + jnp.cross(w, jnp.cross(w, s)))
        # T* = −(s × a + I_O ω̇ + ω × I_O ω)
        moment = -(jnp.cross(s, a) + pos.inertia @ dw + jnp.cross(w, pos.inertia @ w))
        return _Wrench(force, moment, jnp.zeros(0, dtype=force.dtype))

    def kinetic_energy(self, pos: RigidPosition, qd: Array, v: Array, w: Array) -> Array:
        """`T = ½ m |v|² + v · (ω × s) + ½ ωᵀ I_O ω` with `(v, ω)` the motion of `S_i`."""
        del qd
        return (
            0.5 * pos.mass * jnp.dot(v, v)
            + jnp.dot(v, jnp.cross(w, pos.moment1))
            + 0.5 * jnp.dot(w, pos.inertia @ w)
        )

    def mass_points(self, q: Array) -> tuple[Array, Array]:
        """The centre of mass `(1, 3)` in the proximal frame and the mass `(1,)`."""
        del q
        return self.com[None], self.mass[None]


def _density(where: str, density: Any, volume: QuadratureRule) -> Array:
    if density is None:
        if volume.density is None:
            raise ValueError(f"{where}: give a density (the volume carries none)")
        density = volume.density
    rho = jnp.asarray(density, dtype=float)
    if rho.shape not in ((), (volume.n_points,)):
        raise ValueError(
            f"{where}: density must be a scalar or have shape ({volume.n_points},), got {rho.shape}"
        )
    if is_concrete(rho):
        r = np.asarray(rho)
        if not np.all(np.isfinite(r)) or np.any(r <= 0):
            raise ValueError(
                f"{where}: density must be finite and positive, got {r.min() if r.ndim else r}"
            )
    return rho


def _frame_axes(points: Array) -> Array:
    # n1 = (f_a − f_J)/|·|, n2 = Gram–Schmidt of (f_b − f_J), n3 = n1 × n2 (eqs. 5–7)
    n1 = normalize(points[1] - points[0])
    u2 = points[2] - points[0]
    n2 = normalize(u2 - jnp.dot(u2, n1) * n1)
    return jnp.stack([n1, n2, jnp.cross(n1, n2)], axis=1)


@module
class SoftBody:
    """A deformable body: a map `f(x, q_B)` over a reference volume with a density.

    Args:
        kinematics: a `softrigid.kinematics` family, or any callable `f(x (3,), q (n_q,)) -> (3,)`
            (then give `n_q`, and `params` if it takes `f(x, q, params)`).
        volume: a `softrigid.quadrature.QuadratureRule` over the reference volume.
        density: scalar or `(K,)` per node [kg/m³]; `None` takes the volume's own.
        material: a `softrigid.Material` (elastic energy and damping), or `None`.
        n_q, params: for plain-function kinematics.
        pivot: material point `x_J` of the distal pivot (default: the volume's pivot).
        contact_points: `(x_a, x_b)` two points of the distal contact area with
            `(x_a − x_J) ⟂ (x_b − x_J)` (default: the volume's).

    The distal frame `S_i`: when the family gives its distal pose exactly
    (`Kinematics.distal_pose`), that pose; otherwise origin `f(x_J)` and axes from
    `n1 ∝ f(x_a) − f(x_J)`, `n2 ∝ f(x_b) − f(x_J)` (made orthogonal to `n1` by Gram–Schmidt,
    which changes nothing when the contact area does not deform), `n3 = n1 × n2`, rotated by the
    constant reference axes so that at the reference configuration `S_i` is the proximal frame
    translated to the pivot.
    """

    kinematics: Kinematics
    volume: QuadratureRule
    density: Array
    material: Any
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
        check_map(kin)
        if not isinstance(volume, QuadratureRule):
            raise TypeError(
                f"SoftBody: volume must be a QuadratureRule, got {type(volume).__name__}"
            )
        object.__setattr__(self, "kinematics", kin)
        object.__setattr__(self, "volume", volume)
        object.__setattr__(self, "n_q", kin.n_q)
        object.__setattr__(self, "density", _density("SoftBody", density, volume))
        if material is not None and not isinstance(material, Material):
            raise TypeError(
                f"SoftBody: material must be a softrigid.Material, got {type(material).__name__}"
            )
        object.__setattr__(self, "material", material)
        q_shape = jax.ShapeDtypeStruct((kin.n_q,), jnp.dtype(float))
        exact = jax.eval_shape(kin.distal_pose, q_shape) is not None
        if exact and (pivot is not None or contact_points is not None):
            raise ValueError(
                f"SoftBody: {type(kin).__name__} gives its distal pose exactly; "
                "pivot and contact_points do not apply"
            )
        if exact:
            object.__setattr__(self, "frame_points", None)
            object.__setattr__(self, "frame_axes", None)
        else:
            points = self._frame_points(volume, pivot, contact_points)
            object.__setattr__(self, "frame_points", points)
            object.__setattr__(self, "frame_axes", _frame_axes(points))
        object.__setattr__(self, "sectioned", _is_rod_on_product_rule(kin, volume, self.density))
        if material is not None:
            material.validate(self)

    @staticmethod
    def _frame_points(volume: QuadratureRule, pivot: Any, contact_points: Any) -> Array:
        pivot = volume.pivot if pivot is None else pivot
        if contact_points is None:
            contact_points = (volume.contact_a, volume.contact_b)
        if pivot is None or contact_points[0] is None or contact_points[1] is None:
            raise ValueError(
                "SoftBody: this volume defines no distal pivot/contact points; "
                "give pivot= and contact_points=(x_a, x_b)"
            )
        if len(contact_points) != 2:
            raise ValueError("SoftBody: contact_points must be a pair (x_a, x_b)")
        pts = []
        for name, p in (
            ("pivot", pivot),
            ("contact_points[0]", contact_points[0]),
            ("contact_points[1]", contact_points[1]),
        ):
            arr = jnp.asarray(p, dtype=float)
            if arr.shape != (3,):
                raise ValueError(f"SoftBody: {name} must have shape (3,), got {arr.shape}")
            pts.append(arr)
        pts = jnp.stack(pts)
        if is_concrete(pts):
            p = np.asarray(pts)
            da, db = p[1] - p[0], p[2] - p[0]
            na, nb = np.linalg.norm(da), np.linalg.norm(db)
            if na < 1e-12 or nb < 1e-12:
                raise ValueError("SoftBody: contact points must differ from the pivot")
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
        exact = self.kinematics.distal_pose(q)
        if exact is not None:
            return exact
        images = self.kinematics.map_points(self.frame_points, q)
        # R_B = N(q) N(0)ᵀ, t_B = f(x_J, q)
        return _frame_axes(images) @ self.frame_axes.T, images[0]

    def local_points(
        self, q: Array, points: Array | None = None, n_axial: int | None = None
    ) -> Array:
        """`p = R_Bᵀ (f(x, q) − t_B)`: material points in the distal frame `S_i` (default: the
        quadrature nodes)."""
        if points is None:
            points, n_axial = self.volume.points, self.volume.n_axial
        rot, trans = self.distal_pose(q)
        return rmatvec(rot, self.kinematics.map_points(points, q, n_axial) - trans)

    def _section(self) -> tuple[Array, Array, Array, Array]:
        """Rows of a tensor-product volume: axial nodes `x3` (R,), row masses (R,), and the
        section's normalized first and second moments `s1 = Σ w_s (x1, x2)`,
        `S2 = Σ w_s (x1, x2)(x1, x2)ᵀ` (`Σ w_s = 1`)."""
        na = self.volume.n_axial
        rows = self.volume.points.reshape(na, -1, 3)
        w = self.volume.weights.reshape(na, -1)
        section = rows[0, :, :2]
        ws = w[0] / jnp.sum(w[0])
        s1 = ws @ section
        s2 = (section * ws[:, None]).T @ section
        return rows[:, 0, 2], self.density * jnp.sum(w, 1), s1, s2

    def _row_frames(self, x3: Array, q: Array) -> tuple[Array, Array]:
        # p = R_Bᵀ (r(x3) − t_B) + R_Bᵀ rot(x3) (x1, x2, 0) = a + A (x1, x2)
        rot_b, t_b = self.distal_pose(q)
        r, rot = self.kinematics.backbone(x3, q)
        return rmatvec(rot_b, r - t_b), jnp.einsum("ia,rib->rab", rot_b, rot[:, :, :2])

    def _rows(self, q: Array) -> tuple[Array, Array, Array]:
        """`z_r` (position level) with the row weights and `M3`."""
        if not self.sectioned:
            points, jac = value_and_jacfwd(self.local_points, q)
            return _stack_u(points, jac)[:, :, None], self.mass_weights, jnp.ones((1, 1), q.dtype)
        x3, wr, s1, s2 = self._section()
        (a, big_a), (da, dbig_a) = value_and_jacfwd(lambda x: self._row_frames(x3, x), q)
        offset = _stack_u(a, da)
        slope = jnp.concatenate([big_a, jnp.moveaxis(dbig_a, 3, 1).reshape(a.shape[0], -1, 2)], 1)
        m3 = jnp.block([[jnp.ones((1, 1), q.dtype), s1[None]], [s1[:, None], s2]])
        return jnp.concatenate([offset[..., None], slope], -1), wr, m3

    def body_position(self, q: Array) -> SoftPosition:
        """Mass moments of `u = (p, J e_1, …, J e_n)` (computed once per `q`), node by node or,
        for a rod on a tensor-product volume, row by row with the section's moments."""
        z, w, m3 = self._rows(q)
        zm = _times_m3(z, m3)
        # Σ m u = Σ_r w_r z_r M3 e_1,  Σ m u uᵀ = Σ_r w_r (z_r M3) z_rᵀ
        second = jnp.einsum("rai,rbi->ab", zm * w[:, None, None], z)
        return SoftPosition(jnp.sum(w), w @ zm[..., 0], second, Rows(z, w, m3))

    def body_bias(self, pos: SoftPosition, q: Array, qd: Array) -> SoftBias:
        """Moments of `h_k = ∂²p_k/∂q²[q̇, q̇]`, the velocity part of the nodes' relative
        acceleration (computed once per `(q, q̇)`): `Σ m h`, `Σ m h uᵀ`."""
        z, w, m3 = pos.rows
        if self.sectioned:
            x3 = self._section()[0]
            c, big_c = second_directional(lambda x: self._row_frames(x3, x), q, qd)
            hz = jnp.concatenate([c[..., None], big_c], -1)  # h = [c | C] (1, x1, x2)
        else:
            hz = second_directional(self.local_points, q, qd)[..., None]
        hm = _times_m3(hz, m3) * w[:, None, None]
        return SoftBias(jnp.sum(hm[..., 0], 0), jnp.einsum("rai,rbi->ab", hm, z))

    def zero_bias(self, dtype: Any) -> SoftBias:
        """The velocity-level terms at `q̇ = 0`."""
        size = 3 + 3 * self.n_q
        return SoftBias(jnp.zeros(3, dtype), jnp.zeros((3, size), dtype))

    def inertial_wrench(
        self,
        pos: SoftPosition,
        bias: SoftBias,
        qd: Array,
        qdd: Array,
        w: Array,
        a: Array,
        dw: Array,
    ) -> _Wrench:
        """D'Alembert resultants from the mass moments (no per-node work):

        F* = −Σ m_k acc_k,  T* = −Σ m_k p_k × acc_k,  π*_j = −Σ m_k J_kjᵀ acc_k,
        acc_k = a + ω̇ × p_k + ω × (ω × p_k) + 2 ω × J_k q̇ + J_k q̈ + h_k.
        """
        n = self.n_q
        s, sj = pos.first[:3], pos.first[3:].reshape(n, 3)  # s = Σ m p, sj[j] = Σ m J_j
        p2 = pos.second[:3, :3]  # Σ m p pᵀ
        q_mom = pos.second[3:, :3].reshape(n, 3, 3)  # Q_j = Σ m J_j pᵀ
        b_mom = pos.second[3:, 3:].reshape(n, 3, n, 3).transpose(0, 2, 1, 3)  # B_jl = Σ m J_j J_lᵀ
        hp = bias.second[:, :3]  # Σ m h pᵀ
        hj = bias.second[:, 3:].reshape(3, n, 3)  # [:, j, :] = Σ m h J_jᵀ
        inertia = jnp.trace(p2) * jnp.eye(3, dtype=p2.dtype) - p2  # I_O
        vj = qd @ sj  # Σ m J q̇
        aj = qdd @ sj  # Σ m J q̈
        c_mom = jnp.tensordot(qd, q_mom, 1)  # C = Σ m (J q̇) pᵀ
        d_mom = jnp.tensordot(qdd, q_mom, 1)  # D = Σ m (J q̈) pᵀ
        # F* = −(m a + ω̇ × s + ω × (ω × s) + 2 ω × Σ m J q̇ + Σ m J q̈ + Σ m h)
        force = -(
            pos.mass * a
            + jnp.cross(dw, s)
            + jnp.cross(w, jnp.cross(w, s))
            + 2.0 * jnp.cross(w, vj)
            + aj
            + bias.first
        )
        # T* = −(s × a + I_O ω̇ + ω × I_O ω + 2 (ω tr C − C ω) + Σ m p × J q̈ + Σ m p × h),
        # with Σ m p × u = vee(U − Uᵀ) for U = Σ m u pᵀ
        moment = -(
            jnp.cross(s, a)
            + inertia @ dw
            + jnp.cross(w, inertia @ w)
            + 2.0 * (w * jnp.trace(c_mom) - c_mom @ w)
            + _vee2(d_mom)
            + _vee2(hp)
        )
        # π*_j = −(Σ m J_j · a + ω̇ · Σ m p × J_j + ωᵀ Q_j ω − |ω|² tr Q_j
        #         + 2 Σ_l q̇_l ω · Σ m J_l × J_j + Σ_l tr(B_jl) q̈_l + Σ m J_j · h)
        b_skew = _vee2(b_mom)  # Σ m J_l × J_j = vee(B_jl − B_jlᵀ), shape (n, n, 3)
        gen = -(
            sj @ a
            + _vee2(q_mom) @ dw
            + jnp.einsum("a,jab,b->j", w, q_mom, w)
            - jnp.dot(w, w) * jnp.trace(q_mom, axis1=1, axis2=2)
            + 2.0 * jnp.einsum("l,jla,a->j", qd, b_skew, w)
            + jnp.trace(b_mom, axis1=2, axis2=3) @ qdd
            + jnp.trace(hj, axis1=0, axis2=2)
        )
        return _Wrench(force, moment, gen)

    def kinetic_energy(self, pos: SoftPosition, qd: Array, v: Array, w: Array) -> Array:
        """`T = ½ Σ m_k |v + ω × p_k + J_k q̇|²` with `(v, ω)` the motion of `S_i`, from the
        mass moments: `½ (m|v|² + ωᵀ I_O ω + q̇ᵀ M_B q̇) + v·(ω × s) + v·Σ m J q̇ + ω·Σ m p × J q̇`."""
        n = self.n_q
        s, sj = pos.first[:3], pos.first[3:].reshape(n, 3)
        p2 = pos.second[:3, :3]
        inertia = jnp.trace(p2) * jnp.eye(3, dtype=p2.dtype) - p2
        q_mom = pos.second[3:, :3].reshape(n, 3, 3)
        b_mom = pos.second[3:, 3:].reshape(n, 3, n, 3)
        body_mass = jnp.trace(b_mom, axis1=1, axis2=3)  # Σ m J_jᵀ J_l
        return (
            0.5 * (pos.mass * jnp.dot(v, v) + jnp.dot(w, inertia @ w) + qd @ body_mass @ qd)
            + jnp.dot(v, jnp.cross(w, s))
            + jnp.dot(v, qd @ sj)
            + jnp.dot(w, _vee2(jnp.tensordot(qd, q_mom, 1)))
        )

    def mass_points(self, q: Array) -> tuple[Array, Array]:
        """The quadrature nodes mapped to the proximal frame, `f(x_k, q)` (K, 3), and their
        masses `m_k` (K,)."""
        return self.kinematics.map_points(
            self.volume.points, q, self.volume.n_axial
        ), self.mass_weights


Body = RigidBody | SoftBody


def _is_rod_on_product_rule(kin: Kinematics, volume: QuadratureRule, density: Array) -> bool:
    """True when `kin` declares a backbone and `volume` is, concretely, a product of an axial
    rule and one section rule (rows share `x3`, identical sections, weights `w_r w_s`), with a
    uniform density: then a body is integrated row by row, exactly."""
    if (
        volume.n_axial is None
        or density.shape != ()
        or not is_concrete(volume.points, volume.weights)
    ):
        return False
    x3 = jax.ShapeDtypeStruct((volume.n_axial,), volume.points.dtype)
    q = jax.ShapeDtypeStruct((kin.n_q,), volume.points.dtype)
    if jax.eval_shape(kin.backbone, x3, q) is None:
        return False
    rows = np.asarray(volume.points).reshape(volume.n_axial, -1, 3)
    w = np.asarray(volume.weights).reshape(volume.n_axial, -1)
    wr, ws = w.sum(1), w[0] / w[0].sum()
    scale = max(1.0, float(np.abs(rows).max()))
    return bool(
        np.allclose(rows[:, :, 2], rows[:, :1, 2], rtol=0, atol=1e-14 * scale)
        and np.allclose(rows[:, :, :2], rows[:1, :, :2], rtol=0, atol=1e-14 * scale)
        and np.allclose(w, wr[:, None] * ws[None, :], rtol=1e-12, atol=0)
    )


def _times_m3(z: Array, m3: Array) -> Array:
    """`z M3` over the last axis (k ≤ 3 columns), as column products (fusible)."""
    k = m3.shape[0]
    return sum(z[..., i, None] * m3[i] for i in range(k))


def _stack_u(points: Array, jac: Array) -> Array:
    """`u_k = (p_k, J_k e_1, …, J_k e_n)` as rows `(K, 3 + 3n)`."""
    k = points.shape[0]
    return jnp.concatenate([points, jnp.swapaxes(jac, 1, 2).reshape(k, -1)], axis=1)


def _vee2(m: Array) -> Array:
    """`vee(M − Mᵀ)` over the last two axes: `Σ m p × u` for `M = Σ m u pᵀ`."""
    return 2.0 * vee(m)
