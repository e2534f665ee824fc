"""`softrigid.plotting.backbones`: the polylines of a rigid and a soft body against the chain's
frames, one compilation per robot structure, and bad input."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import joints, kinematics, materials, plotting, quadrature


def test_backbones_follow_the_frames():
    rigid = sr.RigidBody(2.0, (0.05, 0.0, 0.1), 0.01 * np.eye(3), distal=(np.eye(3), (0, 0, 0.2)))
    soft = sr.SoftBody(
        kinematics.PlanarConstantCurvature(0.3),
        quadrature.cylinder(0.02, 0.3, 2, 1, 3),
        1000.0,
        material=materials.CosseratRod(1e5, 4e4),
    )
    robot = sr.Robot(
        [sr.Link(joints.Revolute((0.0, 1.0, 0.0)), rigid), sr.Link(joints.Fixed(), soft)]
    )
    before = plotting._backbones._cache_size()
    for q in (jnp.array([0.4, 0.7]), jnp.array([-0.2, 0.0])):
        lines = plotting.backbones(robot, q, n=5)
        trans = np.asarray(sr.forward_kinematics(robot, q)[1])
        # rigid: proximal origin (the base), centre of mass, distal origin
        np.testing.assert_allclose(lines[0][0], 0.0, atol=1e-15)
        np.testing.assert_allclose(lines[0][1], _com(q), atol=1e-15)
        np.testing.assert_allclose(lines[0][2], trans[0], atol=1e-15)
        # soft: n points from the body's proximal frame (link 0's distal) to its tip
        assert lines[1].shape == (5, 3)
        np.testing.assert_allclose(lines[1][0], trans[0], atol=1e-15)
        np.testing.assert_allclose(lines[1][-1], trans[1], atol=1e-14)
    assert plotting._backbones._cache_size() == before + 1  # one program for both states
    with pytest.raises(ValueError, match="backbones: n must be an integer >= 2"):
        plotting.backbones(robot, jnp.zeros(2), n=1)


def _com(q):
    """The rigid link's centre of mass in the world: `R(q0) c` about the revolute joint."""
    c, s = np.cos(float(q[0])), np.sin(float(q[0]))
    rot = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    return rot @ np.array([0.05, 0.0, 0.1])


def test_plots_name_bad_trajectories_labels_and_times(tmp_path):
    # an empty trajectory, too few labels, a scalar or NaN time: each failed inside NumPy or
    # matplotlib (IndexError, TypeError) or drew t[0] silently
    robot = sr.Robot(
        [sr.Link(joints.Revolute((0.0, 1.0, 0.0)), sr.RigidBody(1.0, (0, 0, 0.1), np.eye(3)))]
    )
    empty = sr.Trajectory(jnp.zeros(0), jnp.zeros((0, 1)), jnp.zeros((0, 1)), jnp.zeros((0, 1)))
    with pytest.raises(ValueError, match=r"plot_snapshots: traj must hold S ≥ 1 times"):
        plotting.plot_snapshots(robot, empty, tmp_path / "s.png")
    with pytest.raises(TypeError, match="plot_trajectory: traj must be a softrigid.Trajectory"):
        plotting.plot_trajectory((jnp.zeros(2), jnp.zeros((2, 1))), tmp_path / "t.png")
    traj = sr.Trajectory(
        jnp.linspace(0, 1, 3), jnp.zeros((3, 1)), jnp.zeros((3, 1)), jnp.zeros((3, 1))
    )
    with pytest.raises(ValueError, match="labels has 2 entries for 1 coordinates"):
        plotting.plot_trajectory(traj, tmp_path / "t.png", labels=["a", "b"])
    with pytest.raises(ValueError, match=r"times must be finite numbers, got \[nan\]"):
        plotting.plot_snapshots(robot, traj, tmp_path / "s.png", times=[np.nan])
    assert plotting.plot_snapshots(robot, traj, tmp_path / "s.png", times=0.5).exists()
    # a diverged run's NaN, a NaN time (every snapshot drew its row), complex or boolean q
    diverged = traj._replace(q=traj.q.at[2, 0].set(jnp.nan))
    with pytest.raises(ValueError, match=r"traj.q is not finite at \[2, 0\] \(a diverged run\?\)"):
        plotting.plot_trajectory(diverged, tmp_path / "t.png")
    with pytest.raises(ValueError, match=r"plot_snapshots: traj.t is not finite at \[1\]"):
        plotting.plot_snapshots(robot, traj._replace(t=traj.t.at[1].set(jnp.nan)), tmp_path / "s")
    for q in (traj.q + 1j, traj.q > 0):
        with pytest.raises(TypeError, match="traj.q must be real numbers, got dtype"):
            plotting.plot_trajectory(traj._replace(q=q), tmp_path / "t.png")


