"""The architecture's contracts: actuators in the model, one evaluation per state
(`dynamics_terms`), run-time output checks that also fire under `jit`/`vmap`, input dtypes, no
re-tracing of eager calls, and the layering of the modules."""

from __future__ import annotations

import ast
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from robots import mixed_robot, random_robot, random_state

import softrigid as sr
from softrigid import joints, kinematics, quadrature
from softrigid._derivatives import residual_derivatives
from softrigid._loads import check_loads
from softrigid.actuators import JointMotor, Tendon
from softrigid.materials import CosseratRod

LENGTH = 0.3
VOLUME = quadrature.cylinder(0.03, LENGTH, n_axial=3, n_radial=1, n_angular=3)
# a run-time check inside the caller's jit: JAX's runtime error, or a ValueError with the same
# text on a program's cached calls
RUNTIME_ERRORS = (jax.errors.JaxRuntimeError, ValueError)


def _segment(material=None):
    return sr.SoftBody(
        kinematics.PlanarConstantCurvature(LENGTH), VOLUME, density=1000.0, material=material
    )


@pytest.fixture(scope="module")
def arm():
    """A sprung revolute shoulder with a rigid link, then a damped soft segment on a second
    revolute joint; a motor on the shoulder and a tendon through the segment."""
    link = sr.RigidBody(0.5, (0.0, 0.0, 0.1), 1e-3 * jnp.eye(3), distal=(jnp.eye(3), (0, 0, 0.2)))
    seg = _segment(CosseratRod(2e5, 7e4, eta=0.02))
    links = [
        sr.Link(joints.Revolute((0.0, 1.0, 0.0), stiffness=2.0, damping=0.1), link),
        sr.Link(joints.Revolute((0.0, 1.0, 0.0)), seg),
    ]
    acts = (JointMotor(0), Tendon([1], (0.01, 0.0)))
    return sr.Robot(links, gravity=(0.3, 0.0, -9.81), actuators=acts)


def _state(seed, n):
    rng = np.random.default_rng(seed)
    return (jnp.asarray(rng.uniform(-0.6, 0.6, n)) for _ in range(3))


