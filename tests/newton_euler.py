"""An independent NumPy recursive Newton–Euler for rigid serial chains (the test oracle).

Craig's outward/inward iterations (seed 001), written from the textbook and nothing else of
softrigid. Frame `i` is the body frame of link `i` (the moving frame of joint `i`, where the
body's centre of mass and inertia are given). Link `i` is placed in frame `i − 1` (the base for
`i = 0`) by

    ^{i−1}T_i = D_{i−1} · O_i · J_i(q_i),

with `D_{i−1}` the distal placement of body `i − 1` (identity for the base), `O_i` the joint
origin and `J_i` the joint motion: a rotation by `θ` about the unit `axis` (revolute), a
translation by `d · axis` (prismatic), nothing (fixed), or `(exp(skew φ), p)` (free: translation
`p` in the joint frame, then the rotation vector `φ`).

Outward, with `R = ^{i−1}_iR`, `P = ^{i−1}P_i` and the joint's relative motion (angular velocity
`ω_J` and acceleration `ω̇_J` in frame `i`; origin velocity `V_J` and acceleration `A_J` in
frame `i − 1`):

    ω_i  = Rᵀ ω_{i−1} + ω_J
    ω̇_i  = Rᵀ ω̇_{i−1} + (Rᵀ ω_{i−1}) × ω_J + ω̇_J
    v̇_i  = Rᵀ (v̇_{i−1} + ω̇_{i−1} × P + ω_{i−1} × (ω_{i−1} × P) + 2 ω_{i−1} × V_J + A_J)
    v̇_Ci = v̇_i + ω̇_i × c_i + ω_i × (ω_i × c_i)
    F_i  = m_i v̇_Ci,        N_i = I_i ω̇_i + ω_i × I_i ω_i

For a revolute joint `ω_J = θ̇ Z`, `ω̇_J = θ̈ Z`; for a prismatic joint `Rᵀ (2 ω_{i−1} × V_J + A_J)
= 2 ω_i × ḋ Z + d̈ Z` (the factor 2 that the seed's printed formula lost). Gravity enters as the
base acceleration `v̇_0 = −gravity`. Inward:

    f_i = F_i + R_{i+1} f_{i+1} − f_ext,i
    n_i = N_i + R_{i+1} n_{i+1} + c_i × F_i + P_{i+1} × R_{i+1} f_{i+1} − (r × f_ext + m_ext)_i

and the generalized forces are the partial velocities times the transmitted wrench:
`τ = Zᵀ n_i` (revolute), `τ = Zᵀ f_i` (prismatic), `(R_J f_i, J_rᵀ n_i)` (free, with the right
Jacobian `J_r(φ)` of the rotation vector, `ω_J = J_r(φ) φ̇`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

JOINT_DOF = {"fixed": 0, "revolute": 1, "prismatic": 1, "free": 6}
_COMPLEX_STEP = 1e-30


@dataclass(frozen=True)
class Link:
    """One rigid link: joint `kind` with unit `axis` and `origin`, body inertial parameters.

    Attributes:
        kind: "fixed", "revolute", "prismatic" or "free".
        axis: `(3,)` unit joint axis in the joint frame (ignored for fixed and free joints).
        origin_rot, origin_t: placement of the joint frame in the previous body's distal frame.
        mass: body mass.
        com: `(3,)` centre of mass in the body frame.
        inertia: `(3, 3)` inertia tensor about the centre of mass, body-frame axes.
        distal_rot, distal_t: placement of the body's distal frame in the body frame.
    """

    kind: str
    axis: np.ndarray
    origin_rot: np.ndarray
    origin_t: np.ndarray
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    distal_rot: np.ndarray = field(default_factory=lambda: np.eye(3))
    distal_t: np.ndarray = field(default_factory=lambda: np.zeros(3))

    @property
    def dof(self) -> int:
        return JOINT_DOF[self.kind]


def n_q(links: list[Link]) -> int:
    """Total number of joint coordinates."""
    return sum(link.dof for link in links)


def _skew(w: np.ndarray) -> np.ndarray:
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]], dtype=w.dtype)


def _axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    return Rotation.from_rotvec(axis * angle).as_matrix()


def right_jacobian(phi: np.ndarray) -> np.ndarray:
    """`J_r(φ) = I − B K + C K²`, `K = skew(φ)`, `B = (1 − cos θ)/θ²`, `C = (θ − sin θ)/θ³`,
    so that `exp(K)ᵀ d/dt exp(K) = skew(J_r(φ) φ̇)`. Complex-safe (for the complex step);
    keep `|φ|` away from 0 (no series here)."""
    theta2 = phi @ phi
    theta = np.sqrt(theta2)
    b = (1 - np.cos(theta)) / theta2
    c = (theta - np.sin(theta)) / (theta2 * theta)
    k = _skew(phi)
    return np.eye(3) - b * k + c * (k @ k)


def _joint_motion(link: Link, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray):
    """Joint pose `(R_J, t_J)` in the joint frame and relative motion: `ω_J`, `ω̇_J` (moving
    frame), `V_J = ṫ_J`, `A_J = ẗ_J` (joint frame), and the generalized-force map."""
    zero = np.zeros(3)
    if link.kind == "fixed":
        return np.eye(3), zero, zero, zero, zero, zero
    if link.kind == "revolute":
        a = link.axis
        return _axis_rotation(a, q[0]), zero, qd[0] * a, qdd[0] * a, zero, zero
    if link.kind == "prismatic":
        a = link.axis
        return np.eye(3), q[0] * a, zero, zero, qd[0] * a, qdd[0] * a
    p, phi = q[:3], q[3:]
    pd, phid = qd[:3], qd[3:]
    pdd, phidd = qdd[:3], qdd[3:]
    jr = right_jacobian(phi)
    # d/dt J_r(φ) along φ̇ by the complex step (exact to rounding)
    jr_dot = right_jacobian(phi + 1j * _COMPLEX_STEP * phid).imag / _COMPLEX_STEP
    rot = Rotation.from_rotvec(phi).as_matrix()
    return rot, p, jr @ phid, jr @ phidd + jr_dot @ phid, pd, pdd


def _generalized(link: Link, q: np.ndarray, r_joint: np.ndarray, f: np.ndarray, n: np.ndarray):
    """Generalized joint force from the wrench `(f, n)` transmitted to the body (body frame)."""
    if link.kind == "fixed":
        return np.zeros(0)
    if link.kind == "revolute":
        return np.array([link.axis @ n])
    if link.kind == "prismatic":
        return np.array([link.axis @ f])
    return np.concatenate([r_joint @ f, right_jacobian(q[3:]).T @ n])


def _split(links: list[Link], x: np.ndarray) -> list[np.ndarray]:
    out, k = [], 0
    for link in links:
        out.append(np.array(x[k : k + link.dof], dtype=float))
        k += link.dof
    return out


def _placement(links: list[Link], i: int) -> tuple[np.ndarray, np.ndarray]:
    """Joint-frame placement `D_{i−1} O_i` of link `i` in body frame `i − 1`."""
    link = links[i]
    if i == 0:
        return link.origin_rot, link.origin_t
    prev = links[i - 1]
    return prev.distal_rot @ link.origin_rot, prev.distal_t + prev.distal_rot @ link.origin_t


def inverse_dynamics(
    links: list[Link],
    q: np.ndarray,
    qd: np.ndarray,
    qdd: np.ndarray,
    gravity: np.ndarray | None = None,
    loads: tuple = (),
) -> np.ndarray:
    """Joint forces `τ = M qdd + c + g − Q_ext` by the Newton–Euler recursion.

    Args:
        links: the chain, base first.
        q, qd, qdd: `(n,)` joint positions, velocities, accelerations.
        gravity: `(3,)` gravitational acceleration in the base frame (default none).
        loads: `(link, point, force, moment)` tuples: a force `(3,)` in the world frame at the
            body-frame `point` `(3,)` of body `link`, plus a world-frame moment `(3,)`.

    Returns:
        `(n,)` generalized forces.
    """
    qs, qds, qdds = _split(links, q), _split(links, qd), _split(links, qdd)
    w = np.zeros(3)
    wd = np.zeros(3)
    vd = np.zeros(3) if gravity is None else -np.asarray(gravity, dtype=float)
    r_world = np.eye(3)
    frames = []
    for i, link in enumerate(links):
        r_a, t_a = _placement(links, i)
        r_j, t_j, w_j, wd_j, v_j, a_j = _joint_motion(link, qs[i], qds[i], qdds[i])
        rot = r_a @ r_j
        pos = t_a + r_a @ t_j
        v_rel, a_rel = r_a @ v_j, r_a @ a_j
        # v̇_i = Rᵀ (v̇_{i−1} + ω̇_{i−1} × P + ω_{i−1} × (ω_{i−1} × P) + 2 ω_{i−1} × V_J + A_J)
        vd = rot.T @ (vd + np.cross(wd, pos) + np.cross(w, np.cross(w, pos)))
        vd = vd + rot.T @ (2 * np.cross(w, v_rel) + a_rel)
        # ω̇_i = Rᵀ ω̇_{i−1} + (Rᵀ ω_{i−1}) × ω_J + ω̇_J ;  ω_i = Rᵀ ω_{i−1} + ω_J
        wd = rot.T @ wd + np.cross(rot.T @ w, w_j) + wd_j
        w = rot.T @ w + w_j
        r_world = r_world @ rot
        c = link.com
        vdc = vd + np.cross(wd, c) + np.cross(w, np.cross(w, c))
        force = link.mass * vdc
        moment = link.inertia @ wd + np.cross(w, link.inertia @ w)
        frames.append((rot, pos, r_j, force, moment, r_world))

    f_next = np.zeros(3)
    n_next = np.zeros(3)
    taus = []
    for i in reversed(range(len(links))):
        rot, pos, r_j, force, moment, r_world = frames[i]
        f_ext = np.zeros(3)
        n_ext = np.zeros(3)
        for link_index, point, f_world, m_world in loads:
            if link_index == i:
                fb = r_world.T @ np.asarray(f_world, dtype=float)
                f_ext += fb
                n_ext += np.cross(np.asarray(point, dtype=float), fb)
                n_ext += r_world.T @ np.asarray(m_world, dtype=float)
        if i + 1 < len(links):
            rot_n, pos_n = frames[i + 1][0], frames[i + 1][1]
            f_child = rot_n @ f_next
            n_child = rot_n @ n_next + np.cross(pos_n, f_child)
        else:
            f_child = np.zeros(3)
            n_child = np.zeros(3)
        # f_i = F_i + R f_{i+1} − f_ext ;  n_i = N_i + R n_{i+1} + c × F_i + P × R f_{i+1} − n_ext
        f_i = force + f_child - f_ext
        n_i = moment + n_child + np.cross(links[i].com, force) - n_ext
        taus.append(_generalized(links[i], qs[i], r_j, f_i, n_i))
        f_next, n_next = f_i, n_i
    return np.concatenate(taus[::-1])


def mass_matrix(links: list[Link], q: np.ndarray) -> np.ndarray:
    """`M(q)` column by column: `M e_j = τ(q, 0, e_j)` without gravity (unit accelerations)."""
    n = n_q(links)
    zero = np.zeros(n)
    return np.stack([inverse_dynamics(links, q, zero, e) for e in np.eye(n)], axis=1)


def forward_kinematics(links: list[Link], q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World poses `(R (N, 3, 3), t (N, 3))` of every body's distal frame."""
    qs = _split(links, q)
    r_w, t_w = np.eye(3), np.zeros(3)
    rs, ts = [], []
    for i, link in enumerate(links):
        r_a, t_a = link.origin_rot, link.origin_t
        r_j, t_j = _joint_motion(link, qs[i], np.zeros_like(qs[i]), np.zeros_like(qs[i]))[:2]
        # body frame, then its distal frame
        t_w = t_w + r_w @ (t_a + r_a @ t_j)
        r_w = r_w @ r_a @ r_j
        t_w = t_w + r_w @ link.distal_t
        r_w = r_w @ link.distal_rot
        rs.append(r_w)
        ts.append(t_w)
    return np.stack(rs), np.stack(ts)


def kinetic_energy(links: list[Link], q: np.ndarray, qd: np.ndarray) -> float:
    """`T = Σ ½ m |v_C|² + ½ ωᵀ I ω` with the outward velocity iteration
    `v_i = Rᵀ (v_{i−1} + ω_{i−1} × P + V_J)`, `v_C = v_i + ω_i × c_i`."""
    qs, qds = _split(links, q), _split(links, qd)
    w = np.zeros(3)
    v = np.zeros(3)
    total = 0.0
    for i, link in enumerate(links):
        r_a, t_a = _placement(links, i)
        r_j, t_j, w_j, _, v_j, _ = _joint_motion(link, qs[i], qds[i], np.zeros_like(qs[i]))
        rot = r_a @ r_j
        pos = t_a + r_a @ t_j
        v = rot.T @ (v + np.cross(w, pos) + r_a @ v_j)
        w = rot.T @ w + w_j
        vc = v + np.cross(w, link.com)
        total += 0.5 * link.mass * vc @ vc + 0.5 * w @ link.inertia @ w
    return total
