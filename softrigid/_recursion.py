"""The model-agnostic recursion (seed 003, Algorithms 1–3), as written in `algorithm.md`.

Structure, so that each state costs one pass and compile time stays flat for long chains:
- consecutive links of identical structure form a *group*; their parameters are stacked and
  every per-link computation is `vmap`ped over the group (a chain of 50 identical bodies traces
  one body);
- the *position level* (poses `T_i`, the Jacobians `∂t_i/∂q_i`, `G_i`, body nodes `p_k` and
  `J_k`) depends on `q` only and is computed once, then shared by `M q̈ + c` and by the `n`
  unit-acceleration passes that give `M` (MIID);
- the *velocity level* (the `q̇`-quadratic parts of the relative accelerations) is computed
  once per `(q, q̇)`;
- the forward and backward passes are `lax.scan`s over the links on uniform 3-vectors.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from ._ad import second_directional, value_and_jacfwd
from ._math import contract, matvec, rmatvec, vee
from ._model import Link, Robot

__all__ = [
    "Group",
    "groups",
    "inertial_forces",
    "loads_contribution",
    "position_level",
    "velocities",
    "velocity_level",
    "world_poses",
    "zero_velocity",
]

_UNROLL = 1


class Group(NamedTuple):
    """A run of `size` consecutive identical links starting at link `start` / coordinate
    `q_start`; each has `n` coordinates, `n_joint` of them the joint's."""

    start: int
    size: int
    q_start: int
    n: int
    n_joint: int


def _signature(link: Link) -> Any:
    leaves, treedef = jax.tree_util.tree_flatten(link)
    return treedef, tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves)


def groups(robot: Robot) -> tuple[Group, ...]:
    """Maximal runs of consecutive links with the same structure and leaf shapes."""
    out: list[Group] = []
    q_start = 0
    prev = None
    for i, link in enumerate(robot.links):
        sig = _signature(link)
        if out and sig == prev:
            g = out[-1]
            out[-1] = g._replace(size=g.size + 1)
        else:
            out.append(Group(i, 1, q_start, link.n_q, link.joint.n_q))
        prev = sig
        q_start += link.n_q
    return tuple(out)


def stacked_links(robot: Robot, group: Group) -> Link:
    """The links of `group` as one `Link` whose leaves have a leading axis of size `group.size`."""
    links = robot.links[group.start : group.start + group.size]
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *links)


def group_coordinates(group: Group, x: Array) -> Array:
    """The coordinates of `group` in `x` `(n_q,)`, as `(size, n)`."""
    return x[group.q_start : group.q_start + group.size * group.n].reshape(group.size, group.n)


def _link_pose(link: Link, q: Array) -> tuple[Array, Array]:
    # T_i(q_i) = T_J(q_Ji) · T_B(q_Bi)
    nj = link.joint.n_q
    rj, tj = link.joint.transform(q[:nj])
    rb, tb = link.body.distal_pose(q[nj:])
    return rj @ rb, tj + rj @ tb


class LinkPosition(NamedTuple):
    rot: Array  # R_i, pose of S_i in S_{i−1} (3, 3)
    trans: Array  # t_i (3,)
    jac_t: Array  # ∂t_i/∂q_i (3, n_i)
    jac_w: Array  # G_i, ω_rel = G_i q̇_i (3, n_i)
    body: Any  # the body's position-level terms


def _link_position(link: Link, q: Array) -> LinkPosition:
    (rot, trans), (drot, dtrans) = value_and_jacfwd(lambda x: _link_pose(link, x), q)
    # skew(G_i[:, j]) = (∂R_i/∂q_j) R_iᵀ
    jac_w = vee(jnp.einsum("abj,cb->jac", drot, rot)).T
    body = link.body.body_position(q[link.joint.n_q :])
    return LinkPosition(rot, trans, dtrans, jac_w, body)


def position_level(robot: Robot, q: Array) -> tuple[LinkPosition, ...]:
    """Per group, the stacked `LinkPosition`s at `q`."""
    return tuple(
        jax.vmap(_link_position)(stacked_links(robot, g), group_coordinates(g, q))
        for g in groups(robot)
    )


