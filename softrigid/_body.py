"""The body interface of the recursion, and the mass-moment form of the body terms.

A body `B_i` enters the recursion of `algorithm.md` only through its distal pose and its
D'Alembert resultants about the origin of its distal frame `S_i`. With the nodes
`p_k = p(x_k, q_B)` in `S_i`, their Jacobians `J_k = ∂p_k/∂q_B` (columns `J_kj`) and the velocity
part of their relative acceleration `h_k = ∂²p_k/∂q_B²[q̇_B, q̇_B]`, the absolute acceleration of
node `k` is

    acc_k = a + ω̇ × p_k + ω × (ω × p_k) + 2 ω × J_k q̇ + J_k q̈ + h_k,

where `(ω, a, ω̇)` is the motion of `S_i`. Every resultant is linear in `acc_k`, and `acc_k` is
linear in `(1, p_k, J_kj)`, so the sums over nodes collapse into **mass moments** computed once
per configuration (no per-node work at the velocity and acceleration levels):

    m = Σ m_k,   s = Σ m_k p_k,   P = Σ m_k p_k p_kᵀ,   I_O = tr(P) 1 − P,
    S_j = Σ m_k J_kj,   Q_j = Σ m_k J_kj p_kᵀ,   B_jl = Σ m_k J_kj J_klᵀ,

and, per `(q, q̇)`, the moments of `h_k`: `Σ m h`, `Σ m p × h`, `Σ m J_jᵀ h`. With them
(`Σ m p × u = vee(U − Uᵀ)` for `U = Σ m u pᵀ`):

    F* = −(m a + ω̇ × s + ω × (ω × s) + 2 ω × Σ_j S_j q̇_j + Σ_j S_j q̈_j + Σ m h)
    T* = −(s × a + I_O ω̇ + ω × I_O ω + 2 (ω tr C − C ω) + vee(D − Dᵀ) + Σ m p × h),
         C = Σ_j q̇_j Q_j,  D = Σ_j q̈_j Q_j
    π*_j = −(S_j · a + vee(Q_j − Q_jᵀ) · ω̇ + ωᵀ Q_j ω − |ω|² tr Q_j
             + 2 Σ_l q̇_l ω · vee(B_jl − B_jlᵀ) + Σ_l tr(B_jl) q̈_l + Σ m J_jᵀ h)

A rigid body is the case `n_B = 0`: its moments are `m`, `s = m c`, and `P` from its inertia,
so rigid and soft bodies share these formulas (`dalembert_wrench`, `kinetic_energy`).
"""

from __future__ import annotations

import abc
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from ._ad import directional_pair, value_and_jacfwd
from ._math import rmatvec, skew, vee

__all__ = [
    "Body",
    "BodyWrench",
    "MassMoments",
    "Pose",
    "VelocityMoments",
    "dalembert_wrench",
    "generalized_inertia",
    "kinetic_energy",
]


class MassMoments(NamedTuple):
    """Mass moments of a body about the origin of its distal frame `S_i`, in `S_i`."""

    mass: Array  # m ()
    first: Array  # s = Σ m p (3,)
    second: Array  # P = Σ m p pᵀ (3, 3)
    jac_first: Array  # S_j = Σ m J_j (n, 3)
    jac_second: Array  # Q_j = Σ m J_j pᵀ (n, 3, 3)
    jac_jac: Array  # B_jl = Σ m J_j J_lᵀ (n, n, 3, 3)


class VelocityMoments(NamedTuple):
    """Moments of `h_k = ∂²p_k/∂q²[q̇, q̇]` (the velocity part of the nodes' relative
    acceleration), computed once per `(q, q̇)`."""

    force: Array  # Σ m h (3,)
    moment: Array  # Σ m p × h (3,)
    generalized: Array  # Σ m J_jᵀ h (n,)


Pose = tuple[Array, Array]
"""A pose `(R (3, 3), t (3,))`, or its derivatives `(∂R, ∂t)` (tangent axis last)."""


class BodyWrench(NamedTuple):
    """D'Alembert resultants of a body, in its distal frame `S_i`."""

    force: Array  # F* (3,)
    moment: Array  # T* about the origin of S_i (3,)
    generalized: Array  # π* (n_B,)


