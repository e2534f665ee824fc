"""The piecewise-constant-strain robots of the benchmarks, built the same in softrigid and SoRoMoX.

Two families of n segments in series (fixed joints), each segment a solid circular rod of
`PCSParams` (SoRoMoX's example rod) with Gauss–Legendre nodes along its axis:

- `planar_pcs_chain(n)`: planar segments (bend, axial, shear; 3 coordinates each), softrigid's
  `PlanarPCS`. Peer: SoRoMoX's `PlanarPCS` (`soromox_planar_pcs`).
- `spatial_pcs_chain(n)`: spatial segments (all six strains; 6 coordinates each), softrigid's
  `SpatialPCS` (or, `cosserat=True`, the `Cosserat` rod with a constant strain basis and one
  Magnus step, exact for a constant strain). Peer: SoRoMoX's `PCS` (`soromox_spatial_pcs`).

SoRoMoX assembles a dense mass matrix from the Gauss-point Jacobians and solves it by Cholesky.

Conventions (checked by the self-check below, `python benchmarks/_peers_pcs.py`):

- Frames. SoRoMoX's local `(x, y, z)` (x along the rod) is softrigid's `(x3, x1, x2)`, a cyclic
  permutation (both right-handed). Strains follow: SoRoMoX's `(κx, κy, κz, σx, σy, σz)` is
  softrigid's `(κ3, κ1, κ2, ν3, ν1, ν2)`, with the same signs.
- Planar PCS. SoRoMoX's `q = (κz, σx − 1, σy)` per segment is
  `PlanarPCS(strains=("bend", "axial", "shear"))`'s `(Δκ, Δσ3, Δσ1)`: positive κ bends towards
  +x1 (local +y) in both; the state map is the identity. With SoRoMoX's "upright" mounting
  (`θ0 = π/2`, the rod along world +Y) SoRoMoX's world `(X, Y)` is softrigid's `(−x1, x3)`:
  softrigid's gravity `(g1, 0, g3)` is SoRoMoX's `(−g1, g3)`.
- Spatial PCS. SoRoMoX's `q = (κx, κy, κz, σx − 1, σy, σz)` per segment is softrigid's
  `(κ3, κ1, κ2, ν3 − 1, ν1, ν2)`: the basis `Monomial(L, 0, (2, 0, 1, 5, 3, 4))` orders
  softrigid's coordinates as SoRoMoX's, so the state map is the identity. With SoRoMoX's base
  at the identity its world `(X, Y, Z)` is softrigid's `(x3, x1, x2)`: softrigid's gravity
  `(g1, g2, g3)` is SoRoMoX's `(g3, g1, g2)`.
- Mass. SoRoMoX's section inertia per unit length, `ρ diag(J, I, I, A, A, A)` (J = 2I), is what
  softrigid integrates over the solid cylinder rule: 2 radial and 5 angular nodes are exact for
  the section's second moments.
- Elasticity and damping. softrigid's `CosseratRod` has `K = L diag(E I, E I, G J, G A, G A, E A)`
  on `(κ1, κ2, κ3, ν1, ν2, ν3)` and damps stiffness-proportionally, `D = η K`; SoRoMoX receives the
  same matrices in its order (`PCSParams.stiffness`, `LinkSpec(damping=η K)`; its
  `material_damping_coefficient` would give `μ L diag(J, 3I, 3I, 3A, A, A)`, not `η K`).
- Gauss nodes. SoRoMoX's stock Gauss–Legendre nodes stop their Newton iteration at float32's
  epsilon (nodes off by ~3e-8, agreement ~1e-7); `exact_nodes=True` swaps in NumPy's `leggauss`
  (agreement 1e-14 to 3e-12, growing with n).

Every `*_fd` callable maps `(q, q̇, τ)` to `q̈` for generalized forces `τ` (no actuators in
softrigid; SoRoMoX's default `IdentityActuator` makes its input `u = τ`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, TypeVar

import jax

# float64 everywhere: the peers agree to ~1e-13, and SoRoMoX builds its arrays at construction
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402

try:
    from _peers import FD, GRAVITY, max_relative, softrigid_cholesky_fd, soromox_fd
except ImportError:  # imported as benchmarks._peers_pcs
    from benchmarks._peers import FD, GRAVITY, max_relative, softrigid_cholesky_fd, soromox_fd

if TYPE_CHECKING:
    import soromox

__all__ = [
    "PCS_PARAMS",
    "PCSParams",
    "planar_pcs_chain",
    "planar_pcs_state",
    "soromox_planar_pcs",
    "soromox_planar_pcs_model",
    "soromox_spatial_pcs",
    "soromox_spatial_pcs_model",
    "spatial_pcs_chain",
    "spatial_pcs_state",
]

Model = TypeVar("Model")
Gravity = tuple[float, float, float]

# softrigid's spatial strain components in SoRoMoX's order (κx, κy, κz, σx, σy, σz)
SPATIAL_STRAINS = (2, 0, 1, 5, 3, 4)


class PCSParams(NamedTuple):
    """One PCS segment: a solid circular rod.

    Defaults from SoRoMoX's example `examples/simulation/pcs/simulate_planar_pcs.py`
    (tud-phi/soromox): L = 0.1 m, r = 0.02 m, ρ = 1070 kg/m³ (Dragon Skin 20), E = 2 kPa,
    G = 1 kPa, 5 Gauss points per segment. Damping `D = η K`; η = 1 s puts `D` in the range of
    the example's `1e-3 diag(1, 1e3, 1e3) L` (η = 0.4–4 s per strain).
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

    def stiffness(self, spatial: bool = False) -> np.ndarray:
        """SoRoMoX's `K`: planar `L diag(E I, E A, G A)` on `(κz, σx, σy)`, spatial
        `L diag(G J, E I, E I, E A, G A, G A)` on `(κx, κy, κz, σx, σy, σz)`."""
        e, g, a, i = self.young, self.shear, self.area, self.second_moment
        if spatial:
            return self.length * np.diag([2.0 * g * i, e * i, e * i, e * a, g * a, g * a])
        return self.length * np.diag([e * i, e * a, g * a])