class Velocity(NamedTuple):
    qd: Array  # q̇ (n_q,)
    w_rel: Array  # ω_rel (N, 3), in S_{i−1}
    v_rel: Array  # v_rel (N, 3)
    a_bias: Array  # ∂²t_i[q̇_i, q̇_i] (N, 3)
    dw_bias: Array  # vee(∂²R_i[q̇_i, q̇_i] R_iᵀ) (N, 3)
    body_bias: tuple[Any, ...]  # per group, the bodies' ∂²p[q̇, q̇]


def _link_bias(
    link: Link, q: Array, qd: Array, rot: Array, body_pos: Any
) -> tuple[Array, Array, Any]:
    d2rot, d2trans = second_directional(lambda x: _link_pose(link, x), q, qd)
    nj = link.joint.n_q
    # d/dt (Ṙ Rᵀ) = R̈ Rᵀ + Ṙ Ṙᵀ, whose second term is symmetric: ω̇_rel = vee(R̈ Rᵀ)
    return d2trans, vee(d2rot @ rot.T), link.body.body_bias(body_pos, q[nj:], qd[nj:])


def velocity_level(robot: Robot, pos: tuple[LinkPosition, ...], q: Array, qd: Array) -> Velocity:
    """The `q̇`-dependent terms of the relative motions at `(q, q̇)`."""
    w_rel, v_rel, a_bias, dw_bias, body_bias = [], [], [], [], []
    for g, p in zip(groups(robot), pos):
        qg, qdg = group_coordinates(g, q), group_coordinates(g, qd)
        # v_rel = (∂t_i/∂q_i) q̇_i,  ω_rel = G_i q̇_i
        v_rel.append(contract(p.jac_t, qdg[:, None, :]))
        w_rel.append(contract(p.jac_w, qdg[:, None, :]))
        a, dw, b = jax.vmap(_link_bias)(stacked_links(robot, g), qg, qdg, p.rot, p.body)
        a_bias.append(a)
        dw_bias.append(dw)
        body_bias.append(b)
    cat = jnp.concatenate
    return Velocity(qd, cat(w_rel), cat(v_rel), cat(a_bias), cat(dw_bias), tuple(body_bias))


def zero_velocity(robot: Robot, pos: tuple[LinkPosition, ...]) -> Velocity:
    """The velocity level at `q̇ = 0` (no computation)."""
    dtype = pos[0].rot.dtype
    z = jnp.zeros((robot.n_links, 3), dtype)
    body_bias = tuple(
        jax.tree_util.tree_map(
            lambda x, g=g: jnp.broadcast_to(x, (g.size, *x.shape)),
            robot.links[g.start].body.zero_bias(dtype),
        )
        for g in groups(robot)
    )
    return Velocity(jnp.zeros(robot.n_q, dtype), z, z, z, z, body_bias)


def _cat(parts: list[Array]) -> Array:
    return jnp.concatenate(parts) if len(parts) > 1 else parts[0]


def _body_wrench(
    nj: int,
    link: Link,
    body_pos: Any,
    bias: Any,
    qd: Array,
    qdd: Array,
    w: Array,
    a: Array,
    dw: Array,
) -> Any:
    return link.body.inertial_wrench(body_pos, bias, qd[nj:], qdd[nj:], w, a, dw)


class Wrenches(NamedTuple):
    """D'Alembert resultants of every body, in its distal frame `S_i`."""

    force: Array  # F*_i (N, 3)
    moment: Array  # T*_i about the origin of S_i (N, 3)
    generalized: tuple[Array, ...]  # π*_i per group (size, n_B)