class Body(abc.ABC):
    """What the recursion needs from a body `B_i` with `n_q` coordinates `q_B`.

    Position level (once per `q`): `distal_pose`, `position_terms` (its `MassMoments` and any
    body-specific data for the velocity level); `position_level` gives both with the distal
    pose's Jacobian. Velocity level (once per `(q, q̇)`): `velocity_terms`, and
    `velocity_level` with the distal pose's first and second directional derivatives. A body
    whose terms map its distal frame anyway overrides the two `*_level` methods so that the
    pose's derivatives come from the same pass; `velocity_moments_rate` (optional) gives the
    velocity moments' `q̇`-derivatives to `inverse_dynamics_derivatives`. Energies for
    `s = ∂U/∂q + ∂R/∂q̇`:
    `elastic_energy`, `dissipation` (zero unless the body has a material). Points:
    `map_points` (material points in the proximal frame), `posed_points` (the distal pose with
    them, from one evaluation of the map where the body has one), `local_points` (in `S_i`)
    and `mass_points` (mass-carrying points in the proximal frame, for gravity and plotting).
    """

    n_q: int

    @abc.abstractmethod
    def distal_pose(self, q: Array) -> tuple[Array, Array]:
        """Pose `(R_B (3, 3), t_B (3,))` of the distal frame in the proximal frame."""

    @abc.abstractmethod
    def position_terms(self, q: Array) -> tuple[MassMoments, Any]:
        """`(MassMoments, data)` at `q_B`; `data` is passed back to `velocity_terms`."""

    @abc.abstractmethod
    def velocity_terms(self, data: Any, q: Array, qd: Array) -> VelocityMoments:
        """The moments of `h_k` at `(q_B, q̇_B)`, given the position-level `data`."""

    def position_level(self, q: Array) -> tuple[Pose, Pose, MassMoments, Any]:
        """`((R_B, t_B), (∂R_B/∂q_B, ∂t_B/∂q_B), moments, data)`: the distal pose, its
        Jacobian (tangent axis last) and `position_terms` (default: forward mode over
        `distal_pose`)."""
        pose, d_pose = value_and_jacfwd(self.distal_pose, q)
        return pose, d_pose, *self.position_terms(q)

    def velocity_level(self, data: Any, q: Array, qd: Array) -> tuple[Pose, Pose, VelocityMoments]:
        """`((Ṙ_B, ṫ_B), (∂²R_B[q̇, q̇], ∂²t_B[q̇, q̇]), moments)` at `(q_B, q̇_B)`: the distal
        pose's directional derivatives along `q̇_B` and `velocity_terms` (default: a jvp of a
        jvp of `distal_pose`)."""
        rate, bias = directional_pair(self.distal_pose, q, qd)
        return rate, bias, self.velocity_terms(data, q, qd)

    def velocity_moments_rate(self, data: Any, d_data: Any, qd: Array) -> VelocityMoments | None:
        """`∂V/∂q̇_B` (tangent axis last) of `velocity_terms`' moments `V`, from the
        position-level `data` and its tangents `d_data` along `q_B` (tangent axis last), or
        `None` (default) where the body does not know it: then it is taken by forward mode
        over `q̇_B`. `V` is linear in `h = ∂²p[q̇, q̇]`, so `∂V/∂q̇_j = V(2 ∂²p[q̇, e_j])` with
        `∂²p[q̇, e_j] = Σ_k ∂(J e_k)/∂q_j q̇_k`: the tangents of the Jacobian the position
        level already holds."""
        del data, d_data, qd
        return None

    @abc.abstractmethod
    def map_points(self, q: Array, points: Array) -> Array:
        """Positions `(M, 3)` of material points `points` `(M, 3)` in the proximal frame."""

    def posed_points(self, q: Array, points: Array) -> tuple[Pose, Array]:
        """`(distal_pose(q), map_points(q, points))` (a body whose distal pose comes from its
        map overrides it to map both in one call)."""
        return self.distal_pose(q), self.map_points(q, points)

    @abc.abstractmethod
    def mass_points(self, q: Array) -> tuple[Array, Array]:
        """Mass-carrying points `(K, 3)` in the proximal frame and their masses `(K,)`."""

    def posed_mass_points(self, q: Array) -> tuple[Pose, tuple[Array, Array]]:
        """`(distal_pose(q), mass_points(q))` (see `posed_points`)."""
        return self.distal_pose(q), self.mass_points(q)

    def local_points(self, q: Array, points: Array) -> Array:
        """Material points `(M, 3)` in the distal frame `S_i`: `R_Bᵀ (f(x, q_B) − t_B)`."""
        rot, trans = self.distal_pose(q)
        return rmatvec(rot, self.map_points(q, points) - trans)

    def zero_velocity_terms(self, dtype: Any) -> VelocityMoments:
        """The velocity-level terms at `q̇ = 0`."""
        return VelocityMoments(jnp.zeros(3, dtype), jnp.zeros(3, dtype), jnp.zeros(self.n_q, dtype))

    def elastic_energy(self, q: Array) -> Array:
        """Elastic energy `U(q_B)` (scalar); zero for a body without material."""
        return jnp.zeros((), q.dtype)

    def dissipation(self, q: Array, qd: Array) -> Array:
        """Rayleigh function `R(q_B, q̇_B) ≥ 0` (scalar); zero for a body without material."""
        del qd
        return jnp.zeros((), q.dtype)

    def internal_force(self, q: Array, qd: Array) -> Array:
        """`s_B = ∂U/∂q_B + ∂R/∂q̇_B` `(n_q,)` (default: reverse mode of the two functions)."""
        return jax.grad(self.elastic_energy)(q) + jax.grad(self.dissipation, argnums=1)(q, qd)

    def damping_matrix(self, q: Array, qd: Array) -> Array:
        """`∂s_B/∂q̇_B` `(n_q, n_q)` (default: forward mode of `internal_force` in `q̇_B`)."""
        return jax.jacfwd(lambda y: self.internal_force(q, y))(qd)

    def internal_force_derivatives(self, q: Array, qd: Array) -> tuple[Array, Array, Array]:
        """`(s_B, ∂s_B/∂q_B, ∂s_B/∂q̇_B)` (default: forward mode of `internal_force` in `q_B`,
        and `damping_matrix`)."""
        s, d_q = value_and_jacfwd(lambda x: self.internal_force(x, qd), q)
        return s, d_q, self.damping_matrix(q, qd)


