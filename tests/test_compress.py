"""Compressed quadrature (`quadrature.compress`): Tchakaloff sub-rules.

The compressed rule is positive, its nodes are rows of the input's, it has at most
`C(d + 3, 3)` of them, it reproduces the input's moments up to degree `d` to rounding and not
beyond, it keeps what the rule knows (distal points, geometry, mesh, per-node density), and the
dynamics of a body on it match the full rule to the accuracy measured by
`benchmarks/compress_accuracy.py`.
"""

import functools
import math
import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import joints, kinematics, materials, quadrature
from softrigid.kinematics import lvp

MESHES = Path(__file__).resolve().parents[1] / "meshes"


@functools.cache
def cylinder_rule():
    """105 nodes, exact to degree 4 in the section and 9 along the axis."""
    return quadrature.cylinder(0.03, 0.3, n_axial=5, n_radial=3, n_angular=7)


@functools.cache
def compressed(degree):
    return quadrature.compress(cylinder_rule(), degree, return_info=True)


def _monomials(points, weights, degree):
    """`Σ w x^α` and `Σ w |x^α|` for every `|α| ≤ degree` (graded order)."""
    x = np.asarray(points)
    alphas = [
        (a, b, t - a - b) for t in range(degree + 1) for a in range(t + 1) for b in range(t - a + 1)
    ]
    mono = np.stack([x[:, 0] ** a * x[:, 1] ** b * x[:, 2] ** c for a, b, c in alphas])
    w = np.asarray(weights)
    return mono @ w, np.abs(mono) @ w, alphas


@pytest.mark.parametrize("degree", [0, 1, 3, 4])
def test_exact_to_degree_positive_subset(degree):
    rule = cylinder_rule()
    small, info = compressed(degree)
    pts, w = np.asarray(small.points), np.asarray(small.weights)
    # positive weights on a subset of the input's nodes (rows exactly equal)
    assert np.all(w > 0)
    np.testing.assert_array_equal(pts, np.asarray(rule.points)[info.indices])
    assert np.all(np.diff(info.indices) > 0)
    # at most C(d + 3, 3) nodes (Tchakaloff), reported
    bound = math.comb(degree + 3, 3)
    assert info.bound == bound and info.n_nodes == small.n_points <= bound
    assert info.n_input == rule.n_points and info.degree == degree
    # moments of degree ≤ d equal to rounding, and the reported residuals say so
    ref, scale, _ = _monomials(rule.points, rule.weights, degree)
    got, _, _ = _monomials(pts, w, degree)
    assert np.max(np.abs(got - ref) / scale) < 1e-12
    assert info.residual < 1e-12 and info.monomial_residual < 1e-12


def test_not_exact_beyond_degree():
    """Degree-4 compression of a rule exact further: some moment of degree 5 or 6 differs by
    much more than rounding (the rule is not accidentally of higher degree)."""
    rule = cylinder_rule()
    small, _ = compressed(4)
    ref, scale, alphas = _monomials(rule.points, rule.weights, 6)
    got, _, _ = _monomials(small.points, small.weights, 6)
    rel = np.abs(got - ref) / scale
    high = np.array([sum(a) > 4 for a in alphas])
    assert np.max(rel[~high]) < 1e-12
    assert np.max(rel[high]) > 1e-6


def test_segment_rule_uses_its_one_coordinate():
    """Nodes on the axis span one coordinate: the bound is `d + 1`, not `C(d + 3, 3)`."""
    rule = quadrature.segment(0.3, order=8)
    small, info = quadrature.compress(rule, 5, return_info=True)
    assert info.bound == 6 and small.n_points <= 6
    z, w = np.asarray(rule.points)[:, 2], np.asarray(rule.weights)
    zs, ws = np.asarray(small.points)[:, 2], np.asarray(small.weights)
    for k in range(6):
        assert abs(ws @ zs**k - w @ z**k) <= 1e-13 * (w @ np.abs(z) ** k)


def test_rules_without_extent_compress_to_their_point():
    # nodes at one point have no coordinate to fit (no extent): one node carries the whole
    # weight, exact to every degree; a one-node rule failed in the basis' construction
    one = quadrature.QuadratureRule(jnp.array([[0.0, 0.0, 0.1]]), jnp.array([1.0]))
    for degree in (0, 3):
        out = quadrature.compress(one, degree)
        np.testing.assert_array_equal(out.points, one.points)
        np.testing.assert_array_equal(out.weights, one.weights)
    same = quadrature.QuadratureRule(jnp.tile(jnp.array([0.0, 0.0, 0.1]), (3, 1)), jnp.ones(3))
    out = quadrature.compress(same, 2)
    assert out.n_points == 1
    np.testing.assert_allclose(out.weights, [3.0], rtol=1e-14)


