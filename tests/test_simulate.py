"""The fixed-step integrators: convergence order and energy behaviour on a pendulum."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import softrigid as sr
from softrigid import joints


@pytest.fixture(scope="module")
def pendulum():
    # point-like bob (tiny inertia) of 1 kg at 0.5 m on a revolute joint about y, gravity −z
    bob = sr.RigidBody(1.0, (0.0, 0.0, -0.5), 1e-6 * jnp.eye(3))
    return sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), bob)], gravity=(0, 0, -9.81))


def _reference(theta0, t_final):
    inertia = 0.25 + 1e-6

    def f(t, y):
        return [y[1], -9.81 * 0.5 * np.sin(y[0]) / inertia]

    sol = solve_ivp(f, (0, t_final), [theta0, 0.0], rtol=1e-12, atol=1e-12)
    return sol.y[0, -1]


def test_rk4_is_fourth_order_and_euler_first(pendulum):
    exact = _reference(1.0, 0.5)
    q0, qd0 = jnp.array([1.0]), jnp.array([0.0])
    errors = {}
    for method in ("rk4", "semi_implicit_euler"):
        errs = []
        for dt in (0.02, 0.01):
            traj = sr.simulate(pendulum, q0, qd0, 0.5, dt, method=method)
            errs.append(abs(float(traj.q[-1, 0]) - exact))
        errors[method] = errs[0] / errs[1]
    assert 14.0 < errors["rk4"] < 18.0
    assert 1.6 < errors["semi_implicit_euler"] < 2.4


def test_semi_implicit_euler_keeps_the_energy_bounded_where_m_is_constant(pendulum):
    # symplectic where M is constant (one revolute joint): over 40 periods the energy error
    # oscillates, it does not grow (its docstring: with M(q) the velocity form drifts)
    traj = sr.simulate(
        pendulum, jnp.array([1.0]), jnp.zeros(1), 60.0, 0.01, method="semi_implicit_euler"
    )
    energy = jax.vmap(
        lambda q, qd: sr.kinetic_energy(pendulum, q, qd) + sr.potential_energy(pendulum, q)
    )
    error = np.abs(np.asarray(energy(traj.q, traj.qd)) - float(energy(traj.q[:1], traj.qd[:1])[0]))
    first, last = error[: error.size // 6].max(), error[-error.size // 6 :].max()
    assert 1e-3 < first < 0.1 and last < 1.2 * first


def test_trajectory_layout_and_control(pendulum):
    # A constant torque equal to the static gravity load at 0.3 rad holds the pendulum there.
    q_hold = jnp.array([0.3])
    tau = sr.gravity_force(pendulum, q_hold)
    traj = sr.simulate(pendulum, q_hold, jnp.zeros(1), 0.2, 0.01, controller=lambda t, q, qd: tau)
    assert traj.t.shape == (21,) and traj.q.shape == (21, 1) and traj.qd.shape == (21, 1)
    np.testing.assert_allclose(traj.t[-1], 0.2, rtol=1e-12)
    np.testing.assert_allclose(traj.q[:, 0], 0.3, atol=1e-12)
    # the inputs are recorded with the states
    np.testing.assert_allclose(traj.u, jnp.broadcast_to(tau, (21, 1)), rtol=1e-12)


def test_initial_states_as_python_lists(pendulum):
    # (JAX's jnp.ndim of a list warned "will be an error" from inside simulate)
    n = pendulum.n_q
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        traj = sr.simulate(pendulum, [0.3] * n, [0.0] * n, 0.02, 0.01)
    ref = sr.simulate(pendulum, jnp.full(n, 0.3), jnp.zeros(n), 0.02, 0.01)
    np.testing.assert_array_equal(traj.q, ref.q)


def test_progress_report(pendulum, capsys):
    z = jnp.zeros(1)
    sr.simulate(pendulum, z, z, 0.2, 0.01, progress=True)
    out = capsys.readouterr().out
    assert "t = 0.2 / 0.2 s" in out and "real-time factor" in out


def test_progress_is_a_boolean_and_float32_times_count_their_steps(pendulum):
    z = jnp.zeros(1)
    with pytest.raises(TypeError, match="simulate: progress must be True or False, got 'no'"):
        sr.simulate(pendulum, z, z, 0.2, 0.01, progress="no")
    # 0.3 / 0.1 in float32 is 3.00000007: three steps, not four
    traj = sr.simulate(pendulum, z, z, np.float32(0.3), np.float32(0.1))
    assert traj.t.shape == (4,)
    with pytest.raises(ValueError, match="asks for inf steps"):
        sr.simulate(pendulum, z, z, 1.0, 5e-324)


def test_a_controller_closing_over_a_tracer(pendulum):
    """grad and vmap around simulate, with a controller that closes over the traced gain: the
    eager path's failure report read the trajectory with NumPy (a TracerArrayConversionError)."""

    def final(k):
        law = lambda t, q, qd: -k * q  # noqa: E731
        return sr.simulate(pendulum, jnp.array([0.1]), jnp.zeros(1), 0.05, 0.01, law).q[-1, 0]

    eps = 1e-6
    np.testing.assert_allclose(
        jax.grad(final)(2.0), (final(2.0 + eps) - final(2.0 - eps)) / (2 * eps), rtol=1e-6
    )
    np.testing.assert_allclose(jax.vmap(final)(jnp.array([1.0, 2.0])), [final(1.0), final(2.0)])


def test_simulate_errors(pendulum):
    z = jnp.zeros(1)
    with pytest.raises(ValueError, match="method must be one of"):
        sr.simulate(pendulum, z, z, 1.0, 0.1, method="euler")
    with pytest.raises(ValueError, match="dt must be a finite positive number"):
        sr.simulate(pendulum, z, z, 1.0, 0.0)
    with pytest.raises(ValueError, match="q0 contains non-finite"):
        sr.simulate(pendulum, jnp.array([jnp.nan]), z, 1.0, 0.1)
    # a controller that fails inside a step is named at the step's stage time (RK4's midpoint)
    with pytest.raises(ValueError, match=r"inputs u are not finite at t = 0.025 s \(input 0\), wi"):
        sr.simulate(
            pendulum,
            z,
            z,
            0.05,
            0.01,
            controller=lambda t, q, qd: jnp.where(t > 0.02, jnp.inf, 0.0) * jnp.ones(1),
        )
    # an explicit method blowing up on a stiff loop is a divergence (it was "the model or the
    # controller is not defined there ... no smaller dt helps" at |q| ~ 1e120)
    with pytest.raises(ValueError, match=r"became non-finite at t = .* \(step \d+, from \|q\|"):
        sr.simulate(pendulum, z + 0.1, z, 1.0, 0.01, controller=lambda t, q, qd: -1e5 * q)
