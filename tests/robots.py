"""Seeded random robots and states for the tests, built through the public API only.

`random_robot(seed, ...)` draws a serial chain whose joints are taken from `JOINT_KINDS` and
whose bodies come from the factories in `BODY_FACTORIES` (name → `factory(rng) -> body`). Other
test modules add families by registering a factory:

    BODY_FACTORIES["my_family"] = lambda rng: sr.SoftBody(...)
    robot = random_robot(0, bodies=("rigid", "my_family"))
    robot = random_robot(1, structure=[("free", "my_family"), ("revolute", "rigid")])

Rigid chains for the Newton–Euler oracle come from `random_rigid_chain`, which returns the
softrigid robot together with the same chain as `newton_euler.Link`s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import jax.numpy as jnp
import newton_euler as ne
import numpy as np
from scipy.spatial.transform import Rotation

import softrigid as sr
from softrigid import joints, kinematics, quadrature

JOINT_KINDS = ("fixed", "revolute", "prismatic", "free")


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random rotation matrix `(3, 3)`."""
    return Rotation.random(random_state=rng).as_matrix()


def random_placement(rng: np.random.Generator, scale: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """A random rigid placement `(R, t)` with `|t_k| ≲ scale`."""
    return random_rotation(rng), scale * rng.uniform(-1.0, 1.0, 3)


def random_inertia(rng: np.random.Generator, mass: float, size: float = 0.2) -> np.ndarray:
    """A valid inertia tensor about the centre of mass: from random second moments
    `(a, b, c) > 0` of the mass distribution, `I = m diag(b + c, a + c, a + b)` in random
    principal axes (positive definite, strict triangle inequality)."""
    a, b, c = (size * rng.uniform(0.3, 1.0, 3)) ** 2
    rot = random_rotation(rng)
    inertia = rot @ np.diag(mass * np.array([b + c, a + c, a + b])) @ rot.T
    return 0.5 * (inertia + inertia.T)


def random_rigid_link(rng: np.random.Generator, kind: str) -> ne.Link:
    """A random rigid link for the Newton–Euler oracle (and, converted, for softrigid)."""
    origin_r, origin_t = random_placement(rng)
    distal_r, distal_t = random_placement(rng)
    mass = float(rng.uniform(0.5, 3.0))
    axis = rng.normal(size=3)
    return ne.Link(
        kind=kind,
        axis=axis / np.linalg.norm(axis),
        origin_rot=origin_r,
        origin_t=origin_t,
        mass=mass,
        com=0.2 * rng.uniform(-1.0, 1.0, 3),
        inertia=random_inertia(rng, mass),
        distal_rot=distal_r,
        distal_t=distal_t,
    )


def joint_from_kind(
    kind: str, axis: np.ndarray, origin: tuple[np.ndarray, np.ndarray], spring=(0.0, 0.0, 0.0)
):
    """The softrigid joint of a kind name; `spring = (stiffness, damping, rest)` for the
    revolute and prismatic kinds."""
    k, d, rest = spring
    if kind == "fixed":
        return joints.Fixed(origin=origin)
    if kind == "revolute":
        return joints.Revolute(axis, origin=origin, stiffness=k, damping=d, rest=rest)
    if kind == "prismatic":
        return joints.Prismatic(axis, origin=origin, stiffness=k, damping=d, rest=rest)
    if kind == "free":
        return joints.Free(origin=origin)
    raise ValueError(f"unknown joint kind {kind!r}; expected one of {JOINT_KINDS}")


def robot_from_rigid_links(links: Sequence[ne.Link], gravity=(0.0, 0.0, -9.81)) -> sr.Robot:
    """The softrigid robot of a `newton_euler` chain."""
    return sr.Robot(
        [
            sr.Link(
                joint_from_kind(link.kind, link.axis, (link.origin_rot, link.origin_t)),
                sr.RigidBody(
                    link.mass, link.com, link.inertia, distal=(link.distal_rot, link.distal_t)
                ),
            )
            for link in links
        ],
        gravity=gravity,
    )


def random_rigid_chain(
    seed: int,
    n_links: int = 4,
    kinds: Sequence[str] = ("revolute", "prismatic", "fixed"),
    gravity=(0.0, 0.0, -9.81),
) -> tuple[sr.Robot, list[ne.Link]]:
    """A random rigid chain as `(softrigid robot, newton_euler links)`; joint kinds drawn from
    `kinds`, and every kind of `kinds` appears when `n_links ≥ len(kinds)`."""
    rng = np.random.default_rng(seed)
    chosen = list(kinds) + list(rng.choice(kinds, size=max(0, n_links - len(kinds))))
    chosen = [str(k) for k in rng.permutation(chosen[:n_links])]
    links = [random_rigid_link(rng, kind) for kind in chosen]
    return robot_from_rigid_links(links, gravity), links


def random_rigid_body(rng: np.random.Generator) -> sr.RigidBody:
    """A random `RigidBody` (mass, centre of mass, inertia, distal placement)."""
    link = random_rigid_link(rng, "fixed")
    return sr.RigidBody(link.mass, link.com, link.inertia, distal=(link.distal_rot, link.distal_t))


def random_planar_cc_body(rng: np.random.Generator) -> sr.SoftBody:
    """A planar constant-curvature `SoftBody` on a small cylinder rule (3 axial × 2 radial)."""
    length = float(rng.uniform(0.2, 0.6))
    radius = float(rng.uniform(0.03, 0.08))
    density = float(rng.uniform(500.0, 1500.0))
    return sr.SoftBody(
        kinematics.PlanarConstantCurvature(length),
        quadrature.cylinder(radius, length, n_axial=3, n_radial=2),
        density,
    )


BODY_FACTORIES: dict[str, Callable[[np.random.Generator], sr.RigidBody | sr.SoftBody]] = {
    "rigid": random_rigid_body,
    "planar_cc": random_planar_cc_body,
}


Structure = Sequence[tuple[str, "str | Callable"]]


def random_structure(
    rng: np.random.Generator,
    n_links: int,
    kinds: Sequence[str] = JOINT_KINDS,
    bodies: Sequence[str | Callable] = ("rigid", "planar_cc"),
) -> list[tuple[str, str | Callable]]:
    """A random chain layout `[(joint kind, body family), ...]`: every kind and every family
    appears when `n_links` allows it; at most one `free` joint, first."""
    others = [k for k in kinds if k != "free"]
    if not others:
        raise ValueError("kinds needs at least one kind other than 'free'")
    chosen = others + list(rng.choice(others, size=max(0, n_links - len(others))))
    chosen = [str(k) for k in rng.permutation(chosen)]
    if "free" in kinds:
        chosen = ["free", *chosen]
    chosen = chosen[:n_links]
    families = [bodies[i % len(bodies)] for i in rng.permutation(n_links)]
    return list(zip(chosen, families))


def random_robot(
    seed: int,
    n_links: int = 4,
    kinds: Sequence[str] = JOINT_KINDS,
    bodies: Sequence[str | Callable] = ("rigid", "planar_cc"),
    gravity=(0.0, 0.0, -9.81),
    springs: bool = False,
    structure: Structure | None = None,
) -> sr.Robot:
    """A random serial chain with random joint axes and origins (and, with `springs`, random
    joint stiffness, damping and rest positions). The layout is `structure` when given (then
    robots of different seeds share it and the engine compiles once), else drawn by
    `random_structure` from `kinds` and `bodies` (names in `BODY_FACTORIES` or factories
    `rng -> body`)."""
    rng = np.random.default_rng(seed)
    if structure is None:
        structure = random_structure(rng, n_links, kinds, bodies)
    links = []
    for kind, family in structure:
        factory = BODY_FACTORIES[family] if isinstance(family, str) else family
        axis = rng.normal(size=3)
        spring = tuple(rng.uniform(0.0, 2.0, 3)) if springs else (0.0, 0.0, 0.0)
        joint = joint_from_kind(kind, axis / np.linalg.norm(axis), random_placement(rng), spring)
        links.append(sr.Link(joint, factory(rng)))
    return sr.Robot(links, gravity=gravity)


def random_state(
    robot: sr.Robot, seed: int, scale: float = 1.0
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """A random `(q, qd, qdd)` of `robot.n_q` entries each, `q` uniform in `[−scale, scale]`."""
    rng = np.random.default_rng(seed)
    n = robot.n_q
    q = scale * rng.uniform(-1.0, 1.0, n)
    qd = rng.normal(size=n)
    qdd = rng.normal(size=n)
    return jnp.asarray(q), jnp.asarray(qd), jnp.asarray(qdd)


# The mixed chain shared by the Euler–Lagrange and identity tests: a rigid floating base and a
# run of identical revolute + planar CC links (the engine's scanned path).
MIXED_STRUCTURE = (
    ("free", "rigid"),
    ("revolute", "planar_cc"),
    ("revolute", "planar_cc"),
)


@functools.cache
def mixed_robot(seed: int) -> sr.Robot:
    """A random robot of `MIXED_STRUCTURE` with joint springs and dampers and gravity of
    9.81 m/s² in a random direction; robots of different seeds share one compiled structure."""
    rng = np.random.default_rng(10_000 + seed)
    gravity = 9.81 * random_rotation(rng)[:, 0]
    return random_robot(seed, gravity=gravity, springs=True, structure=MIXED_STRUCTURE)


# A two-link chain for the transformation tests (jit, vmap, grad, loads): small to compile.
SMALL_STRUCTURE = (("revolute", "planar_cc"), ("prismatic", "rigid"))


@functools.cache
def small_robot(seed: int) -> sr.Robot:
    """A random robot of `SMALL_STRUCTURE` with joint springs and dampers."""
    return random_robot(seed, gravity=(0.3, -1.1, -9.81), springs=True, structure=SMALL_STRUCTURE)


def joint_spring_parameters(robot: sr.Robot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-coordinate `(stiffness, damping, rest)` of the joint springs and dampers (zero for
    free joints and for body coordinates)."""
    stiffness, damping, rest = [], [], []
    for link in robot.links:
        n_joint = link.joint.n_q
        n_body = link.body.n_q if isinstance(link.body, sr.SoftBody) else 0
        if n_joint == 1:
            params = (link.joint.stiffness, link.joint.damping, link.joint.rest)
        else:
            params = (0.0, 0.0, 0.0)
        for values, p in zip((stiffness, damping, rest), params):
            values += [float(p)] * n_joint + [0.0] * n_body
    return np.array(stiffness), np.array(damping), np.array(rest)
