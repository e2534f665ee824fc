"""Identities of the equations of motion on seeded random robots (`validation.md` §3), and the
JAX transformations (jit, vmap, grad with respect to states and physical parameters)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import robots

import softrigid as sr

SEEDS = (0, 1, 2)
RTOL = 1e-12


def _rel_err(got, ref) -> float:
    got, ref = np.asarray(got), np.asarray(ref)
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


@pytest.fixture(scope="module", params=SEEDS)
def case(request):
    robot = robots.mixed_robot(request.param)
    q, qd, qdd = robots.random_state(robot, 50 + request.param)
    return robot, q, qd, qdd


@jax.jit
def _mass_and_derivatives(robot, q):
    """`M(q)` and `∂M/∂q_k` stacked along the last axis `(n, n, n)`."""

    def mass(q):
        return sr.mass_matrix(robot, q)

    values, tangents = jax.vmap(lambda v: jax.jvp(mass, (q,), (v,)), out_axes=(None, -1))(
        jnp.eye(q.shape[0])
    )
    return values, tangents


_id_jacobians = jax.jit(jax.jacfwd(sr.inverse_dynamics, argnums=(2, 3)))


def test_mass_matrix_symmetric_positive_definite(case):
    robot, q, _, _ = case
    mass = np.asarray(sr.mass_matrix(robot, q))
    assert np.max(np.abs(mass - mass.T)) < RTOL * np.max(np.abs(mass))
    assert np.linalg.eigvalsh(mass).min() > 0.0
    _, mass_miid = sr.mass_inertial_inverse_dynamics(robot, q, q, q)
    assert _rel_err(mass, mass_miid) < RTOL


def test_mass_is_id_jacobian_and_bias_is_quadratic(case):
    robot, q, qd, qdd = case
    d_qd, d_qdd = _id_jacobians(robot, q, qd, qdd)
    mass, dmass = _mass_and_derivatives(robot, q)
    # ∂ID/∂q̈ = M
    assert _rel_err(d_qdd, mass) < RTOL
    # c = ID(q, q̇, 0) − ID(q, 0, 0) and ∂ID/∂q̇ = ∂c/∂q̇ + D (joint dampers)
    zero = jnp.zeros_like(q)
    bias = sr.inverse_dynamics(robot, q, qd, zero) - sr.inverse_dynamics(robot, q, zero, zero)
    _, damping, _ = robots.joint_spring_parameters(robot)
    bias -= damping * qd
    c_mat = 0.5 * (np.asarray(d_qd) - np.diag(damping))  # C = ½ ∂c/∂q̇, so c = C q̇
    assert _rel_err(c_mat @ qd, bias) < RTOL
    # Christoffel symbols of M: c_i = Σ_jk ½ (∂_k M_ij + ∂_j M_ik − ∂_i M_jk) q̇_j q̇_k
    dm = np.asarray(dmass)  # dm[i, j, k] = ∂M_ij/∂q_k
    gamma = 0.5 * (dm + dm.transpose(0, 2, 1) - dm.transpose(2, 1, 0))
    christoffel = np.einsum("ijk,j,k->i", gamma, qd, qd)
    assert _rel_err(bias, christoffel) < RTOL
    # q̇ᵀ (Ṁ − 2C) q̇ = 0 with Ṁ = Σ_k ∂M/∂q_k q̇_k
    mdot = dm @ np.asarray(qd)
    power = qd @ (mdot - 2 * c_mat) @ qd
    assert abs(float(power)) < RTOL * float(np.abs(qd) @ np.abs(mdot) @ np.abs(qd))


def test_kinetic_energy_is_half_qd_m_qd(case):
    robot, q, qd, _ = case
    ref = 0.5 * qd @ sr.mass_matrix(robot, q) @ qd
    assert abs(float(sr.kinetic_energy(robot, q, qd)) - float(ref)) < RTOL * float(ref)


def test_forward_dynamics_inverts_inverse_dynamics(case):
    robot, q, qd, qdd = case
    nu = sr.inverse_dynamics(robot, q, qd, qdd)
    got = sr.forward_dynamics(robot, q, qd, nu)
    # the solve amplifies the rounding of ν by cond(M)
    cond = np.linalg.cond(np.asarray(sr.mass_matrix(robot, q)))
    assert _rel_err(got, qdd) < 1e-14 * cond


@jax.jit
def _power(robot, q, qd, qdd):
    """`(d(T + V)/dt, q̇ᵀ ν, R)` along `(q̇, q̈)` with `ν = ID(q, q̇, q̈)`."""

    def energy(q, qd):
        return sr.kinetic_energy(robot, q, qd) + sr.potential_energy(robot, q)

    _, rate = jax.jvp(energy, (q, qd), (qd, qdd))
    nu = sr.inverse_dynamics(robot, q, qd, qdd)
    return rate, qd @ nu, sr.dissipation(robot, q, qd)


def test_power_balance(case):
    robot, q, qd, qdd = case
    rate, power_in, dissipation = (float(x) for x in _power(robot, q, qd, qdd))
    _, damping, _ = robots.joint_spring_parameters(robot)
    assert abs(dissipation - 0.5 * float(damping @ np.asarray(qd) ** 2)) < 1e-14
    # d(T + V)/dt = q̇ᵀ ν − 2R
    assert abs(rate - (power_in - 2 * dissipation)) < RTOL * abs(power_in)


# ---- the small robot: loads, mass_inverse_dynamics, jit, vmap, grad -------------------------


@pytest.fixture(scope="module")
def small():
    robot = robots.small_robot(0)
    return robot, robots.random_state(robot, 3)


@jax.jit
def _load_jacobians(robot, q, x_soft, x_rigid):
    """Jacobians of the world positions of a soft and a rigid material point, and of the world
    pose `(R, t)` of the last distal frame (translation and rotation parts)."""
    j_soft = jax.jacfwd(lambda q: sr.world_points(robot, q, 0, x_soft[None])[0])(q)
    j_rigid = jax.jacfwd(lambda q: sr.world_points(robot, q, 1, x_rigid[None])[0])(q)

    def last_pose(q):
        rot, pos = sr.forward_kinematics(robot, q)
        return rot[-1], pos[-1]

    rot, _ = last_pose(q)
    d_rot, j_pos = jax.jacfwd(last_pose)(q)
    # angular-velocity Jacobian: skew(J_ω q̇) = Ṙ Rᵀ
    w = jnp.einsum("abk,cb->ack", d_rot, rot)
    j_rot = jnp.stack([w[2, 1], w[0, 2], w[1, 0]])
    return j_soft, j_rigid, j_pos, j_rot, rot


def test_external_loads_are_jacobian_transpose_forces(small):
    robot, (q, qd, qdd) = small
    rng = np.random.default_rng(11)
    length = float(robot.links[0].body.kinematics.length)
    x_soft = np.array([0.02, -0.01, 0.7 * length])
    x_rigid = rng.normal(size=3) * 0.1
    f_soft, f_rigid, f_wrench, m_wrench = rng.normal(size=(4, 3))
    j_soft, j_rigid, j_pos, j_rot, rot = (
        np.asarray(x) for x in _load_jacobians(robot, q, jnp.asarray(x_soft), jnp.asarray(x_rigid))
    )
    loads = [
        sr.PointLoad(0, x_soft, f_soft),
        sr.PointLoad(1, x_rigid, f_rigid, frame="distal"),
        sr.Wrench(1, f_wrench, m_wrench),
    ]
    nu_loaded = sr.inverse_dynamics(robot, q, qd, qdd, loads=loads)
    nu = sr.inverse_dynamics(robot, q, qd, qdd)
    # MID gives the same ν and the mass matrix; forward dynamics inverts it under the same loads
    nu_mid, mass = sr.mass_inverse_dynamics(robot, q, qd, qdd, loads=loads)
    assert _rel_err(nu_mid, nu_loaded) < RTOL
    assert _rel_err(mass, sr.mass_matrix(robot, q)) < RTOL
    assert _rel_err(sr.forward_dynamics(robot, q, qd, nu_loaded, loads=loads), qdd) < 1e-12
    # the distal-frame force of the rigid point load, in the world frame
    f_rigid_world = rot @ f_rigid
    generalized = j_soft.T @ f_soft + j_rigid.T @ f_rigid_world
    generalized += j_pos.T @ f_wrench + j_rot.T @ m_wrench
    assert _rel_err(nu - nu_loaded, generalized) < RTOL


def test_jit_and_vmap_match_single_calls(small):
    robot, _ = small
    batch = [robots.random_state(robot, 20 + k) for k in range(4)]
    q, qd, qdd = (jnp.stack(x) for x in zip(*batch))
    singles = np.stack([sr.inverse_dynamics(robot, *state) for state in batch])
    batched = jax.jit(jax.vmap(sr.inverse_dynamics, in_axes=(None, 0, 0, 0)))(robot, q, qd, qdd)
    assert _rel_err(batched, singles) < 1e-14


def test_vmap_of_small_batches_compiles():
    """A jitted `vmap` over 2 and 4 states of two equal soft bodies on fixed joints: XLA:CPU (jaxlib
    0.10) gave the batched 3×3 `dot` of the link poses a transposed output layout that its code
    emitter rejects, aborting the process; the poses are now elementwise products."""
    volume = sr.quadrature.cylinder(0.01, 0.1, n_axial=2, n_radial=1, n_angular=3)
    body = sr.SoftBody(sr.kinematics.PlanarConstantCurvature(0.1), volume, 1000.0)
    robot = sr.Robot([sr.Link(sr.joints.Fixed(), body)] * 2, gravity=(0.0, 0.0, -9.81))
    rng = np.random.default_rng(3)
    q = jnp.asarray(0.2 * rng.uniform(-1.0, 1.0, (4, robot.n_q)))

    gravity_force = jax.jit(jax.vmap(lambda q: sr.gravity_force(robot, q)))
    gravity, gravity2 = gravity_force(q), gravity_force(q[:2])
    assert np.all(np.isfinite(gravity))
    assert _rel_err(gravity2, gravity[:2]) < 1e-14


def _with_leaf(robot, name, value):
    """`robot` with the leaf whose path ends in `name` replaced by `value`."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(robot)
    names = [jax.tree_util.keystr(path) for path, _ in leaves]
    hits = [k for k, n in enumerate(names) if n.endswith(name)]
    if len(hits) != 1:
        raise ValueError(f"{name!r} matches {len(hits)} leaves of {names}")
    values = [leaf for _, leaf in leaves]
    values[hits[0]] = value
    return jax.tree_util.tree_unflatten(treedef, values)


