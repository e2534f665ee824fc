"""The model-agnostic recursion (seed 003, Algorithms 1–3), as written in `algorithm.md`.

`inertial_forces` composes four steps, each a function of its own:

1. `link_motion`, the forward pass: link velocities and accelerations `(ω_i, a_i, ω̇_i)` from
   the base out;
2. `body_terms`: each body's D'Alembert resultants `(F*_i, T*_i, π*_i)` from its mass moments
   (`softrigid._body` explains the mass-moment form);
3. the backward pass: the wrenches `(F_i, T_i)` transmitted from the tip in;
4. `projection`: `IID_i = −(π*_i + Pv_i F_i + Pw_i T_i)`.

The passes run in world axes as prefix sums for one right-hand side, or sequentially in each
link's frame for the mass matrix's many (`softrigid._passes` derives both).

The state is split by level, so that each is computed once per state:
- the *position level* (`position_level`: poses `T_i`, the Jacobians `∂t_i/∂q_i`, `G_i`, the
  bodies' mass moments) depends on `q` only and is shared by `M q̈ + c` and by the `n` unit
  accelerations that give `M` (MIID);
- the *velocity level* (`velocity_level`: relative velocities and the `q̇`-quadratic parts of the
  relative accelerations) is computed once per `(q, q̇)`.

Consecutive links of identical structure form a *group* whose parameters are stacked, so every
per-link computation is one `vmap` per group (a chain of 50 identical bodies traces one body);
`map_groups` hides that bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from ._ad import directional_pair, value_and_jacfwd
from ._body import BodyWrench, MassMoments, VelocityMoments, dalembert_wrench
from ._math import contract, matmul_rows, matvec, rmatvec, vee
from ._model import Link, Robot
from ._passes import (
    LinkMotion,
    backward_pass,
    backward_sums,
    forward_pass,
    forward_sums,
    frame_poses,
    link_velocities,
)

__all__ = [
    "ExternalLoads",
    "LinkMotion",
    "LinkPosition",
    "Velocity",
    "body_terms",
    "concat",
    "frame_poses",
    "groups",
    "inertial_forces",
    "link_bias",
    "link_motion",
    "link_position",
    "link_velocities",
    "map_groups",
    "position_level",
    "projection",
    "relative_rates",
    "velocity_level",
    "world_poses",
    "zero_velocity",
]


# ---------------------------------------------------------------------------------------------
# Groups of identical consecutive links


class Group(NamedTuple):
    """A run of `size` consecutive identical links starting at link `start` / coordinate
    `q_start`; each has `n` coordinates, `n_joint` of them the joint's."""

    start: int
    size: int
    q_start: int
    n: int
    n_joint: int

    def coords(self, x: Array) -> Array:
        """The group's coordinates in `x` `(n_q,)`, as `(size, n)`."""
        return x[self.q_start : self.q_start + self.size * self.n].reshape(self.size, self.n)

    def rows(self, x: Array) -> Array:
        """The group's rows of a per-link array `(N, ...)`."""
        return x[self.start : self.start + self.size]


def _signature(link: Link) -> Any:
    leaves, treedef = jax.tree_util.tree_flatten(link)
    return treedef, tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves)


def _groups(links: tuple[Link, ...]) -> tuple[Group, ...]:
    out: list[Group] = []
    q_start = 0
    prev = None
    for i, link in enumerate(links):
        sig = _signature(link)
        if out and sig == prev:
            g = out[-1]
            out[-1] = g._replace(size=g.size + 1)
        else:
            out.append(Group(i, 1, q_start, link.n_q, link.joint.n_q))
        prev = sig
        q_start += link.n_q
    return tuple(out)


def groups(robot: Robot) -> tuple[Group, ...]:
    """Maximal runs of consecutive links with the same structure and leaf shapes."""
    return _groups(robot.links)


def map_groups(robot: Robot, fn: Callable[..., Any], *args: Callable[[int, Group], Any]) -> list:
    """`fn(link, *per_link_args)` vmapped over the links of every group; one result per group.

    Each `arg(k, group)` returns the `k`-th group's stacked arguments (see `coords`, `rows`,
    `grouped`).
    """
    out = []
    for k, g in enumerate(groups(robot)):
        links = robot.links[g.start : g.start + g.size]
        stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *links)
        out.append(jax.vmap(fn)(stacked, *(a(k, g) for a in args)))
    return out


