"""The rigid robot of the forward-dynamics benchmarks, built the same in softrigid, Pinocchio and
SoRoMoX, and the forward-dynamics callables shared by the benchmarks.

- `rigid_chain(n, seed)`: n revolute joints in series, each followed by a rigid body (seeded
  random axes, joint origins, masses 0.5–2 kg, inertias and centres of mass; no springs or
  dampers; gravity (0, 0, −9.81) m/s²). Peers: Pinocchio's ABA (`pin_rigid_chain`, `pin_aba`)
  and SoRoMoX's `ArticulatedSoftRobot`, whose `forward_dynamics` is an O(N) articulated-body
  recursion (`soromox_rigid_chain`).

The piecewise-constant-strain robots (planar and spatial, softrigid and SoRoMoX) are in
`benchmarks/_peers_pcs.py`.

Conventions (checked by the self-check below, `python benchmarks/_peers.py`): softrigid link i
is joint i, then body i, the body given in the frame after the joint; the joint origin is the
placement of the joint frame in body i−1's distal frame, and `RigidBody(distal=(R_d, t_d))` the
placement of that distal frame in the body frame. So the placement of joint i in the frame of
joint i−1 (Pinocchio's `jointPlacement`) is `D_{i−1} · O_i`; SoRoMoX's tip has no rotation, so
its `tip_position` is `t_d` and the distal rotation moves into the next
`parent_to_joint_transform = (R_d R_O, R_d t_O)`. Coordinates, velocities and generalized forces
are the same in all three codes.

Every `*_fd` callable maps `(q, q̇, τ)` to `q̈` for generalized forces `τ` (these robots have no
actuators in softrigid; SoRoMoX's default `IdentityActuator` makes its input `u = τ`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import jax

# float64 everywhere: the peers agree to ~1e-12, and SoRoMoX builds its arrays at construction
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid import _dynamics  # noqa: E402

if TYPE_CHECKING:
    import pinocchio
    import soromox

__all__ = [
    "FD",
    "GRAVITY",
    "RigidLink",
    "batch_states",
    "max_relative",
    "pin_aba",
    "pin_rigid_chain",
    "rigid_chain",
    "rigid_chain_links",
    "rigid_state",
    "softrigid_articulated_fd",
    "softrigid_cholesky_fd",
    "softrigid_fd",
    "softrigid_jit",
    "soromox_fd",
    "soromox_rigid_chain",
    "soromox_rigid_chain_model",
    "vmapped",
]

FD = Callable[[Any, Any, Any], jax.Array]
GRAVITY = (0.0, 0.0, -9.81)


def softrigid_jit(fn: Callable[..., Any]) -> Any:
    """`jax.jit(fn)` compiled the way softrigid compiles its own programs (XLA:CPU's elemental
    emitters, `sr.compiler_options()`); the peers' functions get JAX's defaults."""
    return jax.jit(fn, compiler_options=sr.compiler_options())


def vmapped(fd: FD, softrigid: bool = True) -> FD:
    """`jax.jit(jax.vmap(f))` of the function `f` that `fd` (a `jax.jit` of this module)
    compiles, with softrigid's compiler options for one of softrigid's (`softrigid_jit`) and
    JAX's defaults for a peer's."""
    return (softrigid_jit if softrigid else jax.jit)(jax.vmap(fd.__wrapped__))


# ----------------------------------------------------------------------------------------------
# Rigid chain
# ----------------------------------------------------------------------------------------------


class RigidLink(NamedTuple):
    """One revolute link: joint axis and origin `(R_O, t_O)`, then the body's inertial
    parameters and distal placement `(R_d, t_d)` (the conventions of the module docstring)."""

    axis: np.ndarray
    origin_rot: np.ndarray
    origin_t: np.ndarray
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    distal_rot: np.ndarray
    distal_t: np.ndarray


def _rotation(rng: np.random.Generator) -> np.ndarray:
    return Rotation.random(random_state=rng).as_matrix()


def rigid_chain_links(n: int, seed: int = 0) -> list[RigidLink]:
    """The seeded random parameters of `rigid_chain(n, seed)`.

    Well conditioned: unit axes, joint origins within 0.1 m, distal placements within 0.25 m
    (arm-like links), masses in [0.5, 2] kg, centres of mass within 0.1 m of the body frame, and
    inertias of solids of size ~0.03–0.1 m (`I = m diag(b + c, a + c, a + b)` from second moments
    `(a, b, c)` in random principal axes, the construction of `tests/robots.random_inertia`).
    """
    if n < 1:
        raise ValueError(f"rigid_chain: n must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    links = []
    for _ in range(n):
        axis = rng.normal(size=3)
        mass = float(rng.uniform(0.5, 2.0))
        a, b, c = (0.1 * rng.uniform(0.3, 1.0, 3)) ** 2
        axes = _rotation(rng)
        inertia = axes @ np.diag(mass * np.array([b + c, a + c, a + b])) @ axes.T
        links.append(
            RigidLink(
                axis=axis / np.linalg.norm(axis),
                origin_rot=_rotation(rng),
                origin_t=0.1 * rng.uniform(-1.0, 1.0, 3),
                mass=mass,
                com=0.1 * rng.uniform(-1.0, 1.0, 3),
                inertia=0.5 * (inertia + inertia.T),
                distal_rot=_rotation(rng),
                distal_t=0.25 * rng.uniform(-1.0, 1.0, 3),
            )
        )
    return links


def rigid_chain(n: int, seed: int = 0) -> sr.Robot:
    """n revolute joints in series with rigid bodies (`rigid_chain_links`), gravity `GRAVITY`.

    Every link has the same structure (a `Revolute` without spring and a `RigidBody`), so
    softrigid stacks them into one group and compiles one link for any n.
    """
    return sr.Robot(
        [
            sr.Link(
                sr.joints.Revolute(link.axis, origin=(link.origin_rot, link.origin_t)),
                sr.RigidBody(
                    mass=link.mass,
                    com=link.com,
                    inertia=link.inertia,
                    distal=(link.distal_rot, link.distal_t),
                ),
            )
            for link in rigid_chain_links(n, seed)
        ],
        gravity=GRAVITY,
    )


def _joint_placements(links: list[RigidLink]) -> list[tuple[np.ndarray, np.ndarray]]:
    """`D_{i−1} · O_i`: joint i's frame in the frame of joint i−1 (in the base for i = 0)."""
    out = []
    prev_rot, prev_t = np.eye(3), np.zeros(3)
    for link in links:
        out.append((prev_rot @ link.origin_rot, prev_t + prev_rot @ link.origin_t))
        prev_rot, prev_t = link.distal_rot, link.distal_t
    return out