def test_keeps_distal_points_geometry_and_mesh():
    rule = quadrature.from_mesh(MESHES / "helicoid.vtu", degree=1)
    small = quadrature.compress(rule, 3)
    for name in ("pivot", "contact_a", "contact_b"):
        np.testing.assert_array_equal(getattr(small, name), getattr(rule, name))
    assert small.geometry == "mesh" and small.mesh == rule.mesh and small.n_axial is None
    box = quadrature.box((0.02, 0.03, 0.1), order=3)
    small_box = quadrature.compress(box, 2)
    assert box.n_axial == 3 and small_box.n_axial is None
    assert small_box.geometry == "box"
    np.testing.assert_array_equal(small_box.dimensions, box.dimensions)


def test_per_node_density_is_subset_and_mass_moments_kept():
    """A non-uniform density: both the volume and the mass moments are matched (≤ 2N nodes)."""
    rule = quadrature.tetrahedron(degree=3)
    rng = np.random.default_rng(0)
    density = rng.uniform(500.0, 1500.0, rule.n_points)
    dense = quadrature.QuadratureRule(rule.points, rule.weights, density=density)
    small, info = quadrature.compress(dense, 1, return_info=True)
    assert info.bound == 2 * math.comb(4, 3) and small.n_points <= info.bound
    rho = np.asarray(dense.density)
    np.testing.assert_array_equal(small.density, rho[info.indices])
    for measure, kept in (
        (dense.weights, small.weights),
        (rho * dense.weights, small.density * small.weights),
    ):
        ref, scale, _ = _monomials(dense.points, measure, 1)
        got, _, _ = _monomials(small.points, kept, 1)
        assert np.max(np.abs(got - ref) / scale) < 1e-12


def _with_weights(rule, weights):
    """The rule with other weights, bypassing the constructor's checks (as a transformed or
    hand-assembled pytree could)."""
    leaves, tree = jax.tree_util.tree_flatten(rule)
    leaves[1] = jnp.asarray(weights)
    return jax.tree_util.tree_unflatten(tree, leaves)


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((cylinder_rule(), -1), ValueError, "degree must be a non-negative integer"),
        ((cylinder_rule(), 2.0), ValueError, "degree must be a non-negative integer"),
        ((cylinder_rule(), True), ValueError, "degree must be a non-negative integer"),
        ((quadrature.QuadratureRule(np.zeros((0, 3)), np.zeros(0)), 2), ValueError, "empty"),
        (("rule", 2), TypeError, "must be a QuadratureRule"),
        # four nodes carry no positive rule of degree 4 (a quadric vanishes on them)
        ((quadrature.tetrahedron(degree=2), 4), ValueError, r"from_mesh\(path, degree=4\)"),
    ],
)
def test_errors(args, error, match):
    with pytest.raises(error, match=match):
        quadrature.compress(*args)


def test_return_info_is_a_flag():
    # "no" returned (rule, info)
    with pytest.raises(TypeError, match="compress: return_info must be True or False, got 'no'"):
        quadrature.compress(cylinder_rule(), 2, return_info="no")


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan])
def test_non_positive_weights(bad):
    rule = cylinder_rule()
    weights = np.asarray(rule.weights).copy()
    weights[3] = bad
    with pytest.raises(ValueError, match=r"finite positive weights.*\[3\]"):
        quadrature.compress(_with_weights(rule, weights), 2)


# --- rules kept between processes (`enable_compilation_cache`) ----------------------------


@pytest.fixture
def kept(tmp_path, monkeypatch):
    """The folder `enable_compilation_cache` would give `compress` (without touching JAX's
    configuration), and a count of the solves `compress` makes."""
    from softrigid import _persistent_cache
    from softrigid.quadrature import _compress

    folder = tmp_path / "quadrature"
    monkeypatch.setattr(_persistent_cache, "_rules", folder)
    solves = []
    fit = _compress._fit
    monkeypatch.setattr(_compress, "_fit", lambda *a: solves.append(1) or fit(*a))
    return folder, solves


def _same(a, b):
    rule_a, info_a = a
    rule_b, info_b = b
    np.testing.assert_array_equal(rule_a.points, rule_b.points)
    np.testing.assert_array_equal(rule_a.weights, rule_b.weights)
    assert info_a._replace(indices=None) == info_b._replace(indices=None)
    np.testing.assert_array_equal(info_a.indices, info_b.indices)


