"""Single precision: models build and evaluate with x64 off (`jax.enable_x64(False)`), their
geometric checks tolerant to float32 rounding, their values float32's rounding of float64's.

`benchmarks/gpu.py` measures float32's error on every benchmark robot; here one rigid chain and
the seed's helicoid body, which float32 rounding pushes across a check's float64 tolerance
(its distal pivot on the mesh boundary, its map's `det F = 1`, a joint origin's rotation).
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import softrigid as sr
from softrigid import joints, kinematics, materials, quadrature
from softrigid._articulated import choose_solver
from softrigid._module import rounding_tolerance
from softrigid.kinematics import lvp

MESH = Path(__file__).resolve().parents[1] / "meshes" / "helicoid.vtu"


def _chain(seed: int) -> sr.Robot:
    rng = np.random.default_rng(seed)
    links = []
    for _ in range(4):
        rot = Rotation.random(random_state=rng).as_matrix()
        links.append(
            sr.Link(
                joints.Revolute((0.0, 0.0, 1.0), origin=(rot, rng.uniform(-0.2, 0.2, 3))),
                sr.RigidBody(1.0 + rng.uniform(), rng.uniform(-0.1, 0.1, 3), 0.01 * np.eye(3)),
            )
        )
    return sr.Robot(links, gravity=(0.0, 0.0, -9.81))


def test_rounding_tolerance_follows_the_dtype() -> None:
    assert rounding_tolerance(np.zeros(3), 1e-9) == 1e-9
    assert rounding_tolerance(np.zeros(3, np.float32), 1e-9) == pytest.approx(
        100 * np.finfo(np.float32).eps
    )
    assert rounding_tolerance(np.zeros(3, np.int64), 1e-8) == 1e-8


def test_a_rigid_chain_in_float32_is_float64_rounded() -> None:
    """Joint origins whose rotations float32 rounds to orthonormal within ~1e-7 are accepted;
    the inverse dynamics agrees with float64's to float32 accuracy."""
    rng = np.random.default_rng(3)
    q, qd, qdd = (rng.uniform(-1.0, 1.0, 4) for _ in range(3))
    reference = np.asarray(sr.inverse_dynamics(_chain(0), q, qd, qdd))
    with jax.enable_x64(False):
        robot = _chain(0)
        nu = np.asarray(jax.jit(sr.inverse_dynamics)(robot, q, qd, qdd))
    assert nu.dtype == np.float32
    assert np.linalg.norm(nu - reference) < 1e-5 * np.linalg.norm(reference)


def test_auto_solver_is_articulated_in_float32() -> None:
    """`solver="auto"` takes the articulated path in float32 at any size (the accurate one
    there) and Cholesky for this 4-joint rigid chain in float64; both agree with float64 to
    float32 accuracy on this well-conditioned chain."""
    robot64 = _chain(1)
    assert choose_solver("t", robot64, "auto") == "cholesky"
    rng = np.random.default_rng(4)
    q, qd, u = (rng.uniform(-1.0, 1.0, 4) for _ in range(3))
    reference = np.asarray(sr.forward_dynamics(robot64, q, qd, u))
    with jax.enable_x64(False):
        robot = _chain(1)
        assert choose_solver("t", robot, "auto") == "articulated"
        qdd = np.asarray(sr.forward_dynamics(robot, q, qd, u))
    assert qdd.dtype == np.float32
    assert np.linalg.norm(qdd - reference) < 1e-4 * np.linalg.norm(reference)


def test_the_helicoid_body_builds_in_float32() -> None:
    """The pivot (0, 0, L) on the mesh's top face and `det F = 1` (float32's is good to
    ~1e-6 with matrix products in float32, which a GPU's default TensorFloat-32 is not: checked
    on an H200) pass their checks; a pivot clearly outside still fails."""
    with jax.enable_x64(False), jax.default_matmul_precision("highest"):
        rule = quadrature.from_mesh(MESH, degree=1)
        law = materials.IncompressibleNeoHookean(C=0.178e6, eta=0.05)
        body = sr.SoftBody(lvp.helicoid_segment(0.1), rule, density=960.0, material=law)
        assert body.volume.points.dtype == np.float32
        with pytest.raises(ValueError, match="pivot .* lies outside"):
            sr.SoftBody(
                lvp.helicoid_segment(0.1),
                rule,
                density=960.0,
                pivot=(0.0, 0.0, 0.1001),
                contact_points=((0.01, 0.0, 0.1), (0.0, 0.01, 0.1)),
            )


def test_a_float32_volume_check_names_reduced_precision_products() -> None:
    """In float32, a failed `det F = 1` check also names the GPU's TensorFloat-32 products (on
    an H100 they moved the helicoid's `det F` by 4e-3 at `q = 0`); float64's message does not."""
    law = materials.IncompressibleNeoHookean(C=1.0)

    def build() -> None:
        rule = quadrature.cylinder(0.03, 0.3, n_axial=3, n_radial=2, n_angular=5)
        sr.SoftBody(kinematics.PlanarConstantCurvature(0.3), rule, density=1.0, material=law)

    with pytest.raises(ValueError, match="volume-preserving") as f64:
        build()
    assert "default_matmul_precision" not in str(f64.value)
    with jax.enable_x64(False), pytest.raises(ValueError, match=r"default_matmul_precision"):
        build()


