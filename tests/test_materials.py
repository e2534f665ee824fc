"""Material laws: exact energies, s = ∂U/∂q, stiffness, Kelvin–Voigt and rod damping, errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import joints, kinematics, quadrature
from softrigid.kinematics import lvp
from softrigid.materials import (
    CompressibleNeoHookean,
    CosseratRod,
    Energy,
    IncompressibleNeoHookean,
    SaintVenantKirchhoff,
    StrainEnergy,
    deformation_gradient,
    lame_parameters,
)
from softrigid.materials import _solids as solids

RADIUS, LENGTH = 0.3, 1.2
VOLUME = quadrature.cylinder(RADIUS, LENGTH, n_axial=3, n_radial=2, n_angular=5)
FRAME = {"pivot": (0.0, 0.0, LENGTH), "contact_points": ((RADIUS, 0, LENGTH), (0, RADIUS, LENGTH))}


# Volume-preserving test maps (det F = 1 for every q)
def twist(x, q):
    """Rotate the section at x3 by φ = q x3 / L."""
    phi = q[0] * x[2] / LENGTH
    c, s = jnp.cos(phi), jnp.sin(phi)
    return jnp.stack([c * x[0] - s * x[1], s * x[0] + c * x[1], x[2]])


def stretch(x, q):
    """Uniform axial stretch λ = 1 + q with lateral contraction 1/√λ."""
    lam = 1.0 + q[0]
    return jnp.stack([x[0] / jnp.sqrt(lam), x[1] / jnp.sqrt(lam), lam * x[2]])


def shear(x, q):
    """Simple shear x1 += γ x3."""
    return jnp.stack([x[0] + q[0] * x[2], x[1], x[2]])


def lvp3(x, q):
    """twist ∘ shear ∘ stretch (q = (φ, γ, log λ)): volume preserving by composition."""
    return twist(shear(stretch(x, jnp.expm1(q[2:3])), q[1:2]), q[0:1])


def general(x, q):
    """A polynomial map that changes volume (3 coordinates, identity at q = 0)."""
    return jnp.stack(
        [
            x[0] * (1.0 + q[0]) + q[1] * x[2] ** 2,
            x[1] * (1.0 + 0.5 * q[0] * x[2]) + 0.2 * q[2] * x[0],
            x[2] * (1.0 + q[2]) + 0.3 * q[1] * x[0] * x[1],
        ]
    )


def cc_strain(X, q):
    """Strain of `PlanarConstantCurvature(LENGTH)`: the section turns about −x2 at the rate
    q/L, so κ2 = −q/L (the family's convention)."""
    z = jnp.zeros_like(q[0])
    return jnp.stack([z, -q[0] / LENGTH, z, z, z, 1.0 + z])


def soft(kin, material, n_q=None):
    if callable(kin) and not isinstance(kin, kinematics.Kinematics):
        return sr.SoftBody(kin, VOLUME, density=1.0, material=material, n_q=n_q, **FRAME)
    return sr.SoftBody(kin, VOLUME, density=1.0, material=material)


J_POLAR = np.pi * RADIUS**4 / 2  # ∫ (x1² + x2²) dA
I_SECTION = np.pi * RADIUS**4 / 4  # ∫ x1² dA = ∫ x2² dA
AREA = np.pi * RADIUS**2
VOL = AREA * LENGTH


# Jitted entry points (bodies and robots are pytree arguments: one compile per structure)
@jax.jit
def body_energy(body, q):
    return body.material.energy(body, q)


body_force = jax.jit(jax.grad(body_energy, argnums=1))
body_stiffness = jax.jit(jax.hessian(body_energy, argnums=1))


@jax.jit
def body_damping_matrix(body, q):
    # R is quadratic in q̇: D_ij = R(e_i + e_j) − R(e_i) − R(e_j) (polarization, exact)
    eye = jnp.eye(q.shape[0], dtype=q.dtype)
    pairs = jax.vmap(
        jax.vmap(lambda a, b: body.material.dissipation(body, q, a + b), (None, 0)), (0, None)
    )(eye, eye)
    single = jnp.diagonal(pairs) / 4.0
    return pairs - single[:, None] - single[None, :]


@jax.jit
def body_dissipation(body, q, qd):
    return body.material.dissipation(body, q, qd)


elastic_energy = jax.jit(sr.elastic_energy)
elastic_force = jax.jit(sr.elastic_force)
damping_force = jax.jit(sr.damping_force)
dissipation = jax.jit(sr.dissipation)


# ---------------------------------------------------------------- exact energies


@pytest.fixture(scope="module")
def lvp_body():
    return soft(lvp3, IncompressibleNeoHookean(1.3, eta=0.2), n_q=3)


def test_incompressible_twist_energy(lvp_body):
    # U = C τ² J_p L with τ = q / L (integrand C τ² r², exact for the rule)
    q = 0.9
    u = body_energy(lvp_body, jnp.array([q, 0.0, 0.0]))
    np.testing.assert_allclose(u, 1.3 * (q / LENGTH) ** 2 * J_POLAR * LENGTH, rtol=1e-13)


@pytest.mark.parametrize("lam", [0.6, 1.0, 1.7])
def test_incompressible_uniform_stretch_energy(lvp_body, lam):
    # U = C V (λ² + 2/λ − 3)
    u = body_energy(lvp_body, jnp.array([0.0, 0.0, np.log(lam)]))
    np.testing.assert_allclose(u, 1.3 * VOL * (lam**2 + 2 / lam - 3), rtol=1e-13, atol=1e-16)


def test_incompressible_shear_energy(lvp_body):
    # F = I + γ e1 e3ᵀ: tr FᵀF − 3 = γ², U = C γ² V
    g = -0.4
    u = body_energy(lvp_body, jnp.array([0.0, g, 0.0]))
    np.testing.assert_allclose(u, 1.3 * g**2 * VOL, rtol=1e-13)


def diagonal(x, q):
    """Homogeneous deformation F = diag(1 + q)."""
    return (1.0 + q) * x


def test_compressible_laws_homogeneous():
    a = np.array([1.2, 0.9, 1.4])
    mu, lam = 3.0, 5.0
    body_nh = soft(diagonal, CompressibleNeoHookean(mu, lam), n_q=3)
    body_svk = soft(diagonal, SaintVenantKirchhoff(mu, lam), n_q=3)
    q = jnp.asarray(a - 1.0)
    log_j = np.log(np.prod(a))
    w_nh = mu / 2 * (np.sum(a**2) - 3 - 2 * log_j) + lam / 2 * log_j**2
    e = 0.5 * (a**2 - 1)
    w_svk = mu * np.sum(e**2) + lam / 2 * np.sum(e) ** 2
    np.testing.assert_allclose(body_energy(body_nh, q), w_nh * VOL, rtol=1e-13)
    np.testing.assert_allclose(body_energy(body_svk, q), w_svk * VOL, rtol=1e-13)


def test_from_young_and_lame():
    mu, lam = lame_parameters(2.0e6, 0.3)
    np.testing.assert_allclose([mu, lam], [2.0e6 / 2.6, 2.0e6 * 0.3 / (1.3 * 0.4)], rtol=1e-15)
    m = CompressibleNeoHookean.from_young(2.0e6, 0.3)
    np.testing.assert_allclose([m.mu, m.lam], [mu, lam], rtol=1e-15)


def test_rod_energy_constant_curvature():
    # U = ½ E I q² / L for the planar CC segment (κ2 = −q/L on [0, L])
    E, G, q = 5.0, 2.0, 0.8
    kin = kinematics.PlanarConstantCurvature(LENGTH)
    from_volume = soft(kin, CosseratRod(E, G, strain=cc_strain))
    given = soft(
        kin,
        CosseratRod(
            E,
            G,
            area=AREA,
            second_moments=(I_SECTION, I_SECTION),
            polar=J_POLAR,
            strain=cc_strain,
        ),
    )
    exact = 0.5 * E * I_SECTION * q**2 / LENGTH
    for body in (from_volume, given):
        np.testing.assert_allclose(body_energy(body, jnp.array([q])), exact, rtol=1e-13)
    # s = E I q / L, the rod law of the tendon checks
    s = body_force(from_volume, jnp.array([q]))
    np.testing.assert_allclose(s, [E * I_SECTION * q / LENGTH], rtol=1e-13)


def test_rod_energy_cosserat_affine_strains():
    # ξ_c(X) = a_c + b_c X/L per component: U = ½ L Σ_c K_c (a² + a b + b²/3)
    E, G = 7.0, 3.0
    kin = kinematics.Cosserat(LENGTH, kinematics.Monomial(LENGTH, 1, strains=("bend", "axial")))
    body = soft(kin, CosseratRod(E, G))
    q = jnp.asarray(np.random.default_rng(0).normal(size=6) * 0.2)
    stiff = np.array([E * I_SECTION, E * I_SECTION, E * AREA])
    a, b = np.asarray(q[0::2]), np.asarray(q[1::2])
    exact = 0.5 * LENGTH * np.sum(stiff * (a**2 + a * b + b**2 / 3))
    np.testing.assert_allclose(body_energy(body, q), exact, rtol=1e-13)


def test_seed_toy_energy_form():
    # The seed's toy body (CC, L = 1, unit cylinder) with W = C (tr FᵀF − 3), C = 1:
    # the energy form gives s = (π/2) q (forces.md), not the strong form's (π/4)(q + q̇)
    vol = quadrature.cylinder(1.0, 1.0, n_axial=3, n_radial=2, n_angular=5)
    body = sr.SoftBody(
        kinematics.PlanarConstantCurvature(1.0),
        vol,
        density=1.0,
        material=StrainEnergy(lambda F: jnp.sum(F * F) - 3.0),
    )
    q = jnp.array([0.7])
    s = body_force(body, q)
    np.testing.assert_allclose(s, np.pi / 2 * q, rtol=1e-13)


def test_deformation_gradient_matches_jacobian():
    body = soft(general, CompressibleNeoHookean(1.0, 1.0), n_q=3)
    q = jnp.array([0.1, -0.2, 0.15])
    f = jax.jit(deformation_gradient)(body, q)
    ref = jax.jit(jax.vmap(jax.jacfwd(general), (0, None)))(VOLUME.points, q)
    np.testing.assert_allclose(f, ref, rtol=0, atol=1e-14)


# ---------------------------------------------------------------- robot level


def user_energy(q):
    return 0.5 * 3.0 * q[0] ** 2 + 0.25 * q[0] ** 4


def user_rayleigh(q, qd):
    return 0.5 * (1.0 + q[0] ** 2) * qd[0] ** 2


@pytest.fixture(scope="module")
def mixed_robot():
    """A revolute joint with spring and damper, then a damped neo-Hookean body, a damped rod
    and a user energy (the laws themselves are checked body by body above)."""
    comp = soft(general, CompressibleNeoHookean(2.0, 3.0, eta=0.1), n_q=3)
    rod = soft(
        kinematics.PlanarConstantCurvature(LENGTH), CosseratRod(5.0, 2.0, eta=0.4, strain=cc_strain)
    )
    user = soft(lambda x, q: x * (1.0 + 0.1 * q[0]), Energy(user_energy, user_rayleigh), n_q=1)
    links = [
        sr.Link(joints.Revolute((0, 1, 0), stiffness=2.0, damping=0.5, rest=0.1), comp),
        sr.Link(joints.Fixed(), rod),
        sr.Link(joints.Fixed(), user),
    ]
    return sr.Robot(links, gravity=(0.0, 0.0, 0.0))


def test_elastic_force_is_gradient(mixed_robot):
    rng = np.random.default_rng(1)
    q = jnp.asarray(0.1 * rng.normal(size=mixed_robot.n_q))
    s = elastic_force(mixed_robot, q)
    h = 1e-6
    eye = np.eye(mixed_robot.n_q)
    fd = [
        (elastic_energy(mixed_robot, q + h * e) - elastic_energy(mixed_robot, q - h * e)) / (2 * h)
        for e in eye
    ]
    np.testing.assert_allclose(s, fd, rtol=1e-7, atol=1e-8)


def test_rest_has_no_force(mixed_robot):
    # s = 0 at rest (the spring at its rest angle, bodies undeformed)
    q = jnp.zeros(mixed_robot.n_q).at[0].set(0.1)
    np.testing.assert_allclose(elastic_force(mixed_robot, q), 0.0, atol=1e-14)
    np.testing.assert_allclose(elastic_energy(mixed_robot, q), 0.0, atol=1e-15)


def test_stiffness_matrix_symmetric_and_derivative(mixed_robot):
    rng = np.random.default_rng(2)
    q = jnp.asarray(0.1 * rng.normal(size=mixed_robot.n_q))
    k = np.asarray(sr.stiffness_matrix(mixed_robot, q))
    np.testing.assert_allclose(k, k.T, rtol=0, atol=1e-12 * np.abs(k).max())
    h = 1e-6
    cols = [
        (elastic_force(mixed_robot, q + h * e) - elastic_force(mixed_robot, q - h * e)) / (2 * h)
        for e in np.eye(mixed_robot.n_q)
    ]
    np.testing.assert_allclose(k, np.stack(cols, 1), rtol=1e-6, atol=1e-7)


def test_damping_power_is_twice_rayleigh(mixed_robot):
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = jnp.asarray(0.1 * rng.normal(size=mixed_robot.n_q))
        qd = jnp.asarray(rng.normal(size=mixed_robot.n_q))
        r = float(dissipation(mixed_robot, q, qd))
        power = float(qd @ damping_force(mixed_robot, q, qd))
        assert r > 0
        np.testing.assert_allclose(power, 2 * r, rtol=1e-12)


def svk_density(F):
    # a user W(F): Saint-Venant–Kirchhoff with μ = 1, λ = 2
    e = 0.5 * (F.T @ F - jnp.eye(3))
    return jnp.sum(e * e) + jnp.trace(e) ** 2


# damped bodies of every solid law (η = 0.2)
SOLIDS = {
    "incompressible": lambda: soft(lvp3, IncompressibleNeoHookean(1.3, eta=0.2), n_q=3),
    "neo-hookean": lambda: soft(general, CompressibleNeoHookean(2.0, 3.0, eta=0.2), n_q=3),
    "svk": lambda: soft(general, SaintVenantKirchhoff(1.0, 2.0, eta=0.2), n_q=3),
    "user-W": lambda: soft(general, StrainEnergy(svk_density, 0.2), n_q=3),
}
DAMPED = {
    **SOLIDS,
    "rod": lambda: soft(
        kinematics.PlanarConstantCurvature(LENGTH), CosseratRod(5, 2, eta=0.2, strain=cc_strain)
    ),
}


@pytest.mark.parametrize("make", DAMPED.values(), ids=DAMPED.keys())
def test_kelvin_voigt_is_stiffness_proportional_at_rest(make):
    # ∂²R/∂q̇² = η ∂²U/∂q² at q = 0: ℂ₀ is the law's own small-strain elasticity
    body = make()
    q0 = jnp.zeros(body.n_q)
    k = np.asarray(body_stiffness(body, q0))
    assert np.all(np.linalg.eigvalsh(k) > 0)
    np.testing.assert_allclose(body_damping_matrix(body, q0), 0.2 * k, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("make", DAMPED.values(), ids=DAMPED.keys())
def test_damping_matrix_is_the_dissipations_hessian(make):
    # Body.damping_matrix (the solids' contraction η Σ w Bᵀ ℂ₀ B, the rod's default forward
    # mode) against ∂²R/∂q̇² by polarization, away from rest, at two q̇ (it depends on q only)
    body = make()
    rng = np.random.default_rng(5)
    q = jnp.asarray(0.2 * rng.normal(size=body.n_q))
    expected = np.asarray(body_damping_matrix(body, q))
    for qd in (jnp.zeros(body.n_q), jnp.asarray(rng.normal(size=body.n_q))):
        d = np.asarray(jax.jit(body.damping_matrix)(q, qd))
        np.testing.assert_allclose(d, expected, rtol=1e-11, atol=1e-13 * np.abs(expected).max())
        np.testing.assert_allclose(d, d.T, atol=1e-14 * np.abs(d).max())


@pytest.mark.parametrize("make", SOLIDS.values(), ids=SOLIDS.keys())
def test_solid_internal_force_is_the_gradient_of_energy_and_dissipation(make):
    """A solid's `internal_force` (one linearization of F(q), pulled back once) equals reverse
    mode of `U` and `R` (the `Material` default)."""
    body = make()
    mat = body.material
    rng = np.random.default_rng(11)
    q, qd = (jnp.asarray(0.2 * rng.normal(size=body.n_q)) for _ in range(2))

    def shared(x, xd):
        return mat.internal_force(body, x, xd)

    def reverse(x, xd):
        return jax.grad(mat.energy, argnums=1)(body, x) + jax.grad(mat.dissipation, argnums=2)(
            body, x, xd
        )

    s = jax.jit(shared)(q, qd)
    np.testing.assert_allclose(s, reverse(q, qd), rtol=1e-12, atol=1e-13 * np.abs(s).max())


@pytest.mark.parametrize(
    ("name", "pairs"), [(n, True) for n in DAMPED] + [(n, False) for n in SOLIDS]
)
def test_internal_force_derivatives_match_reverse_mode(name, pairs, monkeypatch):
    """`Body.internal_force_derivatives` (a solid's from the deformation gradient's jet, each
    law's own `∂P/∂F`, on small rules; forward mode over its pull-back above
    `PAIRS_MAX_NODES`, forced here by a limit of 0; a rod's the `Material` default over its
    `internal_force` and `damping_matrix`) equals reverse mode of `U` and `R` and its
    forward-mode Jacobians in `q` and `q̇` (what `inverse_dynamics_derivatives` takes of the
    material)."""
    if not pairs:
        monkeypatch.setattr(solids, "PAIRS_MAX_NODES", 0)
    body = DAMPED[name]()
    mat = body.material
    rng = np.random.default_rng(12)
    q, qd = (jnp.asarray(0.2 * rng.normal(size=body.n_q)) for _ in range(2))

    def reverse(x, xd):
        return jax.grad(mat.energy, argnums=1)(body, x) + jax.grad(mat.dissipation, argnums=2)(
            body, x, xd
        )

    got = jax.jit(body.internal_force_derivatives)(q, qd)
    expected = (reverse(q, qd), *jax.jacfwd(reverse, argnums=(0, 1))(q, qd))
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12 * np.abs(b).max())


def rotation(angle, axis):
    """Rodrigues: rotation by `angle` about the unit `axis`."""
    k = jnp.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return jnp.eye(3) + jnp.sin(angle) * k + (1.0 - jnp.cos(angle)) * (k @ k)


def moving(x, q):
    """`general` followed by a rigid motion: rotation q0 about a fixed axis, translation q4."""
    axis = jnp.array([1.0, 2.0, 3.0]) / jnp.sqrt(14.0)
    return rotation(q[0], axis) @ general(x, q[1:4]) + jnp.stack([q[4], 0.0 * q[4], 0.0 * q[4]])


def test_no_damping_under_rigid_motion():
    body = soft(moving, CompressibleNeoHookean(2.0, 3.0, eta=0.5), n_q=5)
    q = jnp.array([0.4, 0.1, -0.2, 0.15, 0.3])
    rigid = jnp.array([1.3, 0.0, 0.0, 0.0, -0.7])
    deform = jnp.array([0.0, 0.5, 0.2, -0.3, 0.0])
    assert abs(float(body_dissipation(body, q, rigid))) < 1e-14
    assert float(body_dissipation(body, q, deform)) > 1e-3
    # the deformation rate alone decides: adding a rigid velocity changes nothing
    np.testing.assert_allclose(
        body_dissipation(body, q, deform + rigid),
        body_dissipation(body, q, deform),
        rtol=1e-12,
    )


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: IncompressibleNeoHookean(-1.0), "C must be positive"),
        (lambda: CompressibleNeoHookean(-1.0, 1.0), "mu must be positive"),
        (lambda: CompressibleNeoHookean(1.0, -1.0), "bulk modulus"),
        (lambda: CompressibleNeoHookean.from_young(1.0, 0.5), r"Poisson's ratio nu must lie"),
        (lambda: SaintVenantKirchhoff.from_young(-2.0, 0.3), "E must be positive"),
        (lambda: IncompressibleNeoHookean(1.0, eta=-0.1), "eta .* must be non-negative"),
        (lambda: CosseratRod(1.0, -1.0), "G must be positive"),
        (lambda: CosseratRod(1.0, 1.0, area=1.0), "give all of area"),
        (
            lambda: CosseratRod(1.0, 1.0, area=1.0, second_moments=(1.0, -1.0), polar=1.0),
            r"second_moments\[1\] must be positive",
        ),
    ],
)
def test_bad_parameters(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_incompressible_on_non_preserving_map():
    with pytest.raises(
        ValueError, match=r"needs a volume-preserving body map.*PlanarConstantCurvature"
    ):
        soft(kinematics.PlanarConstantCurvature(LENGTH), IncompressibleNeoHookean(1.0))
    with pytest.raises(ValueError, match=r"'general' has max \|det F − 1\|"):
        soft(general, IncompressibleNeoHookean(1.0), n_q=3)


def test_incompressible_on_a_map_built_inside_jit():
    """A body built inside `jit` has traced leaves, so the volume check cannot read them: it
    becomes a run-time check attached to the law's parameters (a force at rest and a collapsed
    equilibrium came out before); on a volume-preserving map the values are the eager ones."""
    helix = lvp.compose(lvp.Twist(lvp.Polynomial([[0.0, 1.0]], LENGTH)), length=LENGTH)

    def force(kin, c):
        robot = sr.Robot([sr.Link(joints.Fixed(), soft(kin(), c))])
        return sr.elastic_force(robot, jnp.full(robot.n_q, 0.3))

    def traced(kin):
        return jax.jit(lambda c: force(kin, IncompressibleNeoHookean(c)))

    good = traced(lambda: lvp.compose(lvp.Twist(lvp.Polynomial([[0.0, 1.0]], LENGTH))))
    np.testing.assert_allclose(good(2.0), force(lambda: helix, IncompressibleNeoHookean(2.0)))
    bad = traced(lambda: kinematics.PlanarPCS(LENGTH))
    with pytest.raises(
        (jax.errors.JaxRuntimeError, ValueError),
        match="IncompressibleNeoHookean needs a volume-preserving body map, but 'PlanarPCS'",
    ):
        jax.block_until_ready(bad(2.0))


def test_incompressible_on_a_map_with_a_valid_range():
    # the seed's gripper: at q ~ 0.05 N(0, I) its source coordinate (m²) closes the 12 mm
    # cavity (r² + g < 0, the map is undefined), so the volume check samples inside the map's
    # valid range; on this volume-preserving map the law equals the compressible one with
    # μ = 2C, λ = 0 (ln J = 0, and ℂ₀ = 2μ 𝕀 for both), which needs no such check
    tube = quadrature.tube(0.012, 0.02, 0.05, n_axial=3, n_radial=2, n_angular=5)
    frame = {"pivot": (0, 0, 0.05), "contact_points": ((0.016, 0, 0.05), (0, 0.016, 0.05))}
    laws = (
        IncompressibleNeoHookean(22.2e6, eta=0.05),
        CompressibleNeoHookean(44.4e6, 0.0, eta=0.05),
    )
    bodies = [sr.SoftBody(lvp.gripper(0.05), tube, 960.0, material=m, **frame) for m in laws]
    # the check's samples: q = 0 and three seeded draws, halved (in one compiled program) until
    # the map is valid at every node; the raw draws are not
    from softrigid.materials._volume import _VP_SCALE, _sample_configurations

    kin, nodes = bodies[0].kinematics, tube.points
    samples = _sample_configurations(bodies[0])
    inside = jax.vmap(lambda x: jnp.all(jax.vmap(kin.valid, (0, None))(nodes, x)))
    assert samples.shape == (4, 2) and bool(jnp.all(inside(jnp.asarray(samples))))
    raw = _VP_SCALE * np.random.default_rng(0).standard_normal((3, 2))
    assert not bool(jnp.all(inside(jnp.asarray(raw))))
    q, qd = jnp.array([0.1, 2e-5]), jnp.array([-0.3, 1e-4])
    forces = [jax.grad(b.material.energy, 1)(b, q) for b in bodies]
    np.testing.assert_allclose(forces[0], forces[1], rtol=1e-9)
    rates = [b.material.dissipation(b, q, qd) for b in bodies]
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-9)
    assert float(rates[0]) > 0.0