def _inertia(m: MassMoments) -> Array:
    # I_O = tr(P) 1 − P
    return jnp.trace(m.second) * jnp.eye(3, dtype=m.second.dtype) - m.second


def _vee2(u: Array) -> Array:
    """`vee(U − Uᵀ)` over the last two axes: `Σ m p × u` for `U = Σ m u pᵀ`."""
    return 2.0 * vee(u)


def _terms(*terms: Array | None) -> Array:
    """The sum of the terms that are not `None`, in their order."""
    present = [t for t in terms if t is not None]
    out = present[0]
    for t in present[1:]:
        out = out + t
    return out


def dalembert_wrench(
    m: MassMoments,
    h: VelocityMoments,
    qd: Array,
    qdd: Array | None,
    w: Array,
    a: Array | None,
    dw: Array | None,
) -> BodyWrench:
    """`(F*, T*, π*)` of a body from its mass moments (module docstring), given the body's
    coordinates' rates `q̇_B`, `q̈_B` and the motion `(ω, a, ω̇)` of `S_i`.

    `qdd`, `a` and `dw` may be `None` for zero: their terms are left out of the program (the
    articulated-body recursion's velocity terms `β_i`, at zero accelerations, would otherwise
    multiply zeros, each product a kernel of its own); the other terms are summed in the same
    order, so the result is the one with zeros to the bit."""
    s, inertia = m.first, _inertia(m)
    vj = qd @ m.jac_first  # Σ m J q̇
    aj = None if qdd is None else qdd @ m.jac_first  # Σ m J q̈
    c_mom = jnp.tensordot(qd, m.jac_second, 1)  # C = Σ m (J q̇) pᵀ
    d_mom = None if qdd is None else jnp.tensordot(qdd, m.jac_second, 1)  # D = Σ m (J q̈) pᵀ
    # F* = −(m a + ω̇ × s + ω × (ω × s) + 2 ω × Σ m J q̇ + Σ m J q̈ + Σ m h)
    force = -_terms(
        None if a is None else m.mass * a,
        None if dw is None else jnp.cross(dw, s),
        jnp.cross(w, jnp.cross(w, s)),
        2.0 * jnp.cross(w, vj),
        aj,
        h.force,
    )
    # T* = −(s × a + I_O ω̇ + ω × I_O ω + 2 (ω tr C − C ω) + vee(D − Dᵀ) + Σ m p × h)
    moment = -_terms(
        None if a is None else jnp.cross(s, a),
        None if dw is None else inertia @ dw,
        jnp.cross(w, inertia @ w),
        2.0 * (w * jnp.trace(c_mom) - c_mom @ w),
        None if d_mom is None else _vee2(d_mom),
        h.moment,
    )
    # π*_j = −(S_j · a + vee(Q_j − Q_jᵀ) · ω̇ + ωᵀ Q_j ω − |ω|² tr Q_j
    #         + 2 Σ_l q̇_l ω · Σ m J_l × J_j + Σ_l tr(B_jl) q̈_l + Σ m J_jᵀ h)
    b_skew = _vee2(m.jac_jac)  # Σ m J_l × J_j = vee(B_jl − B_jlᵀ), (n, n, 3)
    gen = -_terms(
        None if a is None else m.jac_first @ a,
        None if dw is None else _vee2(m.jac_second) @ dw,
        jnp.einsum("a,jab,b->j", w, m.jac_second, w),
        -jnp.dot(w, w) * jnp.trace(m.jac_second, axis1=1, axis2=2),
        2.0 * jnp.einsum("l,jla,a->j", qd, b_skew, w),
        None if qdd is None else jnp.trace(m.jac_jac, axis1=2, axis2=3) @ qdd,
        h.generalized,
    )
    return BodyWrench(force, moment, gen)