PCS_PARAMS = PCSParams()


# ----------------------------------------------------------------------------------------------
# softrigid
# ----------------------------------------------------------------------------------------------


def _chain(
    kinematics: sr.kinematics.Kinematics, n: int, p: PCSParams, gravity: Gravity
) -> sr.Robot:
    """n copies of a segment of the given kinematics in series: a `SoftBody` on the solid
    cylinder rule (`p.gauss_points` Gauss–Legendre nodes along `x3`, SoRoMoX's; 2 × 5 in the
    section, exact for its second moments) with the Cosserat rod energy of the section
    constants."""
    if n < 1:
        raise ValueError(f"PCS chain: n must be >= 1, got {n}")
    i = p.second_moment
    material = sr.materials.CosseratRod(
        p.young, p.shear, area=p.area, second_moments=(i, i), polar=2.0 * i, eta=p.eta
    )
    body = sr.SoftBody(
        kinematics,
        sr.quadrature.cylinder(p.radius, p.length, n_axial=p.gauss_points, n_radial=2),
        p.density,
        material=material,
    )
    return sr.Robot([sr.Link(sr.joints.Fixed(), body) for _ in range(n)], gravity=gravity)


def planar_pcs_chain(
    n: int, params: PCSParams = PCS_PARAMS, gravity: Gravity = GRAVITY
) -> sr.Robot:
    """n planar PCS segments, `PlanarPCS(L, strains=("bend", "axial", "shear"))`, in series."""
    kinematics = sr.kinematics.PlanarPCS(params.length, strains=("bend", "axial", "shear"))
    return _chain(kinematics, n, params, gravity)