def test_dynamics_terms_are_the_separate_algorithms(arm):
    q, qd, _ = _state(0, arm.n_q)
    load = sr.PointLoad(1, (0.01, 0.0, LENGTH), (0.5, -0.2, 1.0))
    t = sr.dynamics_terms(arm, q, qd, loads=load, parts=True)
    mass = sr.mass_matrix(arm, q)
    np.testing.assert_allclose(t.mass_matrix, mass, rtol=1e-12, atol=1e-14)
    # bias = ID(q, q̇, 0) = c + g + s − Q_ext
    nu0 = sr.inverse_dynamics(arm, q, qd, jnp.zeros_like(q), loads=load)
    np.testing.assert_allclose(t.bias, nu0, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        t.coriolis, sr.inertial_inverse_dynamics(arm, q, qd, jnp.zeros_like(q)), atol=1e-12
    )
    np.testing.assert_allclose(t.gravity, sr.gravity_force(arm, q), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(t.internal, sr.internal_force(arm, q, qd), rtol=1e-12, atol=1e-12)
    # Q_ext = J_pᵀ f of the point load, by an independent Jacobian of its world position
    jac = jax.jacfwd(lambda x: sr.world_points(arm, x, 1, jnp.array([[0.01, 0.0, LENGTH]]))[0])(q)
    q_ext = jac.T @ jnp.array([0.5, -0.2, 1.0])
    np.testing.assert_allclose(
        t.coriolis + t.gravity + t.internal - q_ext, t.bias, rtol=1e-11, atol=1e-11
    )
    np.testing.assert_allclose(t.actuation, sr.actuation_matrix(arm, q), atol=1e-15)
    rot, trans = sr.forward_kinematics(arm, q)
    np.testing.assert_allclose(t.rotation, rot, atol=1e-14)
    np.testing.assert_allclose(t.translation, trans, atol=1e-14)
    # without parts the structure carries None there (one pass less)
    plain = sr.dynamics_terms(arm, q, qd)
    assert plain.coriolis is None and plain.gravity is None and plain.internal is None


def test_forward_dynamics_takes_the_robot_inputs(arm):
    q, qd, _ = _state(1, arm.n_q)
    u = jnp.array([0.7, 3.0])
    qdd = sr.forward_dynamics(arm, q, qd, u)
    # M q̈ + c + g + s = A(q) u with the tendon column −∂l/∂q
    np.testing.assert_allclose(
        sr.inverse_dynamics(arm, q, qd, qdd), sr.actuation_matrix(arm, q) @ u, atol=1e-10
    )
    assert arm.n_u == 2
    # the same robot without actuators takes generalized forces
    bare = sr.Robot(arm.links, arm.gravity)
    assert bare.n_u == bare.n_q
    nu = sr.actuation_force(arm, q, u)
    np.testing.assert_allclose(sr.forward_dynamics(bare, q, qd, nu), qdd, rtol=1e-12, atol=1e-12)


def test_simulate_reads_the_actuators(arm):
    q0 = jnp.zeros(arm.n_q)
    traj = sr.simulate(arm, q0, q0, 0.02, 0.01, controller=lambda t, q, qd: jnp.array([0.0, 5.0]))
    # pulling the tendon at offset +0.01 bends the segment toward it: q_B < 0 (A = −d)
    assert traj.q[-1, 2] < 0
    with pytest.raises(ValueError, match=r"shape \(2,\) \(actuator inputs\)"):
        sr.simulate(arm, q0, q0, 0.02, 0.01, controller=lambda t, q, qd: jnp.zeros(4))


# ---------------------------------------------------------------- run-time output checks


def _robot_with_map(fn, n_q=1):
    body = sr.SoftBody(
        fn,
        VOLUME,
        density=1000.0,
        n_q=n_q,
        pivot=(0.0, 0.0, LENGTH),
        contact_points=((0.03, 0.0, LENGTH), (0.0, 0.03, LENGTH)),
    )
    rigid = sr.RigidBody(1.0, (0.0, 0.0, 0.0), 1e-3 * jnp.eye(3))
    return sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), rigid), sr.Link(joints.Fixed(), body)])


def _sqrt_map(x, q):
    # |q| through sqrt(q²): its derivative is NaN at q = 0
    return x + jnp.array([jnp.sqrt(q[0] ** 2) * x[2], 0.0, 0.0])


def _frozen_map(x, q):
    # a map through stop_gradient: the body coordinate has no inertia (M singular)
    return x + jax.lax.stop_gradient(q[0]) * jnp.array([x[2], 0.0, 0.0])


@pytest.fixture(scope="module")
def sqrt_robot():
    return _robot_with_map(_sqrt_map)


def test_non_finite_output_names_the_coordinate(sqrt_robot):
    z = jnp.zeros(2)
    # the NaN of d|q|/dq at 0 spreads through the passes to every coordinate; the eager error
    # names the first bad output and the link where the non-finite terms start
    with pytest.raises(
        ValueError,
        match=r"inverse_dynamics: non-finite value .* at coordinate 0 .* It starts in link 1 "
        r"\(Fixed \+ SoftBody '_sqrt_map'\): its position-level terms",
    ):
        sr.inverse_dynamics(sqrt_robot, z, jnp.array([0.0, 1.0]), z)
    # an overflowing state
    with pytest.raises(
        ValueError,
        match=r"inverse_dynamics: non-finite value .* at coordinate 0 \(link 0, joint coordinate 0 \(Revolute\)\)",
    ):
        sr.inverse_dynamics(sqrt_robot, jnp.array([0.0, 0.5]), jnp.array([1e200, 0.0]), z)


