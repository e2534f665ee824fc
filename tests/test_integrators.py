"""The integration schemes: convergence orders, stiffness, energy, gradients, batching, the
controller interface, the public vector field and the errors (tiny robots, short horizons)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import softrigid as sr
from softrigid import joints
from softrigid._controller import Controller
from softrigid._integrators import GeneralizedAlpha, ImplicitEuler, Radau, vector_field
from softrigid._module import module

Q0 = jnp.array([1.0, 0.5])
Z = jnp.zeros(2)


@pytest.fixture(scope="module")
def double():
    # two 1 kg links, centres 0.5 m below their joints, revolute about y, gravity −z
    def link():
        return sr.Link(
            joints.Revolute((0, 1, 0)), sr.RigidBody(1.0, (0, 0, -0.5), 1e-3 * jnp.eye(3))
        )

    return sr.Robot([link(), link()], gravity=(0, 0, -9.81))


@pytest.fixture(scope="module")
def stiff():
    # a damped stiff soft segment (E = 100 MPa, η = 0.05 s) behind a revolute joint
    rod = sr.materials.CosseratRod(1e8, 4e7, eta=0.05)
    body = sr.SoftBody(
        sr.kinematics.PlanarConstantCurvature(0.2),
        sr.quadrature.cylinder(0.02, 0.2, 2, 1, 3),
        1000.0,
        material=rod,
    )
    return sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), body)], gravity=(0, 0, -9.81))


@module
class PD(Controller):
    """Gravity-compensated PD law reading the stage's terms: `u = bias − kp q − kd q̇`."""

    kp: jax.Array
    kd: jax.Array

    def __call__(self, t, q, qd, terms):
        return terms.bias - self.kp * q - self.kd * qd


def _reference(robot, q0, qd0, t_final):
    f = jax.jit(vector_field(robot))
    n = robot.n_q

    def rhs(t, y):
        return np.concatenate([np.asarray(v) for v in f(t, (y[:n], y[n:]))])

    y0 = np.concatenate([q0, qd0])
    return solve_ivp(rhs, (0, t_final), y0, method="DOP853", rtol=1e-12, atol=1e-12).y[:, -1]


def _energy(robot, traj):
    e = jax.vmap(lambda q, qd: sr.kinetic_energy(robot, q, qd) + sr.potential_energy(robot, q))
    return np.asarray(e(traj.q, traj.qd))


def test_orders_and_energy(double):
    # generalized-α (ρ∞ = 1: trapezoidal) is 2nd order and conserves T + V; backward Euler is
    # 1st order and dissipates
    ref = _reference(double, Q0, Z, 0.2)
    errors = {}
    for name, scheme in (("ga", GeneralizedAlpha(rho_inf=1.0)), ("ie", ImplicitEuler())):
        errs = []
        for dt in (0.02, 0.01):
            traj = sr.simulate(double, Q0, Z, 0.2, dt, method=scheme)
            errs.append(np.max(np.abs(np.concatenate([traj.q[-1], traj.qd[-1]]) - ref)))
            energy = _energy(double, traj)
            drift = np.max(np.abs(energy - energy[0])) / abs(energy[0])
            if name == "ga" and dt == 0.01:
                assert drift < 1e-4, drift
            elif name == "ie":
                assert energy[-1] < energy[0] - 1e-3 * abs(energy[0])
        errors[name] = errs[0] / errs[1]
    assert 3.6 < errors["ga"] < 4.4, errors
    assert 1.7 < errors["ie"] < 2.3, errors


