"""The recursion against Euler–Lagrange on seeded random mixed chains (`validation.md` §2).

Two Lagrangian oracles: the package's baseline (`softrigid.lagrangian`, automatic
differentiation of `T − V`), and one written here from the public position-level functions only
(`world_points`): `M = Σ_k w_k J_kᵀ J_k` over the quadrature nodes of every soft body (plus
`m J_cᵀ J_c + Σ_ab S_ab J_aᵀ J_b` for a rigid body, `S = ½ tr(I) 1 − I` its second moments about
the centre of mass and `J_a` the Jacobian of its rotated axis `a`), and `g = −Σ_k w_k J_kᵀ
gravity`.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import robots

import softrigid as sr
from softrigid import joints, lagrangian
from softrigid._module import module, static

SEEDS = (0, 1, 2)
RTOL = 1e-12


def _rel_err(got, ref) -> float:
    got, ref = np.asarray(got), np.asarray(ref)
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


@jax.jit
def _independent_mass_and_gravity(robot, q):
    """`(M, g)` from the Jacobians of world positions of material points (see module doc)."""
    n = q.shape[0]
    mass = jnp.zeros((n, n))
    grav = jnp.zeros(n)
    for i, link in enumerate(robot.links):
        body = link.body
        if isinstance(body, sr.RigidBody):
            pts = body.com + jnp.concatenate([jnp.zeros((1, 3)), jnp.eye(3)])
            jac = jax.jacfwd(lambda q, pts=pts, i=i: sr.world_points(robot, q, i, pts))(q)
            j_c = jac[0]
            j_axes = jac[1:] - j_c
            second = 0.5 * jnp.trace(body.inertia) * jnp.eye(3) - body.inertia
            mass = mass + body.mass * j_c.T @ j_c
            mass = mass + jnp.einsum("ab,axi,bxj->ij", second, j_axes, j_axes)
            grav = grav - body.mass * j_c.T @ robot.gravity
        else:
            pts = body.volume.points
            w = body.mass_weights
            jac = jax.jacfwd(lambda q, pts=pts, i=i: sr.world_points(robot, q, i, pts))(q)
            mass = mass + jnp.einsum("k,kxi,kxj->ij", w, jac, jac)
            grav = grav - jnp.einsum("k,kxi,x->i", w, jac, robot.gravity)
    return mass, grav


_lagrangian_inverse_dynamics = jax.jit(sr.lagrangian.inverse_dynamics)
_kinetic_hessian = jax.jit(jax.hessian(sr.kinetic_energy, argnums=2))
_potential_gradient = jax.jit(jax.grad(sr.potential_energy, argnums=1))


@pytest.fixture(scope="module", params=SEEDS)
def case(request):
    robot = robots.mixed_robot(request.param)
    q, qd, qdd = robots.random_state(robot, 50 + request.param)
    return robot, q, qd, qdd


@pytest.fixture(scope="module")
def independent(case):
    robot, q, _, _ = case
    return _independent_mass_and_gravity(robot, q)


def test_inverse_dynamics_matches_lagrangian_baseline(case):
    robot, q, qd, qdd = case
    got = sr.inverse_dynamics(robot, q, qd, qdd)
    ref = _lagrangian_inverse_dynamics(robot, q, qd, qdd)
    assert _rel_err(got, ref) < RTOL


def test_miid_mass_matrix_is_kinetic_energy_hessian(case, independent):
    robot, q, qd, qdd = case
    _, mass = sr.mass_inertial_inverse_dynamics(robot, q, qd, qdd)
    assert _rel_err(mass, _kinetic_hessian(robot, q, qd)) < RTOL
    assert _rel_err(mass, independent[0]) < RTOL


def test_kinetic_energy_matches_independent_mass_matrix(case, independent):
    robot, q, qd, _ = case
    ref = 0.5 * qd @ independent[0] @ qd
    assert abs(float(sr.kinetic_energy(robot, q, qd)) - float(ref)) < RTOL * float(ref)


def test_gravity_is_potential_gradient(case, independent):
    robot, q, _, _ = case
    grav = sr.gravity_force(robot, q)
    assert _rel_err(grav, independent[1]) < RTOL
    # V = V_gravity + U_springs
    ref = _potential_gradient(robot, q)
    assert _rel_err(grav + sr.elastic_force(robot, q), ref) < RTOL


def test_joint_springs_and_dampers(case):
    robot, q, qd, _ = case
    stiffness, damping, rest = robots.joint_spring_parameters(robot)
    assert np.max(np.abs(np.asarray(sr.elastic_force(robot, q)) - stiffness * (q - rest))) < 1e-14
    assert np.max(np.abs(np.asarray(sr.damping_force(robot, q, qd)) - damping * qd)) < 1e-14


def test_inverse_dynamics_splits_into_inertial_gravity_and_internal(case):
    robot, q, qd, qdd = case
    nu = sr.inverse_dynamics(robot, q, qd, qdd)
    iid, _ = sr.mass_inertial_inverse_dynamics(robot, q, qd, qdd)
    rest = sr.gravity_force(robot, q) + sr.elastic_force(robot, q) + sr.damping_force(robot, q, qd)
    assert _rel_err(nu, iid + rest) < RTOL


def test_the_baseline_refuses_a_body_of_the_users():
    # its mass points need not carry its inertia (a rigid body's are its CoM alone): the
    # baseline read `body.kinematics` and failed with an AttributeError
    @module
    class Wrapped(sr.Body):
        inner: sr.RigidBody
        n_q: int = static(default=0)

        def distal_pose(self, q):
            return self.inner.distal_pose(q)

        def position_terms(self, q):
            return self.inner.position_terms(q)

        def velocity_terms(self, data, q, qd):
            return self.inner.velocity_terms(data, q, qd)

        def map_points(self, q, points):
            return self.inner.map_points(q, points)

        def mass_points(self, q):
            return self.inner.mass_points(q)

    body = Wrapped(sr.RigidBody(1.0, (0.0, 0.0, 0.15), 1e-3 * jnp.eye(3)))
    robot = sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), body)])
    with pytest.raises(TypeError, match="integrates RigidBody and SoftBody links; link 0 carries"):
        lagrangian.mass_matrix(robot, jnp.zeros(1))