PARAMETERS = (".links[1].body.mass", ".links[0].body.kinematics.length")


def test_grad_wrt_state_and_physical_parameters(small):
    """Reverse-mode gradients of `wᵀ ID` with respect to `q`, a rigid mass and a planar CC
    length, against central differences (relative step 1e-5: truncation ~1e-10, rounding
    ~1e-11; tolerance 1e-8)."""
    robot, (q, qd, qdd) = small
    weights = jnp.asarray(np.random.default_rng(5).normal(size=robot.n_q))

    def objective(params, q):
        robot_p = robot
        for name, value in zip(PARAMETERS, params):
            robot_p = _with_leaf(robot_p, name, value)
        return weights @ sr.inverse_dynamics(robot_p, q, qd, qdd)

    p0 = jnp.array([float(robot.links[1].body.mass), float(robot.links[0].body.kinematics.length)])
    grad_p, grad_q = jax.jit(jax.grad(objective, argnums=(0, 1)))(p0, q)
    h = 1e-5
    for k, e in enumerate(jnp.eye(robot.n_q)):
        fd = (objective(p0, q + h * e) - objective(p0, q - h * e)) / (2 * h)
        assert abs(float(grad_q[k]) - float(fd)) < 1e-8 * max(1.0, abs(float(fd)))
    for k in range(2):
        e = jnp.zeros(2).at[k].set(h * p0[k])
        fd = (objective(p0 + e, q) - objective(p0 - e, q)) / (2 * h * p0[k])
        assert abs(float(grad_p[k]) - float(fd)) < 1e-8 * max(1.0, abs(float(fd)))
        assert abs(float(fd)) > 1e-3
