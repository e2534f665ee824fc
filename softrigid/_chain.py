"""Chain kinematics: world poses of the link frames and world positions of material points.

All in one `O(N)` pass over the links: the relative poses `T_i = T_J(q_Ji) T_B(q_Bi)` per group,
then the prefix products `T_0i = T_0,i−1 T_i` in one `lax.scan`. The proximal frame of body `i`
(after its joint) is `T_0,i−1 T_J(q_Ji)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from . import _recursion as rec
from ._checks import check_index, is_real_dtype, raise_if
from ._entry import algorithm, check_robot
from ._math import matmul, matvec
from ._model import Link, Robot
from ._module import is_concrete

__all__ = [
    "distal_poses",
    "forward_kinematics",
    "grouped_world_array",
    "grouped_world_points",
    "link_pose",
    "links_world_points",
    "mass_points_world",
    "material_points",
    "prefix_poses",
    "proximal_poses",
    "world_points",
]


def link_pose(
    link: Link, q: Array, body_pose: tuple[Array, Array]
) -> tuple[Array, Array, Array, Array]:
    """`(R_J, t_J, R_J R_B, t_J + R_J t_B)`: the joint's transform at the link's coordinates `q`
    and the link's relative pose `T_i = T_J T_B` from the body's distal pose `(R_B, t_B)`
    (`prefix_poses`'s inputs)."""
    rj, tj = link.joint.transform(q[: link.joint.n_q])
    rb, tb = body_pose
    return rj, tj, matmul(rj, rb), tj + matvec(rj, tb)


def _poses(link: Link, q: Array) -> tuple[Array, Array, Array, Array]:
    return link_pose(link, q, link.body.distal_pose(q[link.joint.n_q :]))


def _scan_poses(robot: Robot, q: Array) -> tuple[Array, Array, Array, Array]:
    parts = rec.map_groups(robot, _poses, rec.coords(q))
    return prefix_poses(*(jnp.concatenate(x) for x in zip(*parts)))


def prefix_poses(
    rj: Array, tj: Array, rot: Array, trans: Array
) -> tuple[Array, Array, Array, Array]:
    """World poses of the proximal and distal frames `(N, 3, 3)`, `(N, 3)` each from every
    link's joint transform `(rj, tj)` and relative pose `(rot, trans)`."""

    def step(carry: tuple[Array, Array], x: tuple[Array, ...]) -> Any:
        rw, tw = carry
        r_joint, t_joint, r, t = x
        # proximal frame of body i: T_0,i−1 T_J,  distal frame: T_0i = T_0,i−1 T_i
        # elementwise 3 × 3 products (`_math.matmul`): under `vmap` of a derivative XLA:CPU may
        # give a batched `dot` here a transposed output layout that its emitter aborts on
        proximal = (matmul(rw, r_joint), tw + matvec(rw, t_joint))
        distal = (matmul(rw, r), tw + matvec(rw, t))
        return distal, (proximal, distal)

    init = (jnp.eye(3, dtype=rot.dtype), jnp.zeros(3, rot.dtype))
    (prox_r, prox_t), (dist_r, dist_t) = jax.lax.scan(step, init, (rj, tj, rot, trans))[1]
    return prox_r, prox_t, dist_r, dist_t


def distal_poses(robot: Robot, q: Array) -> tuple[Array, Array]:
    """World poses `(R (N, 3, 3), t (N, 3))` of every distal frame `S_i`."""
    return _scan_poses(robot, q)[2:]


def proximal_poses(robot: Robot, q: Array) -> tuple[Array, Array]:
    """World poses `(R (N, 3, 3), t (N, 3))` of every body's proximal frame."""
    return _scan_poses(robot, q)[:2]


def mass_points_world(robot: Robot, q: Array) -> list[tuple[Array, Array]]:
    """Per link, the world positions `(K_i, 3)` of its mass points and their masses `(K_i,)`
    (each group of identical bodies mapped once)."""
    rot, trans = proximal_poses(robot, q)
    parts = rec.map_groups(robot, _mass_points, rec.coords(q))
    per_link = [(pts[j], masses[j]) for pts, masses in parts for j in range(pts.shape[0])]
    return [(matvec(rot[i], pts) + trans[i], m) for i, (pts, m) in enumerate(per_link)]


def _mass_points(link: Link, q: Array) -> tuple[Array, Array]:
    return link.body.mass_points(q[link.joint.n_q :])


@algorithm()
def forward_kinematics(robot: Robot, q: Array) -> tuple[Array, Array]:
    """World poses of every link's distal frame `S_i`, `T_0i = T_01 ⋯ T_{i−1,i}`.

    Returns:
        `(R (N, 3, 3), t (N, 3))`: rotation and origin of `S_i` in the base frame.
    """
    return distal_poses(robot, q)


def _mapped(robot: Robot, q: Array, pose: tuple[Array, Array], i: int, points: Array) -> Array:
    """`R_i f_i(x, q_B) + t_i`: material points of link `i`'s body in the world, given the
    proximal poses `(R, t)` of every body."""
    rot, trans = pose
    return matvec(rot[i], robot.links[i].body.map_points(q[robot.body_slice(i)], points)) + trans[i]


def _posed(link: Link, q: Array, points: Array) -> tuple[Array, ...]:
    """`_poses` and the body's material `points` in its proximal frame, from one evaluation
    of the body's map (`Body.posed_points`)."""
    pose, mapped = link.body.posed_points(q[link.joint.n_q :], points)
    return (*link_pose(link, q, pose), mapped)


def grouped_world_points(
    robot: Robot, q: Array, entries: Sequence[tuple[int, Array]]
) -> list[Array]:
    """`R_i f_i(x, q_B) + t_i` for each entry `(i, points (M, 3))` (`grouped_world_array`, one
    array per entry)."""
    world, rows = grouped_world_array(robot, q, entries)
    return [world[a:b] for a, b in rows]


def grouped_world_array(
    robot: Robot, q: Array, entries: Sequence[tuple[int, Array]]
) -> tuple[Array, list[tuple[int, int]]]:
    """`R_i f_i(x, q_B) + t_i` for every entry `(i, points (M, 3))`, material points of link
    `i`'s body, `(R_i, t_i)` its proximal pose, in one array `(P, 3)`, with each entry's rows
    `[a, b)` in it (a caller that gathers the points again, such as tendons' routes, takes
    them from one array, not from a slice per entry). The entries of one link are mapped in
    one call, and the links of a group of identical bodies in one `vmap` (each link's points
    padded to the group's largest set with copies of its first point), so a model traces and
    compiles each body's map once, not once per link or entry. Where every link of a group has
    entries (a tendon through every segment), the same call maps the body's distal frame too:
    one evaluation of each body's map for the chain's poses and the points."""
    of_link: dict[int, list[int]] = {}
    for e, (i, _) in enumerate(entries):
        of_link.setdefault(i, []).append(e)
    points = {i: jnp.concatenate([entries[e][1] for e in es]) for i, es in of_link.items()}
    poses, local = [], {}
    for g in rec.groups(robot):
        whole = range(g.start, g.start + g.size)
        members = [i for i in whole if i in points]
        if members and len(members) == g.size:
            *pose, mapped = jax.vmap(_posed)(*_stacked(robot, q, whole), _padded(points, members))
        else:
            pose = jax.vmap(_poses)(*_stacked(robot, q, whole))
            if members:
                links, coords = _stacked(robot, q, members)
                body = coords[:, robot.links[members[0]].joint.n_q :]
                mapped = jax.vmap(lambda link, qb, x: link.body.map_points(qb, x))(
                    links, body, _padded(points, members)
                )
        poses.append(pose)
        for j, i in enumerate(members):
            local[i] = mapped[j, : points[i].shape[0]]
    rot, trans = prefix_poses(*(jnp.concatenate(x) for x in zip(*poses)))[:2]
    world, rows, start = [], {}, 0
    for i, pts in local.items():
        world.append(matvec(rot[i], pts) + trans[i])
        ends = start + np.cumsum([0] + [entries[e][1].shape[0] for e in of_link[i]])
        rows.update((e, (int(a), int(b))) for e, a, b in zip(of_link[i], ends[:-1], ends[1:]))
        start = int(ends[-1])
    return jnp.concatenate(world), [rows[e] for e in range(len(entries))]


def _padded(points: dict[int, Array], members: list[int]) -> Array:
    """The members' points stacked `(len(members), M, 3)`, each set padded to the largest with
    copies of its first point."""
    size = max(points[i].shape[0] for i in members)
    return jnp.stack(
        [
            jnp.concatenate([points[i], jnp.repeat(points[i][:1], size - len(points[i]), 0)])
            for i in members
        ]
    )


def _stacked(robot: Robot, q: Array, members: Any) -> tuple[Any, Array]:
    """The links `members` stacked (one pytree, leading axis the links) and their coordinates
    `(len(members), n)` (links of one group)."""
    members = list(members)
    links = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *(robot.links[i] for i in members))
    return links, jnp.stack([q[robot.q_slices()[i]] for i in members])