def test_kept_rule_is_read_back_not_solved_again(kept):
    folder, solves = kept
    first = quadrature.compress(cylinder_rule(), 3, return_info=True)
    assert len(solves) == 1 and len(list(folder.glob("*.npz"))) == 1
    second = quadrature.compress(cylinder_rule(), 3, return_info=True)
    assert len(solves) == 1  # read, not solved
    _same(first, second)
    _same(first, compressed(3))  # what a process without the folder computes
    # another degree, other weights or a density are other entries
    quadrature.compress(cylinder_rule(), 2)
    weights = np.asarray(cylinder_rule().weights) * 2.0
    quadrature.compress(_with_weights(cylinder_rule(), weights), 3)
    rule = cylinder_rule()
    dense = quadrature.QuadratureRule(rule.points, rule.weights, density=np.full(105, 7.0))
    quadrature.compress(dense, 3)
    assert len(solves) == 4 and len(list(folder.glob("*.npz"))) == 4


def test_unreadable_or_unfitting_entry_is_solved_again(kept):
    folder, solves = kept
    first = quadrature.compress(cylinder_rule(), 3, return_info=True)
    (entry,) = folder.glob("*.npz")
    entry.write_bytes(b"not a zip file")
    _same(first, quadrature.compress(cylinder_rule(), 3, return_info=True))
    assert len(solves) == 2
    # an entry whose indices do not fit the rule (here: beyond its nodes)
    np.savez(entry, indices=np.array([3, 500]), weights=np.ones(2), residual=0.0, rank=1, bound=1)
    _same(first, quadrature.compress(cylinder_rule(), 3, return_info=True))
    assert len(solves) == 3
    assert len(list(folder.iterdir())) == 1  # rewritten whole, no temporary file left
    # entries of another format: a lone array, a field that is not one number (a TypeError
    # escaped from the read)
    good = dict(np.load(entry))
    for write in (
        lambda f: np.save(f, np.arange(5.0)),
        lambda f: np.savez(f, **{**good, "residual": np.zeros(2)}),
        lambda f: np.savez(f, **{**good, "rank": np.zeros(2, int)}),
    ):
        with entry.open("wb") as f:
            write(f)
        _same(first, quadrature.compress(cylinder_rule(), 3, return_info=True))
    assert len(solves) == 6


def test_kept_rule_is_written_with_the_umask(kept):
    # written through `tempfile`, an entry was its owner's only (0600) whatever the umask: in a
    # folder shared between users, the others never read the rule back
    folder, _ = kept
    old = os.umask(0o022)
    try:
        quadrature.compress(cylinder_rule(), 2)
    finally:
        os.umask(old)
    (entry,) = folder.glob("*.npz")
    assert entry.stat().st_mode & 0o777 == 0o644


def test_a_flat_rule_with_rounding_noise_across_is_named():
    # a segment rule with 1e-11 of noise across: the noise's scale became a full dimension and
    # the refusal only asked for a rule exact to the degree
    rule = quadrature.segment(0.5, 8)
    noise = 1e-11 * np.random.default_rng(0).standard_normal((8, 2))
    points = np.asarray(rule.points) + np.pad(noise, ((0, 0), (0, 1)))
    with pytest.raises(ValueError, match=r"degree 4: .*\(x1, x2 spread over less than 1e-6"):
        quadrature.compress(quadrature.QuadratureRule(points, rule.weights), 4)
    assert quadrature.compress(rule, 4).n_points <= 5  # C(4 + 1, 1) in one dimension


def test_rules_not_kept_without_the_cache_or_on_errors(kept, monkeypatch):
    from softrigid import _persistent_cache

    folder, solves = kept
    with pytest.raises(ValueError, match="cannot support degree 4"):
        quadrature.compress(quadrature.tetrahedron(degree=2), 4)
    assert not folder.exists()
    monkeypatch.setattr(_persistent_cache, "_rules", None)
    quadrature.compress(cylinder_rule(), 2)
    quadrature.compress(cylinder_rule(), 2)
    assert not folder.exists() and len(solves) == 3  # solved each time, nothing kept


def test_unwritable_folder_warns_and_still_compresses(kept, monkeypatch):
    from softrigid import _persistent_cache

    folder, _ = kept
    folder.parent.joinpath("file").write_text("")
    monkeypatch.setattr(_persistent_cache, "_rules", folder.parent / "file" / "quadrature")
    with pytest.warns(UserWarning, match="could not keep the rule"):
        rule = quadrature.compress(cylinder_rule(), 2)
    np.testing.assert_array_equal(rule.weights, compressed(2)[0].weights)


# --- dynamics on a compressed rule against the full one ------------------------------------


def _one(robot, q, qd, qdd):
    return (
        sr.mass_matrix(robot, q),
        sr.inverse_dynamics(robot, q, qd, qdd),
        sr.gravity_force(robot, q),
        sr.elastic_force(robot, q),
        sr.damping_force(robot, q, qd),
    )


# one compiled program per robot structure; the robot is an argument (its node arrays are not
# folded into the program as constants)
_TERMS = jax.jit(jax.vmap(_one, in_axes=(None, 0, 0, 0)))