def test_run_time_errors_of_a_compiled_program_are_clean(sqrt_robot):
    """A check that fires on a program's later call arrives from XLA as a `ValueError` with the
    callback's traceback around the message: the eager call raises the message alone."""
    z = jnp.zeros(2)
    sr.inverse_dynamics(sqrt_robot, jnp.array([0.0, 0.3]), z, z)  # compiled, run without fault
    for _ in range(2):
        with pytest.raises(ValueError) as err:
            sr.inverse_dynamics(sqrt_robot, z, jnp.array([0.0, 1.0]), z)
        assert str(err.value).startswith("inverse_dynamics: non-finite value (NaN or inf)")
        assert "It starts in link 1" in str(err.value)
        assert "Traceback" not in str(err.value)


def test_lagrangian_baseline_checks_its_output(sqrt_robot):
    with pytest.raises(
        ValueError, match=r"mass_matrix: non-finite value .* at coordinate \d+ \(link \d"
    ):
        sr.lagrangian.mass_matrix(sqrt_robot, jnp.zeros(2))


def test_checks_fire_under_jit_and_vmap(sqrt_robot):
    z = jnp.zeros(2)
    good, bad = jnp.array([0.0, 0.3]), jnp.zeros(2)  # d|q|/dq is NaN only at q = 0
    jitted = jax.jit(lambda q: sr.inverse_dynamics(sqrt_robot, q, z, z))
    assert np.all(np.isfinite(jitted(good)))
    with pytest.raises(Exception, match="inverse_dynamics: non-finite value .* at coordinate 0"):
        jax.block_until_ready(jitted(bad))
    batched = jax.vmap(lambda q: sr.inverse_dynamics(sqrt_robot, q, z, z))
    assert np.all(np.isfinite(batched(jnp.stack([good, 2 * good]))))
    with pytest.raises(Exception, match="inverse_dynamics: non-finite value"):
        jax.block_until_ready(batched(jnp.stack([good, bad])))


VECTOR_FIELD_BAD = {
    "batched state": ((jnp.zeros((2, 2)), jnp.zeros((2, 2))), ValueError, "use jax.vmap"),
    "complex state": (
        (jnp.array([0.1 + 0.2j, 0.0]), jnp.zeros(2)),
        TypeError,
        "q must be real floating point",
    ),
    "not a pair": (jnp.zeros(4), TypeError, r"y must be the pair \(q, qd\)"),
}


@pytest.mark.parametrize("case", sorted(VECTOR_FIELD_BAD))
def test_vector_field_refuses_bad_states(sqrt_robot, case):
    y, error, pattern = VECTOR_FIELD_BAD[case]
    with pytest.raises(error, match=pattern):
        sr.vector_field(sqrt_robot)(0.0, y)


@pytest.mark.parametrize(
    ("t", "error", "pattern"),
    [
        (2 + 7j, TypeError, "vector_field: t must be real numbers"),
        (np.nan, ValueError, "vector_field: t must be finite"),
        (jnp.array([0.0, 1.0]), ValueError, r"vector_field: t must be a scalar, got shape \(2,\)"),
        ("abc", TypeError, "vector_field: t must be real numbers"),
    ],
)
def test_vector_field_checks_the_time(sqrt_robot, t, error, pattern):
    y = (jnp.array([0.0, 0.3]), jnp.array([0.5, 0.1]))
    with pytest.raises(error, match=pattern):
        sr.vector_field(sqrt_robot)(t, y)


def test_vector_field_names_a_constraint_that_is_not_finite(sqrt_robot):
    bad = sr.constraints.Holonomic(lambda q: jnp.sqrt(q[1] - 0.3))  # ∂φ/∂q infinite at q1 = 0.3
    y = (jnp.array([0.0, 0.3]), jnp.array([0.5, 0.1]))
    with pytest.raises(ValueError, match=r"vector_field: constraints\[0\] \(Holonomic\) is not"):
        sr.vector_field(sqrt_robot, constraints=bad)(0.0, y)


