"""Controllers and references: closed-loop error dynamics against the linear ODE the laws
impose, zero steady-state error of the compensated PD, the power balance of a closed loop, the
references' derivatives, phase switching, traced gains (no recompilation, vmap) and bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import cumulative_simpson
from scipy.interpolate import CubicSpline
from scipy.linalg import expm

import softrigid as sr
from softrigid import control, joints, kinematics, materials, quadrature
from softrigid._closed_loop import make_dynamics
from softrigid._dynamics import DynamicsTerms, solve_accelerations, terms
from softrigid._reports import raise_runtime_errors
from softrigid.actuators import JointMotor, Tendon

LENGTH, OFFSET = 0.2, 0.01
RUNTIME_ERRORS = (jax.errors.JaxRuntimeError, ValueError)
GRAVITY = (0.0, 0.0, 9.81)  # along the segment at q = 0: the arm hangs


def arm(actuators):
    """A revolute joint (about y) carrying a planar constant-curvature soft segment: n_q = 2."""
    body = sr.SoftBody(
        kinematics.PlanarConstantCurvature(LENGTH),
        quadrature.cylinder(0.02, LENGTH, 2, 1, 3),
        1000.0,
        material=materials.CosseratRod(1e5, 4e4, eta=0.02),
    )
    return sr.Robot([sr.Link(joints.Revolute((0.0, 1.0, 0.0)), body)], GRAVITY, actuators)


@pytest.fixture(scope="module")
def robot():
    """A joint motor and a tendon (A = diag(1, −d)): fully actuated with both inputs,
    underactuated when a law drives the tendon only."""
    return arm([JointMotor(0), Tendon([0], (OFFSET, 0.0))])


STEPS = 400


@jax.jit
def _rollout(robot, controller, q0, qd0, dt):
    """Classical RK4 of the closed loop over `STEPS` steps, its four stages in a scan (one
    model in the compiled program), one `terms` per stage shared with the controller."""
    c, w = jnp.array([0.0, 0.5, 0.5, 1.0]), jnp.array([1.0, 2.0, 2.0, 1.0]) / 6

    def f(t, q, qd):
        tm = terms(robot, q, qd)
        return qd, solve_accelerations(robot, tm, controller(t, q, qd, tm), check=False)

    def step(x, t):
        def stage(carry, cw):
            k, total = carry
            k = f(t + cw[0] * dt, x[0] + cw[0] * dt * k[0], x[1] + cw[0] * dt * k[1])
            return (k, jax.tree_util.tree_map(lambda a, b: a + cw[1] * b, total, k)), None

        zero = jax.tree_util.tree_map(jnp.zeros_like, x)
        (_, total), _ = jax.lax.scan(stage, (zero, zero), jnp.stack([c, w], axis=1))
        new = (x[0] + dt * total[0], x[1] + dt * total[1])
        return new, new

    _, (q, qd) = jax.lax.scan(step, (q0, qd0), dt * jnp.arange(STEPS, dtype=q0.dtype))
    return jnp.concatenate([q0[None], q]), jnp.concatenate([qd0[None], qd])


def closed_loop(robot, law, laws, q0, qd0, dt):
    """Run `laws[law]` alone: the three laws sit in one `Phases` whose (traced) switching
    times select it for the whole run, so every run shares one compiled program."""
    big = 1e9
    times = [(big, 2 * big), (-big, big), (-2 * big, -big)][law]
    return _rollout(robot, control.Phases(times, laws), jnp.asarray(q0), jnp.asarray(qd0), dt)


def pfbl(robot, kp=1.0, kd=1.0, ref=(0.0, 0.0)):
    """PFBL on the tendon only (the joint motor off: underactuated), y = −l."""
    return control.CollocatedPFBL(
        robot, kp, kd, control.CubicRestToRest([ref[0]], [ref[1]], 0.0, 1.0), inputs=[1]
    )


def computed_torque(kp=(1.0, 1.0), kd=(1.0, 1.0), start=(0.0, 0.0), end=(0.0, 0.0)):
    return control.ComputedTorque(kp, kd, control.CubicRestToRest(start, end, 0.0, 1.0))


def compensated_pd(robot, kp=None, kd=None, target=(0.0, 0.0)):
    eye = np.eye(2)
    return control.CompensatedPD(
        robot, eye if kp is None else kp, eye if kd is None else kd, target
    )


def linear_error(kp, kd, e0, ed0, times):
    """Solution of `ë + K_D ė + K_P e = 0` (diagonal gains) on the uniform grid `times`,
    `(T, k)`: `x_{j+1} = exp(F h) x_j`, `F = [[0, 1], [−K_P, −K_D]]`."""
    out = []
    for p, d, x0, v0 in zip(kp, kd, e0, ed0):
        step = expm(np.array([[0.0, 1.0], [-p, -d]]) * (times[1] - times[0]))
        x = [np.array([x0, v0])]
        for _ in times[1:]:
            x.append(step @ x[-1])
        out.append(np.array(x)[:, 0])
    return np.array(out).T


DT = 2e-3
TIMES = DT * np.arange(STEPS + 1)


def test_pfbl_output_error_obeys_the_linear_ode(robot):
    # A = diag(1, −d) and l = L + d q₁ exactly (PlanarConstantCurvature), so the tendon's
    # actuation coordinate is y = −l = −L − d q₁ and ẏ = −d q̇₁
    q0, qd0 = jnp.array([0.3, 0.1]), jnp.array([0.5, -0.4])
    with_value = lambda r, q: (control.actuation_coordinates(r, q),) * 2  # noqa: E731
    jac, y = jax.jit(jax.jacfwd(with_value, 1, has_aux=True))(robot, q0)
    y0 = -LENGTH - OFFSET * 0.1
    np.testing.assert_allclose(y, [0.3, y0], rtol=1e-14)
    np.testing.assert_allclose(jac.T, np.diag([1.0, -OFFSET]), atol=1e-15)
    kp, kd = 100.0, 14.0
    law = pfbl(robot, kp, kd, (y0 + 0.002, y0 - 0.004))
    q, qd = closed_loop(robot, 0, (law, computed_torque(), compensated_pd(robot)), q0, qd0, DT)
    r, rd, _ = jax.vmap(law.reference)(jnp.asarray(TIMES))
    e = np.asarray(r[:, 0] + LENGTH + OFFSET * q[:, 1])
    ed = np.asarray(rd[:, 0] + OFFSET * qd[:, 1])
    exact = linear_error([kp], [kd], [e[0]], [ed[0]], TIMES)[:, 0]
    np.testing.assert_allclose(e, exact, atol=1e-9 * abs(e[0]))
    assert abs(e[-1]) < 0.02 * abs(e[0])  # it decayed
    assert abs(float(q[-1, 0] - q0[0])) > 1e-2  # and the passive joint moved


def test_computed_torque_error_obeys_the_linear_ode(robot):
    q0, qd0 = jnp.array([0.1, -0.2]), jnp.array([0.3, 0.0])
    kp, kd = np.array([100.0, 64.0]), np.array([20.0, 10.0])
    law = computed_torque(kp, kd, (0.0, 0.0), (0.6, 0.4))
    q, qd = closed_loop(robot, 1, (pfbl(robot), law, compensated_pd(robot)), q0, qd0, DT)
    r, rd, _ = jax.vmap(law.reference)(jnp.asarray(TIMES))
    e, ed = np.asarray(r - q), np.asarray(rd - qd)
    exact = linear_error(kp, kd, e[0], ed[0], TIMES)
    np.testing.assert_allclose(e, exact, atol=1e-8 * np.max(np.abs(e[0])))
    assert np.all(np.abs(e[-1]) < 0.05 * np.abs(e[0]))


# ≈ M(q_f) at q_f = (0.5, 0.8): badly conditioned (the joint and the bending both turn the tip)
M_F = np.array([[3.26e-3, -1.22e-3], [-1.22e-3, 4.82e-4]])


def test_compensated_pd_reaches_the_target_with_zero_error(robot):
    # mass-scaled gains K = k M(q_f): near q_f, ë + 40 ė + 400 e ≈ 0 plus the passive damping
    q_f = jnp.array([0.5, 0.8])
    law = compensated_pd(robot, 400.0 * M_F, 40.0 * M_F, q_f)
    laws = (pfbl(robot), computed_torque(), law)
    zero = jnp.zeros(2)
    q, qd = closed_loop(robot, 2, laws, zero, zero, 0.01)  # 4 s
    err, speed = float(jnp.max(jnp.abs(q[-1] - q_f))), float(jnp.max(jnp.abs(qd[-1])))
    assert err < 1e-8 and speed < 1e-8
    # at rest at q_f the law is the static holding input (A u = g + s(q_f, 0)): q̈ = 0, the
    # robot stays there
    q, qd = closed_loop(robot, 2, laws, q_f, zero, 0.01)
    drift = float(jnp.max(jnp.abs(q - q_f)))
    assert drift < 1e-12


@jax.jit
def _energy_and_power(robot, law, t, q, qd):
    """Along a trajectory `(S + 1,)` each: `T + V`, the input power `q̇ᵀ A(q) u` with
    `u = law(t, q, q̇, terms)`, and the dissipated power `2R(q, q̇)`."""

    def one(t, q, qd):
        tm = terms(robot, q, qd)
        energy = sr.kinetic_energy(robot, q, qd) + sr.potential_energy(robot, q)
        work_rate = qd @ (tm.actuation @ law(t, q, qd, tm))
        return energy, work_rate, 2.0 * sr.dissipation(robot, q, qd)

    return jax.vmap(one)(t, q, qd)


def test_power_balance_along_a_closed_loop(robot):
    # computed torque through the joint motor and the tendon (A = diag(1, −d)), Kelvin–Voigt
    # damping in the segment: d(T + V)/dt = q̇ᵀ A u − 2R, integrated along the closed-loop RK4
    # trajectory (2 ms; the rollout compiled for the laws above) by Simpson's rule, against the
    # change of T + V
    law = computed_torque((100.0, 64.0), (20.0, 10.0), (0.1, -0.2), (0.6, 0.4))
    laws = (pfbl(robot), law, compensated_pd(robot))
    q, qd = closed_loop(robot, 1, laws, jnp.array([0.1, -0.2]), jnp.array([0.3, 0.0]), DT)
    flows = _energy_and_power(robot, law, jnp.asarray(TIMES), q, qd)
    energy, work_rate, dissipated = (np.asarray(x) for x in flows)
    work = cumulative_simpson(work_rate, x=TIMES, initial=0.0)
    loss = cumulative_simpson(dissipated, x=TIMES, initial=0.0)
    balance = energy - energy[0] - (work - loss)
    scale = np.trapezoid(np.abs(work_rate) + dissipated, TIMES)  # the energy that flowed
    assert np.max(np.abs(balance)) < 1e-8 * scale, np.max(np.abs(balance)) / scale
    # both flows matter: leaving out either term would break the balance by far more
    assert loss[-1] > 1e-3 * scale and np.max(np.abs(work)) > 0.1 * scale


def fake_terms(n, m, seed=0, actuation=None):
    """`DynamicsTerms` of a made-up state: SPD `M`, a bias and `A` `(n, m)`."""
    rng = np.random.default_rng(seed)
    b = rng.standard_normal((n, n))
    a = rng.standard_normal((n, m)) if actuation is None else actuation
    return DynamicsTerms(
        jnp.asarray(b @ b.T + n * np.eye(n)),
        jnp.asarray(rng.standard_normal(n)),
        jnp.asarray(a),
        jnp.zeros((1, 3, 3)),
        jnp.zeros((1, 3)),
    )


def test_cubic_rest_to_rest_is_exact_at_the_ends():
    start, end = np.array([0.2, -1.0]), np.array([1.0, 0.5])
    ref = control.CubicRestToRest(start, end, 1.0, 3.0)
    delta = end - start
    # ±6Δ/T² inside the ends; at t₁ the right limit, 0 (what a fixed step from t₁ integrates)
    before_end = np.nextafter(3.0, 0.0)
    for t, pos, acc in ((1.0, start, 1.5 * delta), (before_end, end, -1.5 * delta), (3.0, end, 0)):
        r, rd, rdd = ref(t)
        np.testing.assert_allclose(r, pos, atol=1e-15)
        np.testing.assert_allclose(rd, 0.0, atol=1e-14)
        np.testing.assert_allclose(rdd, acc, rtol=1e-14, atol=0)
    np.testing.assert_allclose(ref(2.0)[0], (start + end) / 2, rtol=1e-15)
    for t in (0.0, 4.0):  # held outside, at rest
        r, rd, rdd = ref(t)
        np.testing.assert_allclose(r, start if t < 1 else end)
        assert not np.any(rd) and not np.any(rdd)
    ts = jnp.linspace(1.1, 2.9, 5)
    r, rd, rdd = jax.jit(jax.vmap(ref))(ts)
    np.testing.assert_allclose(jax.vmap(jax.jacfwd(lambda t: ref(t)[0]))(ts), rd, rtol=1e-12)
    np.testing.assert_allclose(jax.vmap(jax.jacfwd(lambda t: ref(t)[1]))(ts), rdd, rtol=1e-12)


def test_spline_interpolates_and_is_twice_differentiable_under_jit_and_vmap():
    rng = np.random.default_rng(1)
    times = np.array([0.0, 0.4, 1.0, 1.3, 2.0])
    samples = rng.standard_normal((5, 3))
    spline = control.Spline(times, samples)
    knots = times[1:-1]
    ts = np.linspace(0.05, 1.95, 7)
    # one jit(vmap) evaluation: the samples, both sides of the inner knots, inner points
    points = np.concatenate([times, knots - 1e-9, knots + 1e-9, ts])
    r, rd, rdd = jax.jit(jax.vmap(spline))(jnp.asarray(points))
    np.testing.assert_allclose(r[:5], samples, atol=1e-14)
    np.testing.assert_allclose(rd[np.array([0, 4])], 0.0, atol=1e-14)  # clamped: at rest
    for value in (r, rd, rdd):  # r, ṙ, r̈ continuous across the inner knots
        np.testing.assert_allclose(value[5:8], value[8:11], atol=1e-7)
    oracle = CubicSpline(times, samples, bc_type="clamped")
    for k, value in enumerate((r, rd, rdd)):
        np.testing.assert_allclose(value[11:], oracle(ts, k), rtol=1e-12, atol=1e-12)
    rdd = rdd[11:]
    np.testing.assert_allclose(jax.vmap(jax.jacfwd(lambda t: spline(t)[1]))(ts), rdd, rtol=1e-12)
    # held outside [t_0, t_K]: r̈ jumps to zero at both ends, the times a method restarts at
    assert np.abs(spline(2.0 - 1e-9)[2]).max() > 0.1 and np.all(spline(2.0 + 1e-9)[2] == 0)
    assert spline.switch_times() == (0.0, 2.0)
    assert control.ComputedTorque(1.0, 1.0, spline).switch_times() == (0.0, 2.0)


def test_blend_starts_at_rest_and_becomes_the_reference():
    rng = np.random.default_rng(4)
    target = control.Spline(np.array([0.0, 0.7, 1.5, 3.0]), rng.standard_normal((4, 2)))
    start = np.array([0.3, -0.2])
    blend = control.Blend(target, start, 1.2)
    r, rd, rdd = blend(0.0)
    np.testing.assert_allclose(r, start, atol=1e-15)
    assert not np.any(rd) and not np.any(rdd)
    for t in (1.2, 1.7, 2.9):  # from T on it is the reference, derivatives included
        for a, b in zip(blend(t), target(t)):
            np.testing.assert_allclose(a, b, atol=1e-14)
    # ṙ and r̈ are the derivatives of r and ṙ (jacfwd), also across the blend's end
    ts = jnp.asarray([0.05, 0.4, 0.9, 1.2 - 1e-9, 1.2 + 1e-9, 2.0])
    r, rd, rdd = jax.jit(jax.vmap(blend))(ts)
    np.testing.assert_allclose(jax.vmap(jax.jacfwd(lambda t: blend(t)[0]))(ts), rd, rtol=1e-12)
    np.testing.assert_allclose(jax.vmap(jax.jacfwd(lambda t: blend(t)[1]))(ts), rdd, rtol=1e-12)
    np.testing.assert_allclose(rdd[3], rdd[4], atol=1e-6)  # C² across T
    with pytest.raises(ValueError, match="duration must be positive"):
        control.Blend(target, start, 0.0)
    with pytest.raises(ValueError, match="start has shape"):
        control.Blend(target, [0.0], 1.0)
    with pytest.raises(TypeError, match="must be a Reference"):
        control.Blend(start, start, 1.0)


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: control.Constant([np.nan, 0.0]), ValueError, "Constant: value must be finite"),
        (lambda: control.Constant(np.array([1 + 2j])), TypeError, "value must be real numbers"),
        (lambda: control.Constant([True, False]), TypeError, "real numbers, got booleans"),
        (lambda: control.CubicRestToRest([np.nan], [1.0], 0, 1), ValueError, "start must be fin"),
        (lambda: control.CubicRestToRest([0.0], [1.0], -np.inf, 1), ValueError, "t0 must be fin"),
        (lambda: control.CubicRestToRest([0.0], [1.0], 0, 1e-320), ValueError, "1/T² finite"),
        (lambda: control.CubicRestToRest([0.0], [1.0], "0", 1), TypeError, "t0 must be real"),
        (lambda: control.CubicRestToRest([0.0], [1.0], [0, 1], 2), ValueError, "t0 must be a sc"),
        (lambda: control.Blend(control.Constant([1.0]), [np.nan], 1), ValueError, "start must be"),
        (lambda: control.Blend(control.Constant([1.0]), [0.0], 1e-320), ValueError, "1/T²"),
        (lambda: control.PD(np.nan, 1.0, [0.0]), ValueError, "PD: kp must be finite"),
        (lambda: control.PD(1 + 1j, 1.0, [0.0]), TypeError, "PD: kp must be real numbers"),
        # a negative or indefinite gain makes the error dynamics unstable (it was accepted)
        (lambda: control.PD(-5.0, 1.0, [0.0]), ValueError, "PD: kp must be positive semi-def"),
        (
            lambda: control.ComputedTorque(1.0, [[1.0, 5.0], [5.0, 1.0]], [0.0, 0.0]),
            ValueError,
            "ComputedTorque: kd must be positive semi-definite .* smallest eigenvalue -4",
        ),
        (lambda: control.Spline([0.0, 1.0], [[np.nan], [1.0]]), ValueError, "samples must be fin"),
        (lambda: control.Spline([0, 1, np.inf], np.ones((3, 1))), ValueError, "times must be fin"),
        (lambda: control.Spline([0.0, 1.0], [[5j], [1.0]]), TypeError, "samples must be real"),
        (lambda: control.Spline([0.0, 1.0], np.ones((2, 1)), "foo"), ValueError, "Spline: scipy"),
        (lambda: control.Feedforward(jnp.sin, size=2.7), ValueError, "size must be an integer"),
        # a law's set point is named as its argument (it was "Constant: value")
        (lambda: control.PD(1.0, 1.0, [np.nan]), ValueError, "PD: reference must be finite"),
        (lambda: control.ComputedTorque(1, 1, [np.nan]), ValueError, "Torque: reference must be"),
        (
            lambda: control.Feedforward(lambda t: jnp.array([1 + 5j]), size=1).signal(0.0),
            TypeError,
            "Feedforward: inputs\\(t\\) must return real inputs, got dtype complex",
        ),
    ],
)
def test_reference_values_are_checked(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_references_take_one_time_and_their_derivatives_at_the_ends_are_the_inside_ones():
    cubic = control.CubicRestToRest([0.0, 0.0], [1.0, 2.0], 0.0, 1.0)
    spline = control.Spline([0.0, 1.0, 2.0, 3.0], np.arange(8.0).reshape(4, 2) ** 1.5)
    blend = control.Blend(spline, [0.5, -0.5], 1.0)
    # a vector of times broadcast against the samples gave entries of different times
    for ref in (cubic, spline, blend, control.Constant([1.0])):
        with pytest.raises(ValueError, match="t must be a scalar time, got shape \\(2,\\)"):
            ref(jnp.array([0.25, 0.75]))
    # at the end times the values are the inside ones; so are their derivatives in t (jnp.clip
    # gave half: r̈ = 6 at the cubic's start, jacfwd of ṙ 3)
    for ref, times in ((cubic, (0.0, 1.0)), (spline, (0.0, 3.0)), (blend, (0.0, 1.0))):
        for t in times:
            _, rd, rdd = ref(t)
            rates = jax.jacfwd(lambda s, ref=ref: ref(s)[:2])(t)
            np.testing.assert_allclose(rates[0], rd, atol=1e-12)
            np.testing.assert_allclose(rates[1], rdd, atol=1e-12)
    assert float(cubic(0.0)[2][0]) == 6.0


def test_references_built_inside_jit_are_checked_at_run_time():
    def cubic(t0):
        return control.CubicRestToRest([0.0], [1.0], t0, 1.0)(0.5)[0]

    def blend(duration):
        return control.Blend(control.Constant([1.0]), [0.0], duration)(0.5)[0]

    np.testing.assert_allclose(jax.jit(cubic)(0.0), 0.5)
    for fn, bad, message in [
        (cubic, 2.0, "t1 must exceed t0"),
        (cubic, 1.0, "t1 must exceed t0"),
        (blend, -0.02, "duration must be positive"),
        (jax.jit(lambda x: control.Constant(x)(0.0)[0]), jnp.array([jnp.nan]), "value must be"),
        (lambda kd: control.PD(1.0, kd, [0.0, 0.0]).kd, -jnp.eye(2), "kd must be positive semi"),
    ]:
        with pytest.raises(RUNTIME_ERRORS, match=message):
            jax.block_until_ready(jax.jit(fn)(bad))
    with pytest.raises(TypeError, match="Spline: times and samples must be concrete"):
        jax.jit(lambda t: control.Spline(t, [[0.0], [1.0]])(0.5))(jnp.array([0.0, 1.0]))


def test_feedforward_pd_and_phases_switch_at_the_given_times():
    tm = fake_terms(3, 2)
    q, qd = jnp.array([0.1, 0.2, 0.3]), jnp.array([-1.0, 0.0, 1.0])
    pd = control.PD([2.0, 3.0], 0.5, [1.0, 1.0], coordinates=[2, 0], inputs=[1, 0])
    # u_i = K_P (q_d − q_c) + K_D (0 − q̇_c): c = (2, 0) drive inputs (1, 0)
    expected = np.array([3.0 * 0.9 + 0.5 * 1.0, 2.0 * 0.7 - 0.5 * 1.0])
    np.testing.assert_allclose(pd(0.0, q, qd, tm), expected, rtol=1e-15)
    ff = control.Feedforward(control.CubicRestToRest([0.0, 0.0], [2.0, 4.0], 0.0, 1.0))
    sequence = control.Phases(
        [1.0, 2.0], [ff, pd, control.Feedforward(lambda t: jnp.stack([t, -t]), size=2)]
    )
    run = jax.jit(lambda t: sequence(t, q, qd, tm))
    np.testing.assert_allclose(run(0.5), [1.0, 2.0])
    for t in (1.0, 1.5):  # [1, 2): the PD
        np.testing.assert_allclose(run(t), expected, rtol=1e-15)
    np.testing.assert_allclose(run(2.0), [2.0, -2.0])
    np.testing.assert_allclose(run(0.999), ff(0.999, q, qd, tm))

    class Complex(control.PD):  # a law of the user's that returns complex inputs
        def __call__(self, t, q, qd, terms):
            return super().__call__(t, q, qd, terms) * 1j

    bad = control.Phases([1.0], [pd, Complex(1.0, 1.0, [1.0, 1.0], coordinates=[2, 0])])
    with pytest.raises(TypeError, match="Phases: controller 1 must return real inputs"):
        bad(0.5, q, qd, tm)  # its imaginary part was dropped by the cast to q's dtype


@pytest.mark.parametrize("inputs", [[1], None])
def test_pfbl_imposes_the_output_acceleration(robot, inputs):
    # a nonlinear output y = (q₀, sin q₀ + q₁²) with A = (∂y/∂q)ᵀ, the second input driven or
    # both (A upper triangular, not diagonal: J⁺ = Q₁ R⁻ᵀ, not Q₁ R⁻¹): the resulting q̈
    # gives ÿ = J q̈ + J̇ q̇ = v on the driven outputs
    def output(robot, q):
        return jnp.stack([q[0], jnp.sin(q[0]) + q[1] ** 2])

    q, qd = jnp.array([0.4, 0.7]), jnp.array([-0.3, 1.1])
    a = np.array([[1.0, np.cos(0.4)], [0.0, 1.4]])
    tm = fake_terms(2, 2, seed=3, actuation=a)
    driven = [0, 1] if inputs is None else inputs
    target = np.array([0.2, 0.5])[driven]
    law = control.CollocatedPFBL(robot, 9.0, 4.0, target, output=output, inputs=inputs)
    u = law(0.0, q, qd, tm)
    if inputs is not None:
        assert u[0] == 0.0
    qdd = np.linalg.solve(tm.mass_matrix, a @ np.asarray(u) - tm.bias)
    y, yd = np.asarray(output(None, q)), a.T @ np.asarray(qd)
    jdqd = np.array([0.0, -np.sin(0.4) * 0.3**2 + 2 * 1.1**2])
    ydd = a.T @ qdd + jdqd  # J q̈ + J̇ q̇
    np.testing.assert_allclose(ydd[driven], 9.0 * (target - y[driven]) - 4.0 * yd[driven])


def test_pfbl_derivatives_are_finite_and_exact(robot):
    # the law's q- and q̇-Jacobians (a closed-loop Jacobian for BDF, `grad` through `simulate`)
    # against the same law written without a null-space basis, u = (J M⁻¹ Jᵀ)⁻¹ (v − J̇ q̇ +
    # J M⁻¹ h), differentiated by jacfwd; the driven input's column of A = (∂y/∂q)ᵀ is a unit
    # vector (a joint motor's), where JAX's complete-QR derivative was NaN. Made-up terms
    # that depend on the state: M(q) SPD, h(q, q̇), y = (q₀, sin q₀ + q₁²)
    def output(robot, q):
        return jnp.stack([q[0], jnp.sin(q[0]) + q[1] ** 2])

    base = fake_terms(2, 2, seed=5)

    def tm(q, qd):
        a = jax.jacfwd(lambda x: output(None, x))(q).T
        mass = base.mass_matrix + jnp.diag(jnp.sin(q) ** 2) + 0.3 * jnp.outer(q, q)
        return base._replace(mass_matrix=mass, bias=base.bias * jnp.cos(q) + qd**2, actuation=a)

    law = control.CollocatedPFBL(robot, 9.0, 4.0, [0.3], output=output, inputs=[0])

    def u_law(q, qd):
        return law(0.0, q, qd, tm(q, qd))[0]

    def u_oracle(q, qd):
        terms_, j = tm(q, qd), jnp.array([[1.0, 0.0]])
        v = 9.0 * (0.3 - q[0]) - 4.0 * qd[0]  # y₀ = q₀: J̇ q̇ = 0
        m_inv = jnp.linalg.inv(terms_.mass_matrix)
        return jnp.linalg.solve(j @ m_inv @ j.T, v + j @ m_inv @ terms_.bias)[0]

    q, qd = jnp.array([0.4, 0.7]), jnp.array([-0.3, 1.1])
    both = jax.jit(lambda *x: [(f(*x), jax.jacfwd(f, (0, 1))(*x)) for f in (u_law, u_oracle)])
    (u, got), (u_want, want) = both(q, qd)
    np.testing.assert_allclose(u, u_want, rtol=1e-12)
    for a, b in zip(got, want):
        assert np.all(np.isfinite(np.asarray(a)))
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-14 * np.max(np.abs(b)))


def test_actuation_coordinates_of_chosen_inputs(robot):
    # the entries of the chosen inputs only, in their order, also where one actuator drives
    # several inputs (a spherical joint's motor: inputs 0..2)
    q = jnp.array([0.4, 0.7])
    full = control.actuation_coordinates(robot, q)
    for inputs in ([1], [1, 0], [0]):
        np.testing.assert_array_equal(
            control.actuation_coordinates(robot, q, inputs), full[np.asarray(inputs)]
        )
    body = sr.RigidBody(1.0, (0.0, 0.0, 0.1), 0.01 * np.eye(3), distal=(np.eye(3), (0, 0, 0.2)))
    links = [sr.Link(joints.Spherical(), body), sr.Link(joints.Revolute((1.0, 0, 0)), body)]
    chain = sr.Robot(links, actuators=[JointMotor(0), JointMotor(1)])
    q4 = jnp.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_array_equal(control.actuation_coordinates(chain, q4), q4)
    np.testing.assert_array_equal(
        control.actuation_coordinates(chain, q4, [3, 1]), q4[np.array([3, 1])]
    )
    with pytest.raises(ValueError, match="inputs \\(4,\\) out of range for n_u = 4"):
        control.actuation_coordinates(chain, q4, [4])


def test_actuation_coordinates_run_eagerly_as_one_program():
    # outside any transformation, one compiled program per robot structure and `inputs`
    # (traced once, then reused; a robot of a structure of its own here), equal to the traced
    # function's values
    from softrigid.control import _pfbl

    traces = []

    def listen(name, duration, **kw):
        if name.endswith("jaxpr_trace_duration") and kw.get("fun_name") == "_coordinates":
            traces.append(kw["fun_name"])

    body = sr.RigidBody(0.5, (0.0, 0.1, 0.0), 0.02 * np.eye(3), distal=(np.eye(3), (0, 0.3, 0)))
    links = [
        sr.Link(joints.Prismatic((0, 0, 1.0)), body),
        sr.Link(joints.Revolute((0, 0, 1.0)), body),
    ]
    chain = sr.Robot(links, actuators=[JointMotor(1), JointMotor(0)])
    q = jnp.array([0.25, -0.6])
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        first = control.actuation_coordinates(chain, q, (1, 0))
        again = control.actuation_coordinates(chain, 2 * q, [1, 0])
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert traces == ["_coordinates"]
    np.testing.assert_array_equal(first, _pfbl._coordinates(chain, q, (1, 0)))
    np.testing.assert_array_equal(again, 2 * q)


def test_gains_are_traced_no_recompilation_and_vmap():
    tm = fake_terms(2, 2, seed=4)
    q, qd = jnp.array([0.1, 0.2]), jnp.array([0.3, -0.4])
    traces = []

    @jax.jit
    def law(ctrl):
        traces.append(1)
        return ctrl(0.5, q, qd, tm)

    ref = control.CubicRestToRest([0.0, 0.0], [1.0, 1.0], 0.0, 1.0)
    laws = [control.ComputedTorque(kp, 2.0, ref) for kp in (1.0, 5.0, 25.0)]
    outputs = [law(c) for c in laws]
    batch = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *laws)
    batched = jax.jit(jax.vmap(law))(batch)
    assert len(traces) == 1  # new gains and the vmapped batch reuse the one trace
    np.testing.assert_allclose(batched, np.stack(outputs), rtol=1e-14)
    assert not np.allclose(outputs[0], outputs[1])


def test_bad_input_raises_errors_naming_the_argument(robot):
    ref2 = [0.0, 0.0]
    with pytest.raises(ValueError, match="ComputedTorque: kp"):
        control.ComputedTorque(np.ones(3), 1.0, ref2)
    with pytest.raises(ValueError, match="PD: kd"):
        control.PD(1.0, np.ones((2, 3)), ref2)
    with pytest.raises(ValueError, match="CompensatedPD: .* 2 x 1, not square"):
        control.CompensatedPD(robot, 1.0, 1.0, ref2, inputs=[1])
    with pytest.raises(ValueError, match="CollocatedPFBL: reference has size 2, expected 1"):
        control.CollocatedPFBL(robot, 1.0, 1.0, ref2, inputs=[1])
    with pytest.raises(ValueError, match="PD: coordinates"):
        control.PD(1.0, 1.0, ref2, coordinates=[0])
    with pytest.raises(ValueError, match="Phases: 1 switching times need 2"):
        control.Phases([1.0], [control.Feedforward(ref2)])
    with pytest.raises(ValueError, match="Spline: samples"):
        control.Spline([0.0, 1.0], np.zeros((3, 2)))
    q = jnp.zeros(3)
    with pytest.raises(ValueError, match="ComputedTorque: needs a fully actuated robot"):
        control.ComputedTorque(1.0, 1.0, np.zeros(3))(0.0, q, q, fake_terms(3, 2))
    with pytest.raises(ValueError, match="ComputedTorque: reference has size 2, n_q = 3"):
        control.ComputedTorque(1.0, 1.0, ref2)(0.0, q, q, fake_terms(3, 3))
    # a rank-deficient A: caught at run time (eagerly and under jit), not a NaN
    singular = fake_terms(3, 3, actuation=np.diag([1.0, 1.0, 0.0]))
    law = control.ComputedTorque(1.0, 1.0, np.zeros(3))
    with pytest.raises(ValueError, match="ComputedTorque: the actuation matrix A is singular"):
        raise_runtime_errors(lambda: jax.jit(law)(0.0, q, q, singular))


def test_laws_name_a_wrong_robot_index_or_output(robot):
    # each of these failed deep inside JAX (shape or attribute errors) or passed silently
    z = jnp.zeros(2)
    other = arm([JointMotor(0)])  # n_q = 2, n_u = 1
    message = r"CompensatedPD: the controller .* built for a robot with n_q = 2, n_u = 1, but"
    with pytest.raises(ValueError, match=message):
        law = control.CompensatedPD(other, 1.0, 1.0, z, inputs=[0], pseudo_inverse=True)
        sr.simulate(robot, z, z, 0.02, 0.01, law)
    pfbl_other = control.CollocatedPFBL(other, 1.0, 1.0, [0.0])
    with pytest.raises(ValueError, match=r"Phases: the controller \(or one it holds\)"):
        law = control.Phases([0.01], [control.Feedforward(z), pfbl_other])
        sr.simulate(robot, z, z, 0.02, 0.01, law)
    with pytest.raises(TypeError, match="CollocatedPFBL: robot must be a softrigid.Robot, got str"):
        control.CollocatedPFBL("arm", 1.0, 1.0, z)
    with pytest.raises(TypeError, match="PD: coordinates must be a sequence of integer indices"):
        control.PD(1.0, 1.0, [0.0], coordinates=[1.9], inputs=[0])
    with pytest.raises(ValueError, match=r"Phases: times must be finite, got \[nan\]"):
        control.Phases([np.nan], [control.Feedforward(z), control.Feedforward(z)])
    with pytest.raises(
        ValueError, match=r"Phases: times must be a 1-D sequence, got shape \(1, 1\)"
    ):
        control.Phases([[1.0]], [control.Feedforward(z), control.Feedforward(z)])
    tuple_output = control.CollocatedPFBL(robot, 1.0, 1.0, z, output=lambda r, q: (q[0], q[1]))
    with pytest.raises(TypeError, match=r"output\(robot, q\) must return one array, got a tuple"):
        sr.simulate(robot, z, z, 0.02, 0.01, tuple_output)
    with pytest.raises(TypeError, match="must return the robot's real inputs .* complex128"):
        sr.simulate(robot, z, z, 0.02, 0.01, lambda t, q, qd: jnp.full(2, 5.0j))
    # a law's run-time check inside an eager simulate is the ValueError it names (was JAX's)
    singular = control.CompensatedPD(robot, 1.0, 1.0, [0.0], coordinates=[0], inputs=[1])
    with pytest.raises(ValueError, match="CompensatedPD: the actuation matrix A is singular"):
        sr.simulate(robot, z, z, 0.02, 0.01, singular)
    # actuation_coordinates checks its state like every entry point
    with pytest.raises(ValueError, match=r"q must have shape \(2,\) for this robot"):
        control.actuation_coordinates(robot, jnp.zeros(5))
    with pytest.raises(ValueError, match=r"q contains non-finite values .* index \[1\]"):
        control.actuation_coordinates(robot, jnp.array([0.1, jnp.inf]))
    with pytest.raises(ValueError, match="inputs must not be empty"):
        control.actuation_coordinates(robot, z, inputs=[])


def conditioned(n, sigma_min, seed=0):
    """`U diag(1, …, 1, σ_min) Vᵀ` `(n, n)` with random orthogonal `U`, `V`: `κ₂ = 1/σ_min`."""
    rng = np.random.default_rng(seed)
    u, v = (np.linalg.qr(rng.standard_normal((n, n)))[0] for _ in range(2))
    return u @ np.diag([1.0] * (n - 1) + [sigma_min]) @ v.T


@pytest.mark.parametrize("which", ["ComputedTorque", "CompensatedPD", "CollocatedPFBL"])
def test_ill_conditioned_actuation_is_reported_under_jit_and_vmap(robot, which):
    # every law that inverts A refuses σ_min(A) ≤ 1e-10 σ_max(A), exactly singular or not, in a
    # vmapped batch too; a fair κ₂ passes and is solved: the same A u = ν (PFBL: the same output
    # acceleration J q̈ = Aᵀ M⁻¹ (A u − h)) as with A = I (PFBL's M_θ = T⁻ᵀ M T⁻¹ loses κ₂²
    # of the digits: κ₂ = 1e4 there, 1e8 for the others)
    laws = {
        "ComputedTorque": computed_torque(),
        "CompensatedPD": compensated_pd(robot),
        "CollocatedPFBL": control.CollocatedPFBL(robot, 1.0, 1.0, [0.0, 0.0]),
    }
    law = jax.jit(jax.vmap(laws[which], in_axes=(None, None, None, 0)))
    q, qd = jnp.array([0.1, 0.2]), jnp.array([0.3, -0.4])
    tm = fake_terms(2, 2, seed=5)
    batch = lambda *a: jax.tree_util.tree_map(  # noqa: E731
        lambda *x: jnp.stack(x), *(tm._replace(actuation=jnp.asarray(ai)) for ai in a)
    )
    good, fair = np.eye(2), conditioned(2, 1e-4 if which == "CollocatedPFBL" else 1e-8)
    u = np.asarray(law(0.0, q, qd, batch(good, fair)))
    mass, h = np.asarray(tm.mass_matrix), np.asarray(tm.bias)

    def imposed(a, u):
        return a.T @ np.linalg.solve(mass, a @ u - h) if which == "CollocatedPFBL" else a @ u

    np.testing.assert_allclose(imposed(fair, u[1]), imposed(good, u[0]), rtol=1e-6)
    matrix = "A = \\(∂y/∂q\\)ᵀ" if which == "CollocatedPFBL" else "A"
    for bad in (conditioned(2, 1e-11), np.diag([1.0, 0.0])):
        with pytest.raises(ValueError, match=f"{which}: the actuation matrix {matrix} is singular"):
            raise_runtime_errors(lambda bad=bad: law(0.0, q, qd, batch(good, bad)))
    # a matrix that is not finite (a state far outside the model's range, a blown-up run)
    nan = np.array([[1.0, np.nan], [0.0, 1.0]])
    with pytest.raises(ValueError, match=f"{which}: the actuation matrix {matrix} is not finite"):
        raise_runtime_errors(lambda: law(0.0, q, qd, batch(good, nan)))


def test_computed_torque_through_simulate():
    # a rigid pendulum without actuators (u = ν); the controller is a traced pytree argument
    bob = sr.RigidBody(1.0, (0.0, 0.0, 0.25), 0.01 * np.eye(3))
    pendulum = sr.Robot([sr.Link(joints.Revolute((0.0, 1.0, 0.0)), bob)])
    kp, kd = np.array([49.0]), np.array([14.0])
    ref = control.CubicRestToRest([0.0], [1.0], 0.0, 1.0)
    law = control.ComputedTorque(kp, kd, ref)
    traj = sr.simulate(pendulum, np.array([0.2]), np.array([-0.5]), 1.0, 5e-3, law)
    r, rd, _ = jax.vmap(ref)(traj.t)
    e, ed = np.asarray(r - traj.q), np.asarray(rd - traj.qd)
    exact = linear_error(kp, kd, e[0], ed[0], np.asarray(traj.t))
    np.testing.assert_allclose(e, exact, atol=1e-7 * abs(e[0, 0]))


@pytest.mark.parametrize(
    "law",
    [
        "pfbl",
        pytest.param("computed_torque", marks=pytest.mark.slow),
        pytest.param("compensated_pd", marks=pytest.mark.slow),
    ],
)
def test_closed_loop_jacobian_is_the_forward_mode_one(robot, law):
    # the closed loop's Jacobian from the link-local linearization of M, the bias and A, the
    # law and the solve differentiated through them (what BDF's jacobian="autodiff" uses),
    # equals forward mode through the whole loop: PFBL on the tendon (underactuated), and in
    # the slow set computed torque and the compensated PD (each about 25 s of compilation), on
    # a soft arm with a joint motor and a tendon
    q, qd = jnp.array([0.3, -0.4]), jnp.array([0.5, 0.2])
    laws = {
        "pfbl": lambda: pfbl(robot, 3.0, 2.0, (0.001, 0.003)),
        "computed_torque": computed_torque,
        "compensated_pd": lambda: compensated_pd(robot),
    }
    dyn = make_dynamics(robot, (), laws[law]())
    exact = jax.jit(dyn.jacobian)(0.4, q, qd)
    # the oracle compiled as one program (8 s; op by op 27 s)
    forward = jax.jit(jax.jacfwd(lambda y: dyn.accel(0.4, y[:2], y[2:])))(jnp.concatenate([q, qd]))
    np.testing.assert_allclose(exact, forward, rtol=1e-9, atol=1e-9 * np.abs(forward).max())