@algorithm(static_argnames=("i",))
def _world_points(robot: Robot, q: Array, i: int, points: Array) -> Array:
    return _mapped(robot, q, proximal_poses(robot, q), i, points)


@algorithm(static_argnames=("links",))
def links_world_points(
    robot: Robot, q: Array, links: tuple[int, ...], points: tuple[Array, ...]
) -> tuple[Array, ...]:
    """`world_points` of several links' bodies at once (`points[k]` on link `links[k]`, checked
    by the caller), the chain's poses computed once: what the ParaView writer draws."""
    return tuple(grouped_world_points(robot, q, list(zip(links, points))))


def world_points(robot: Robot, q: Array, i: int, points: Array) -> Array:
    """World positions `(M, 3)` of material points `points` `(M, 3)` of the body of link `i`.

    For a soft body the points go through its map `f(x, q_B)`; for a rigid body they are
    coordinates in its proximal frame. `points` must be real and finite (checked eagerly, and
    at run time under `jit`), so that a non-finite result is the model's.
    """
    i = check_index("world_points: link index i", i, check_robot(robot).n_links)
    if isinstance(points, (str, bytes)):
        raise TypeError(f"world_points: points must be a real array (M, 3), got {points!r}")
    try:
        points = jnp.asarray(points)
    except (TypeError, ValueError) as err:
        raise TypeError(f"world_points: points must be a real array (M, 3): {err}") from None
    if not is_real_dtype(points.dtype):
        raise TypeError(f"world_points: points must be real, got dtype {points.dtype}")
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"world_points: points must have shape (M, 3), got {points.shape}")
    points = points.astype(float)
    if is_concrete(points):
        bad = np.argwhere(~np.isfinite(np.asarray(points)))
        if bad.size:
            raise ValueError(
                f"world_points: points contains non-finite values (NaN or inf), first at "
                f"point {bad[0][0]}"
            )
    else:
        bad = ~jnp.all(jnp.isfinite(points))
        points = raise_if(points, bad, jnp.zeros((), int), ("world_points: points must be finite",))
    return _world_points(robot, q, i, points)


@algorithm()
def material_points(robot: Robot, q: Array) -> tuple[Array, ...]:
    """World positions of every body's quadrature nodes (`(K_i, 3)` per link; the centre of
    mass `(1, 3)` for a `RigidBody`)."""
    return tuple(p for p, _ in mass_points_world(robot, q))
