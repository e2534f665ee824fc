"""Empirical cubature (`quadrature.empirical`): a positive sub-rule fitted to sampled integrands.

Oracles: the full rule's integrals at states that were not sampled; the volume; the polynomial
compression (`compress`) of the same rule, which the fitted rule must beat where the integrand
is nearly singular (the point of the method); the gripper's dynamics on its meshed volume.
"""

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import joints, materials, quadrature
from softrigid.kinematics import lvp

MESHES = Path(__file__).resolve().parents[1] / "meshes"


@functools.cache
def cylinder_rule():
    return quadrature.cylinder(0.02, 0.1, n_axial=8, n_radial=8, n_angular=16)


def near_singular(rule, a):
    """Two integrals of `1 / |x − c(a)|`, `c` a line 1 mm outside the cylinder at distance
    `a` above its plane: smooth on the volume, with derivatives growing like `1/a`."""
    x = rule.points
    v = 1.0 / jnp.sqrt((x[:, 0] - 0.021) ** 2 + x[:, 1] ** 2 + a**2)
    return jnp.stack([rule.weights @ v, rule.weights @ (v * x[:, 2])])


@functools.cache
def fitted():
    return quadrature.empirical(
        cylinder_rule(), near_singular, jnp.linspace(0.002, 0.02, 12), return_info=True
    )


def test_positive_subset_keeps_the_volume_and_the_samples():
    full = cylinder_rule()
    rule, info = fitted()
    idx = info.indices
    assert info.n_input == full.n_points and rule.n_points == info.n_nodes == idx.size
    assert info.n_nodes <= info.rank and info.n_nodes < full.n_points // 20
    assert np.all(np.diff(idx) > 0) and np.all(np.asarray(rule.weights) > 0)
    np.testing.assert_array_equal(np.asarray(rule.points), np.asarray(full.points)[idx])
    np.testing.assert_allclose(rule.volume, full.volume, rtol=1e-14)
    assert info.residual < 1e-13 and info.snapshot_error < 1e-9
    assert info.n_snapshots == 1 + 12 * 2  # the constant function and 2 integrals × 12 samples
    s = info.singular_values  # of the snapshots without the constant: rank − 1 kept
    assert np.all(np.diff(s) <= 0) and s[info.rank - 2] > 1e-10 * s[0] >= s[info.rank - 1]


def test_the_volume_is_exact_at_any_tolerance():
    # the constant is a basis function of its own: at a loose tol (a 1e-6 fit of the snapshots)
    # the volume is still met to rounding (it was off by ~tol when the constant was one
    # snapshot among the others, truncated with them)
    full = cylinder_rule()
    rule, info = quadrature.empirical(
        full, near_singular, jnp.linspace(0.002, 0.02, 12), tol=1e-4, return_info=True
    )
    assert info.snapshot_error > 1e-8  # a loose fit
    np.testing.assert_allclose(rule.volume, full.volume, rtol=1e-14)


@pytest.mark.parametrize("scale", [1e160, 1e-170])
def test_integrands_of_extreme_size_are_fitted(scale):
    # their squares overflowed (underflowed): the snapshots were dropped and one node kept,
    # with an error of 0.37 reported nowhere
    full = cylinder_rule()
    rule, info = quadrature.empirical(
        full,
        lambda r, a: scale * near_singular(r, a),
        jnp.linspace(0.002, 0.02, 12),
        return_info=True,
    )
    assert 1 < info.n_nodes <= info.rank and info.snapshot_error < 1e-9
    np.testing.assert_allclose(rule.volume, full.volume, rtol=1e-14)


def test_fitting_again_compiles_nothing():
    # the snapshots' program is module-level with the integrals static: a second fit of the
    # same integrals on a rule of the same structure (other samples) traces them no more
    traces = []

    def counted(rule, a):
        traces.append(1)
        return near_singular(rule, a)

    full = cylinder_rule()
    first = quadrature.empirical(full, counted, jnp.linspace(0.002, 0.02, 6))
    before = len(traces)
    second = quadrature.empirical(full, counted, jnp.linspace(0.003, 0.02, 6))
    assert before > 0 and len(traces) == before
    assert first.n_points > 0 and second.n_points > 0


def test_unsampled_states_where_polynomial_moments_fail():
    full, (rule, _) = cylinder_rule(), fitted()
    unseen = (0.0033, 0.0071, 0.015)
    ref = np.stack([near_singular(full, a) for a in unseen])
    err = np.abs(np.stack([near_singular(rule, a) for a in unseen]) - ref) / np.abs(ref)
    assert err.max() < 1e-7
    # degree-8 moments on seven times the nodes: the integrand is no polynomial of degree 8
    poly = quadrature.compress(full, 8)
    assert poly.n_points > 5 * rule.n_points
    err_poly = np.abs(np.stack([near_singular(poly, a) for a in unseen]) - ref) / np.abs(ref)
    assert err_poly.max() > 1e-3


