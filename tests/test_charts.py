"""Re-charting the rotation vectors of `Spherical` and `Free` joints (`Joint.rechart`, applied by
`simulate` after every step): the same rotation, angular velocity and angular acceleration in
the new chart, and a tumbling body (the tennis-racket flip) simulated for 10 s."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import joints
from softrigid._charts import rechart
from softrigid._math import rotation_exp, vee

INERTIA = np.diag([1.0, 2.0, 3.0])
# compiled once (eager calls dispatch every small operation on its own)
_rotation = jax.jit(jax.vmap(rotation_exp))


def _rot(phi):
    return _rotation(phi[None])[0]


def _omega(phi, phid):
    # world angular velocity: skew(ω) = Ṙ Rᵀ
    rot, rot_d = jax.jvp(rotation_exp, (phi,), (phid,))
    return vee(rot_d @ rot.T)


def _omega_dot(phi, phid, phidd):
    return jax.jvp(_omega, (phi, phid), (phid, phidd))[1]


@jax.jit
def _both_charts(joint, q, qd, qdd):
    """Rotation, angular velocity and acceleration, and |φ|, before and after `rechart`."""
    r = slice(joint.n_q - 3, joint.n_q)
    out = []
    for x, xd, xdd in ((q, qd, qdd), joint.rechart(q, qd, qdd)):
        rot = rotation_exp(x[r])
        rates = (_omega(x[r], xd[r]), _omega_dot(x[r], xd[r], xdd[r]))
        out.append((x, xd, xdd, rot, *rates, jnp.linalg.norm(x[r])))
    return out


def test_rechart_keeps_the_rotation_and_its_rates():
    # a free joint (the spherical joint's rotation vector is the same kernel)
    joint = joints.Free()
    rng = np.random.default_rng(3)
    n = joint.n_q
    q, qd, qdd = (rng.normal(size=n) for _ in range(3))
    q[n - 3 :] = (2.0, -2.5, 1.0)  # |φ| = 3.35 > π
    old, new = _both_charts(joint, q, qd, qdd)
    np.testing.assert_allclose(new[6], 2 * np.pi - old[6], rtol=1e-14)
    np.testing.assert_allclose(new[3], old[3], atol=1e-15)  # the same rotation,
    np.testing.assert_allclose(new[4], old[4], atol=1e-14)  # angular velocity
    np.testing.assert_allclose(new[5], old[5], atol=1e-13)  # and angular acceleration
    # the translation of a free joint is not touched
    np.testing.assert_array_equal(new[0][: n - 3], q[: n - 3])
    # beyond 3π, as many turns as it takes: |φ| = 3.5π and 4.6π come back to 0.5π and 0.6π
    direction = q[n - 3 :] / np.linalg.norm(q[n - 3 :])
    for turns in (3.5, 4.6):
        q[n - 3 :] = turns * np.pi * direction
        old, new = _both_charts(joint, q, qd, qdd)
        np.testing.assert_allclose(new[6], abs(turns - 2 * round(turns / 2)) * np.pi, rtol=1e-13)
        np.testing.assert_allclose(new[3], old[3], atol=1e-14)
        np.testing.assert_allclose(new[4], old[4], atol=1e-13)
        np.testing.assert_allclose(new[5], old[5], atol=1e-12)
    # |φ| ≤ π is left as it is
    q[n - 3 :] = (1.0, -1.25, 0.5)
    old, new = _both_charts(joint, q, qd, qdd)
    for k in range(3):
        np.testing.assert_array_equal(new[k], old[k])


def test_rechart_leaves_sprung_joints_and_bodies_alone():
    # a spring on a rotation vector is defined in its chart: that joint keeps it
    sprung = joints.Spherical(stiffness=1.0)
    q = jnp.array([2.0, -2.5, 1.0])
    for new, old in zip(jax.jit(sprung.rechart)(q, q), (q, q)):
        np.testing.assert_array_equal(new, old)
    robot = sr.Robot(
        [
            sr.Link(joints.Revolute((0, 0, 1)), sr.RigidBody(1.0, (0, 0, 0), jnp.eye(3))),
            sr.Link(joints.Spherical(), sr.RigidBody(1.0, (0, 0, 0), jnp.eye(3))),
        ]
    )
    q = jnp.array([5.0, 2.0, -2.5, 1.0])
    q1, qd1 = jax.jit(rechart)(robot, q, jnp.ones(4))
    assert q1[0] == 5.0 and qd1[0] == 1.0  # a revolute angle is a global chart
    np.testing.assert_allclose(_rot(q1[1:]), _rot(q[1:]), atol=1e-15)


def _left_jacobian(phi):
    """`J_l(φ) = I + (1 − cos θ)/θ² K + (θ − sin θ)/θ³ K²`, `K = skew(φ)`, batched (NumPy)."""
    theta = np.linalg.norm(phi, axis=1)[:, None, None]
    k = np.zeros((len(phi), 3, 3))
    k[:, 0, 1], k[:, 0, 2], k[:, 1, 2] = -phi[:, 2], phi[:, 1], -phi[:, 0]
    k = k - k.transpose(0, 2, 1)
    safe = np.where(theta < 1e-6, 1.0, theta)
    a = np.where(theta < 1e-6, 0.5, (1 - np.cos(safe)) / safe**2)
    b = np.where(theta < 1e-6, 1 / 6, (safe - np.sin(safe)) / safe**3)
    return np.eye(3) + a * k + b * k @ k


def test_tumbling_body_flips_and_conserves_energy_and_momentum():
    """A free body spun about its intermediate principal axis (2π rad/s, perturbed by 1e-3
    rad/s about the others) flips about every 2.5 s; over 10 s of RK4 at 1 ms its rotation
    vector turns about ten times through the re-charting at |φ| = π."""
    body = sr.RigidBody(1.0, jnp.zeros(3), jnp.asarray(INERTIA))
    robot = sr.Robot([sr.Link(joints.Free(), body)], gravity=(0.0, 0.0, 0.0))
    qd0 = jnp.array([0.0, 0.0, 0.0, 1e-3, 2 * np.pi, 1e-3])
    traj = sr.simulate(robot, jnp.zeros(6), qd0, 10.0, 1e-3)
    phi, phid = np.asarray(traj.q[:, 3:]), np.asarray(traj.qd[:, 3:])
    assert np.linalg.norm(phi, axis=1).max() <= np.pi + 1e-12
    rot = np.asarray(_rotation(traj.q[:, 3:]))
    omega = np.einsum("nij,nj->ni", _left_jacobian(phi), phid)  # world ω = J_l(φ) φ̇
    inertia = rot @ INERTIA @ rot.transpose(0, 2, 1)
    momentum = np.einsum("nij,nj->ni", inertia, omega)
    energy = 0.5 * np.einsum("ni,ni->n", omega, momentum)
    # measured: energy 2e-11, world angular momentum 1e-10 (relative)
    assert np.abs(energy / energy[0] - 1).max() < 1e-9
    assert np.linalg.norm(momentum - momentum[0], axis=1).max() < 1e-8 * np.linalg.norm(momentum[0])
    # the intermediate-axis spin flips (the body-frame rate about it changes sign)
    spin = np.einsum("nji,nj->ni", rot, omega)[:, 1]
    assert np.sum(np.diff(np.sign(spin)) != 0) >= 2
    assert np.abs(np.asarray(traj.q[:, :3])).max() == 0.0  # no force: it stays in place


def test_both_solvers_refuse_a_rotation_vector_near_the_singularity():
    # 1e-7 from |φ| = 2π no pivot failed and no coordinate's own inertia vanished, and the
    # Cholesky path (the default for a small rigid robot) returned q̈ of 1e16 whose inverse
    # dynamics missed u by 0.035: its pivots are now held against their coordinates' inertia,
    # as the articulated solver's are; 1e-2 from it both solve alike
    body = sr.RigidBody(2.0, (0.0, 0.0, 0.1), np.diag([0.02, 0.03, 0.04]))
    robot = sr.Robot([sr.Link(joints.Spherical(), body)])
    axis = np.array([1.0, 2.0, -0.5]) / np.linalg.norm([1.0, 2.0, -0.5])
    qd, u = jnp.array([0.3, -0.2, 0.5]), jnp.array([0.1, 0.2, -0.3])
    near = jnp.asarray(axis * (2 * np.pi - 1e-7))
    for solver in ("auto", "cholesky", "articulated"):
        with pytest.raises(ValueError, match="not positive definite at"):
            sr.forward_dynamics(robot, near, qd, u, solver=solver)
    away = jnp.asarray(axis * (2 * np.pi - 1e-2))
    qdd = {
        s: sr.forward_dynamics(robot, away, qd, u, solver=s) for s in ("cholesky", "articulated")
    }
    np.testing.assert_allclose(qdd["cholesky"], qdd["articulated"], rtol=1e-8)
    np.testing.assert_allclose(sr.inverse_dynamics(robot, away, qd, qdd["cholesky"]), u, atol=1e-8)


def test_a_start_at_the_chart_singularity_is_recharted_and_named():
    # |φ| = 2π is the identity rotation, where the rotation vector's Jacobian is singular: M has
    # eigenvalues of 1e-35 beside 1e-2, Cholesky's pivots stayed positive and forward_dynamics
    # returned 7e14 silently; simulate then failed at its first step "reduce dt"
    body = sr.RigidBody(1.0, (0.0, 0.0, 0.1), np.diag([0.01, 0.012, 0.005]))
    robot = sr.Robot([sr.Link(joints.Spherical(), body)])
    q0, qd0 = jnp.array([2 * np.pi, 0.0, 0.0]), jnp.full(3, 0.3)
    message = r"not positive definite at coordinate 1 .*a rotation vector at or near \|φ\| = 2π"
    with pytest.raises(ValueError, match=message):
        sr.forward_dynamics(robot, q0, qd0, jnp.zeros(3))
    # simulate starts from the same rotation in the regular chart, with the same energy
    for method in ("rk4", "bdf"):
        traj = sr.simulate(robot, q0, qd0, 0.01, 0.001, method=method)
        np.testing.assert_allclose(traj.q[0], 0.0, atol=1e-15)
        e0, e1 = (
            float(sr.kinetic_energy(robot, q, v)) for q, v in ((q0, qd0), (traj.q[0], traj.qd[0]))
        )
        np.testing.assert_allclose(e1, e0, rtol=1e-12)
        assert np.all(np.isfinite(np.asarray(traj.q)))


def test_a_free_base_at_the_chart_singularity_is_named_by_the_articulated_solve():
    # six coordinates: the articulated solve, whose D_0 had pivots of 1e-18 beside 0.1
    body = sr.RigidBody(1.0, (0.0, 0.0, 0.1), np.diag([0.01, 0.012, 0.005]))
    robot = sr.Robot([sr.Link(joints.Free(), body)], gravity=(0.0, 0.0, -9.81))
    q = jnp.zeros(6).at[3].set(2 * np.pi)
    with pytest.raises(ValueError, match=r"articulated inertia D_0 of link 0 is not positive"):
        sr.forward_dynamics(robot, q, jnp.full(6, 0.3), jnp.zeros(6), solver="articulated")
    traj = sr.simulate(robot, q, jnp.full(6, 0.3), 0.01, 0.001, solver="articulated")
    assert np.all(np.isfinite(np.asarray(traj.q)))