def coords(x: Array | None) -> Callable[[int, Group], Array | None]:
    """Per-group coordinates `(size, n)` of a coordinate vector `(n_q,)` (for `map_groups`;
    `None` stays `None`)."""
    return lambda k, g: None if x is None else g.coords(x)


def rows(x: Any) -> Callable[[int, Group], Any]:
    """Per-group rows of per-link arrays `(N, ...)` (a pytree of them) (for `map_groups`)."""
    return lambda k, g: jax.tree_util.tree_map(g.rows, x)


def grouped(xs: tuple | list) -> Callable[[int, Group], Any]:
    """The `k`-th entry of a per-group sequence (for `map_groups`)."""
    return lambda k, g: xs[k]


def concat(parts: list[Array]) -> Array:
    """The per-group parts of a per-link array joined along the links."""
    return jnp.concatenate(parts) if len(parts) > 1 else parts[0]


# ---------------------------------------------------------------------------------------------
# Position level


class LinkPosition(NamedTuple):
    """Position-level terms of every link (leading axis `N`; `body_data` per group)."""

    rot: Array  # R_i, pose of S_i in S_{i−1} (N, 3, 3)
    trans: Array  # t_i (N, 3)
    jac_t: tuple[Array, ...]  # ∂t_i/∂q_i per group (size, 3, n)
    jac_w: tuple[Array, ...]  # G_i per group, ω_rel = G_i q̇_i (size, 3, n)
    moments: tuple[MassMoments, ...]  # the bodies' mass moments per group
    body_data: tuple[Any, ...]  # the bodies' position-level data per group


def _placed(link: Link, rb: Array, tb: Array) -> Callable[[Array], tuple[Array, Array]]:
    """`q_J ↦ T_J(q_J) T_B` with the body's pose `T_B` held: `(R_J R_B, t_J + R_J t_B)`."""

    def pose(x: Array) -> tuple[Array, Array]:
        rj, tj = link.joint.transform(x)
        return matmul_rows(rj, rb), tj + matvec(rj, tb)

    return pose


def link_position(link: Link, q: Array) -> tuple:
    """A link's pose `T_i = T_J(q_J) T_B(q_B)` with its Jacobians and its body's mass moments:
    `(R_i, t_i, ∂t_i/∂q_i, G_i, moments, data)`."""
    nj, nb = link.joint.n_q, link.body.n_q
    (rb, tb), (drb, dtb), moments, data = link.body.position_level(q[nj:])
    # ∂/∂q_J by forward mode through T_J(q_J) T_B, T_B held;  ∂/∂q_B: (R_J ∂R_B, R_J ∂t_B)
    (rot, trans), (drot, dtrans) = value_and_jacfwd(_placed(link, rb, tb), q[:nj])
    if nb:
        rj = link.joint.transform(q[:nj])[0]
        drot = jnp.concatenate([drot, jnp.einsum("ab,bcj->acj", rj, drb)], axis=-1)
        dtrans = jnp.concatenate([dtrans, jnp.einsum("ab,bj->aj", rj, dtb)], axis=-1)
    # skew(G_i[:, j]) = (∂R_i/∂q_j) R_iᵀ
    jac_w = vee(jnp.einsum("abj,cb->jac", drot, rot)).T
    return rot, trans, dtrans, jac_w, moments, data


def position_level(robot: Robot, q: Array) -> LinkPosition:
    """The position-level terms at `q` (computed once per configuration)."""
    parts = map_groups(robot, link_position, coords(q))
    rot, trans, jac_t, jac_w, moments, data = zip(*parts)
    return LinkPosition(concat(list(rot)), concat(list(trans)), jac_t, jac_w, moments, data)


def world_poses(pos: LinkPosition) -> tuple[Array, Array]:
    """World poses `(R (N, 3, 3), t (N, 3))` of the distal frames, `T_0i = T_01 ⋯ T_{i−1,i}`."""
    return frame_poses(pos.rot, pos.trans)[1:]


# ---------------------------------------------------------------------------------------------
# Velocity level


class Velocity(NamedTuple):
    """The `q̇`-dependent terms of the relative motions (leading axis `N`)."""

    qd: Array  # q̇ (n_q,)
    w_rel: Array  # ω_rel = G_i q̇_i (N, 3), in S_{i−1}
    v_rel: Array  # v_rel = (∂t_i/∂q_i) q̇_i (N, 3)
    a_bias: Array  # ∂²t_i[q̇_i, q̇_i] (N, 3)
    dw_bias: Array  # vee(∂²R_i[q̇_i, q̇_i] R_iᵀ) (N, 3)
    body: tuple[VelocityMoments, ...]  # per group, the bodies' moments of ∂²p[q̇, q̇]