def test_rod_law_needs_a_strain():
    with pytest.raises(TypeError, match="not strain-parameterized"):
        soft(general, CosseratRod(1.0, 1.0), n_q=3)
    with pytest.raises(ValueError, match=r"must return \(6,\)"):
        soft(
            kinematics.PlanarConstantCurvature(LENGTH), CosseratRod(1.0, 1.0, strain=lambda X, q: q)
        )
    seg = quadrature.segment(LENGTH, 3)
    with pytest.raises(ValueError, match="no cross-section"):
        sr.SoftBody(
            kinematics.PlanarConstantCurvature(LENGTH),
            seg,
            density=1.0,
            material=CosseratRod(1.0, 1.0, strain=cc_strain),
        )
    # a strain NaN at rest: U is NaN while its gradient, where ξ* cancels, looked finite
    with pytest.raises(ValueError, match="not finite at rest .*component 5 is nan"):
        soft(
            kinematics.PlanarConstantCurvature(LENGTH),
            CosseratRod(1.0, 1.0, strain=lambda X, q: cc_strain(X, q).at[5].set(jnp.nan)),
        )


def test_user_energy():
    body = soft(general, Energy(user_energy, user_rayleigh), n_q=3)
    q = jnp.array([0.4, 0.3, -0.2])
    qd = jnp.array([1.5, -2.0, 0.5])
    np.testing.assert_allclose(body_force(body, q), [3.0 * 0.4 + 0.4**3, 0.0, 0.0], rtol=1e-14)
    np.testing.assert_allclose(body_dissipation(body, q, qd), 0.5 * 1.16 * 1.5**2, rtol=1e-14)