def pin_rigid_chain(n: int, seed: int = 0) -> tuple[pinocchio.Model, pinocchio.Data]:
    """`rigid_chain(n, seed)` as a Pinocchio model (revolute joints with unaligned axes)."""
    import pinocchio as pin

    links = rigid_chain_links(n, seed)
    model = pin.Model()
    model.gravity = pin.Motion(np.asarray(GRAVITY), np.zeros(3))  # (linear, angular)
    parent = 0
    for i, (link, (rot, trans)) in enumerate(zip(links, _joint_placements(links))):
        joint = model.addJoint(
            parent, pin.JointModelRevoluteUnaligned(link.axis), pin.SE3(rot, trans), f"joint_{i}"
        )
        # the body frame is the joint's moving frame: com and inertia (about the com) as given
        model.appendBodyToJoint(
            joint, pin.Inertia(link.mass, link.com, link.inertia), pin.SE3.Identity()
        )
        parent = joint
    return model, model.createData()


def pin_aba(model: pinocchio.Model, data: pinocchio.Data, q: Any, qd: Any, tau: Any) -> np.ndarray:
    """Pinocchio's articulated-body algorithm `q̈ = ABA(q, q̇, τ)` (a copy of `data.ddq`)."""
    import pinocchio as pin

    q, qd, tau = (np.ascontiguousarray(x, dtype=np.float64) for x in (q, qd, tau))
    return np.array(pin.aba(model, data, q, qd, tau))


def soromox_rigid_chain_model(n: int, seed: int = 0) -> soromox.ArticulatedSoftRobot:
    """`rigid_chain(n, seed)` as SoRoMoX's `ArticulatedSoftRobot` (fixed base at the identity,
    zero joint springs and dampers; `radius` only draws the links)."""
    import soromox as sx

    links = rigid_chain_links(n, seed)
    parent = np.tile(np.eye(4), (n, 1, 1))
    for i, (rot, _) in enumerate(_joint_placements(links)):
        # the previous tip carries the translation t_d; the rest of D_{i−1} · O_i goes here
        prev_rot = links[i - 1].distal_rot if i else np.eye(3)
        parent[i, :3, :3] = rot
        parent[i, :3, 3] = prev_rot @ links[i].origin_t
    zeros = jnp.zeros((n, n))
    params = sx.ArticulatedSoftRobotParams(
        joint_screw=jnp.asarray([np.concatenate([link.axis, np.zeros(3)]) for link in links]),
        parent_to_joint_transform=jnp.asarray(parent),
        tip_position=jnp.asarray([link.distal_t for link in links]),
        center_of_mass_position=jnp.asarray([link.com for link in links]),
        mass=jnp.asarray([link.mass for link in links]),
        center_of_mass_inertia=jnp.asarray([link.inertia for link in links]),
        gravity=jnp.asarray(GRAVITY),
        joint_stiffness=zeros,
        joint_damping=zeros,
        joint_rest_configuration=jnp.zeros(n),
        radius=jnp.full(n, 0.02),
    )
    # "horizontal" mounting: the identity quaternion (x, y, z, w) and no translation
    return sx.ArticulatedSoftRobot(params, base_pose=jnp.asarray([0, 0, 0, 1.0, 0, 0, 0]))


