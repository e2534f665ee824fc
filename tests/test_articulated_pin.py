"""Forward dynamics of rigid chains against Pinocchio's articulated-body algorithm (`pinocchio.aba`),
an independent implementation: the public `softrigid.forward_dynamics` (Cholesky) and the `O(N)`
`softrigid._articulated.articulated_accelerations`, on seeded random chains of revolute,
prismatic and fixed joints (one structure, so each path compiles once) at random states.

Conventions (those of `robots.robot_from_rigid_links`): link i is joint i, then body i, whose
centre of mass and inertia are given in the frame after the joint; the joint origin is placed in
body i−1's distal frame. Pinocchio's placement of joint i in its parent joint's frame is therefore
`D_{i−1} · O_i`, composed with the placements of the fixed links in between (their bodies are
appended to the parent joint).
"""

from __future__ import annotations

import jax
import numpy as np
import pinocchio  # the test extra
import pytest
from robots import random_rigid_link, robot_from_rigid_links

import softrigid as sr

# One structure for every seed, so the compiled programs are shared across the chains; runs of
# equal joints are one group each (three groups compile in a few seconds, seven alternating
# joints take twice as long). The fixed link in the middle is a link without coordinates.
KINDS = ("revolute",) * 3 + ("fixed",) + ("prismatic",) * 3
SEEDS = (0, 1)
N_STATES = 3
GRAVITY = (0.3, -1.1, -9.81)
RTOL = 1e-10


def _se3(rot: np.ndarray, trans: np.ndarray):
    return pinocchio.SE3(np.asarray(rot, dtype=float), np.asarray(trans, dtype=float))


def pinocchio_chain(links, gravity=GRAVITY):
    """The `newton_euler` chain as a Pinocchio model: revolute and prismatic joints with
    unaligned axes; a fixed link's body is appended to the last moving joint."""
    model = pinocchio.Model()
    model.gravity = pinocchio.Motion(np.asarray(gravity, dtype=float), np.zeros(3))
    parent = 0  # the universe
    offset = pinocchio.SE3.Identity()  # body i−1's frame in the frame of joint `parent`
    distal = pinocchio.SE3.Identity()  # D_{i−1}, the identity for the base
    for i, link in enumerate(links):
        joint_frame = offset * distal * _se3(link.origin_rot, link.origin_t)
        distal = _se3(link.distal_rot, link.distal_t)
        inertia = pinocchio.Inertia(link.mass, np.asarray(link.com), np.asarray(link.inertia))
        if link.kind == "fixed":
            model.appendBodyToJoint(parent, inertia, joint_frame)
            offset = joint_frame
            continue
        axis = np.asarray(link.axis, dtype=float)
        joint_model = {
            "revolute": pinocchio.JointModelRevoluteUnaligned,
            "prismatic": pinocchio.JointModelPrismaticUnaligned,
        }[link.kind](axis)
        parent = model.addJoint(parent, joint_model, joint_frame, f"joint_{i}")
        model.appendBodyToJoint(parent, inertia, pinocchio.SE3.Identity())
        offset = pinocchio.SE3.Identity()
    return model


def _chain(seed: int):
    rng = np.random.default_rng(seed)
    links = [random_rigid_link(rng, kind) for kind in KINDS]
    return robot_from_rigid_links(links, gravity=GRAVITY), pinocchio_chain(links)


@pytest.fixture(scope="module")
def chains():
    return [_chain(seed) for seed in SEEDS]


@pytest.fixture(scope="module")
def articulated():
    try:
        from softrigid._articulated import articulated_accelerations
    except ImportError as exc:  # written concurrently
        pytest.skip(f"softrigid._articulated is not importable: {exc}")
    # the robot is an argument: chains of one structure share the compiled program
    return jax.jit(articulated_accelerations)


def _states(robot: sr.Robot, seed: int):
    rng = np.random.default_rng(1000 + seed)
    for _ in range(N_STATES):
        yield (
            rng.uniform(-np.pi, np.pi, robot.n_q),
            rng.normal(size=robot.n_q),
            3.0 * rng.normal(size=robot.n_q),
        )


def _aba(model, q, qd, tau) -> np.ndarray:
    return np.array(pinocchio.aba(model, model.createData(), q, qd, tau))


def _assert_close(actual, desired):
    desired = np.asarray(desired)
    np.testing.assert_allclose(
        np.asarray(actual), desired, rtol=RTOL, atol=RTOL * np.max(np.abs(desired))
    )


def test_pinocchio_chain_has_the_same_coordinates(chains):
    for robot, model in chains:
        assert model.nq == model.nv == robot.n_q == sum(k != "fixed" for k in KINDS)


def test_cholesky_forward_dynamics_matches_pinocchio_aba(chains):
    for seed, (robot, model) in zip(SEEDS, chains):
        for q, qd, tau in _states(robot, seed):
            _assert_close(sr.forward_dynamics(robot, q, qd, tau), _aba(model, q, qd, tau))


def test_articulated_accelerations_match_pinocchio_aba(chains, articulated):
    for seed, (robot, model) in zip(SEEDS, chains):
        for q, qd, tau in _states(robot, seed):
            _assert_close(articulated(robot, q, qd, tau), _aba(model, q, qd, tau))