def test_chunked_solve_keeps_the_integrals(monkeypatch):
    """A large rule is solved chunk by chunk first (here forced with small chunks): the union
    of the chunks' sub-rules has the integrals of the whole, and so has the final rule."""
    from softrigid.quadrature import _subrules

    monkeypatch.setattr(_subrules, "_CHUNK_ENTRIES", 2**12)
    rule, info = quadrature.empirical(
        cylinder_rule(), near_singular, jnp.linspace(0.002, 0.02, 12), return_info=True
    )
    assert info.snapshot_error < 1e-9 and info.n_nodes <= info.rank
    np.testing.assert_allclose(rule.volume, cylinder_rule().volume, rtol=1e-14)


def test_tolerance_trades_nodes_for_accuracy():
    _, info = quadrature.empirical(
        cylinder_rule(), near_singular, jnp.linspace(0.002, 0.02, 12), tol=1e-4, return_info=True
    )
    assert info.n_nodes < fitted()[1].n_nodes
    assert 1e-9 < info.snapshot_error < 1e-3


GRIPPER_FRAME = {
    "pivot": (0.016, 0.0, 0.05),
    "contact_points": ((0.02, 0.0, 0.05), (0.016, 0.004, 0.05)),
}


def _gripper(rule):
    material = materials.CompressibleNeoHookean(mu=0.356e6, lam=3.56e6, eta=0.05)
    body = sr.SoftBody(lvp.gripper(0.05), rule, 960.0, material=material, **GRIPPER_FRAME)
    return sr.Robot([sr.Link(joints.Fixed(), body)], gravity=(0.0, 0.0, -9.81))


def _gripper_terms(rule, state):
    robot = _gripper(rule)
    q, qd, qdd = state
    return (
        sr.mass_matrix(robot, q),
        sr.inverse_dynamics(robot, q, qd, qdd),
        sr.elastic_force(robot, q),
        sr.damping_force(robot, q, qd),
    )


def _gripper_states(n, seed):
    rng = np.random.default_rng(seed)
    scale = np.array([0.2, 5e-5])  # stretch, source (m²): inside the map's range on the mesh
    q = scale * rng.uniform(-1.0, 1.0, (n, 2))
    qd = scale * rng.uniform(-1.0, 1.0, (n, 2))
    return jnp.asarray(q), jnp.asarray(qd), jnp.asarray(10.0 * qd)


def test_gripper_dynamics_at_unsampled_states():
    """The gripper's source map is singular on the axis of its bore, where degree-based
    compression converges slowly; the fitted rule matches the full mesh's mass matrix, inverse
    dynamics, elastic and Kelvin–Voigt forces at states it was not fitted on."""
    full = quadrature.from_mesh(MESHES / "gripper.vtu", degree=1)
    rule = quadrature.empirical(full, _gripper_terms, _gripper_states(6, seed=5))
    assert rule.n_points < full.n_points // 50
    evaluate = jax.jit(jax.vmap(_gripper_terms, in_axes=(None, 0)))
    test = _gripper_states(2, seed=11)
    for got, ref in zip(evaluate(rule, test), evaluate(full, test)):
        scale = np.abs(np.asarray(ref)).reshape(2, -1).max(1)
        diff = np.abs(np.asarray(got - ref)).reshape(2, -1).max(1)
        assert np.all(diff <= 1e-6 * scale), diff / scale


def test_body_integrals_fit_a_rule_for_any_chain():
    """Fitted to the body's own integrals (`SoftBody.integrals`: its mass and velocity moments
    and internal forces), the rule serves the body behind joints and other links: the
    chain's mass matrix and inverse dynamics at unsampled states equal the full rule's."""
    full = quadrature.from_mesh(MESHES / "gripper.vtu", degree=1)
    material = materials.CompressibleNeoHookean(mu=0.356e6, lam=3.56e6, eta=0.05)

    def body(rule):
        return sr.SoftBody(lvp.gripper(0.05), rule, 960.0, material=material, **GRIPPER_FRAME)

    q, qd, _ = _gripper_states(6, seed=5)
    rule = quadrature.empirical(full, lambda r, s: body(r).integrals(*s), (q, qd))
    assert rule.n_points < full.n_points // 10

    def chain(rule):
        arm = sr.RigidBody(1.0, (0.0, 0.0, 0.05), 1e-3 * np.eye(3), distal=(np.eye(3), (0, 0, 0.1)))
        links = [
            sr.Link(joints.Revolute((0, 1, 0)), arm),
            sr.Link(joints.Revolute((1, 0, 0)), body(rule)),
        ]
        return sr.Robot(links, gravity=(0.3, -1.0, -9.81))

    both = jax.jit(lambda r, *s: sr.mass_inverse_dynamics(chain(r), *s))
    rng = np.random.default_rng(11)
    gq, gqd, gqdd = _gripper_states(2, seed=11)
    for k in range(2):
        x = jnp.concatenate([jnp.asarray(rng.uniform(-1.0, 1.0, 2)), gq[k]])
        v = jnp.concatenate([jnp.asarray(rng.normal(size=2)), gqd[k]])
        a = jnp.concatenate([jnp.asarray(rng.normal(size=2)), gqdd[k]])
        for got, ref in zip(both(rule, x, v, a), both(full, x, v, a)):
            assert float(jnp.abs(got - ref).max()) <= 1e-7 * float(jnp.abs(ref).max())