def spatial_pcs_chain(
    n: int, params: PCSParams = PCS_PARAMS, gravity: Gravity = GRAVITY, cosserat: bool = False
) -> sr.Robot:
    """n spatial PCS segments in series: `SpatialPCS(L, strains=SPATIAL_STRAINS)` (the SE(3)
    exponential in closed form, SoRoMoX's coordinate order), or with `cosserat` the same
    constant strain as a general rod, `Cosserat(L, Monomial(L, 0, SPATIAL_STRAINS), n_steps=1)`
    (one exact Magnus step; equal to rounding, slower: the peers table until session 60)."""
    if cosserat:
        basis = sr.kinematics.Monomial(params.length, 0, SPATIAL_STRAINS)
        kinematics = sr.kinematics.Cosserat(params.length, basis, n_steps=1)
    else:
        kinematics = sr.kinematics.SpatialPCS(params.length, strains=SPATIAL_STRAINS)
    return _chain(kinematics, n, params, gravity)


def _pcs_state(
    scale: tuple[float, ...], n: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    size = len(scale) * n
    q = rng.uniform(-1.0, 1.0, size) * np.tile(scale, n)
    return q, rng.normal(size=size), 1e-4 * rng.normal(size=size)


def planar_pcs_state(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A seeded random `(q, q̇, τ)` of `planar_pcs_chain(n)`: `q` per segment uniform in
    `±(5, 0.2, 0.2)` (κ [1/m], axial, shear: unfolded sections, `σ3 − |κ| r > 0`), `q̇` standard
    normal, `τ` normal with the size of the elastic forces (1e-4)."""
    return _pcs_state((5.0, 0.2, 0.2), n, seed)


def spatial_pcs_state(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A seeded random `(q, q̇, τ)` of `spatial_pcs_chain(n)`: `q` per segment uniform in
    `±(2, 5, 5, 0.2, 0.2, 0.2)` (twist, bends [1/m], axial, shears), `q̇` standard normal,
    `τ` normal of size 1e-4."""
    return _pcs_state((2.0, 5.0, 5.0, 0.2, 0.2, 0.2), n, seed)


# ----------------------------------------------------------------------------------------------
# SoRoMoX
# ----------------------------------------------------------------------------------------------


def _link_spec(params: PCSParams, spatial: bool) -> soromox.LinkSpec:
    import soromox as sx

    p = params
    return sx.LinkSpec.circular(
        length=p.length,
        radius=p.radius,
        density=p.density,
        reference_strain=[0.0, 0.0, 0.0, 1.0, 0.0, 0.0] if spatial else [0.0, 1.0, 0.0],
        young_modulus=p.young,
        shear_modulus=p.shear,
        damping=jnp.asarray(p.eta * p.stiffness(spatial)),
    )


def _exact_gauss(model: Model) -> Model:
    """`model` with float64 Gauss–Legendre nodes in SoRoMoX's layout (zero-weight endpoints
    around the interior nodes on [0, 1]) and its cached matrices refreshed."""
    import equinox as eqx

    x, w = np.polynomial.legendre.leggauss(model.num_gauss_points)  # type: ignore[attr-defined]
    points = jnp.concatenate([jnp.zeros(1), 0.5 * (x + 1.0), jnp.ones(1)])
    weights = jnp.concatenate([jnp.zeros(1), 0.5 * w, jnp.zeros(1)])
    model = eqx.tree_at(
        lambda m: (m.integration_points, m.integration_weights), model, (points, weights)
    )
    return model._with_refreshed_precomputed_matrices()  # type: ignore[attr-defined]


def soromox_planar_pcs_model(
    n: int,
    params: PCSParams = PCS_PARAMS,
    gravity: Gravity = GRAVITY,
    exact_nodes: bool = True,
) -> soromox.PlanarPCS:
    """`planar_pcs_chain(n, params, gravity)` as SoRoMoX's `PlanarPCS` with n segments
    (upright mounting, JAX backend; `exact_nodes` replaces its float32-accurate Gauss nodes)."""
    import soromox as sx

    if gravity[1] != 0.0:
        raise ValueError(f"the planar PCS chain moves in the x1–x3 plane; gravity {gravity}")
    model = sx.PlanarPCS.from_links(
        [_link_spec(params, spatial=False)] * n,
        structure=sx.PlanarPCSStructure(num_gauss_points=params.gauss_points),
        # softrigid's (g1, 0, g3) is SoRoMoX's world (−g1, g3) under the upright mounting
        gravity=jnp.asarray([-gravity[0], gravity[2]]),
        base_pose=jnp.asarray([np.pi / 2, 0.0, 0.0]),
        backend="jax",
    )
    return _exact_gauss(model) if exact_nodes else model


def soromox_spatial_pcs_model(
    n: int,
    params: PCSParams = PCS_PARAMS,
    gravity: Gravity = GRAVITY,
    exact_nodes: bool = True,
) -> soromox.PCS:
    """`spatial_pcs_chain(n, params, gravity)` as SoRoMoX's `PCS` with n segments, all six
    strains active (base at the identity, JAX backend; `exact_nodes` as above)."""
    import soromox as sx

    g1, g2, g3 = gravity
    model = sx.PCS.from_links(
        [_link_spec(params, spatial=True)] * n,
        structure=sx.PCSStructure(num_gauss_points=params.gauss_points),
        # softrigid's (g1, g2, g3) is SoRoMoX's world (g3, g1, g2)
        gravity=jnp.asarray([g3, g1, g2]),
        # (qx, qy, qz, qw, x, y, z): the identity
        base_pose=jnp.asarray([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]),
        backend="jax",
    )
    return _exact_gauss(model) if exact_nodes else model


def soromox_planar_pcs(
    n: int, params: PCSParams = PCS_PARAMS, gravity: Gravity = GRAVITY, exact_nodes: bool = True
) -> FD:
    """SoRoMoX's forward dynamics of `planar_pcs_chain(n)` (the state map is the identity)."""
    return soromox_fd(soromox_planar_pcs_model(n, params, gravity, exact_nodes))


def soromox_spatial_pcs(
    n: int, params: PCSParams = PCS_PARAMS, gravity: Gravity = GRAVITY, exact_nodes: bool = True
) -> FD:
    """SoRoMoX's forward dynamics of `spatial_pcs_chain(n)` (the state map is the identity)."""
    return soromox_fd(soromox_spatial_pcs_model(n, params, gravity, exact_nodes))


# ----------------------------------------------------------------------------------------------
# Self-check
# ----------------------------------------------------------------------------------------------


def _self_check(
    planar_sizes: tuple[int, ...] = (1, 3, 8), spatial_sizes: tuple[int, ...] = (1, 4)
) -> None:
    """softrigid (Cholesky) against SoRoMoX on random states, with gravity along the rod and
    tilted (which breaks the mirror symmetries, the signs of the bends), with float64 and with
    SoRoMoX's stock Gauss nodes."""
    families = (
        ("planar", planar_sizes, planar_pcs_chain, soromox_planar_pcs, planar_pcs_state, 0.0),
        ("spatial", spatial_sizes, spatial_pcs_chain, soromox_spatial_pcs, spatial_pcs_state, -2.0),
    )
    for family, sizes, chain, peer, state, g2 in families:
        for n in sizes:
            states = [state(n, 100 * n + k) for k in range(3)]
            for gravity in (GRAVITY, (3.0, g2, -9.81)):
                cholesky = softrigid_cholesky_fd(chain(n, gravity=gravity))
                for exact in (True, False):
                    err = max_relative(
                        cholesky, peer(n, gravity=gravity, exact_nodes=exact), states
                    )
                    nodes = "float64 nodes" if exact else "stock nodes  "
                    print(
                        f"{family:7s} PCS N={n:3d}  softrigid cholesky vs soromox "
                        f"({nodes}, g={gravity}) {err:.2e}"
                    )


if __name__ == "__main__":
    _self_check()