def link_bias(
    link: Link, q: Array, qd: Array, rot: Array, trans: Array, data: Any
) -> tuple[Array, Array, VelocityMoments]:
    """`(∂²t_i[q̇_i, q̇_i], vee(∂²R_i[q̇_i, q̇_i] R_iᵀ), moments of h)` of a link at pose
    `(R_i, t_i)`, from the joint's and the body's directional derivatives."""
    nj, nb = link.joint.n_q, link.body.n_q
    rj, tj = link.joint.transform(q[:nj])
    (vrb, vtb), (arb, atb), body = link.body.velocity_level(data, q[nj:], qd[nj:])
    # a body without coordinates has a constant pose; else T_B = T_Jᵀ T_i
    rb, tb = link.body.distal_pose(q[nj:]) if not nb else (rj.T @ rot, rmatvec(rj, trans - tj))
    # (Ṙ_J R_B, ṫ_J + Ṙ_J t_B), (R̈_J R_B, ẗ_J + R̈_J t_B): T_J T_B along q̇_J, T_B held
    (vr, _), (d2rot, d2trans) = directional_pair(
        _placed(link, rb.astype(rot.dtype), tb.astype(rot.dtype)), q[:nj], qd[:nj]
    )
    # R̈ = R̈_J R_B + 2 Ṙ_J Ṙ_B + R_J R̈_B,  ẗ = ẗ_J + R̈_J t_B + 2 Ṙ_J ṫ_B + R_J ẗ_B,
    # with Ṙ_J = (Ṙ_J R_B) R_Bᵀ (the terms of a body without coordinates left out)
    if nb:
        d2rot, d2trans = d2rot + matmul_rows(rj, arb), d2trans + matvec(rj, atb)
    if nj and nb:
        vrj = vr @ rb.T
        d2rot, d2trans = d2rot + 2.0 * matmul_rows(vrj, vrb), d2trans + 2.0 * matvec(vrj, vtb)
    # d/dt (Ṙ Rᵀ) = R̈ Rᵀ + Ṙ Ṙᵀ, whose second term is symmetric: ω̇_rel = vee(R̈ Rᵀ)
    return d2trans, vee(d2rot @ rot.T), body


def relative_rates(robot: Robot, pos: LinkPosition, x: Array) -> tuple[Array, Array]:
    """`((∂t_i/∂q_i) x_i, G_i x_i)` for every link `(N, 3)` each."""
    lin, ang = [], []
    for g, jt, jw in zip(groups(robot), pos.jac_t, pos.jac_w):
        xg = g.coords(x)[:, None, :]
        lin.append(contract(jt, xg))
        ang.append(contract(jw, xg))
    return concat(lin), concat(ang)


def velocity_level(robot: Robot, pos: LinkPosition, q: Array, qd: Array) -> Velocity:
    """The `q̇`-dependent terms of the relative motions at `(q, q̇)`."""
    v_rel, w_rel = relative_rates(robot, pos, qd)
    parts = map_groups(
        robot,
        link_bias,
        coords(q),
        coords(qd),
        rows(pos.rot),
        rows(pos.trans),
        grouped(pos.body_data),
    )
    a_bias, dw_bias, body = zip(*parts)
    return Velocity(qd, w_rel, v_rel, concat(list(a_bias)), concat(list(dw_bias)), body)


def zero_velocity(robot: Robot, pos: LinkPosition) -> Velocity:
    """The velocity level at `q̇ = 0` (no computation)."""
    dtype = pos.rot.dtype
    z = jnp.zeros((robot.n_links, 3), dtype)
    body = tuple(
        jax.tree_util.tree_map(
            lambda x, g=g: jnp.broadcast_to(x, (g.size, *x.shape)),
            robot.links[g.start].body.zero_velocity_terms(dtype),
        )
        for g in groups(robot)
    )
    return Velocity(jnp.zeros(robot.n_q, dtype), z, z, z, z, body)


# ---------------------------------------------------------------------------------------------
# The passes