def dalembert(
    robot: Robot, pos: tuple[LinkPosition, ...], vel: Velocity, qdd: Array, a0: Array
) -> Wrenches:
    """Forward pass (link accelerations) and the D'Alembert resultants of every body."""
    grps = groups(robot)
    rot = _cat([p.rot for p in pos])
    trans = _cat([p.trans for p in pos])
    a_rel, dw_rel = [], []
    for g, p in zip(grps, pos):
        qddg = group_coordinates(g, qdd)
        a_rel.append(contract(p.jac_t, qddg[:, None, :]))
        dw_rel.append(contract(p.jac_w, qddg[:, None, :]))
    # a_rel = (∂t/∂q) q̈ + ∂²t[q̇, q̇],  ω̇_rel = G q̈ + vee(∂²R[q̇, q̇] Rᵀ)
    a_rel = _cat(a_rel) + vel.a_bias
    dw_rel = _cat(dw_rel) + vel.dw_bias

    def forward(carry: tuple[Array, Array, Array], x: tuple[Array, ...]) -> Any:
        w, a, dw = carry
        r, t, wr, vr, ar, dwr = x
        # a_i  = Rᵀ (a_{i−1} + ω̇_{i−1} × t + ω_{i−1} × (ω_{i−1} × t) + 2 ω_{i−1} × v_rel + a_rel)
        a_new = rmatvec(
            r, a + jnp.cross(dw, t) + jnp.cross(w, jnp.cross(w, t)) + 2.0 * jnp.cross(w, vr) + ar
        )
        # ω̇_i = Rᵀ (ω̇_{i−1} + ω_{i−1} × ω_rel + ω̇_rel)
        dw_new = rmatvec(r, dw + jnp.cross(w, wr) + dwr)
        # ω_i  = Rᵀ (ω_{i−1} + ω_rel)
        w_new = rmatvec(r, w + wr)
        return (w_new, a_new, dw_new), (w_new, a_new, dw_new)

    zero = jnp.zeros(3, dtype=rot.dtype)
    _, (w, a, dw) = jax.lax.scan(
        forward,
        (zero, a0.astype(rot.dtype), zero),
        (rot, trans, vel.w_rel, vel.v_rel, a_rel, dw_rel),
        unroll=_UNROLL,
    )

    # D'Alembert resultants of every body (vectorized per group)
    force_star, moment_star, gen_star = [], [], []
    for g, p, bias in zip(grps, pos, vel.body_bias):
        links = stacked_links(robot, g)
        qdg, qddg = group_coordinates(g, vel.qd), group_coordinates(g, qdd)
        sl = slice(g.start, g.start + g.size)
        f, m, pi = jax.vmap(partial(_body_wrench, g.n_joint))(
            links, p.body, bias, qdg, qddg, w[sl], a[sl], dw[sl]
        )
        force_star.append(f)
        moment_star.append(m)
        gen_star.append(pi)
    return Wrenches(_cat(force_star), _cat(moment_star), tuple(gen_star))


def inertial_forces(
    robot: Robot,
    pos: tuple[LinkPosition, ...],
    vel: Velocity,
    qdd: Array,
    a0: Array,
    loads: tuple[Array, Array, Array] | None = None,
) -> Array:
    """`IID(q, q̇, q̈)` with base acceleration `a0` (`−gravity` for ID, `0` for IID).

    `loads = (force (N, 3), moment (N, 3), generalized (n_q,))` are active external loads already
    expressed in each `S_i` (added to `F*`, `T*`) and their body-coordinate generalized forces
    (added to `π*`).
    """
    force_star, moment_star, gen_star = dalembert(robot, pos, vel, qdd, a0)
    if loads is not None:
        force_star = force_star + loads[0]
        moment_star = moment_star + loads[1]
    rot = _cat([p.rot for p in pos])
    trans = _cat([p.trans for p in pos])

    def backward(carry: tuple[Array, Array], x: tuple[Array, ...]) -> Any:
        f_child, m_child = carry
        fs, ms, r, t = x
        # F_i = F*_i + R_{i+1} F_{i+1},  T_i = T*_i + R_{i+1} T_{i+1} + t_{i+1} × (R_{i+1} F_{i+1})
        f_i = fs + f_child
        m_i = ms + m_child
        rf, rm = matvec(r, f_i), matvec(r, m_i)
        return (rf, rm + jnp.cross(t, rf)), (rf, rm)

    zero = jnp.zeros(3, dtype=rot.dtype)
    _, (rf, rm) = jax.lax.scan(
        backward, (zero, zero), (force_star, moment_star, rot, trans), reverse=True, unroll=_UNROLL
    )

    # IID_i = −(π*_i + Pv_i F_i + Pw_i T_i),  Pv_i = (∂t_i/∂q_i)ᵀ R_i,  Pw_i = G_iᵀ R_i
    out = []
    for g, p, pi in zip(groups(robot), pos, gen_star):
        sl = slice(g.start, g.start + g.size)
        proj = jnp.sum(p.jac_t * rf[sl, :, None] + p.jac_w * rm[sl, :, None], axis=1)
        pi_full = jnp.concatenate([jnp.zeros((g.size, g.n_joint), proj.dtype), pi], axis=1)
        out.append(-(pi_full + proj).reshape(-1))
    iid = _cat(out)
    if loads is not None:
        iid = iid - loads[2]
    return iid