def _terms(robot, states):
    return [np.asarray(t) for t in _TERMS(robot, *states)]


def _m_and_id(robot, q, qd, qdd):
    return sr.mass_matrix(robot, q), sr.inverse_dynamics(robot, q, qd, qdd)


_M_AND_ID = jax.jit(jax.vmap(_m_and_id, in_axes=(None, 0, 0, 0)))


def _padded(rule, n):
    """The same rule on `n` nodes (its last node repeated with the weight split; `n_axial`
    dropped): a compressed rule padded to the size of the full one has the same pytree shape,
    so the two robots share one compiled program (the integrals are unchanged)."""
    reps = np.ones(rule.n_points, dtype=int)
    reps[-1] += n - rule.n_points
    return quadrature.QuadratureRule(
        np.repeat(np.asarray(rule.points), reps, axis=0),
        np.repeat(np.asarray(rule.weights) / reps, reps),
        pivot=rule.pivot,
        contact_a=rule.contact_a,
        contact_b=rule.contact_b,
        geometry=rule.geometry,
        dimensions=rule.dimensions,
        mesh=rule.mesh,
    )


def _states(scale, seed, n=2):
    rng = np.random.default_rng(seed)
    return tuple(jnp.asarray(f * scale * rng.uniform(-1, 1, (n, scale.size))) for f in (1, 1, 10))


def _assert_close(full, small, tol):
    for a, b in zip(full, small):
        err = np.linalg.norm((a - b).reshape(a.shape[0], -1), axis=1)
        assert np.all(err <= tol * np.linalg.norm(a.reshape(a.shape[0], -1), axis=1))


def test_dynamics_constant_curvature_cylinder():
    """A rigid link and a 3D constant-curvature rod: degree 6 (≤ 84 nodes of 216) gives M,
    ID, g, elastic and damping forces to 1e-6 (benchmark at degree 6: 1e-7 for M)."""
    full = quadrature.cylinder(0.03, 0.3, n_axial=6, n_radial=4, n_angular=9)
    small = quadrature.compress(full, 6)

    def robot(rule):
        rigid = sr.RigidBody(
            mass=0.5,
            com=(0.0, 0.0, 0.1),
            inertia=jnp.diag(jnp.array([2e-3, 2e-3, 1e-4])),
            distal=(jnp.eye(3), jnp.array([0.0, 0.0, 0.2])),
        )
        body = sr.SoftBody(
            kinematics.ConstantCurvature3D(0.3),
            rule,
            1000.0,
            material=materials.CosseratRod(E=1e6, G=1e6 / 3, eta=0.05),
        )
        return sr.Robot(
            [sr.Link(joints.Revolute((0.0, 1.0, 0.0)), rigid), sr.Link(joints.Fixed(), body)],
            gravity=(0.0, 0.0, -9.81),
        )

    states = _states(np.array([1.0, 1.0, 1.0, 0.03]), seed=3)
    n = full.n_points
    _assert_close(
        _terms(robot(_padded(full, n)), states), _terms(robot(_padded(small, n)), states), 1e-6
    )


@jax.jit
def _body_terms(body, q, qd):
    # the body's mass moments (everything the recursion needs of it: M, c, g follow linearly),
    # its velocity-level moments and its elastic and damping forces
    moments, data = body.position_terms(q)
    elastic = jax.grad(body.elastic_energy)(q)
    damping = jax.grad(body.dissipation, argnums=1)(q, qd)
    return (*moments, *body.velocity_terms(data, q, qd), elastic, damping)


def test_helicoid_segment_mesh_body_terms():
    """One helicoid segment on the mesh (2,688 nodes) and its degree-6 compression (84 nodes),
    with the paper's neo-Hookean material: every body term the dynamics uses (mass moments,
    velocity moments, elastic and damping forces) to 1e-5 relative at seeded states (the
    benchmark at degree 6 against the degree-4 mesh rule gives ≤ 2e-6 on M, ID, g, s)."""
    full = quadrature.from_mesh(MESHES / "helicoid.vtu", degree=1)
    small = quadrature.compress(full, 6)
    assert small.n_points <= 84
    n = full.n_points

    def body(rule):
        material = materials.IncompressibleNeoHookean(C=0.178e6, eta=0.05)
        return sr.SoftBody(lvp.helicoid_segment(0.1), _padded(rule, n), 960.0, material=material)

    b_full, b_small = body(full), body(small)
    rng = np.random.default_rng(4)
    for _ in range(2):
        q = jnp.asarray(0.3 * rng.uniform(-1, 1, 8))
        qd = jnp.asarray(rng.uniform(-1, 1, 8))
        for a, b in zip(_body_terms(b_full, q, qd), _body_terms(b_small, q, qd)):
            scale = float(jnp.abs(a).max())
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-5 * scale)