def test_vector_field_promotes_and_checks_its_output(sqrt_robot):
    f = sr.vector_field(sqrt_robot)
    qd = jnp.array([0.5, 0.1])
    _, qdd = f(0.0, (jnp.array([0.0, 0.3], jnp.float32), qd))  # float32 q, float64 q̇
    assert qdd.dtype == jnp.float64 and np.all(np.isfinite(qdd))
    with pytest.raises(ValueError, match=r"vector_field: non-finite value .* at coordinate 0 "):
        f(0.0, (jnp.zeros(2, jnp.float32), qd))  # d|q|/dq is NaN at q = 0 (same program)


def test_vector_field_names_a_controller_that_returns_nan(sqrt_robot):
    # a controller's NaN makes q̈ NaN at every coordinate: the error names the controller, not
    # a coordinate of the model (eager and under jit); a NaN state is still named first
    y = (jnp.array([0.0, 0.3]), jnp.array([0.5, 0.1]))
    f = sr.vector_field(sqrt_robot, lambda t, q, qd: jnp.where(t > 0.5, jnp.nan, 0.0) * q)
    assert np.all(np.isfinite(f(0.0, y)[1]))
    pattern = r"vector_field: the controller's output u contains non-finite values"
    with pytest.raises(ValueError, match=pattern):
        f(1.0, y)
    with pytest.raises(Exception, match=pattern):
        jax.block_until_ready(jax.jit(f)(1.0, y))
    with pytest.raises(Exception, match="vector_field: the argument q contains non-finite"):
        jax.block_until_ready(jax.jit(f)(0.0, (y[0].at[1].set(jnp.nan), y[1])))


def test_singular_mass_matrix_is_reported():
    robot = _robot_with_map(_frozen_map)
    z = jnp.zeros(2)
    np.testing.assert_allclose(sr.mass_matrix(robot, z)[1], 0.0, atol=1e-15)
    with pytest.raises(
        ValueError,
        match=r"forward_dynamics: the mass matrix is not positive definite at coordinate 1 "
        r"\(link 1, body coordinate 0",
    ):
        sr.forward_dynamics(robot, z, z, z, solver="cholesky")
    # the default solver for a robot with a deformable body is the articulated one
    with pytest.raises(
        ValueError,
        match=r"forward_dynamics: the articulated inertia D_1 of link 1 is not positive "
        r"definite at link 1, body coordinate 0 ",
    ):
        sr.forward_dynamics(robot, z, z, z)


def test_a_non_finite_state_under_jit_is_reported_as_such():
    # eager calls refuse a NaN state at once; under jit both solvers name the argument (a NaN q
    # made M, or D_1, non-finite and its check fired first: "the mass matrix is not finite in
    # row 0", "the articulated inertia D_1 of link 1 is not finite"; the articulated check
    # reads q's finiteness in its message index, without a branch: a lazy index slowed the
    # one-segment chain by 4 %)
    body = sr.RigidBody(1.0, (0.0, 0.0, -0.2), 1e-3 * jnp.eye(3))
    robot = sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), body)] * 3, gravity=(0, 0, -9.81))
    z, bad = jnp.zeros(3), jnp.array([0.0, jnp.nan, 0.0])
    for solver in ("cholesky", "articulated"):
        fd = jax.jit(lambda q, s=solver: sr.forward_dynamics(robot, q, z, z, solver=s))
        assert np.all(np.isfinite(fd(z)))
        with pytest.raises(RUNTIME_ERRORS, match="forward_dynamics: the argument q contains"):
            jax.block_until_ready(fd(bad))
    # a finite state where the model is not finite: the solvers name what is not finite
    # instead of calling a NaN mass matrix or articulated inertia "not positive definite"
    sqrt_arm, two = _robot_with_map(_sqrt_map), jnp.zeros(2)
    messages = {
        "cholesky": r"the mass matrix is not finite in row 0 \(link 0, joint coordinate 0",
        "articulated": r"the articulated inertia D_1 of link 1 is not finite \(link 1, body",
    }
    for solver, message in messages.items():
        fd = jax.jit(lambda q, s=solver: sr.forward_dynamics(sqrt_arm, q, two, two, solver=s))
        with pytest.raises(RUNTIME_ERRORS, match=message):
            jax.block_until_ready(fd(two))
    # a NaN input inside jit: the output check names it (its reduction reads the arguments too)
    driven = jax.jit(lambda u: sr.forward_dynamics(robot, z, z, u))
    with pytest.raises(RUNTIME_ERRORS, match=r"the argument u contains"):
        jax.block_until_ready(driven(bad))