def generalized_inertia(m: MassMoments) -> Array:
    """The body's generalized inertia `𝓜` `(6 + n_B, 6 + n_B)`, symmetric: the part of
    `−(F*, T*, π*)` linear in `(a, ω̇, q̈_B)` (`dalembert_wrench` at zero velocity),

        𝓜 = [[m 1,  −[s]×,  Sᵀ],
             [[s]×,  I_O,    V ],
             [S,     Vᵀ,     M_B]],   V_j = vee(Q_j − Q_jᵀ) = Σ m p × J_j,  M_B = [tr B_jl].

    With it the body's inertial wrench about the origin of `S_i` and its generalized inertial
    force are `−(F*, T*, π*) = 𝓜 (a, ω̇, q̈_B) + (the velocity terms)`."""
    s, n = m.first, m.jac_first.shape[0]
    dtype = s.dtype
    v = _vee2(m.jac_second).T  # (3, n)
    top = jnp.concatenate(
        [m.mass * jnp.eye(3, dtype=dtype), -skew(s), m.jac_first.T.reshape(3, n)], axis=1
    )
    mid = jnp.concatenate([skew(s), _inertia(m), v.reshape(3, n)], axis=1)
    low = jnp.concatenate(
        [m.jac_first.reshape(n, 3), v.T.reshape(n, 3), jnp.trace(m.jac_jac, axis1=2, axis2=3)],
        axis=1,
    )
    return jnp.concatenate([top, mid, low.reshape(n, 6 + n)], axis=0)


def kinetic_energy(m: MassMoments, qd: Array, v: Array, w: Array) -> Array:
    """`T = ½ Σ m_k |v + ω × p_k + J_k q̇|²` with `(v, ω)` the motion of `S_i`:

    `½ (m|v|² + ωᵀ I_O ω + q̇ᵀ M_B q̇) + v·(ω × s) + v·Σ m J q̇ + ω·Σ m p × J q̇`,
    `M_B = [tr B_jl]`."""
    inertia = _inertia(m)
    body_mass = jnp.trace(m.jac_jac, axis1=2, axis2=3)
    return (
        0.5 * (m.mass * jnp.dot(v, v) + jnp.dot(w, inertia @ w) + qd @ body_mass @ qd)
        + jnp.dot(v, jnp.cross(w, m.first))
        + jnp.dot(v, qd @ m.jac_first)
        + jnp.dot(w, _vee2(jnp.tensordot(qd, m.jac_second, 1)))
    )
