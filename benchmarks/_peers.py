"""The robots of the forward-dynamics benchmark, built the same in softrigid, Pinocchio and SoRoMoX.

Two families, N = 1 … 100 bodies:

- `rigid_chain(n, seed)`: n revolute joints in series, each followed by a rigid body (seeded
  random axes, joint origins, masses 0.5–2 kg, inertias and centres of mass; no springs or
  dampers; gravity (0, 0, −9.81) m/s²). Peers: Pinocchio's ABA (`pin_rigid_chain`, `pin_aba`)
  and SoRoMoX's `ArticulatedSoftRobot`, whose `forward_dynamics` is an O(N) articulated-body
  recursion (`soromox_rigid_chain`).
- `planar_pcs_chain(n)`: n planar piecewise-constant-strain segments (bend, axial, shear) in
  series. Peer: SoRoMoX's `PlanarPCS` with n segments (`soromox_planar_pcs`), dense mass matrix
  and Cholesky solve.

Conventions (checked by the self-check below, `python benchmarks/_peers.py`):

- Rigid chain. softrigid link i is joint i, then body i, the body given in the frame after the
  joint; the joint origin is the placement of the joint frame in body i−1's distal frame, and
  `RigidBody(distal=(R_d, t_d))` the placement of that distal frame in the body frame. So the
  placement of joint i in the frame of joint i−1 (Pinocchio's `jointPlacement`) is
  `D_{i−1} · O_i`; SoRoMoX's tip has no rotation, so its `tip_position` is `t_d` and the
  distal rotation moves into the next `parent_to_joint_transform = (R_d R_O, R_d t_O)`.
  Coordinates, velocities and generalized forces are the same in all three codes.
- Planar PCS. SoRoMoX's local `(x, y, z)` (x along the rod) is softrigid's `(x3, x1, x2)`, and its
  `q = (κ_z, σ_x − 1, σ_y)` per segment is `PlanarPCS(strains=("bend", "axial", "shear"))`'s
  `(Δκ, Δσ3, Δσ1)` with the same signs: positive κ bends towards +x1 (local +y) in both. The
  state map is the identity. With SoRoMoX's "upright" mounting (`θ0 = π/2`, the rod along world
  +Y) SoRoMoX's world `(X, Y)` is softrigid's `(−x1, x3)`: softrigid's gravity `(g1, 0, g3)` is
  SoRoMoX's `(−g1, g3)`. SoRoMoX's stock Gauss–Legendre nodes stop their Newton iteration at
  float32's epsilon (nodes off by ~3e-8, agreement ~1e-7); `exact_nodes=True` swaps in NumPy's
  `leggauss` (agreement ~1e-14).

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
    "GRAVITY",
    "PCS_PARAMS",
    "PCSParams",
    "RigidLink",
    "pin_aba",
    "pin_rigid_chain",
    "planar_pcs_chain",
    "planar_pcs_state",
    "rigid_chain",
    "rigid_chain_links",
    "rigid_state",
    "softrigid_articulated_fd",
    "softrigid_cholesky_fd",
    "soromox_fd",
    "soromox_planar_pcs",
    "soromox_planar_pcs_model",
    "soromox_rigid_chain",
    "soromox_rigid_chain_model",
]

FD = Callable[[Any, Any, Any], jax.Array]
GRAVITY = (0.0, 0.0, -9.81)


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
# Planar PCS chain
# ----------------------------------------------------------------------------------------------


class PCSParams(NamedTuple):
    """One planar PCS segment: a solid circular rod.

    Defaults from SoRoMoX's example `examples/simulation/pcs/simulate_planar_pcs.py`
    (tud-phi/soromox): L = 0.1 m, r = 0.02 m, ρ = 1070 kg/m³ (Dragon Skin 20), E = 2 kPa,
    G = 1 kPa, 5 Gauss points per segment, upright mounting (its gravity points up, ours down:
    `GRAVITY`). Damping: softrigid's `CosseratRod`
    damps stiffness-proportionally, `D = η K`, `K = L diag(E I, E A, G A)`; SoRoMoX receives the
    same matrix explicitly (`LinkSpec(damping=η K)`; its `material_damping_coefficient` would give
    `μ L diag(3I, 3A, A)`, the same only when E = 3G). η = 1 s puts `D` in the range of the
    example's `1e-3 diag(1, 1e3, 1e3) L` (η = 0.4–4 s per strain).
    """

    length: float = 0.1
    radius: float = 0.02
    density: float = 1070.0
    young: float = 2e3
    shear: float = 1e3
    eta: float = 1.0
    gauss_points: int = 5

    @property
    def area(self) -> float:
        return float(np.pi * self.radius**2)

    @property
    def second_moment(self) -> float:
        return float(np.pi * self.radius**4 / 4.0)

    def stiffness(self) -> np.ndarray:
        """`K = L diag(E I, E A, G A)` on `(κ, σ_axial, σ_shear)`."""
        return self.length * np.diag(
            [self.young * self.second_moment, self.young * self.area, self.shear * self.area]
        )


PCS_PARAMS = PCSParams()


def planar_pcs_chain(
    n: int, params: PCSParams = PCS_PARAMS, gravity: tuple[float, float, float] = GRAVITY
) -> sr.Robot:
    """n planar PCS segments in series (fixed joints), each a `SoftBody` of
    `PlanarPCS(L, strains=("bend", "axial", "shear"))` on a solid cylinder rule (Gauss–Legendre in
    `x3` with `params.gauss_points` nodes, SoRoMoX's; the section rule is exact for the section's
    second moments) with the Cosserat rod energy of the given section constants."""
    if n < 1:
        raise ValueError(f"planar_pcs_chain: n must be >= 1, got {n}")
    p = params
    i = p.second_moment
    material = sr.materials.CosseratRod(
        p.young, p.shear, area=p.area, second_moments=(i, i), polar=2.0 * i, eta=p.eta
    )
    body = sr.SoftBody(
        sr.kinematics.PlanarPCS(p.length, strains=("bend", "axial", "shear")),
        sr.quadrature.cylinder(p.radius, p.length, n_axial=p.gauss_points, n_radial=2),
        p.density,
        material=material,
    )
    return sr.Robot([sr.Link(sr.joints.Fixed(), body) for _ in range(n)], gravity=gravity)


def planar_pcs_state(
    n: int, seed: int, scale: tuple[float, float, float] = (5.0, 0.2, 0.2)
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A seeded random `(q, q̇, τ)` of `planar_pcs_chain(n)`: `q` per segment uniform in
    `±scale` (κ [1/m], axial, shear: unfolded sections, `σ3 − |κ| r > 0`), `q̇` standard normal,
    `τ` normal with the size of the elastic forces (1e-4)."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1.0, 1.0, 3 * n) * np.tile(scale, n)
    return q, rng.normal(size=3 * n), 1e-4 * rng.normal(size=3 * n)


def _exact_gauss(model: soromox.PlanarPCS) -> soromox.PlanarPCS:
    """`model` with float64 Gauss–Legendre nodes in SoRoMoX's layout (zero-weight endpoints
    around the interior nodes on [0, 1]) and its cached matrices refreshed."""
    import equinox as eqx

    x, w = np.polynomial.legendre.leggauss(model.num_gauss_points)
    points = jnp.concatenate([jnp.zeros(1), 0.5 * (x + 1.0), jnp.ones(1)])
    weights = jnp.concatenate([jnp.zeros(1), 0.5 * w, jnp.zeros(1)])
    model = eqx.tree_at(
        lambda m: (m.integration_points, m.integration_weights), model, (points, weights)
    )
    return model._with_refreshed_precomputed_matrices()


def soromox_planar_pcs_model(
    n: int,
    params: PCSParams = PCS_PARAMS,
    gravity: tuple[float, float, float] = GRAVITY,
    exact_nodes: bool = True,
) -> soromox.PlanarPCS:
    """`planar_pcs_chain(n, params, gravity)` as SoRoMoX's `PlanarPCS` with n segments
    (upright mounting, JAX backend; `exact_nodes` replaces its float32-accurate Gauss nodes)."""
    import soromox as sx

    if gravity[1] != 0.0:
        raise ValueError(f"the planar PCS chain moves in the x1–x3 plane; gravity {gravity}")
    p = params
    spec = sx.LinkSpec.circular(
        length=p.length,
        radius=p.radius,
        density=p.density,
        reference_strain=[0.0, 1.0, 0.0],
        young_modulus=p.young,
        shear_modulus=p.shear,
        damping=jnp.asarray(p.eta * p.stiffness()),
    )
    model = sx.PlanarPCS.from_links(
        [spec] * n,
        structure=sx.PlanarPCSStructure(num_gauss_points=p.gauss_points),
        # softrigid's (g1, 0, g3) is SoRoMoX's world (−g1, g3) under the upright mounting
        gravity=jnp.asarray([-gravity[0], gravity[2]]),
        base_pose=jnp.asarray([np.pi / 2, 0.0, 0.0]),
        backend="jax",
    )
    return _exact_gauss(model) if exact_nodes else model


def soromox_planar_pcs(
    n: int,
    params: PCSParams = PCS_PARAMS,
    gravity: tuple[float, float, float] = GRAVITY,
    exact_nodes: bool = True,
) -> FD:
    """SoRoMoX's forward dynamics of `planar_pcs_chain(n)` (dense `M`, `C q̇`, `G` assembled from
    the Gauss-point Jacobians, then Cholesky on the CPU); the state map is the identity."""
    return soromox_fd(soromox_planar_pcs_model(n, params, gravity, exact_nodes))


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


def softrigid_cholesky_fd(robot: sr.Robot) -> FD:
    """softrigid's forward dynamics, jitted: `solve_accelerations(robot, terms(robot, q, q̇), τ)`
    (mass matrix by the recursion, then Cholesky)."""

    @jax.jit
    def fd(q: Any, qd: Any, tau: Any) -> jax.Array:
        return _dynamics.solve_accelerations(robot, _dynamics.terms(robot, q, qd), tau)

    return fd


def softrigid_articulated_fd(robot: sr.Robot) -> FD:
    """softrigid's O(N) articulated-body forward dynamics, jitted
    (`softrigid._articulated.articulated_accelerations`)."""
    from softrigid._articulated import articulated_accelerations

    @jax.jit
    def fd(q: Any, qd: Any, tau: Any) -> jax.Array:
        return articulated_accelerations(robot, q, qd, tau)

    return fd


# ----------------------------------------------------------------------------------------------
# Self-check
# ----------------------------------------------------------------------------------------------


def _max_relative(reference: FD, other: FD, states: list[tuple[np.ndarray, ...]]) -> float:
    """`max_states |a − b|_∞ / |a|_∞` of the two forward dynamics."""
    out = 0.0
    for q, qd, tau in states:
        a = np.asarray(reference(q, qd, tau))
        b = np.asarray(other(q, qd, tau))
        out = max(out, float(np.max(np.abs(a - b)) / np.max(np.abs(a))))
    return out


def _self_check(sizes: tuple[int, ...] = (1, 3, 8), n_states: int = 5) -> None:
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
            err = _max_relative(cholesky, fd, states)
            print(f"rigid chain   N={n:3d}  softrigid cholesky vs {name:30s} {err:.2e}")

        states = [planar_pcs_state(n, 100 * n + k) for k in range(n_states)]
        tilted = (3.0, 0.0, -9.81)  # breaks the mirror symmetry x1 → −x1 (the sign of κ)
        for gravity in (GRAVITY, tilted):
            cholesky = softrigid_cholesky_fd(planar_pcs_chain(n, gravity=gravity))
            for exact in (True, False):
                fd = soromox_planar_pcs(n, gravity=gravity, exact_nodes=exact)
                err = _max_relative(cholesky, fd, states)
                nodes = "float64 nodes" if exact else "stock nodes  "
                print(
                    f"planar PCS    N={n:3d}  softrigid cholesky vs soromox.PlanarPCS "
                    f"({nodes}, g={gravity}) {err:.2e}"
                )


if __name__ == "__main__":
    _self_check()