def velocities(robot: Robot, pos: tuple[LinkPosition, ...], vel: Velocity) -> tuple[Array, Array]:
    """Velocity `v_i` of the origin of `S_i` and angular velocity `ω_i`, in `S_i` (N, 3)."""
    rot = _cat([p.rot for p in pos])
    trans = _cat([p.trans for p in pos])

    def step(carry: tuple[Array, Array], x: tuple[Array, ...]) -> Any:
        v, w = carry
        r, t, wr, vr = x
        # v_i = Rᵀ (v_{i−1} + ω_{i−1} × t + v_rel),  ω_i = Rᵀ (ω_{i−1} + ω_rel)
        new = (rmatvec(r, v + jnp.cross(w, t) + vr), rmatvec(r, w + wr))
        return new, new

    zero = jnp.zeros(3, dtype=rot.dtype)
    _, (v, w) = jax.lax.scan(step, (zero, zero), (rot, trans, vel.w_rel, vel.v_rel), unroll=_UNROLL)
    return v, w


def world_poses(robot: Robot, pos: tuple[LinkPosition, ...]) -> tuple[Array, Array]:
    """World poses `(R (N, 3, 3), t (N, 3))` of the distal frames, `T_0i = T_01 ⋯ T_{i−1,i}`."""
    rot = _cat([p.rot for p in pos])
    trans = _cat([p.trans for p in pos])

    def step(carry: tuple[Array, Array], x: tuple[Array, Array]) -> Any:
        rw, tw = carry
        r, t = x
        new = (rw @ r, tw + rw @ t)
        return new, new

    eye = jnp.eye(3, dtype=rot.dtype)
    _, (rw, tw) = jax.lax.scan(step, (eye, jnp.zeros(3, rot.dtype)), (rot, trans), unroll=_UNROLL)
    return rw, tw


def loads_contribution(
    robot: Robot, q: Array, pos: tuple[LinkPosition, ...], loads: Any
) -> tuple[Array, Array, Array]:
    """External loads as `(force (N, 3), moment (N, 3), generalized (n_q,))` in each `S_i`."""
    dtype = pos[0].rot.dtype
    force = jnp.zeros((robot.n_links, 3), dtype)
    moment = jnp.zeros((robot.n_links, 3), dtype)
    gen = jnp.zeros(robot.n_q, dtype)
    rw = None
    slices = robot.q_slices()
    for load in loads:
        if load.frame == "world":
            if rw is None:
                rw, _ = world_poses(robot, pos)
            rot_i = rw[load.link]
        else:
            rot_i = jnp.eye(3, dtype=dtype)
        f_local, m_local, point_term = load.local(robot, q, rot_i)
        force = force.at[load.link].add(f_local)
        moment = moment.at[load.link].add(m_local)
        if point_term is not None:
            link = robot.links[load.link]
            sl = slices[load.link]
            qb = q[sl][link.joint.n_q :]
            gen = gen.at[sl.start + link.joint.n_q : sl.stop].add(point_term(qb))
    return force, moment, gen