def _body_wrench(
    link: Link,
    m: MassMoments,
    h: VelocityMoments,
    qd: Array,
    qdd: Array | None,
    motion: LinkMotion,
) -> BodyWrench:
    nj = link.joint.n_q
    qdd_b = None if qdd is None else qdd[nj:]
    return dalembert_wrench(m, h, qd[nj:], qdd_b, motion.w, motion.a, motion.dw)


def body_terms(
    robot: Robot, pos: LinkPosition, vel: Velocity, qdd: Array | None, motion: LinkMotion
) -> tuple[BodyWrench, ...]:
    """D'Alembert resultants `(F*_i, T*_i, π*_i)` of every body, per group, in `S_i`
    (`qdd`, `motion.a` and `motion.dw` `None` for zero: the velocity terms alone, see
    `dalembert_wrench`)."""
    return tuple(
        map_groups(
            robot,
            _body_wrench,
            grouped(pos.moments),
            grouped(vel.body),
            coords(vel.qd),
            coords(qdd),
            rows(motion),
        )
    )


class ExternalLoads(NamedTuple):
    """Active external loads in each distal frame `S_i`: added to `F*_i`, `T*_i`, and, for the
    body coordinates, to `π*`."""

    force: Array  # (N, 3)
    moment: Array  # about the origin of S_i (N, 3)
    generalized: Array  # (n_q,)


def projection(
    robot: Robot, pos: LinkPosition, wrenches: tuple[BodyWrench, ...], rf: Array, rm: Array
) -> Array:
    """`IID_i = −(π*_i + Pv_i F_i + Pw_i T_i)` with `Pv_i = (∂t_i/∂q_i)ᵀ R_i`,
    `Pw_i = G_iᵀ R_i` (and `π*_i` zero in the joint rows)."""
    out = []
    for g, jt, jw, wr in zip(groups(robot), pos.jac_t, pos.jac_w, wrenches):
        # Σ over the 3 axes written out (elementwise: a reduction here is a kernel of its own)
        f, m = g.rows(rf), g.rows(rm)
        proj = sum(jt[:, k] * f[:, k, None] + jw[:, k] * m[:, k, None] for k in range(3))
        pi_full = jnp.concatenate([jnp.zeros((g.size, g.n_joint), proj.dtype), wr.generalized], 1)
        out.append(-(pi_full + proj).reshape(-1))
    return concat(out)


def link_motion(
    robot: Robot,
    pos: LinkPosition,
    vel: Velocity,
    qdd: Array,
    a0: Array,
    frames: tuple[Array, Array, Array] | None = None,
) -> LinkMotion:
    """The links' motion at `q̈` with base acceleration `a0`: the forward pass in world axes
    given the frames' world poses (`frame_poses`), else in each link's frame."""
    # a_rel = (∂t/∂q) q̈ + ∂²t[q̇, q̇],  ω̇_rel = G q̈ + vee(∂²R[q̇, q̇] Rᵀ)
    a_lin, a_ang = relative_rates(robot, pos, qdd)
    rel = (vel.w_rel, vel.v_rel, a_lin + vel.a_bias, a_ang + vel.dw_bias)
    if frames is None:
        return forward_pass(pos.rot, pos.trans, *rel, a0)
    return forward_sums(frames, pos.trans, *rel, a0)


def inertial_forces(
    robot: Robot,
    pos: LinkPosition,
    vel: Velocity,
    qdd: Array,
    a0: Array,
    loads: ExternalLoads | None = None,
    sequential: bool = False,
) -> Array:
    """`IID(q, q̇, q̈)` with base acceleration `a0` (`−gravity` for ID, `0` for IID), minus the
    generalized forces of `loads`. The passes run in world axes as sums, or with `sequential`
    in each link's frame (for many right-hand sides under one `vmap`: `softrigid._passes`)."""
    frames = None if sequential else frame_poses(pos.rot, pos.trans)
    motion = link_motion(robot, pos, vel, qdd, a0, frames)
    wrenches = body_terms(robot, pos, vel, qdd, motion)
    force = concat([w.force for w in wrenches])
    moment = concat([w.moment for w in wrenches])
    if loads is not None:
        force, moment = force + loads.force, moment + loads.moment
    if frames is None:
        rf, rm = backward_pass(pos.rot, pos.trans, force, moment)
    else:
        rf, rm = backward_sums(frames, force, moment)
    iid = projection(robot, pos, wrenches, rf, rm)
    return iid if loads is None else iid - loads.generalized