# ---------------------------------------------------------------- inputs


@pytest.mark.parametrize(
    ("value", "error", "pattern"),
    [
        (jnp.array([0.1 + 0.2j, 0.0, 0.0]), TypeError, "q must be real floating point"),
        (np.array([True, False, True]), TypeError, "q must be real floating point"),
        ("0.1", TypeError, "q must be a real array"),
        (jnp.zeros((2, 3)), ValueError, "use jax.vmap"),
        (jnp.zeros(4), ValueError, r"q must have shape \(3,\)"),
    ],
)
def test_bad_state_types(arm, value, error, pattern):
    with pytest.raises(error, match=pattern):
        sr.mass_matrix(arm, value)


def test_mixed_precision_states_are_promoted(arm):
    q, qd, qdd = _state(2, arm.n_q)
    mixed = sr.inverse_dynamics(arm, q.astype(jnp.float32), qd, qdd)
    assert mixed.dtype == jnp.float64
    ref = sr.inverse_dynamics(arm, q.astype(jnp.float32).astype(jnp.float64), qd, qdd)
    np.testing.assert_allclose(mixed, ref, rtol=1e-12, atol=1e-12)


def _counted_robot(traces):
    """A one-segment soft robot whose kinematics appends to `traces` when traced."""

    def counted(x, q):
        traces.append(1)
        return kinematics.PlanarConstantCurvature(LENGTH)(x, q)

    body = sr.SoftBody(
        counted, VOLUME, density=1000.0, n_q=1, material=CosseratRod(1e5, 4e4, strain=_cc_strain)
    )
    return sr.Robot([sr.Link(joints.Fixed(), body)])


def test_eager_calls_do_not_retrace():
    traces = []
    robot = _counted_robot(traces)
    q, qd = jnp.array([0.3]), jnp.array([0.2])
    for fn in (sr.elastic_force, sr.mass_matrix):
        fn(robot, q)
        before = len(traces)
        fn(robot, 2.0 * q)
        assert len(traces) == before, f"{fn.__name__} traced again on a second eager call"
    sr.damping_force(robot, q, qd)
    before = len(traces)
    sr.damping_force(robot, q, 2.0 * qd)
    assert len(traces) == before


def test_second_radau_simulate_does_not_retrace():
    """The Radau callbacks and the recorded inputs are module-level compiled functions: a second
    run of the same robot structure and controller compiles nothing (a rigid pendulum: cheap to
    compile; the controller counts the traces of the right-hand side and of its Jacobian)."""
    traces = []
    body = sr.RigidBody(1.0, (0.0, 0.0, -0.3), 1e-3 * jnp.eye(3))
    robot = sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), body)])

    def controller(t, q, qd):
        traces.append(1)
        return jnp.zeros(1, q.dtype)

    def run(q0):
        return sr.simulate(robot, q0, jnp.zeros(1), 0.02, 0.01, controller, method="radau")

    first = run(jnp.array([0.3]))
    before = len(traces)
    second = run(jnp.array([0.2]))
    assert len(traces) == before, "simulate(method='radau') traced again on a second call"
    assert not np.allclose(first.q, second.q)


def _cc_strain(X, q):
    z = jnp.zeros_like(q[0])
    return jnp.stack([z, -q[0] / LENGTH, z, z, z, 1.0 + z])


# ---------------------------------------------------------------- layering

