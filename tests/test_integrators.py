"""The integration schemes: convergence orders (rigid double pendulum, soft arm), stiffness,
energy conservation and monotone decay, gradients, batching, the controller interface, the public
vector field and the errors (tiny robots, short horizons).

A compiled run is keyed by the robot's structure, the step count and the scheme's static options
(`max_iter`, `newton`, `rho_inf`; its `tol` and `theta_max` are traced): the tests use equal step
counts and compare runs of different steps `h` at a time they both reach, so each scheme compiles
once per robot structure."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
from compile_log import compilations
from scipy.integrate import solve_ivp

import softrigid as sr
import softrigid._adaptive_programs
import softrigid._radau
from softrigid import joints
from softrigid._closed_loop import make_dynamics
from softrigid._controller import Controller
from softrigid._integrators import State
from softrigid._module import module
from softrigid._newton import IterationMatrix
from softrigid._simulate import _rechart
from softrigid.actuators import JointMotor
from softrigid.integrators import BDF, RK4, GeneralizedAlpha, ImplicitEuler, Radau, vector_field

Q0 = jnp.array([1.0, 0.5])
Z = jnp.zeros(2)

TRAPEZOIDAL = GeneralizedAlpha(rho_inf=1.0)  # energy-conserving for linear systems
ALPHA = GeneralizedAlpha(rho_inf=0.5)
BACKWARD = ImplicitEuler()
CLASSICAL = RK4()

# The double pendulum's long runs: `LONG_STEPS` steps of `H` (10 s) and of `2 H` (20 s).
H, LONG_STEPS = 0.004, 2500
# The soft arm's runs: `SHORT_STEPS` steps of 10 and 5 ms, compared at `T_COMMON`.
SHORT_STEPS, T_COMMON = 20, 0.1


def _pendulum(n_links=1, damping=0.0):
    # 1 kg links, centres 0.5 m below their joints, revolute about y (optional joint dampers),
    # gravity −z
    def link():
        return sr.Link(
            joints.Revolute((0, 1, 0), damping=damping),
            sr.RigidBody(1.0, (0, 0, -0.5), 1e-3 * jnp.eye(3)),
        )

    return sr.Robot([link() for _ in range(n_links)], gravity=(0, 0, -9.81))


def _double_pendulum(damping=0.0):
    return _pendulum(2, damping)


def _soft_arm(young, eta):
    # a revolute joint carrying a damped planar constant-curvature segment (rod law)
    rod = sr.materials.CosseratRod(young, 0.4 * young, eta=eta)
    body = sr.SoftBody(
        sr.kinematics.PlanarConstantCurvature(0.2),
        sr.quadrature.cylinder(0.02, 0.2, 2, 1, 3),
        1000.0,
        material=rod,
    )
    return sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), body)], gravity=(0, 0, -9.81))


@pytest.fixture(scope="module")
def double():
    return _double_pendulum()


@pytest.fixture(scope="module")
def stiff():
    # a damped stiff soft segment (E = 100 MPa, η = 0.05 s) behind a revolute joint
    return _soft_arm(1e8, 0.05)


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


@jax.jit
def _energies(robot, q, qd):
    """`T + V` along a trajectory `(S + 1,)` (the robot traced: one program per structure)."""
    return jax.vmap(lambda q, qd: sr.kinetic_energy(robot, q, qd) + sr.potential_energy(robot, q))(
        q, qd
    )


def _state(traj, k):
    return np.concatenate([traj.q[k], traj.qd[k]])


@pytest.fixture(scope="module")
def pendulum_runs(double):
    """`LONG_STEPS` steps of `H` and `2 H` with the trapezoidal rule and backward Euler, and of
    `H` with the trapezoidal rule on the same pendulum with joint dampers (0.05 N m s/rad)."""
    runs = {
        (name, h): sr.simulate(double, Q0, Z, LONG_STEPS * h, h, method=scheme)
        for name, scheme in (("ga", TRAPEZOIDAL), ("ie", BACKWARD))
        for h in (2 * H, H)
    }
    runs["damped"] = sr.simulate(
        _double_pendulum(0.05), Q0, Z, LONG_STEPS * H, H, method=TRAPEZOIDAL
    )
    return runs


def test_orders_on_the_double_pendulum(double, pendulum_runs):
    # at t = 0.2 s: generalized-α 2nd order, backward Euler 1st order (and dissipative)
    t = 0.2
    ref = _reference(double, Q0, Z, t)
    ratios = {}
    for name in ("ga", "ie"):
        coarse, fine = (pendulum_runs[name, h] for h in (2 * H, H))
        errors = [
            np.max(np.abs(_state(r, round(t / h)) - ref)) for r, h in ((coarse, 2 * H), (fine, H))
        ]
        ratios[name] = errors[0] / errors[1]
    assert 3.8 < ratios["ga"] < 4.2, ratios
    assert 1.8 < ratios["ie"] < 2.2, ratios
    energy = np.asarray(_energies(double, pendulum_runs["ie", H].q, pendulum_runs["ie", H].qd))
    assert energy[-1] < energy[0] - 1e-2 * abs(energy[0])


def test_trapezoidal_rule_conserves_energy_over_10_s(double, pendulum_runs):
    # ρ∞ = 1 on the conservative (chaotic) double pendulum: |T + V − E₀| ≤ 1e-4 |E₀| for 10 s
    traj = pendulum_runs["ga", H]
    assert float(traj.t[-1]) == pytest.approx(10.0)
    energy = np.asarray(_energies(double, traj.q, traj.qd))
    drift = np.max(np.abs(energy - energy[0])) / abs(energy[0])
    assert drift < 1e-4, drift
    assert np.ptp(np.asarray(traj.q[:, 1])) > 2.0  # it moved: the second link swings widely


def test_energy_decays_monotonically_with_damping(double, pendulum_runs):
    # joint dampers: T + V strictly decreases at every step of the same scheme, to well below
    # the conservative run's energy
    traj = pendulum_runs["damped"]
    energy = np.asarray(_energies(double, traj.q, traj.qd))
    assert np.all(np.diff(energy) < 0.0), np.max(np.diff(energy))
    assert energy[-1] < energy[0] - 0.5 * abs(energy[0])


@pytest.mark.slow
def test_orders_on_a_soft_arm():
    # a joint and an elastic, damped segment (E = 1 MPa, η = 0.02 s) falling over from rest,
    # straight, 0.3 rad from upright: generalized-α (ρ∞ = 0.5) 2nd order, backward Euler 1st
    # order, against RK4 at 0.5 ms; each scheme's runs share one program (`SHORT_STEPS` steps,
    # the `stiff` structure, as in `test_stiff_segment`)
    arm = _soft_arm(1e6, 0.02)
    q0, qd0 = jnp.array([0.3, 0.0]), jnp.zeros(2)
    q, qd = q0, qd0
    for _ in range(10):  # RK4 reference: 10 runs of 20 steps of 0.5 ms, each from the last state
        ref = sr.simulate(arm, q, qd, T_COMMON / 10, T_COMMON / 200, method=CLASSICAL)
        q, qd = ref.q[-1], ref.qd[-1]
    ref = np.concatenate([q, qd])
    for scheme, order, rtol in ((ALPHA, 4.0, 0.1), (BACKWARD, 2.0, 0.15)):
        errors = []
        for h in (0.01, 0.005):
            traj = sr.simulate(arm, q0, qd0, SHORT_STEPS * h, h, method=scheme)
            errors.append(np.max(np.abs(_state(traj, round(T_COMMON / h)) - ref)))
        assert errors[0] / errors[1] == pytest.approx(order, rel=rtol), (scheme.name, errors)
    assert abs(float(q[1])) > 5e-3  # the swing bent the segment


@pytest.mark.slow
def test_stiff_segment(stiff):
    q0, qd0 = jnp.array([0.3, 0.0]), jnp.zeros(2)
    assert stiff.n_q == 2
    ref = sr.simulate(stiff, q0, qd0, 0.2, 0.01, method=Radau(rtol=1e-10, atol=1e-12))
    scale = np.max(np.abs(ref.q))
    for scheme, tol in ((ALPHA, 2e-3), (BACKWARD, 0.1)):
        traj = sr.simulate(stiff, q0, qd0, SHORT_STEPS * 0.01, 0.01, method=scheme)
        assert np.max(np.abs(traj.q - ref.q)) / scale < tol
    with pytest.raises(ValueError, match="became non-finite"):
        sr.simulate(stiff, q0, qd0, SHORT_STEPS * 0.01, 0.01, method=CLASSICAL)
    with pytest.raises(ValueError, match=r"did not converge in the step from t = 0 s"):
        sr.simulate(stiff, q0, qd0, 0.02, 0.01, method=ImplicitEuler(max_iter=1))
    with pytest.raises(TypeError, match="'radau' .* not jittable"):
        jax.jit(lambda q: sr.simulate(stiff, q, qd0, 0.02, 0.01, method="radau").q)(q0)


def test_newton_restarts_from_zero_when_the_last_acceleration_is_far_off():
    """A lightly damped stiff segment released from a strained state: `h² q̈₀` puts the
    predictor's first trial 18 rad and 48 1/m away, where the step equation is far from
    linear; the iteration restarts from `q̈₁ = 0` after half of `max_iter` and reaches the
    backward-Euler root (checked by the public inverse dynamics; the default 20 iterations
    from `q̈₀` alone did not converge)."""
    arm = _soft_arm(1e8, 0.002)
    q0, qd0, h = jnp.array([0.8, 0.3]), jnp.zeros(2), 0.01
    assert np.max(np.abs(h * h * sr.forward_dynamics(arm, q0, qd0, jnp.zeros(2)))) > 40
    step = sr.simulate(arm, q0, qd0, h, h, method=BACKWARD)
    # q̇₁ = q̇₀ + h x, q₁ = q₀ + h q̇₁: ν(q₁, q̇₁, x) = 0 (no input)
    qd1 = step.qd[1]
    x = (qd1 - qd0) / h
    np.testing.assert_allclose(step.q[1], q0 + h * qd1, rtol=1e-12)
    residual = sr.inverse_dynamics(arm, step.q[1], qd1, x)
    scale = np.max(np.abs(sr.mass_matrix(arm, step.q[1]) @ x))
    assert np.max(np.abs(residual)) < 1e-8 * scale


def test_newton_does_not_restart_an_iteration_that_converges(double):
    # the restart after half of max_iter discarded a converging iterate: full Newton on the
    # double pendulum at 10 ms passed with max_iter = 3, failed with 4 (at t = 0.07 s)
    scheme = ImplicitEuler(max_iter=4, newton="full")
    traj = sr.simulate(double, jnp.array([1.0, 0.5]), Z, 0.1, 0.01, method=scheme)
    assert np.all(np.isfinite(np.asarray(traj.q)))


@pytest.mark.parametrize(
    "method",
    [
        "rk4",
        pytest.param("semi_implicit_euler", marks=pytest.mark.slow),
        pytest.param("implicit_euler", marks=pytest.mark.slow),
        pytest.param("generalized_alpha", marks=pytest.mark.slow),
    ],
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
        lambda q0, kp: sr.simulate(double, q0, Z, 0.04, 0.01, controller=PD(kp, 2.0), method="rk4")
    )
    traj = run(q_batch, jnp.array([10.0, 20.0]))
    assert traj.u.shape == (2, 5, 2)
    one = sr.simulate(double, q_batch[1], Z, 0.04, 0.01, controller=PD(20.0, 2.0), method="rk4")
    np.testing.assert_allclose(traj.q[1], one.q, atol=1e-10)
    bias = jax.vmap(lambda q, qd: sr.dynamics_terms(double, q, qd).bias)(one.q, one.qd)
    np.testing.assert_allclose(one.u, bias - 20.0 * one.q - 2.0 * one.qd, atol=1e-9)
    held = sr.simulate(double, Q0, Z, 0.04, 0.01, controller=PD(10.0, 2.0), control_period=0.02)
    np.testing.assert_array_equal(held.u[0], held.u[1])
    np.testing.assert_array_equal(held.u[2], held.u[3])
    assert not np.allclose(held.u[1], held.u[2])


def test_adaptive_methods_record_the_inputs_at_the_grid_states(double):
    # u on the grid from the callback's own program, the grid's two halves from two threads:
    # every row is the law at its own state, in order (an odd number of states)
    traj = sr.simulate(double, Q0, Z, 0.06, 0.01, controller=PD(20.0, 2.0), method="radau")
    assert traj.u.shape == (7, 2)
    bias = jax.vmap(lambda q, qd: sr.dynamics_terms(double, q, qd).bias)(traj.q, traj.qd)
    np.testing.assert_allclose(traj.u, bias - 20.0 * traj.q - 2.0 * traj.qd, atol=1e-9)
    assert not np.allclose(traj.u[0], traj.u[-1])


def test_vector_field_with_diffrax(double):
    import diffrax  # the test extra

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


def _newton_run(robot, scheme, steps, h):
    """`steps` steps of `scheme` from `(Q0, 0)`: the final state and the number of iteration
    matrices evaluated (the schemes' own loop, without the simulate driver)."""
    dyn = make_dynamics(robot, (), None)

    @jax.jit
    def run(q0):
        state = scheme.init(dyn, jnp.zeros(()), q0, jnp.zeros_like(q0))

        def body(state, k):
            state, ok, _ = scheme.step(dyn, k * h, state, jnp.asarray(h))
            return state, ok

        state, ok = jax.lax.scan(body, state, jnp.arange(steps))
        return state, ok

    state, ok = run(Q0)
    assert bool(jnp.all(ok))
    return np.concatenate([state.q, state.qd]), float(state.matrix.evaluations)


def test_modified_newton_keeps_the_matrix(double):
    # the same steps with the iteration matrix kept while it converges (default) and evaluated
    # at every iterate: the same states (both converged to tol = 1e-10), far fewer matrices
    # (measured: 1 against 231 over these 100 steps; the schemes share the Newton solver)
    steps, h = 100, 0.01
    kept, n_kept = _newton_run(double, GeneralizedAlpha(), steps, h)
    full, n_full = _newton_run(double, GeneralizedAlpha(newton="full"), steps, h)
    np.testing.assert_allclose(kept, full, atol=1e-8)
    assert n_full >= 2 * steps  # Newton: at least one step and one test per time step
    assert n_kept <= 0.5 * steps
    assert n_kept >= 1


def test_a_batch_keeps_the_matrix_too(double):
    # under vmap the kept-or-new branch was a select that evaluated the matrix at every
    # iteration (the batched run paid full Newton's price); it now branches on the batch's
    # flag: the matrices evaluated are those the members need, and each member's states are
    # its own run's
    calls = []

    class Counted(type(make_dynamics(double, (), None))):
        def linearized(self, *args, **kwargs):
            jax.debug.callback(lambda: calls.append(1))
            return super().linearized(*args, **kwargs)

    dyn = Counted(*make_dynamics(double, (), None))
    scheme, steps, h = GeneralizedAlpha(), 50, 0.01

    @jax.jit
    def run(q0):
        state = scheme.init(dyn, jnp.zeros(()), q0, jnp.zeros_like(q0))

        def body(state, k):
            return scheme.step(dyn, k * h, state, jnp.asarray(h))[0], None

        state = jax.lax.scan(body, state, jnp.arange(steps))[0]
        return state.q, state.matrix.evaluations

    starts = jnp.stack([Q0, 0.9 * Q0, 1.1 * Q0])
    alone = [run(q) for q in starts]
    each = [float(n) for _, n in alone]
    calls.clear()
    q, evaluations = jax.block_until_ready(jax.vmap(run)(starts))
    np.testing.assert_allclose(q, np.stack([x for x, _ in alone]), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(evaluations, each)
    assert 1 <= len(calls) <= sum(each)  # one per batched evaluation (before: 136, every iteration)


def test_iteration_matrix_carries_the_controller_feedback(double):
    # a stiff PD law u = K_P (0 − q) − K_D q̇: with its feedback A ∂u/∂(q, q̇) left out of the
    # matrix, Newton did not converge within 20 iterations at 10 ms (measured, both variants);
    # with it the step converges and agrees with RK4 at 1 ms to the scheme's accuracy
    pd = sr.control.PD(100.0, 10.0, jnp.zeros(2))
    traj = sr.simulate(double, Q0, Z, 0.05, 0.01, controller=pd, method=ALPHA)
    fine = sr.simulate(double, Q0, Z, 0.05, 0.001, controller=pd, method=CLASSICAL)
    np.testing.assert_allclose(traj.q[-1], fine.q[-1], atol=5e-3)
    # the recorded inputs are the law at every recorded state (the steps' own evaluations)
    for run in (traj, fine):
        np.testing.assert_allclose(run.u, -100.0 * run.q - 10.0 * run.qd, rtol=1e-13, atol=1e-13)


def test_radau_with_finite_difference_jacobian(double, monkeypatch):
    # scipy's forward differences of ẏ drive Radau's Newton iteration instead of the exact
    # Jacobian (never evaluated): the same solution, to the tolerances (the Jacobian does not
    # set the accuracy), against DOP853 at 1e-12
    exact = sr.simulate(double, Q0, Z, 0.3, 0.1, method=Radau(rtol=1e-10, atol=1e-12))

    def refuse(*args):
        raise AssertionError("the exact Jacobian was evaluated")

    monkeypatch.setattr(softrigid._radau, "linearized_jacobian", refuse)
    fd = sr.simulate(
        double,
        Q0,
        Z,
        0.3,
        0.1,
        method=Radau(rtol=1e-10, atol=1e-12, jacobian="finite_differences"),
    )
    ref = _reference(double, Q0, Z, 0.3)
    np.testing.assert_allclose(_state(fd, 3), ref, atol=1e-7)
    np.testing.assert_allclose(_state(exact, 3), ref, atol=1e-7)
    with pytest.raises(ValueError, match="jacobian must be one of .*'central_differences'"):
        Radau(jacobian="numerical")


def test_central_differences_are_second_order_accurate():
    # a cubic and an exponential against their exact Jacobians: the cubic's third derivative
    # makes the error h² f‴/6 (h = ∛ε ≈ 6e-6: ~1e-11), well below forward differences'
    # O(√ε) ≈ 1e-8; large entries (y_j = 300) get a step relative to them
    def f(t, y):
        return np.array([y[0] ** 3 + t * y[1], np.exp(0.5 * y[1]) * y[2], y[0] * y[2]])

    y = np.array([0.3, -1.2, 300.0])
    exact = np.array(
        [
            [3 * y[0] ** 2, 2.0, 0.0],
            [0.0, 0.5 * np.exp(0.5 * y[1]) * y[2], np.exp(0.5 * y[1])],
            [y[2], 0.0, y[0]],
        ]
    )
    jac = softrigid._adaptive_programs.central_differences(f, 2.0, y)
    np.testing.assert_allclose(jac, exact, rtol=1e-9, atol=1e-10)
    assert abs(jac[0, 0] - exact[0, 0]) < 1e-10


def test_iteration_jacobian_takes_the_laws_response_to_the_bias(double):
    # a PD with gravity compensation reads the bias but not M or A: the iteration Jacobian
    # (M and A held, the bias's derivatives through the law) is the closed loop's own, which
    # holding the bias too is not (it keeps the gravity stiffness the law cancels)
    law = PD(jnp.array([30.0, 20.0]), jnp.array([3.0, 2.0]))
    state = (double, (), law, None, "cholesky", jnp.asarray(0.1))
    y = jnp.array([0.7, -0.4, 1.3, -0.8])
    iteration = softrigid._adaptive_programs.linearized_jacobian(*state, y)
    exact = softrigid._adaptive_programs.closed_loop_jacobian(*state, y)
    np.testing.assert_allclose(iteration, exact, rtol=1e-10, atol=1e-10)
    dyn = make_dynamics(double, (), law)
    q, qd = y[:2], y[2:]
    tm = sr.dynamics_terms(double, q, qd)
    d_bias = jax.jacfwd(lambda x: sr.dynamics_terms(double, x, qd).bias)(q)
    held = dyn.feedback(0.1, q, qd, tm)[1]
    live = dyn.feedback(0.1, q, qd, tm, (d_bias, jnp.zeros((2, 2))))[1]
    np.testing.assert_allclose(live - held, d_bias, rtol=1e-12, atol=1e-12)  # A = I
    assert np.abs(d_bias).max() > 1.0  # the gravity stiffness a held bias leaves in


def test_bdf_jacobians(double, capsys):
    # scipy's BDF with the held-terms Jacobian, the closed loop's forward-mode one and
    # differences: each reaches DOP853's solution at 1e-12 to its tolerance, the run reports
    # progress, and it is host-only
    ref = _reference(double, Q0, Z, 0.3)
    for jacobian in ("exact", "autodiff", "finite_differences", "central_differences"):
        traj = sr.simulate(
            double, Q0, Z, 0.3, 0.1, method=BDF(rtol=1e-9, atol=1e-11, jacobian=jacobian)
        )
        np.testing.assert_allclose(_state(traj, 3), ref, atol=1e-6)
        np.testing.assert_allclose(traj.q[0], Q0, rtol=0, atol=0)
    by_name = sr.simulate(double, Q0, Z, 0.3, 0.1, method="bdf", progress=True)
    np.testing.assert_allclose(_state(by_name, 3), ref, atol=1e-6)
    # without a controller the recorded inputs are zero (taken as such, not evaluated)
    np.testing.assert_array_equal(by_name.u, np.zeros((4, double.n_u)))
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("simulate: t = ")]
    assert 2 <= len(lines) <= 12 and lines[-1].startswith("simulate: t = 0.3 / 0.3 s")
    assert "Jacobians" in lines[-1]
    with pytest.raises(TypeError, match="'bdf' .* not jittable"):
        jax.jit(lambda q: sr.simulate(double, q, Z, 0.2, 0.1, method="bdf").q)(Q0)
    with pytest.raises(ValueError, match="control_period is not supported by method 'bdf'"):
        sr.simulate(double, Q0, Z, 0.2, 0.1, method="bdf", control_period=0.1)
    with pytest.raises(ValueError, match="BDF: jacobian must be"):
        BDF(jacobian="broyden")
    # scipy's own errors pointed elsewhere ("a non-finite iteration matrix", a complex compare)
    with pytest.raises(ValueError, match=r"Radau: rtol must be a finite positive number, got -1"):
        Radau(rtol=-1.0)
    with pytest.raises(ValueError, match="BDF: atol must be a finite positive number, got nan"):
        BDF(atol=float("nan"))
    # atol = 0 gave scipy a vanishing error scale at a start at rest ("a non-finite iteration
    # matrix ... check the model"); rtol below 100 ε an infinite Newton tolerance
    with pytest.raises(ValueError, match="Radau: atol must be a finite positive number, got 0"):
        Radau(rtol=1e-6, atol=0.0)
    with pytest.raises(ValueError, match=r"BDF: rtol must be at least 2.22e-14, got 1e-20"):
        BDF(rtol=1e-20)
    with pytest.raises(TypeError, match="Radau: rtol must be a real number, got array"):
        Radau(rtol=np.array(1e-6))
    # an integer past float's range raised NumPy's "ufunc 'isfinite' not supported"
    with pytest.raises(ValueError, match="BDF: atol must be a finite positive number, got 1000"):
        BDF(atol=10**400)
    # a Controller that is not a pytree failed in JAX ("Error interpreting argument to
    # <function _run> as an abstract array"); vector_field, which closes over it, runs it

    class Plain(Controller):
        def __call__(self, t, q, qd, terms):
            return jnp.zeros(2)

    for method in ("rk4", "radau"):
        with pytest.raises(TypeError, match="controller: Plain is a Controller but not a pytree"):
            sr.simulate(double, Q0, Z, 0.02, 0.01, Plain(), method)
    assert np.all(np.isfinite(sr.vector_field(double, Plain())(0.0, (Q0, Z))[1]))
    # the exported base class ran as a method and failed in scipy ("module 'scipy.integrate'
    # has no attribute ''")
    with pytest.raises(TypeError, match=r"Adaptive is the base .*use integrators.Radau"):
        sr.integrators.Adaptive(rtol=1e-4)
    assert Radau(rtol=np.float32(1e-6)).rtol == float(
        np.float32(1e-6)
    )  # a NumPy scalar is a number


def test_the_jacobian_compiled_ahead_is_the_one_the_steps_call():
    # the adaptive methods trace and lower the Jacobian's program first and compile it in a
    # second thread while the first steps trace and compile the right-hand side's
    # (`_radau._compile_ahead`); the steps then call that very program: one trace, one
    # lowering, one compilation (a robot of a structure of its own, compiled nowhere else in
    # this module)
    events = []

    def listen(name, duration, **kw):
        if "linearized_jacobian" in kw.get("fun_name", ""):
            events.append(name.rsplit("/", 1)[-1])

    body = sr.RigidBody(0.7, (0.0, 0.1, -0.1), 2e-3 * jnp.eye(3))
    robot = sr.Robot(
        [
            sr.Link(joints.Prismatic((0, 0, 1)), body),
            sr.Link(joints.Revolute((1, 0, 0)), body),
            sr.Link(joints.Revolute((0, 1, 0)), body),
        ],
        gravity=(0.0, 0.0, -9.81),
    )
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        traj = sr.simulate(
            robot, jnp.array([0.0, 0.3, -0.2]), jnp.zeros(3), 0.05, 0.05, method=BDF()
        )
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert np.isfinite(np.asarray(traj.q)).all()
    assert sorted(events) == [
        "backend_compile_duration",
        "jaxpr_to_mlir_module_duration",
        "jaxpr_trace_duration",
    ]


def test_adaptive_methods_restart_at_the_controllers_switch_times(double, monkeypatch):
    # a torque switched on at t = 0.13 s (between grid points): the laws report their jumps in
    # time (a composite law gathers those of the laws it holds), and BDF and Radau restart
    # there, matching DOP853 run piecewise at 1e-12 to their tolerance
    switch, torque = 0.13, jnp.array([2.0, -1.0])
    law = sr.control.Phases([switch], [sr.control.Feedforward(Z), sr.control.Feedforward(torque)])
    held = PD(jnp.ones(2), jnp.ones(2))
    assert law.switch_times() == (switch,) and held.switch_times() == ()
    cubic = sr.control.ComputedTorque(1.0, 1.0, sr.control.CubicRestToRest(Z, Q0, 0.05, 0.2))
    nested = sr.control.Phases([0.1], [cubic, law])
    assert nested.switch_times() == (0.05, 0.1, switch, 0.2)

    f = jax.jit(vector_field(double, law))
    y = np.concatenate([Q0, Z])
    for a, b in ((0.0, switch), (switch, 0.3)):

        def rhs(t, x):
            return np.concatenate([np.asarray(v) for v in f(t, (x[:2], x[2:]))])

        y = solve_ivp(rhs, (a, b), y, method="DOP853", rtol=1e-12, atol=1e-12).y[:, -1]
    spans = []
    for name in ("BDF", "Radau"):
        scipy_class = getattr(scipy.integrate, name)

        class Recording(scipy_class):
            def __init__(self, fun, t0, y0, t_bound, **options):
                spans.append((t0, t_bound))
                super().__init__(fun, t0, y0, t_bound, **options)

        monkeypatch.setattr(scipy.integrate, name, Recording)
    # ẏ is never evaluated at the switch itself: each span sees its own law up to its ends
    rhs, times = softrigid._radau.radau_rhs, []

    def recording_rhs(*args):
        times.append(float(args[-2]))
        return rhs(*args)

    monkeypatch.setattr(softrigid._radau, "radau_rhs", recording_rhs)
    for method in (BDF(rtol=1e-10, atol=1e-12), Radau(rtol=1e-10, atol=1e-12)):
        spans.clear()
        times.clear()
        traj = sr.simulate(double, Q0, Z, 0.3, 0.1, law, method=method)
        assert spans == [(0.0, switch), (0.0, pytest.approx(0.3 - switch))], spans  # own time
        assert switch not in times and min(abs(np.asarray(times) - switch)) < 1e-15
        np.testing.assert_allclose(_state(traj, 3), y, atol=1e-7)
        np.testing.assert_allclose(traj.u, [Z, Z, torque, torque])  # t = 0, 0.1 | 0.2, 0.3


def test_adaptive_methods_with_spans_between_grid_times(double):
    # a pulse on [0.11, 0.12): the span between its switches holds no output time (numpy's
    # "need at least one array to concatenate" before), and a law of the user's that lists
    # its switches unsorted, with a duplicate (a backward span before): the same run
    pulse = jnp.array([5.0, -5.0])
    laws = sr.control.Feedforward(Z), sr.control.Feedforward(pulse), sr.control.Feedforward(Z)
    law = sr.control.Phases([0.11, 0.12], laws)

    @module
    class Unsorted(type(law)):
        def switch_times(self):
            return (0.12, 0.11, 0.12)

    unsorted = Unsorted([0.11, 0.12], laws)
    f = jax.jit(vector_field(double, law))
    y = np.concatenate([Q0, Z])
    for a, b in ((0.0, 0.11), (0.11, 0.12), (0.12, 0.3)):

        def rhs(t, x):
            return np.concatenate([np.asarray(v) for v in f(t, (x[:2], x[2:]))])

        y = solve_ivp(rhs, (a, b), y, method="DOP853", rtol=1e-12, atol=1e-12).y[:, -1]
    for method in (BDF(rtol=1e-10, atol=1e-12), Radau(rtol=1e-10, atol=1e-12)):
        for controller in (law, unsorted):
            traj = sr.simulate(double, Q0, Z, 0.3, 0.1, controller, method=method)
            np.testing.assert_allclose(_state(traj, 3), y, atol=1e-7)


def test_an_unstable_closed_loop_is_stopped_and_named(double):
    # u = 1e4 q: the state grows exponentially. Radau's error control followed it with ever
    # shorter steps (35,285 steps to t = 0.08 s in 104 s); it stops at a millionfold growth.
    # A fixed-step implicit scheme's blow-up does not advise an implicit method
    def law(t, q, qd):
        return 1e4 * q

    q0 = jnp.array([1.0, 0.5])
    with pytest.raises(ValueError, match="'radau': the state grew more than a millionfold by t"):
        sr.simulate(double, q0, Z, 0.1, 0.01, law, method="radau")
    with pytest.raises(ValueError, match=r"became non-finite .*; reduce dt, or check the model"):
        sr.simulate(double, q0, Z, 2.0, 0.01, law, method="implicit_euler")


def test_adaptive_methods_resolve_a_stiff_layer_after_a_late_jump():
    # a 1 kg slider on a 1e12 N s/m damper, pushed by 1e10 N from t = 5 s: the velocity
    # relaxes to F/c in 1e-12 s. Each span runs in its own time τ = t − 5: in t, BDF's first
    # step (1.2e-17 s) lies below scipy's floor of ten roundings of t = 5 s and it failed
    c, force, switch = 1e12, 1e10, 5.0
    body = sr.RigidBody(1.0, (0.0, 0.0, 0.0), 1e-3 * np.eye(3))
    slider = sr.Robot([sr.Link(joints.Prismatic((1.0, 0.0, 0.0), damping=c), body)])
    push = sr.control.Feedforward(jnp.array([force]))
    law = sr.control.Phases([switch], [sr.control.Feedforward(jnp.zeros(1)), push])
    for method in (BDF(rtol=1e-8, atol=1e-10), Radau(rtol=1e-8, atol=1e-10)):
        traj = sr.simulate(slider, jnp.ones(1), jnp.zeros(1), 5.1, 0.05, law, method=method)
        s = np.clip(np.asarray(traj.t) - switch, 0.0, None)
        v = force / c * -np.expm1(-c * s)
        x = 1.0 + force / c * s + force / c**2 * np.expm1(-c * s)
        np.testing.assert_allclose(traj.qd[:, 0], v, rtol=0, atol=1e-12)
        np.testing.assert_allclose(traj.q[:, 0], x, rtol=0, atol=1e-12)


def test_adaptive_callbacks_have_no_host_callback_and_still_raise(double):
    # the programs scipy calls hold their run-time checks as fault calls, not host callbacks
    # (JAX's persistent compilation cache stores them); a check that fires raises its own error
    # (here the law's singular actuation matrix)
    law = sr.control.ComputedTorque((1.0, 1.0), (1.0, 1.0), sr.control.CubicRestToRest(Z, Z, 0, 1))
    args = (double, (), law, None, "cholesky", jnp.asarray(0.1), jnp.concatenate([Q0, Z]))
    for fn in (
        softrigid._radau.radau_rhs,
        softrigid._radau.closed_loop_jacobian,
        softrigid._radau.linearized_jacobian,
    ):
        if jax.default_backend() == "cpu":  # other platforms fail through equinox's callback
            text = fn.lower(*args).as_text()
            assert softrigid._fault.TARGET in text and "callback" not in text
    motors = sr.Robot(double.links, double.gravity, [JointMotor(0), JointMotor(0)])
    for method in (Radau(), BDF(jacobian="autodiff")):
        with pytest.raises(ValueError, match="ComputedTorque: the actuation matrix A is singular"):
            sr.simulate(motors, Q0, Z, 0.1, 0.05, law, method=method)


def test_newton_options_are_checked():
    with pytest.raises(ValueError, match="newton must be 'modified' or 'full'"):
        GeneralizedAlpha(newton="quasi")
    with pytest.raises(ValueError, match=r"theta_max must be in \(0, 1\)"):
        ImplicitEuler(theta_max=1.0)
    with pytest.raises(ValueError, match="max_iter must be a positive integer"):
        ImplicitEuler(max_iter=0)
    # past int32 JAX raised an OverflowError naming an argument path ("y")
    with pytest.raises(ValueError, match=r"max_iter must be a positive integer below 2\*\*31"):
        GeneralizedAlpha(max_iter=10**20)
    with pytest.raises(ValueError, match="tol must be a finite positive number"):
        GeneralizedAlpha(tol=-1.0)
    # an infinite tolerance stopped Newton after one iterate; booleans were read as 0/1
    for options in ({"tol": float("inf")}, {"tol": True}, {"max_iter": True}):
        with pytest.raises(ValueError, match="must be a"):
            ImplicitEuler(**options)
    with pytest.raises(ValueError, match=r"rho_inf must be in \[0, 1\], got True"):
        GeneralizedAlpha(rho_inf=True)
    # NumPy scalars are numbers (np.float32(0.5) was "rho_inf must be in [0, 1]"), kept as
    # Python numbers (static options)
    scheme = GeneralizedAlpha(rho_inf=np.float32(0.5), tol=np.float32(1e-8), max_iter=np.int64(9))
    assert (scheme.rho_inf, scheme.max_iter) == (0.5, 9) and type(scheme.tol) is float


def test_newton_options_are_arguments_of_the_compiled_run(double):
    # `tol` and `theta_max` are traced: a new instance with other values reuses the program
    # (until session 79 every new scheme instance compiled again), and the values still act
    steps, h = 20, 0.02

    def run(scheme):
        return np.asarray(sr.simulate(double, Q0, Z, steps * h, h, method=scheme).q)

    loose = run(ImplicitEuler(tol=1e-2, theta_max=0.9))
    with compilations() as compiled:
        tight = run(ImplicitEuler(tol=1e-13, theta_max=0.1))
    assert not compiled, compiled
    exact = run(ImplicitEuler(tol=1e-13, newton="full"))  # another static option: compiles
    assert np.max(np.abs(tight - exact)) < 1e-11 < 1e-8 < np.max(np.abs(loose - exact))


def test_a_chart_change_drops_the_kept_matrix():
    # a Spherical joint's rotation vector beyond π is re-charted after the step: the matrix
    # kept from it is written in the old chart and must be evaluated anew
    ball = sr.Robot(
        [sr.Link(joints.Spherical(), sr.RigidBody(1.0, (0, 0, -0.5), 1e-2 * jnp.eye(3)))],
        gravity=(0, 0, -9.81),
    )
    kept = IterationMatrix(jnp.eye(3), jnp.ones(()), jnp.ones(()))
    z = jnp.zeros(3)
    inside = _rechart(ball, State(jnp.array([0.5, 0.0, 0.0]), z, z, z, kept), True)
    beyond = _rechart(ball, State(jnp.array([3.5, 0.0, 0.0]), z, z, z, kept), True)
    assert float(inside.matrix.valid) == 1.0
    assert float(beyond.matrix.valid) == 0.0
    np.testing.assert_allclose(beyond.q, [3.5 - 2 * np.pi, 0.0, 0.0], atol=1e-15)


def test_integrator_errors(double):
    with pytest.raises(ValueError, match="method must be one of"):
        sr.simulate(double, Q0, Z, 0.02, 0.01, method="lsoda")
    with pytest.raises(ValueError, match="rho_inf must be in"):
        GeneralizedAlpha(rho_inf=1.5)
    with pytest.raises(ValueError, match=r"must return the robot's inputs, shape \(2,\)"):
        sr.simulate(double, Q0, Z, 0.02, 0.01, controller=lambda t, q, qd: jnp.zeros(3))
    with pytest.raises(ValueError, match=r"control_period = 1e\+300 is 1e\+302 steps"):
        sr.simulate(double, Q0, Z, 0.02, 0.01, control_period=1e300)
    with pytest.raises(ValueError, match="control_period must be a multiple of dt"):
        sr.simulate(double, Q0, Z, 0.02, 0.01, control_period=0.015)
    with pytest.raises(ValueError, match="qd0 contains non-finite"):
        sr.simulate(double, Q0, jnp.array([0.0, jnp.nan]), 0.02, 0.01, method="implicit_euler")


@pytest.mark.parametrize("method", [BDF(), Radau()])
def test_scipy_methods_name_a_non_finite_start(method):
    # a point mass on its joint's axis: M = 0, q̈ undetermined (NaN). scipy's steppers stopped
    # on their own check of their arrays ("array must not contain infs or NaNs"); the start
    # state's ẏ is checked first and the coordinate named
    bar = sr.RigidBody(1.0, (0.0, 0.0, 0.0), np.zeros((3, 3)))
    robot = sr.Robot([sr.Link(joints.Revolute((0.0, 1.0, 0.0)), bar)], gravity=(0, 0, -9.81))
    message = r"q̈ is not finite at t = 0 s at coordinate 0 \(link 0, joint coordinate 0"
    with pytest.raises(ValueError, match=message):
        sr.simulate(robot, jnp.zeros(1), jnp.zeros(1), 0.1, 0.01, method=method)


def _point_mass_on_axis() -> sr.Robot:
    """A point mass on its revolute joint's axis: `M = 0`, `q̈` undetermined (NaN) everywhere."""
    bar = sr.RigidBody(1.0, (0.0, 0.0, 0.0), np.zeros((3, 3)))
    return sr.Robot([sr.Link(joints.Revolute((0.0, 1.0, 0.0)), bar)], gravity=(0, 0, -9.81))


@pytest.mark.parametrize("method", ["rk4", "semi_implicit_euler", "implicit_euler", ALPHA])
def test_fixed_step_methods_name_a_closed_loop_undefined_at_the_failed_step(method):
    # the run fails at its first step whatever dt: an eager run evaluates the closed loop at
    # the failed step's start and names the coordinate, where it asked for a smaller dt
    message = (
        r"q̈ is not finite at t = 0 s at coordinate 0 \(link 0, joint coordinate 0 \(Revolute\)\)"
        r", the start of step 1 \(where the run failed; no smaller dt helps\)"
    )
    with pytest.raises(ValueError, match=message):
        sr.simulate(_point_mass_on_axis(), jnp.zeros(1), jnp.zeros(1), 0.05, 0.01, method=method)


def test_a_switch_on_the_time_grid_is_not_a_first_order_step(double):
    # Phases switching at t = 0.5 = 50 dt: the step ending there evaluated its last stage (RK4)
    # or its equation (implicit Euler) with the next phase's law, an O(h · jump) error (0.37
    # at the switch for RK4); a step's end is now its left limit, so each step sees one law
    pd1 = sr.control.PD(20.0, 2.0, jnp.array([0.5, 0.0]))
    pd2 = sr.control.PD(40.0, 4.0, jnp.array([-0.5, 0.2]))
    q0 = jnp.array([0.2, -0.1])
    f1, f2 = (jax.jit(vector_field(double, controller=pd)) for pd in (pd1, pd2))

    def rhs(f):
        return lambda t, y: np.concatenate([np.asarray(v) for v in f(t, (y[:2], y[2:]))])

    first = solve_ivp(rhs(f1), (0.0, 0.5), [0.2, -0.1, 0.0, 0.0], rtol=1e-12, atol=1e-12)
    at_switch = first.y[:, -1]
    second = solve_ivp(rhs(f2), (0.5, 0.6), at_switch, rtol=1e-12, atol=1e-12)
    phases = sr.control.Phases([0.5], [pd1, pd2])
    # (the step's own error after the switch: RK4 1.8e-4 at 0.6 s, the new gains stiffer)
    for method, dt, tol, after in (("rk4", 0.01, 1e-6, 1e-3), ("implicit_euler", 0.005, 0.05, 0.2)):
        run = sr.simulate(double, q0, jnp.zeros(2), 0.6, dt, phases, method)
        state = np.concatenate([run.q, run.qd], 1)
        assert np.abs(state[round(0.5 / dt)] - at_switch).max() < tol, method
        assert np.abs(state[-1] - second.y[:, -1]).max() < after, method


# generalized-α's restart at a switch on the grid is also checked in the fast set by
# test_generalized_alpha_restarts_at_each_sample_of_a_zero_order_hold; the pieces inside a step
# are the same for both schemes (`softrigid._switches`)
@pytest.mark.parametrize(
    "method, order, bound",
    [("rk4", 4, 1e-4), pytest.param("generalized_alpha", 2, 1e-2, marks=pytest.mark.slow)],
)
def test_switches_keep_the_fixed_step_schemes_order(method, order, bound):
    # a switch inside a step (0.5037 s) was an O(h · jump) step for every scheme (RK4 on a
    # double pendulum: 0.081, 0.019, 0.031 at 10, 5, 2.5 ms), and generalized-α stepped on from
    # the earlier law's accelerations at any switch (on the grid: 0.21, 0.10, 0.05): now the
    # step is taken in pieces between the switches and generalized-α restarts at each
    # (`softrigid._switches`); a pendulum under three PD phases, switches at 0.3 s (on the
    # grid) and 0.5037 s (inside a step)
    robot = _pendulum()
    laws = [
        sr.control.PD(k, 0.1 * k, jnp.array([t])) for k, t in ((20, 0.5), (40, -0.5), (30, 0.2))
    ]
    times = (0.0, 0.3, 0.5037, 0.6)
    y = np.array([0.2, 0.0])
    for law, (start, end) in zip(laws, itertools.pairwise(times)):
        f = jax.jit(vector_field(robot, controller=law))

        def rhs(t, x, f=f):
            return np.concatenate([np.asarray(v) for v in f(t, (x[:1], x[1:]))])

        y = solve_ivp(rhs, (start, end), y, "DOP853", rtol=1e-12, atol=1e-12).y[:, -1]
    phases = sr.control.Phases(times[1:3], laws)
    errors = []
    for dt in (0.01, 0.005):
        run = sr.simulate(robot, jnp.array([0.2]), jnp.zeros(1), 0.6, dt, phases, method)
        errors.append(np.abs(np.concatenate([run.q[-1], run.qd[-1]]) - y).max())
    assert errors[0] < bound, (method, errors)
    assert np.log2(errors[0] / errors[1]) > order - 0.5, (method, errors)


def test_generalized_alpha_restarts_at_each_sample_of_a_zero_order_hold():
    # every sample of a zero-order hold jumps u; generalized-α stepped on from the earlier
    # sample's accelerations and was first order (a double pendulum, P = 20 ms, a Phases
    # switch at 0.3 s: 0.28, 0.11 at 10, 5 ms; 7.4e-3, 3.7e-3 without the switch); the oracle
    # holds u over each sample exactly (`solve_ivp` at 1e-12 from sample to sample)
    robot = _double_pendulum()
    laws = [
        sr.control.PD(20.0, 2.0, jnp.array([0.5, 0.0])),
        sr.control.PD(40.0, 4.0, jnp.array([-0.5, 0.2])),
    ]
    phases = sr.control.Phases([0.3], laws)
    period, t_final = 0.02, 0.4
    held = jax.jit(
        lambda t, q, qd, u: vector_field(robot, controller=sr.control.Feedforward(u))(t, (q, qd))
    )
    y = np.array([0.2, -0.1, 0.0, 0.0])
    for k in range(round(t_final / period)):
        q, qd = jnp.asarray(y[:2]), jnp.asarray(y[2:])
        u = phases(jnp.asarray(k * period), q, qd, sr.dynamics_terms(robot, q, qd))

        def rhs(t, x, u=u):
            return np.concatenate([np.asarray(v) for v in held(t, x[:2], x[2:], u)])

        y = solve_ivp(rhs, (k * period, (k + 1) * period), y, "DOP853", rtol=1e-12, atol=1e-12)
        y = y.y[:, -1]
    errors = []
    for dt in (0.01, 0.005):
        run = sr.simulate(
            robot,
            jnp.array([0.2, -0.1]),
            Z,
            t_final,
            dt,
            phases,
            "generalized_alpha",
            control_period=period,
        )
        errors.append(np.abs(np.concatenate([run.q[-1], run.qd[-1]]) - y).max())
    assert errors[0] < 3e-3, errors
    assert np.log2(errors[0] / errors[1]) > 1.5, errors


def test_a_references_end_keeps_the_fixed_step_order(double):
    # computed torque cancels the dynamics: e = r − q obeys ë + 20 ė + 100 e = 0, so for a C¹
    # reference at rest at t = 0, q = r − e₀ (1 + 10 t) e^{−10 t} exactly. r̈ jumps at the
    # references' ends, where they gave the left limit: the RK4 step from t₁ integrated the
    # earlier r̈ (a double pendulum, end at 0.2 s on the grid: 4.6e-3 and 2.3e-3 at 10 and
    # 5 ms for the cubic, 1.0e-2 and 5.1e-3 for the spline; first order). An end a rounding
    # above its grid time (0.01 + 0.05 = 0.060000000000000005 > 6 · 0.01) counted as on the
    # grid, and the step from 0.06 ran its first stage with the earlier r̈: 5.4e-2, 2.7e-2
    q0 = jnp.array([0.3, -0.2])
    references = (
        sr.control.CubicRestToRest([0.0, 0.0], [0.5, 0.2], 0.0, 0.2),
        sr.control.Spline([0.0, 0.1, 0.2], [[0.0, 0.0], [0.5, 0.2], [0.3, 0.1]]),
        sr.control.CubicRestToRest([0.0, 0.0], [0.5, 0.2], 0.01, 0.01 + 0.05),
    )
    for reference in references:
        law = sr.control.ComputedTorque(100.0, 20.0, reference)
        e0 = np.asarray(reference(0.0)[0] - q0)
        errors = []
        for dt in (0.01, 0.005):
            run = sr.simulate(double, q0, Z, 0.3, dt, law, "rk4")
            t = np.asarray(run.t)
            exact = np.asarray(jax.vmap(reference)(run.t)[0]) - np.outer(
                (1 + 10 * t) * np.exp(-10 * t), e0
            )
            errors.append(np.abs(np.asarray(run.q) - exact).max())
        assert errors[0] < 1e-4, (reference, errors)
        assert np.log2(errors[0] / errors[1]) > 3.5, (reference, errors)


def test_progress_reports_a_step_in_pieces_once(capsys):
    # a step split at a switch (0.0537 s inside the step from 0.05 s) reported its time once per
    # piece: "t = 0.05" twice
    robot = _pendulum()
    laws = [sr.control.PD(5.0, 1.0, jnp.array([target])) for target in (0.0, 1.0)]
    phases = sr.control.Phases([0.0537], laws)
    sr.simulate(robot, jnp.array([0.3]), jnp.zeros(1), 0.1, 0.01, phases, progress=True)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("simulate")]
    times = [line.split(" / ")[0] for line in lines]
    assert len(times) == len(set(times)) == 11, lines


