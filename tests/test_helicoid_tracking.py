"""Seed 003's Simulation 1 (`examples/helicoid_tracking.py`).

Fast: the tendon routing against its closed form on the straight arm (eyelets where the
blade's long axis points along the tendon, straight spans in between), the segments each
triplet acts on, the task's circles and the periodic reference spline, and the whole example
on a short horizon with a synthetic reference (the PFBL's output error against its linear
ODE; about two minutes, mostly compiling the closed loop). Slow (`pytest -m
slow`: the inverse statics of this robot compile for about five minutes on the project's
2-core machine): the sampled equilibria balance the recursion's inverse dynamics,
`ID(q, 0, 0) = A(q) u`, with the tips on the targets."""

from __future__ import annotations

import numpy as np
import pytest
from scripts import load_example


@pytest.fixture(scope="module")
def example():
    return load_example("helicoid_tracking")


def test_tendon_routing_on_the_straight_arm(example):
    import jax.numpy as jnp

    import softrigid as sr
    from softrigid import control

    robot = example.build(degree=2)
    assert (robot.n_links, robot.n_q, robot.n_u) == (3, 24, 9)
    length = example.LENGTH
    # straight: the eyelets of a tendon at angle θ lie on one vertical line, at
    # L (θ mod π)/2π and half a segment higher in each segment; triplet 0 runs from its spool
    # DROP below the base plane to its upper eyelet in segment 0, triplet k from its upper
    # eyelet in segment k − 1 to its upper eyelet in segment k: l = DROP + L (θ mod π)/2π + L/2
    # and l = L
    y = np.asarray(control.actuation_coordinates(robot, jnp.zeros(24)))
    for j in range(9):
        theta = example.TRIPLETS[j // 3][j % 3]
        first = example.DROP + length * (theta % np.pi) / (2 * np.pi) + length / 2
        np.testing.assert_allclose(-y[j], first if j < 3 else length, rtol=1e-13)
    # the eyelets lie in the blade: where its long axis (angle 2π x3 / L) points along θ mod π
    for theta in np.asarray(example.TRIPLETS).ravel():
        pts = example.eyelets(theta)
        axis = 2 * np.pi * pts[:, 2] / length
        np.testing.assert_allclose(np.sin(axis - theta), 0.0, atol=1e-12)
        np.testing.assert_allclose(np.hypot(pts[:, 0], pts[:, 1]), example.RHO)
    # triplet k acts on segments k − 1 and k only (A's other rows are zero: exactly past k;
    # to rounding below k − 1, whose coordinates move the whole route rigidly), on both
    q = jnp.asarray(np.random.default_rng(0).uniform(-0.1, 0.1, 24))
    a = np.asarray(sr.actuation_matrix(robot, q))
    for j in range(9):
        k = j // 3
        assert not np.any(a[8 * (k + 1) :, j])
        np.testing.assert_allclose(a[: 8 * max(k - 1, 0), j], 0.0, atol=1e-15)
        for b in range(max(k - 1, 0), k + 1):
            assert np.abs(a[8 * b : 8 * b + 8, j]).max() > 1e-4


def test_task_and_reference(example):
    # the seed's circles: radii 2, 2.5, 3 cm at heights 8, 15, 24 cm, period 5 s
    t = np.array([0.0, 1.25, 5.0])
    tips = example.tip_targets(t).reshape(3, 3, 3)
    np.testing.assert_allclose(tips[0, :, 0], [0.02, 0.025, 0.03])
    np.testing.assert_allclose(tips[1, :, 1], [0.02, 0.025, 0.03])
    np.testing.assert_allclose(tips[:, :, 2], np.tile([0.08, 0.15, 0.24], (3, 1)))
    np.testing.assert_allclose(tips[2], tips[0], atol=1e-15)
    # y_d: periodic, through the samples, twice differentiable across the period's end
    k = 8
    times = np.arange(k) * 5.0 / k
    phase = 2 * np.pi * times / 5.0
    y = np.stack([np.sin(phase), np.cos(2 * phase)], axis=1)
    eq = example.Equilibria(times, None, None, y, None, None)
    ref = example.reference(eq, t_final=6.0)
    for s in (0.3, 2.2, 4.9):
        r0, r1 = ref(s), ref(s + 5.0)
        for a, b in zip(r0, r1):
            np.testing.assert_allclose(a, b, atol=1e-12)
    np.testing.assert_allclose(np.stack([ref(s)[0] for s in times]), y, atol=1e-14)
    before, after = ref(5.0 - 1e-9), ref(5.0 + 1e-9)
    for a, b in zip(before, after):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_closed_loop_obeys_the_pfbl_error_ode(example, tmp_path):
    # the whole example on a short horizon, its statics replaced by a synthetic reference
    # (the rest outputs plus periodic millimetre offsets, y_d(0) 2 mm from rest): the PFBL
    # makes the output error obey ë + K_D ė + K_P e = 0, whatever the zero dynamics do
    import jax.numpy as jnp

    from softrigid import _radau, control
    from softrigid.integrators import BDF

    robot = example.build(degree=2)
    times = np.arange(8) * 5.0 / 8
    phase = 2 * np.pi * times / 5.0
    offsets = 1e-3 * (1.0 + np.cos(phase[:, None] + np.arange(9)[None, :]))
    y = np.asarray(control.actuation_coordinates(robot, jnp.zeros(24))) + offsets
    zeros = np.zeros(len(times))
    np.savez(
        tmp_path / "synthetic.npz",
        times=times,
        q=np.zeros((len(times), 24)),
        u=np.zeros((len(times), 9)),
        y=y,
        tip_error=zeros,
        solve_s=zeros,
    )
    out = tmp_path / "run"
    # differences, not the closed loop's autodiff Jacobian (its program compiles for minutes);
    # they serve on this gentle reference
    differences = BDF(rtol=1e-4, atol=1e-6, jacobian="finite_differences")
    # the closed loop compiled ahead on a stand-in reference of the same structure (as the
    # example does while its statics solve) is the program the run then calls: none is added
    programs = (_radau.radau_rhs, _radau.linearized_jacobian, _radau.closed_loop_jacobian)
    before = [p._cache_size() for p in programs]
    assert example.compile_ahead(robot, len(times), 0.04, differences, blend=0.0).result() > 0
    ahead = [p._cache_size() for p in programs]
    assert ahead[0] == before[0] + 1
    along = example._along._cache_size()
    # no blend: the reference from the first instant, so the error starts at 2 mm
    summary = example.run(
        out,
        degree=2,
        t_final=0.04,
        statics_from=tmp_path / "synthetic.npz",
        method=differences,
        blend=0.0,
    )
    run = np.load(out / "tracking.npz")
    np.testing.assert_allclose(run["t"], 0.01 * np.arange(5), atol=1e-15)
    e = run["y_d"] - run["y"]
    np.testing.assert_allclose(np.abs(e[0]).max(), 2e-3, rtol=1e-12)
    # the linear ODE's solution, to the integrator's tolerance (e moves by ~1e-5 m here)
    assert summary["output_error_vs_linear_ode_max_m"] < 2e-8
    np.testing.assert_allclose(e, run["e_linear"], atol=2e-8)
    assert np.abs(e[-1]).max() < np.abs(e[0]).max()
    # the recorded tensions are the law's at the recorded states, tips and targets as defined
    assert np.all(np.isfinite(run["u"])) and np.abs(run["u"]).max() > 0.0
    np.testing.assert_allclose(run["targets"], example.tip_targets(run["t"]), atol=1e-15)
    assert summary["sim_s"] == pytest.approx(0.04) and summary["first_call_s"] > 0
    assert summary["blend_s"] == 0.0
    for name in ("statics.png", "coordinates.png", "outputs.png", "snapshots.png"):
        assert (out / name).stat().st_size > 10_000
    assert (out / "tracking.pvd").exists() and (out / "equilibria.pvd").exists()
    assert [p._cache_size() for p in programs] == ahead
    # the trajectory's outputs and tips: the program compiled while the closed loop ran
    assert example._along._cache_size() == along + 1


@pytest.mark.slow
def test_sampled_statics_are_equilibria_on_the_targets(example, tmp_path):
    import jax.numpy as jnp

    import softrigid as sr

    summary = example.run(out=tmp_path, samples=4, t_final=0.0, figures=False)
    assert summary["statics_tip_error_max_m"] < 1e-9
    assert (tmp_path / "equilibria.pvd").exists()
    eq = np.load(tmp_path / "equilibria.npz")
    robot = example.build()
    zero = jnp.zeros(robot.n_q)
    for t, q, u in zip(eq["times"], eq["q"], eq["u"]):
        # the recursion's ID(q, 0, 0) = A(q) u (not the solver's residual), the tips on target
        q, u = jnp.asarray(q), jnp.asarray(u)
        residual = sr.inverse_dynamics(robot, q, zero, zero) - sr.actuation_force(robot, q, u)
        np.testing.assert_allclose(residual, 0.0, atol=1e-9 * float(jnp.abs(u).max()))
        np.testing.assert_allclose(example.tips(robot, q), example.tip_targets(t), atol=1e-9)


def test_statics_samples_are_approached_through_midpoints(example, monkeypatch):
    # a solve that falls short is retried through the midpoint's targets (recursively, at most
    # HALVINGS times), each leg warm-started from the last; here a fake solver reaches targets
    # only within 0.3 s of its start, so 0 -> 1 s needs two halvings (0.25 s legs)
    from types import SimpleNamespace

    calls = []

    def fake(robot, output, target, q0, u0, tol, throw):
        assert throw is False and tol == example.TOL
        t = float(np.arctan2(target[1], target[0]) / example.OMEGA)
        calls.append((float(q0), t))
        ok = abs(t - float(q0)) <= 0.3
        return SimpleNamespace(
            q=t if ok else float(q0), u=0.0, converged=ok, iterations=1, output=target
        )

    monkeypatch.setattr(example.sr, "inverse_statics", fake)
    sol, steps = example.approach(None, None, 0.0, 0.0, 0.0, 1.0)
    assert sol.converged and sol.q == pytest.approx(1.0)
    legs = [(a, b) for a, b in calls]
    assert legs[0] == (0.0, pytest.approx(1.0))  # the direct try falls short
    reached = [b for a, b in legs if abs(b - a) <= 0.3]
    assert reached == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert steps == len(calls)
    # beyond the halvings the shortfall is returned as it is (and printed)
    sol, _ = example.approach(None, None, 0.0, 0.0, 0.0, 1.0, halvings=1)
    assert not sol.converged