# Lower layers never import higher ones (no deferred imports either): a module may import only
# modules of its own layer or below.
LAYERS = [
    {
        "_module",
        "_math",
        "_trig",
        "_ad",
        "_fault",
        "_checks",
        "_cache",
        "_persistent_cache",
        "_gc",
        "_batching",
        "quadrature",
        "kinematics",
        "meshing",
        "_mesh_input",
        "_sections",
    },
    {
        "materials",
        "_body",
        "_rigid_body",
        "_soft_body",
        "_rows",
        "joints",
        "_actuator",
        "_controller",
    },
    {"_model", "_charts"},
    {"_passes", "_recursion"},
    {"_loads", "_entry", "_reports", "_fastpath", "_chain", "_energy"},
    {"_articulated", "_tendon"},
    {"_dynamics", "lagrangian"},
    {"_derivatives"},
    {
        "actuators",
        "constraints",
        "_constraints",
        "control",
        "_simulate",
        "_closed_loop",
        "_newton",
        "_radau",
        "_adaptive_programs",
        "_run_failures",
        "_integrators",
        "_switches",
        "_time_grid",
        "integrators",
        "statics",
        "_statics_residual",
        "_statics_newton",
        "_statics_equilibrium",
        "_statics_inverse",
        "_statics_levenberg",
        "io",
        "plotting",
        "urdf",
    },
]


def _layer(module: str) -> int:
    top = module.split(".")[0]
    for k, layer in enumerate(LAYERS):
        if top in layer:
            return k
    raise AssertionError(f"module {module!r} is in no layer of the test: add it")


def _runtime_imports(tree: ast.AST) -> list[ast.ImportFrom]:
    """Relative imports executed at import time (not those under `if TYPE_CHECKING:`)."""
    out = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            return
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            out.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def test_core_modules_never_import_higher_layers():
    root = Path(sr.__file__).parent
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        if rel.name == "__init__" and rel.parent == Path("."):
            continue
        own = _layer(".".join(rel.parts))
        for node in _runtime_imports(ast.parse(path.read_text())):
            # the package-level module the relative import names
            base = list(rel.parts[:-1])[: len(rel.parts) - node.level]
            target = ".".join([*base, node.module] if node.module else base)
            targets = [target] if target else [a.name for a in node.names]
            for t in targets:
                assert _layer(t) <= own, f"{'/'.join(rel.parts)} imports the higher-layer {t}"


# ---------------------------------------------------------------- dynamics Jacobians