def test_negative_rayleigh_is_refused():
    def feeds(q, qd):
        return -jnp.sum(qd**2)

    with pytest.raises(ValueError, match="rayleigh 'feeds' must be finite and non-negative"):
        soft(general, Energy(user_energy, feeds), n_q=3)
    # a rate-dependent sign is found at the seeded rates
    with pytest.raises(ValueError, match="got R = -"):
        soft(general, Energy(user_energy, lambda q, qd: qd[0] ** 3), n_q=3)


def test_user_laws_shape_errors():
    with pytest.raises(ValueError, match="must return a scalar"):
        StrainEnergy(lambda F: F)
    # an integer or complex energy is named; a constant Python number (no energy) is one
    with pytest.raises(TypeError, match="W '<lambda>' must return a real floating-point value"):
        StrainEnergy(lambda F: jnp.round(F).astype(int).sum())
    with pytest.raises(TypeError, match="potential '<lambda>' must return a real floating-point"):
        soft(general, Energy(lambda q: jnp.sum(q) + 0j), n_q=3)
    q = jnp.array([0.4, 0.3, -0.2])
    for law in (StrainEnergy(lambda F: 0), Energy(lambda q: 0, lambda q, qd: 0)):
        body = soft(general, law, n_q=3)  # was "grad requires real-valued outputs ... int64"
        np.testing.assert_array_equal(body_force(body, q), 0.0)
    with pytest.raises(ValueError, match="potential 'bad' must return a scalar"):

        def bad(q):
            return q

        soft(general, Energy(bad), n_q=3)