def soromox_rigid_chain(n: int, seed: int = 0) -> FD:
    """SoRoMoX's O(N) forward dynamics of `rigid_chain(n, seed)`:
    `ArticulatedSoftRobot.forward_dynamics` runs `_aba_forward_accelerations`, Featherstone's
    articulated-body algorithm as three `lax.scan`s."""
    return soromox_fd(soromox_rigid_chain_model(n, seed))


def rigid_state(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A seeded random `(q, q̇, τ)`: `q` uniform in [−π, π], `q̇` and `τ` standard normal."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-np.pi, np.pi, n), rng.normal(size=n), rng.normal(size=n)


# ----------------------------------------------------------------------------------------------
# Forward-dynamics callables
# ----------------------------------------------------------------------------------------------


def soromox_fd(model: Any) -> FD:
    """`(q, q̇, τ) -> q̈` of a fixed-base SoRoMoX model, jitted: its `forward_dynamics(t, y, (u,))`
    with `y = (q, q̇)` and the default identity actuation `u = τ`."""
    n = model.num_velocities

    @jax.jit
    def fd(q: Any, qd: Any, tau: Any) -> jax.Array:
        return model.forward_dynamics(0.0, jnp.concatenate([q, qd]), (tau,))[n:]

    return fd


def softrigid_fd(robot: sr.Robot, solver: str = "auto") -> FD:
    """The public `softrigid.forward_dynamics(robot, q, q̇, τ, solver=solver)`, jitted (with its
    run-time checks; `"auto"` picks the solver as `softrigid._articulated.choose_solver` does)."""

    @softrigid_jit
    def fd(q: Any, qd: Any, tau: Any) -> jax.Array:
        return sr.forward_dynamics(robot, q, qd, tau, solver=solver)

    return fd


def softrigid_cholesky_fd(robot: sr.Robot) -> FD:
    """softrigid's forward dynamics, jitted: `solve_accelerations(robot, terms(robot, q, q̇), τ)`
    (mass matrix by the recursion, then Cholesky)."""

    @softrigid_jit
    def fd(q: Any, qd: Any, tau: Any) -> jax.Array:
        return _dynamics.solve_accelerations(robot, _dynamics.terms(robot, q, qd), tau)

    return fd


def softrigid_articulated_fd(robot: sr.Robot) -> FD:
    """softrigid's O(N) articulated-body forward dynamics, jitted
    (`softrigid._articulated.articulated_accelerations`)."""
    from softrigid._articulated import articulated_accelerations

    @softrigid_jit
    def fd(q: Any, qd: Any, tau: Any) -> jax.Array:
        return articulated_accelerations(robot, q, qd, tau)

    return fd


def batch_states(
    state_fn: Callable[[int, int], tuple[np.ndarray, ...]], n: int, batch: int
) -> tuple[jax.Array, ...]:
    """`batch` seeded states `state_fn(n, 10_000 + k)` stacked along a leading axis (for `vmap`)."""
    rows = [state_fn(n, 10_000 + k) for k in range(batch)]
    return tuple(jnp.asarray(np.stack(col)) for col in zip(*rows))


def max_relative(reference: FD, other: FD, states: list[tuple[np.ndarray, ...]]) -> float:
    """`max_states |a − b|_∞ / |a|_∞` of the two forward dynamics."""
    out = 0.0
    for q, qd, tau in states:
        a = np.asarray(reference(q, qd, tau))
        b = np.asarray(other(q, qd, tau))
        out = max(out, float(np.max(np.abs(a - b)) / np.max(np.abs(a))))
    return out


# ----------------------------------------------------------------------------------------------
# Self-check
# ----------------------------------------------------------------------------------------------


def _self_check(sizes: tuple[int, ...] = (1, 3, 8), n_states: int = 5) -> None:
    """softrigid (Cholesky) against Pinocchio, SoRoMoX and softrigid's articulated recursion."""
    try:
        softrigid_articulated_fd(rigid_chain(1))
        articulated = True
    except ImportError:
        articulated = False
    for n in sizes:
        robot = rigid_chain(n, seed=n)
        cholesky = softrigid_cholesky_fd(robot)
        model, data = pin_rigid_chain(n, seed=n)
        states = [rigid_state(n, 100 * n + k) for k in range(n_states)]
        peers: dict[str, FD] = {
            "pinocchio.aba": functools.partial(pin_aba, model, data),
            "soromox.ArticulatedSoftRobot": soromox_rigid_chain(n, seed=n),
        }
        if articulated:
            peers["softrigid.articulated"] = softrigid_articulated_fd(robot)
        for name, fd in peers.items():
            err = max_relative(cholesky, fd, states)
            print(f"rigid chain   N={n:3d}  softrigid cholesky vs {name:30s} {err:.2e}")


if __name__ == "__main__":
    _self_check()