def test_plots_return_the_file_written_and_close_their_figures(tmp_path, monkeypatch):
    # a path without a suffix came back as given while matplotlib wrote `.png`; labels as a
    # NumPy array of 2 failed ("truth value of an array"); a failing call left its figure open;
    # snapshots 1 ms apart were all labelled "t = 0.00 s", and a one-sample trajectory was
    # drawn six times
    import matplotlib.pyplot as plt

    link = sr.Link(joints.Revolute((0.0, 1.0, 0.0)), sr.RigidBody(1.0, (0, 0, 0.1), np.eye(3)))
    robot = sr.Robot([link, link])
    t = jnp.arange(6) * 1e-3
    q = jnp.stack([jnp.linspace(0, 1, 6), jnp.linspace(0, -1, 6)], 1)
    traj = sr.Trajectory(t, q, jnp.zeros_like(q), jnp.zeros((6, 0)))
    written = plotting.plot_trajectory(traj, tmp_path / "q_of_t", labels=np.array(["a", "b"]))
    assert written == tmp_path / "q_of_t.png" and written.exists()
    assert plotting.plot_snapshots(robot, traj, tmp_path / "s") == tmp_path / "s.png"
    closed = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: (closed.append(fig), close(fig)))
    plotting.plot_snapshots(robot, traj, tmp_path / "s.png")
    labels = [x.get_text() for x in closed[-1].axes[0].get_legend().get_texts()]
    assert labels == [f"t = 0.00{k} s" for k in range(6)]
    # the legend outside the axes (clear of a slender robot), or none
    plotting.plot_snapshots(robot, traj, tmp_path / "s.png", legend="outside")
    box = closed[-1].axes[0].get_legend().get_window_extent()
    assert box.x0 >= closed[-1].axes[0].get_window_extent().x1
    plotting.plot_trajectory(traj, tmp_path / "q.png", legend=None)
    assert closed[-1].axes[0].get_legend() is None
    for plot, args in (
        (plotting.plot_snapshots, (robot, traj)),
        (plotting.plot_trajectory, (traj,)),
    ):
        with pytest.raises(ValueError, match=f"{plot.__name__}: legend must be None, 'outside'"):
            plot(*args, tmp_path / "x.png", legend="top")
    single = sr.Trajectory(t[:1], q[:1], q[:1], jnp.zeros((1, 0)))
    plotting.plot_snapshots(robot, single, tmp_path / "one.png")
    assert len(closed[-1].axes[0].get_lines()) == 2  # one snapshot of two links
    before = plt.get_fignums()
    for bad in (tmp_path / "x.xyz", tmp_path / "missing" / "x.png"):
        with pytest.raises((ValueError, OSError)):
            plotting.plot_trajectory(traj, bad)
    with pytest.raises(ValueError, match="q must have shape"):
        plotting.plot_snapshots(sr.Robot([link]), traj, tmp_path / "s.png")
    assert plt.get_fignums() == before


def test_a_soft_body_without_pivot_is_drawn_through_its_centre_of_mass():
    # its middle point was the nodes' unweighted mean
    rule = quadrature.cylinder(0.02, 0.3, 3, 2, 4)
    density = 1000.0 + 3000.0 * np.asarray(rule.points)[:, 2]  # heavier towards the tip
    volume = quadrature.QuadratureRule(rule.points, rule.weights)
    soft = sr.SoftBody(kinematics.PlanarConstantCurvature(0.3), volume, density)
    robot = sr.Robot([sr.Link(joints.Revolute((0.0, 1.0, 0.0)), soft)])
    assert soft.volume.pivot is None
    line = plotting.backbones(robot, jnp.zeros(2))[0]
    w = np.asarray(rule.weights) * density
    np.testing.assert_allclose(line[1], w @ np.asarray(rule.points) / w.sum(), atol=1e-15)