def test_inverse_dynamics_derivatives(arm):
    """The public derivatives are those of `ν = ID(q, q̇, q̈)` (whatever the actuators), against
    `jax.jacfwd` and central differences."""
    q, qd, qdd = _state(3, arm.n_q)
    u = jnp.array([0.4, 2.0])
    d = sr.inverse_dynamics_derivatives(arm, q, qd, qdd)

    def nu(x, xd):
        return sr.inverse_dynamics(arm, x, xd, qdd)

    np.testing.assert_allclose(d.nu, nu(q, qd), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d.mass_matrix, sr.mass_matrix(arm, q), rtol=1e-12, atol=1e-14)
    # against jax.jacfwd of the public function ...
    jq, jqd = jax.jacfwd(nu, argnums=(0, 1))(q, qd)
    np.testing.assert_allclose(d.d_q, jq, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(d.d_qd, jqd, rtol=1e-10, atol=1e-10)
    # ... and central differences
    h = 1e-6
    eye = jnp.eye(arm.n_q)
    fd_q = np.stack([(nu(q + h * e, qd) - nu(q - h * e, qd)) / (2 * h) for e in eye], 1)
    fd_qd = np.stack([(nu(q, qd + h * e) - nu(q, qd - h * e)) / (2 * h) for e in eye], 1)
    np.testing.assert_allclose(d.d_q, fd_q, rtol=1e-6, atol=1e-7 * float(np.abs(fd_q).max()))
    np.testing.assert_allclose(d.d_qd, fd_qd, rtol=1e-6, atol=1e-7 * float(np.abs(fd_qd).max()))
    with pytest.raises(TypeError, match="u"):
        sr.inverse_dynamics_derivatives(arm, q, qd, qdd, u=u)


def test_inverse_dynamics_derivatives_on_a_chain_of_identical_soft_links():
    """Three identical revolute + planar CC links (one scanned group): the derivatives compile
    and equal `jax.jacfwd` of the public inverse dynamics. With the passes as scans in each
    link's frame, XLA:CPU folded a scan's stacking transpose into a batched `dot` it cannot
    emit under the vmap of tangents (`dot_op_emitter` check failure: the process aborted)."""
    robot = sr.Robot(
        [sr.Link(joints.Revolute((0.0, 1.0, 0.0)), _segment()) for _ in range(3)],
        gravity=(0.0, 0.0, -9.81),
    )
    q, qd, qdd = _state(4, robot.n_q)
    d = sr.inverse_dynamics_derivatives(robot, q, qd, qdd)
    jq, jqd = jax.jacfwd(lambda x, xd: sr.inverse_dynamics(robot, x, xd, qdd), argnums=(0, 1))(
        q, qd
    )
    np.testing.assert_allclose(d.nu, sr.inverse_dynamics(robot, q, qd, qdd), rtol=1e-12)
    np.testing.assert_allclose(d.d_q, jq, rtol=1e-10, atol=1e-10 * float(jnp.abs(jq).max()))
    np.testing.assert_allclose(d.d_qd, jqd, rtol=1e-10, atol=1e-10 * float(jnp.abs(jqd).max()))


def _bias_rates_both_ways(link: sr.Link, q: jax.Array, qd: jax.Array) -> tuple:
    """`∂(link_bias)/∂q̇` from the `q`-pass's terms (`_bias_rates`) and by forward mode over
    `q̇` (the path for bodies that do not give their moments' rate)."""
    from softrigid import _recursion as rec
    from softrigid._ad import value_and_jacfwd
    from softrigid._derivatives import _bias_rates, _Position

    def both(x: jax.Array, xd: jax.Array) -> tuple:
        def at(y: jax.Array) -> tuple:
            rot, trans, jac_t, jac_w, moments, data = rec.link_position(link, y)
            pos = _Position(rot, trans, jac_t, jac_w, moments)
            return pos, rec.link_bias(link, y, xd, rot, trans, data), data

        (pos, _, data), (d_pos, _, d_data) = value_and_jacfwd(at, x)
        forward = value_and_jacfwd(
            lambda y: rec.link_bias(link, x, y, pos.rot, pos.trans, data), xd
        )[1]
        return _bias_rates(link, xd, pos, d_pos, data, d_data), forward

    return jax.jit(both)(q, qd)


def test_bias_rates_from_the_position_pass_equal_forward_mode():
    """The bias' `q̇`-derivatives of `inverse_dynamics_derivatives`, built from the `q`-pass
    (`2 (∂_j J_t) q̇`, `2 (∂_j G) q̇ + (G q̇) × G e_j`, the bodies' moments from the tangents
    of their Jacobians), equal forward mode over `q̇` on every joint and body family: free,
    revolute, prismatic and fixed joints; rigid bodies; soft bodies integrated by rows (planar
    CC on a cylinder) and by nodes (a helicoid segment)."""
    helicoid = sr.SoftBody(
        kinematics.lvp.helicoid_segment(0.1),
        quadrature.cylinder(0.02, 0.1, n_axial=3, n_radial=1, n_angular=3),
        density=960.0,
    )
    layout = (
        ("free", "planar_cc"),
        ("fixed", "planar_cc"),
        ("prismatic", "rigid"),
        ("revolute", "rigid"),
        ("revolute", "planar_cc"),
    )
    robots = [
        random_robot(5, structure=layout),
        sr.Robot([sr.Link(joints.Revolute((0.0, 1.0, 0.0)), helicoid)]),
    ]
    checked = set()
    for robot in robots:
        q, qd, _ = random_state(robot, 11, scale=0.3)
        start = 0
        for link in robot.links:
            n = link.joint.n_q + link.body.n_q
            rates, forward = _bias_rates_both_ways(
                link, q[start : start + n], qd[start : start + n]
            )
            start += n
            scale = max(float(jnp.abs(f).max()) for f in jax.tree.leaves(forward) if f.size)
            for a, b in zip(jax.tree.leaves(rates), jax.tree.leaves(forward)):
                assert a.shape == b.shape
                np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12 * scale)
            checked.add(
                (
                    type(link.joint).__name__,
                    type(link.body).__name__,
                    link.body.n_q > 0 and link.body.sectioned,
                )
            )
    assert {k[0] for k in checked} == {"Free", "Fixed", "Prismatic", "Revolute"}
    assert {k[1] for k in checked} == {"RigidBody", "SoftBody"}
    assert {k[2] for k in checked if k[1] == "SoftBody"} == {True, False}  # rows and nodes