def test_switch_times_traced_by_the_users_jit_or_vmap():
    # a Phases' (or a reference's) times traced as arguments of the user's jit or vmap made
    # simulate read them as concrete (TracerArrayConversionError): such times plan no pieces;
    # switches on the time grid need none, so the runs equal the eager ones
    robot = _pendulum()
    laws = [sr.control.PD(5.0, 1.0, jnp.array([target])) for target in (0.0, 1.0)]
    q0, z = jnp.array([0.3]), jnp.zeros(1)

    def end(times):
        phases = sr.control.Phases(times, laws)
        return sr.simulate(robot, q0, z, 0.1, 0.01, controller=phases).q[-1]

    eager = [end(jnp.array([t])) for t in (0.05, 0.07)]
    jitted = jax.jit(lambda c: sr.simulate(robot, q0, z, 0.1, 0.01, controller=c).q[-1])
    np.testing.assert_allclose(jitted(sr.control.Phases([0.05], laws)), eager[0], rtol=1e-12)
    np.testing.assert_allclose(jax.vmap(end)(jnp.array([[0.05], [0.07]])), eager, rtol=1e-12)


def test_a_controller_undefined_where_a_step_heads_is_named():
    # √q on a pendulum swinging through q = 0: defined at every step's start, NaN at the
    # stages of the step that crosses; every method blamed the step ("reduce dt", "raise
    # max_iter", "the step size became too small") at every dt
    bob = sr.RigidBody(1.0, (0.0, 0.0, -0.5), 1e-6 * jnp.eye(3))
    robot = sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), bob)], gravity=(0, 0, -9.81))

    def law(t, q, qd):
        return 0.1 * jnp.sqrt(q)

    z = jnp.zeros(1)
    fixed = r"inputs u are not finite at t = 0\.365 s \(input 0\), the state step 37 heads for"
    for method in ("rk4", "implicit_euler"):
        with pytest.raises(ValueError, match=fixed):
            sr.simulate(robot, z + 0.3, z, 0.5, 0.01, law, method)
    with pytest.raises(ValueError, match=r"method 'radau': .* the state the failed step .* heads"):
        sr.simulate(robot, z + 0.3, z, 0.5, 0.01, law, "radau")