def test_stiff_segment(stiff):
    q0, qd0 = jnp.array([0.3, 0.0]), jnp.zeros(2)
    assert stiff.n_q == 2
    ref = sr.simulate(stiff, q0, qd0, 0.2, 0.01, method=Radau(rtol=1e-10, atol=1e-12))
    scale = np.max(np.abs(ref.q))
    for scheme, tol in ((GeneralizedAlpha(rho_inf=0.5), 2e-3), (ImplicitEuler(), 0.1)):
        traj = sr.simulate(stiff, q0, qd0, 0.2, 0.01, method=scheme)
        assert np.max(np.abs(traj.q - ref.q)) / scale < tol
    with pytest.raises(ValueError, match="became non-finite"):
        sr.simulate(stiff, q0, qd0, 0.2, 0.01, method="rk4")
    with pytest.raises(ValueError, match=r"did not converge in the step from t = 0 s"):
        sr.simulate(stiff, q0, qd0, 0.02, 0.01, method=ImplicitEuler(max_iter=1))
    with pytest.raises(TypeError, match="'radau' .* not jittable"):
        jax.jit(lambda q: sr.simulate(stiff, q, qd0, 0.02, 0.01, method="radau").q)(q0)


@pytest.mark.parametrize(
    "method", ["rk4", "semi_implicit_euler", "implicit_euler", "generalized_alpha"]
)
def test_grad_through_simulate(double, method):
    def final(q0):
        traj = sr.simulate(double, q0, Z, 0.03, 0.01, method=method)
        return traj.q[-1, 1] + 0.1 * traj.qd[-1, 0]

    grad = jax.grad(final)(Q0)
    e = jnp.array([1.0, 0.0])
    fd = (final(Q0 + 1e-6 * e) - final(Q0 - 1e-6 * e)) / 2e-6
    np.testing.assert_allclose(grad[0], fd, rtol=1e-6)


def test_vmap_controller_gains_and_recorded_inputs(double):
    # a Controller pytree: traced gains under vmap, u recorded, zero-order hold
    q_batch = jnp.stack([Q0, 0.5 * Q0])
    run = jax.vmap(
        lambda q0, kp: sr.simulate(
            double, q0, Z, 0.04, 0.01, controller=PD(kp, 2.0), method="generalized_alpha"
        )
    )
    traj = run(q_batch, jnp.array([10.0, 20.0]))
    assert traj.u.shape == (2, 5, 2)
    one = sr.simulate(
        double, q_batch[1], Z, 0.04, 0.01, controller=PD(20.0, 2.0), method="generalized_alpha"
    )
    np.testing.assert_allclose(traj.q[1], one.q, atol=1e-10)
    bias = jax.vmap(lambda q, qd: sr.dynamics_terms(double, q, qd).bias)(one.q, one.qd)
    np.testing.assert_allclose(one.u, bias - 20.0 * one.q - 2.0 * one.qd, atol=1e-9)
    held = sr.simulate(double, Q0, Z, 0.04, 0.01, controller=PD(10.0, 2.0), control_period=0.02)
    np.testing.assert_array_equal(held.u[0], held.u[1])
    np.testing.assert_array_equal(held.u[2], held.u[3])
    assert not np.allclose(held.u[1], held.u[2])


def test_vector_field_with_diffrax(double):
    diffrax = pytest.importorskip("diffrax")
    f = vector_field(double)
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(lambda t, y, args: f(t, y)),
        diffrax.Tsit5(),
        0.0,
        0.2,
        0.01,
        (Q0, Z),
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-10),
    )
    ref = _reference(double, Q0, Z, 0.2)
    np.testing.assert_allclose(sol.ys[0][-1], ref[:2], atol=1e-8)


def test_integrator_errors(double):
    with pytest.raises(ValueError, match="method must be one of"):
        sr.simulate(double, Q0, Z, 0.02, 0.01, method="bdf")
    with pytest.raises(ValueError, match="rho_inf must be in"):
        GeneralizedAlpha(rho_inf=1.5)
    with pytest.raises(ValueError, match=r"must return the robot's inputs, shape \(2,\)"):
        sr.simulate(double, Q0, Z, 0.02, 0.01, controller=lambda t, q, qd: jnp.zeros(3))
    with pytest.raises(ValueError, match="control_period must be a multiple of dt"):
        sr.simulate(double, Q0, Z, 0.02, 0.01, control_period=0.015)
    with pytest.raises(ValueError, match="qd0 contains non-finite"):
        sr.simulate(double, Q0, jnp.array([0.0, jnp.nan]), 0.02, 0.01, method="implicit_euler")