@pytest.mark.slow
def test_residual_derivatives_are_the_public_ones_minus_the_actuation(arm):
    """The integrators' residual r = ν − A(q) u: ∂r/∂q = ∂ν/∂q − ∂(A(q) u)/∂q, ∂r/∂q̇ = ∂ν/∂q̇
    (a second compilation of the derivatives, 20 s: slow; the implicit integrators' tests use
    it in every run)."""
    q, qd, qdd = _state(3, arm.n_q)
    u = jnp.array([0.4, 2.0])
    d = sr.inverse_dynamics_derivatives(arm, q, qd, qdd)
    core = jax.jit(residual_derivatives)(arm, q, qd, qdd, check_loads(arm, None), u)
    force = sr.actuation_force(arm, q, u)
    d_force = jax.jacfwd(lambda x: sr.actuation_force(arm, x, u))(q)
    np.testing.assert_allclose(core.residual, d.nu - force, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(core.mass_matrix, d.mass_matrix, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(core.d_q, d.d_q - d_force, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(core.d_qd, d.d_qd, rtol=1e-10, atol=1e-10)


@pytest.mark.slow
def test_inverse_dynamics_derivatives_on_a_mixed_chain_with_loads():
    """Link-local derivatives (one group of identical links, a free base) with a point load on a
    soft body and a world wrench: equal to central differences of the public inverse dynamics
    (the exactness against `jax.jacfwd` is the test above)."""
    robot = mixed_robot(3)
    q, qd, qdd = random_state(robot, 7, scale=0.5)
    loads = (
        sr.PointLoad(1, (0.003, -0.002, 0.02), (0.4, -0.3, 1.2)),
        sr.Wrench(0, (1.0, 0.5, -0.2), (0.05, 0.0, 0.1)),
    )
    d = sr.inverse_dynamics_derivatives(robot, q, qd, qdd, loads=loads)
    nu = jax.jit(lambda x, xd: sr.inverse_dynamics(robot, x, xd, qdd, loads=loads))
    np.testing.assert_allclose(d.nu, nu(q, qd), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d.mass_matrix, sr.mass_matrix(robot, q), rtol=1e-12, atol=1e-14)
    h, eye = 1e-6, jnp.eye(robot.n_q)
    fd_q = np.stack([(nu(q + h * e, qd) - nu(q - h * e, qd)) / (2 * h) for e in eye], 1)
    fd_qd = np.stack([(nu(q, qd + h * e) - nu(q, qd - h * e)) / (2 * h) for e in eye], 1)
    np.testing.assert_allclose(d.d_q, fd_q, rtol=1e-6, atol=1e-7 * float(np.abs(fd_q).max()))
    np.testing.assert_allclose(d.d_qd, fd_qd, rtol=1e-6, atol=1e-7 * float(np.abs(fd_qd).max()))