def test_a_float32_robot_under_x64_is_named() -> None:
    """With x64 on, a robot of float32 leaves and float32 states failed deep in a scan (carry
    dtypes); float32 is computed with x64 off, float32 parameters with float64 states in
    float64."""
    robot = jax.tree_util.tree_map(lambda a: a.astype(np.float32), _chain(0))
    q32 = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match="a float32 robot with float32 states under JAX's x64"):
        sr.mass_matrix(robot, q32)
    assert sr.mass_matrix(robot, q32.astype(np.float64)).dtype == np.float64
    # a soft robot's eager calls took the fast path, which did not ask (float64 `M`, float32
    # elastic forces), where `jit` refused: refused both ways now
    soft = jax.tree_util.tree_map(lambda a: a.astype(np.float32), _tendon_arm())
    q = np.full(soft.n_q, 0.1, np.float32)
    for fn in (sr.mass_matrix, sr.elastic_force, jax.jit(sr.mass_matrix)):
        with pytest.raises(TypeError, match="float32 robot with float32 states under JAX's x64"):
            fn(soft, q)
    assert sr.elastic_force(soft, q.astype(np.float64)).dtype == np.float64


def test_empirical_cubature_asks_for_float64() -> None:
    """Its fit checks the integrals to 1e-9: in float32 it refused them as 'not linear in the
    weights' (their rounding, 6e-8, above the linearity test's 1e-8)."""
    with jax.enable_x64(False):
        full = quadrature.cylinder(0.02, 0.2, n_axial=3, n_radial=1, n_angular=3)

        def integrals(rule, q):
            body = sr.SoftBody(kinematics.ConstantCurvature3D(0.2), rule, 1000.0)
            return sr.gravity_force(sr.Robot([sr.Link(joints.Fixed(), body)]), q)

        with pytest.raises(ValueError, match="empirical: the integrals are float32; the fit needs"):
            quadrature.empirical(full, integrals, np.zeros((2, 3), np.float32))


def _tendon_arm() -> sr.Robot:
    segment = sr.SoftBody(
        kinematics.PlanarConstantCurvature(0.2),
        quadrature.cylinder(0.02, 0.2, 3, 1, 3),
        density=1000.0,
        material=materials.CompressibleNeoHookean.from_young(1e6, 0.45, eta=0.02),
    )
    link = sr.RigidBody(
        1.0, (0.0, 0.0, 0.1), np.diag([3e-3, 3e-3, 1e-4]), distal=(np.eye(3), (0, 0, 0.2))
    )
    return sr.Robot(
        [sr.Link(joints.Revolute((0, 1, 0)), link), sr.Link(joints.Fixed(), segment)],
        actuators=(sr.actuators.JointMotor(0), sr.actuators.Tendon([1], (0.012, 0.0))),
    )


def _float32_and_float64(solve) -> None:
    """`solve()`'s arrays in float32 (x64 off) agree with float64's to float32 accuracy."""
    reference = solve()
    with jax.enable_x64(False):
        single = solve()
    for got, ref in zip(single, reference):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-5)


U_ARM = np.array([0.0, 2.0])


def test_newton_tolerances_are_reachable_in_float32() -> None:
    """The default tolerances (1e-10) lie below float32's rounding: `equilibrium` and the
    implicit integrators failed in float32 with "did not converge" whatever `tol` or
    `max_iter` the user gave. Each test is floored at 100 units of rounding."""

    def solve() -> tuple[np.ndarray, ...]:
        chain = _chain(2)
        method = sr.integrators.GeneralizedAlpha()
        run = sr.simulate(chain, np.full(4, 0.3), np.zeros(4), 0.02, 0.005, method=method)
        return np.asarray(sr.equilibrium(_tendon_arm(), U_ARM).q), np.asarray(run.q[-1])

    _float32_and_float64(solve)


@pytest.mark.slow
def test_inverse_statics_tolerances_are_reachable_in_float32() -> None:
    """`inverse_statics` solved its equilibria to a fixed 1e-12, so it failed in float32 at
    any `tol`; its own test and its equilibria's are floored at 100 units of rounding."""

    def solve() -> tuple[np.ndarray, ...]:
        robot = _tendon_arm()

        def tip(q):
            return sr.forward_kinematics(robot, q)[1][-1][np.array([0, 2])]

        sol = sr.inverse_statics(robot, tip, np.array([0.01, 0.39]), u0=U_ARM)
        return np.asarray(sol.q), np.asarray(sol.u)

    _float32_and_float64(solve)