def test_fixed_step_run_names_a_controller_undefined_at_the_failed_step(double):
    # the controller's inputs become NaN at t = 0.02 s: the semi-implicit Euler step from there
    # (evaluated at its start only) is the first non-finite one, and the input is named (one
    # that fails inside a step is named at the stage time: tests/test_errors_model.py)
    def law(t, q, qd):
        return jnp.where(t > 0.015, jnp.nan, 0.0) * jnp.ones(2)

    message = r"inputs u are not finite at t = 0.02 s \(input 0\), the start of step 3"
    with pytest.raises(ValueError, match=message):
        sr.simulate(double, Q0, Z, 0.05, 0.01, law, "semi_implicit_euler")
    # the scipy methods evaluate the closed loop at the failed step's last accepted state and
    # its times (they blamed the step size, or scipy's "array must not contain infs or NaNs")
    for method in ("radau", "bdf"):
        with pytest.raises(ValueError, match=rf"method '{method}': the closed loop's q̈ is not"):
            sr.simulate(double, Q0, Z, 0.05, 0.01, law, method)


# the choice is made in the shared `_newton.newton`: generalized-α in the slow set
@pytest.mark.parametrize(
    "scheme", [ImplicitEuler, pytest.param(GeneralizedAlpha, marks=pytest.mark.slow)]
)
def test_eager_implicit_runs_leave_out_the_implicit_differentiation(
    double, scheme, custom_root_calls
):
    # `custom_root` traces the linearized residual and its tangent solve for every step's
    # trace, differentiated or not (the swinging arm's generalized-α run: 127 of its first
    # call's seconds were tracing); an eager run, which nothing can differentiate, solves its
    # steps without it, to the same trajectory; under a transformation it stays (the gradients
    # of `test_grad_through_simulate`)
    roots = custom_root_calls
    method = scheme()  # a new instance: a program of its own, traced here
    eager = sr.simulate(double, Q0, Z, 0.05, 0.01, method=method)
    assert not roots
    traced = jax.jit(lambda q0: sr.simulate(double, q0, Z, 0.05, 0.01, method=method))(Q0)
    assert roots
    np.testing.assert_allclose(eager.q, traced.q, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(eager.qd, traced.qd, rtol=1e-12, atol=1e-12)
