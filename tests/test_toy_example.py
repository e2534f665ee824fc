"""The seed's toy example, corrected (`validation.md` §1).

One planar constant-curvature body (`L = 1`) on a fixed joint, a solid cylinder of radius 1 and
length 1 with density 1 (mass π), distal pivot `(0, 0, 1)`, contact points `(1, 0, 1)` and
`(0, 1, 1)`, gravity `(0, 0, −9.81)`.

Quadrature: every integrand of the toy (mass, momentum, kinetic energy, gravity work) is a
polynomial of degree ≤ 2 in the section coordinates `(x1, x2)` (the map is affine in them), which
the cylinder rule integrates exactly with `n_radial = 2`, `n_angular = 5` (`2·2 − 1 ≥ 3`,
`5 > 2`). Along `x3` the integrands are entire (`cos(q x3)`, `sin(q x3)` times polynomials of
degree ≤ 2); the `n`-node Gauss–Legendre error on `[0, 1]` is
`(n!)⁴ / ((2n + 1) ((2n)!)³) · max |f⁽²ⁿ⁾|` with `|f⁽²ⁿ⁾| ≲ 4 |q|²ⁿ`, below 1e-21 for
`n = 8`, `|q| ≤ 1.2`: the rule is exact to rounding.

The D'Alembert resultants are not exposed per link by the public API, so they are read off a
free-floating copy of the body: with the `Free` joint at rest (`q = 0`, zero rate and
acceleration) the body moves exactly as on the fixed joint, and the free joint's rows of the
inertial inverse dynamics are the force and the moment (about the base origin) that the base
must apply, `−F*` and `−T*_0` in the base frame. `π*` then follows from the body row,
`IID = −(π* + Pv·F* + Pw·T*)`.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import joints, kinematics, quadrature

G0 = -9.81
TABLE_TOL = 1e-10  # the table is printed with 12 significant digits
EXACT_TOL = 1e-12

# (q, qd, qdd): M, c, M qdd + c, g, F*x, F*z, T*y (about the distal origin), π*, CoM (distal)
TABLE = [
    (
        (0.7, 1.3, -2.1),
        dict(
            M=0.415853629198,
            c=-0.00723470111851,
            Mqdd_c=-0.880527322434,
            g=-1.73981426084,
            Fx=-0.899274331779,
            Fz=0.793512424176,
            Ty=-0.583342206190,
            pi=-0.224723747263,
            com=(-0.113841454617, 0.0, -0.479913903501),
        ),
    ),
    (
        (-1.2, 0.4, 3.0),
        dict(
            M=0.410150186087,
            c=0.00113144341458,
            Mqdd_c=1.23158200167,
            g=2.79721144355,
            Fx=1.23159047226,
            Fz=0.891525185796,
            Ty=0.842759619364,
            pi=0.322433185720,
            com=(0.186083968078, 0.0, -0.442807114947),
        ),
    ),
]


def _mass_closed(q):
    """`M(q) = π (q⁵ + 4q³ + 24q(1 + cos q) − 48 sin q) / (12 q⁵)` (complex-step safe)."""
    return np.pi * (q**5 + 4 * q**3 + 24 * q * (1 + np.cos(q)) - 48 * np.sin(q)) / (12 * q**5)


def _mass_closed_derivative(q):
    h = 1e-30
    return _mass_closed(q + 1j * h).imag / h


def _closed_forms(q):
    c, s = np.cos(q), np.sin(q)
    return dict(
        M=_mass_closed(q),
        g=np.pi * G0 * (2 - 2 * c - q * s) / q**3,
        R=np.array([[c, 0, -s], [0, 1, 0], [s, 0, c]]),
        t=np.array([(c - 1) / q, 0, s / q]),
        com=np.array([-(q - s) / q**2, 0, (c - 1) / q**2]),
        Pv=np.array([(c - 1) / q**2, 0, (q - s) / q**2]),
        Pw=np.array([0.0, -1.0, 0.0]),
    )


VOLUME = quadrature.cylinder(1.0, 1.0, n_axial=8, n_radial=2, n_angular=5)


def _toy_map(x, q):
    """The seed's eq. (3), written naively (a user's function; singular at q = 0)."""
    theta = q[0] * x[2]
    return jnp.array(
        [
            (jnp.cos(theta) - 1) / q[0] + x[0] * jnp.cos(theta),
            x[1],
            (1 + q[0] * x[0]) * jnp.sin(theta) / q[0],
        ]
    )


def _body(kind):
    """The toy body from the built-in family (exact distal pose) or from the user function
    with the pivot and contact points of the table (distal frame by eqs. (5)–(7))."""
    if kind == "family":
        return sr.SoftBody(kinematics.PlanarConstantCurvature(1.0), VOLUME, 1.0)
    return sr.SoftBody(
        _toy_map,
        VOLUME,
        1.0,
        n_q=1,
        pivot=(0.0, 0.0, 1.0),
        contact_points=((1.0, 0.0, 1.0), (0.0, 1.0, 1.0)),
    )


@pytest.fixture(scope="module", params=["family", "function"])
def kind(request):
    return request.param


@pytest.fixture(scope="module")
def toy(kind):
    return sr.Robot([sr.Link(joints.Fixed(), _body(kind))], gravity=(0.0, 0.0, G0))


@pytest.fixture(scope="module")
def free_toy(kind):
    return sr.Robot([sr.Link(joints.Free(), _body(kind))], gravity=(0.0, 0.0, G0))


@pytest.fixture(scope="module")
def family_toy():
    return sr.Robot([sr.Link(joints.Fixed(), _body("family"))], gravity=(0.0, 0.0, G0))


@jax.jit
def _pose_and_derivative(robot, q):
    """World pose of the distal frame and its derivative along q: `(R, t, dR/dq, dt/dq)`."""

    def fk(q):
        rot, pos = sr.forward_kinematics(robot, q)
        return rot[0], pos[0]

    (rot, pos), (drot, dpos) = jax.jvp(fk, (q,), (jnp.ones_like(q),))
    return rot, pos, drot, dpos


def _state(values):
    return tuple(jnp.array([v]) for v in values)


@pytest.mark.parametrize(("state", "row"), TABLE)
def test_mass_bias_and_gravity(toy, state, row):
    q, qd, qdd = _state(state)
    closed = _closed_forms(state[0])
    iid, mass = sr.mass_inertial_inverse_dynamics(toy, q, qd, qdd)
    bias, _ = sr.mass_inertial_inverse_dynamics(toy, q, qd, jnp.zeros(1))
    grav = sr.gravity_force(toy, q)
    c_closed = 0.5 * _mass_closed_derivative(state[0]) * state[1] ** 2
    assert abs(float(mass[0, 0]) - row["M"]) < TABLE_TOL
    assert abs(float(mass[0, 0]) - closed["M"]) < EXACT_TOL
    assert abs(float(bias[0]) - row["c"]) < TABLE_TOL
    assert abs(float(bias[0]) - c_closed) < EXACT_TOL
    assert abs(float(iid[0]) - row["Mqdd_c"]) < TABLE_TOL
    assert abs(float(grav[0]) - row["g"]) < TABLE_TOL
    assert abs(float(grav[0]) - closed["g"]) < EXACT_TOL


@pytest.mark.parametrize(("state", "row"), TABLE)
def test_distal_pose_projectors_and_centre_of_mass(toy, state, row):
    q = jnp.array([state[0]])
    closed = _closed_forms(state[0])
    rot, pos, drot, dpos = (np.asarray(x) for x in _pose_and_derivative(toy, q))
    assert np.max(np.abs(rot - closed["R"])) < EXACT_TOL
    assert np.max(np.abs(pos - closed["t"])) < EXACT_TOL
    # Pv = (∂t/∂q)ᵀ R ;  Pw = Gᵀ R with skew(G) = (∂R/∂q) Rᵀ, i.e. Pw = vee(Rᵀ ∂R/∂q)
    pv = dpos @ rot
    omega = rot.T @ drot
    pw = np.array([omega[2, 1], omega[0, 2], omega[1, 0]])
    assert np.max(np.abs(pv - closed["Pv"])) < EXACT_TOL
    assert np.max(np.abs(pw - closed["Pw"])) < EXACT_TOL
    # centre of mass of the quadrature nodes, in the distal frame
    (nodes,) = sr.material_points(toy, q)
    weights = np.asarray(toy.links[0].body.mass_weights)
    com_world = weights @ np.asarray(nodes) / weights.sum()
    com = rot.T @ (com_world - pos)
    assert abs(weights.sum() - np.pi) < EXACT_TOL
    assert np.max(np.abs(com - np.array(row["com"]))) < TABLE_TOL
    assert np.max(np.abs(com - closed["com"])) < EXACT_TOL


@pytest.mark.parametrize(("state", "row"), TABLE)
def test_dalembert_force_moment_and_pi_star(toy, free_toy, state, row):
    q, qd, qdd = _state(state)
    closed = _closed_forms(state[0])
    zero6 = jnp.zeros(6)
    iid = np.asarray(
        sr.inertial_inverse_dynamics(
            free_toy,
            jnp.concatenate([zero6, q]),
            jnp.concatenate([zero6, qd]),
            jnp.concatenate([zero6, qdd]),
        )
    )
    # the body's own row is unchanged by a free base at rest
    assert abs(iid[6] - row["Mqdd_c"]) < TABLE_TOL
    rot, pos = closed["R"], closed["t"]
    force_world = -iid[:3]  # F* in the base frame
    moment_base = -iid[3:6]  # T* about the base origin, base frame
    moment_distal = moment_base - np.cross(pos, force_world)  # about the distal origin
    force = rot.T @ force_world
    moment = rot.T @ moment_distal
    assert abs(force[0] - row["Fx"]) < TABLE_TOL
    assert abs(force[1]) < TABLE_TOL
    assert abs(force[2] - row["Fz"]) < TABLE_TOL
    assert abs(moment[1] - row["Ty"]) < TABLE_TOL
    assert np.max(np.abs(moment[[0, 2]])) < TABLE_TOL
    # IID = −(π* + Pv·F* + Pw·T*)
    pi_star = -iid[6] - closed["Pv"] @ force - closed["Pw"] @ moment
    assert abs(pi_star - row["pi"]) < TABLE_TOL


def test_limits_at_zero_curvature(family_toy):
    """Exact finite limits at q = 0 from the series `M = 2π/15 − π q²/504 + π q⁴/25920`,
    `g = π g0 (q/12 − q³/180)`, `t = (−q/2, 0, 1 − q²/6)`; `c = ½ M′ q̇²`, so
    `∂c/∂q = ½ M″ q̇² = −π q̇²/504` at 0."""
    toy = family_toy
    q0 = jnp.zeros(1)
    qd = jnp.array([1.7])
    one = jnp.ones(1)

    def miid(q):
        return sr.mass_inertial_inverse_dynamics(toy, q, qd, jnp.zeros(1))

    # (c, M) and their q-derivatives by forward mode (c = ½ M′ q̇², so c′ carries M″)
    (bias, mass), (dbias, dmass) = jax.jit(lambda q: jax.jvp(miid, (q,), (one,)))(q0)
    m2 = -np.pi / 252  # M″(0)
    np.testing.assert_allclose([mass[0, 0], dmass[0, 0]], [2 * np.pi / 15, 0.0], atol=EXACT_TOL)
    np.testing.assert_allclose([bias[0], dbias[0]], [0.0, 0.5 * m2 * 1.7**2], atol=EXACT_TOL)
    grav, dgrav = jax.jit(lambda q: jax.jvp(lambda q: sr.gravity_force(toy, q), (q,), (one,)))(q0)
    np.testing.assert_allclose([grav[0], dgrav[0]], [0.0, np.pi * G0 / 12], atol=EXACT_TOL)
    rot, pos, drot, dpos = (np.asarray(x) for x in _pose_and_derivative(toy, q0))
    assert np.max(np.abs(rot - np.eye(3))) < EXACT_TOL
    assert np.max(np.abs(pos - np.array([0.0, 0.0, 1.0]))) < EXACT_TOL
    assert np.max(np.abs(dpos - np.array([-0.5, 0.0, 0.0]))) < EXACT_TOL
    assert np.max(np.abs(drot - np.array([[0, 0, -1], [0, 0, 0], [1, 0, 0]]))) < EXACT_TOL