def test_kept_fit_is_read_back_under_its_key(tmp_path, monkeypatch):
    """With a key and the cache's folder, a fit is kept on disk and read back (no snapshots
    taken again); another key, other samples or `return_info` fit again."""
    from softrigid import _persistent_cache
    from softrigid.quadrature import _empirical

    folder = tmp_path / "quadrature"
    reference = fitted()[0]  # the fit without a key (cached per process: fitted before the count)
    monkeypatch.setattr(_persistent_cache, "_rules", folder)
    fits = []
    fit = _empirical._fit
    monkeypatch.setattr(_empirical, "_fit", lambda *a: fits.append(1) or fit(*a))
    samples = jnp.linspace(0.002, 0.02, 12)
    first = quadrature.empirical(cylinder_rule(), near_singular, samples, key="near")
    assert len(fits) == 1 and len(list(folder.glob("*.npz"))) == 1
    again = quadrature.empirical(cylinder_rule(), near_singular, samples, key="near")
    assert len(fits) == 1
    np.testing.assert_array_equal(again.points, first.points)
    np.testing.assert_array_equal(again.weights, first.weights)
    np.testing.assert_array_equal(first.weights, reference.weights)  # as without the folder
    quadrature.empirical(cylinder_rule(), near_singular, samples, key="other")
    quadrature.empirical(cylinder_rule(), near_singular, samples[:6], key="near")
    _, info = quadrature.empirical(
        cylinder_rule(), near_singular, samples, key="near", return_info=True
    )
    assert len(fits) == 4 and info.n_nodes == first.n_points
    quadrature.empirical(cylinder_rule(), near_singular, samples)  # no key: not kept
    assert len(list(folder.glob("*.npz"))) == 3
    # samples that are not arrays are named with a key too (its hash read them first: "could
    # not convert string to float")
    with pytest.raises(TypeError, match="empirical: samples must be arrays"):
        quadrature.empirical(cylinder_rule(), near_singular, {"a": samples, "t": "x"}, key="k")


def _nan(rule, a):
    return rule.weights @ jnp.log(rule.points[:, 0] - a)  # NaN where x1 < a


@pytest.mark.parametrize(
    ("args", "kw", "error", "match"),
    [
        (("rule", near_singular, jnp.ones(2)), {}, TypeError, "must be a QuadratureRule"),
        ((None, "f", jnp.ones(2)), {}, TypeError, "integrals must be callable"),
        ((None, near_singular, jnp.ones(2)), {"tol": 0.0}, ValueError, r"tol must be .* \(0, 1\)"),
        ((None, near_singular, jnp.ones(2)), {"tol": 1.5}, ValueError, "tol must be"),
        ((None, _nan, jnp.ones(2)), {}, ValueError, "not finite"),
        (
            (None, lambda r, s: r.weights @ r.points[:, 0] * s[0], (jnp.ones(2), jnp.ones(3))),
            {},
            ValueError,
            "one leading sample axis",
        ),
        ((None, near_singular, jnp.ones(0)), {}, ValueError, "at least one"),
        ((None, near_singular, 0.01), {}, ValueError, "one leading sample axis"),
        ((None, near_singular, jnp.ones(2)), {"key": 3}, TypeError, "key must be a string"),
        ((None, lambda r, s: None, jnp.ones(2)), {}, TypeError, "integrals.* returned no arrays"),
        ((None, near_singular, jnp.ones(2)), {"return_info": "no"}, TypeError, "return_info mu"),
        ((None, near_singular, "abc"), {}, TypeError, "empirical: samples must be arrays"),
        ((None, lambda r, s: "x", jnp.ones(2)), {}, TypeError, r"integrals\(rule, sample\) must r"),
        # not linear in the weights: the fit met Σ w ∂I/∂w, not I (9× off, silently)
        (
            (None, lambda r, s: jnp.sum(r.weights**2 * r.points[:, 2]) * s[0], jnp.ones((2, 1))),
            {},
            ValueError,
            "must be linear in the rule's weights",
        ),
        (
            (None, lambda r, s: jnp.sum(r.weights * r.points[:, 2]) * (1 + 1j) * s, jnp.ones(2)),
            {},
            TypeError,
            "must return real floating values, got complex",
        ),
    ],
)
def test_errors(args, kw, error, match):
    args = tuple(cylinder_rule() if a is None else a for a in args)
    with pytest.raises(error, match=match):
        quadrature.empirical(*args, **kw)
