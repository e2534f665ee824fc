"""Model construction and input validation: every bad input gets a message naming it."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import joints, kinematics, quadrature


@pytest.fixture(scope="module")
def soft_body():
    return sr.SoftBody(
        kinematics.PlanarConstantCurvature(0.3), quadrature.cylinder(0.03, 0.3, 2, 1, 3), 1000.0
    )


@pytest.fixture(scope="module")
def robot(soft_body):
    return sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), soft_body)])


def test_coordinates_ordered_joint_then_body(robot):
    assert robot.n_q == 2
    assert robot.q_slices() == (slice(0, 2),)
    chain = sr.Robot([sr.Link(joints.Free(), sr.RigidBody(1.0, jnp.zeros(3), jnp.eye(3)))] * 2)
    assert chain.n_q == 12
    parts = chain.split(jnp.arange(24.0).reshape(2, 12))
    assert [p.shape for p in parts] == [(2, 6), (2, 6)]
    # a q of another length was cut silently (truncated, or empty pieces)
    for bad in (jnp.arange(13.0), jnp.arange(1.0), 3.0):
        with pytest.raises(ValueError, match=r"Robot.split: q must have shape \(\.\.\., 12\)"):
            chain.split(bad)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: sr.RigidBody(-1.0, jnp.zeros(3), jnp.eye(3)), "mass must be positive"),
        (lambda: sr.RigidBody(1.0, jnp.zeros(2), jnp.eye(3)), r"com must have shape \(3,\)"),
        (lambda: sr.RigidBody(1.0, jnp.zeros(3), jnp.diag(jnp.array([1.0, 1.0, 3.0]))), "triangle"),
        (lambda: sr.RigidBody(1.0, jnp.zeros(3), -jnp.eye(3)), "positive semi-definite"),
        (
            lambda: sr.RigidBody(
                1.0, jnp.zeros(3), jnp.array([[1.0, 0.1, 0], [0, 1, 0], [0, 0, 1]])
            ),
            "symmetric",
        ),
        (lambda: sr.RigidBody(float("nan"), jnp.zeros(3), jnp.eye(3)), "mass must be finite"),
        (lambda: joints.Revolute((0, 0, 0)), "non-zero"),
        (lambda: joints.Prismatic((1, 0, 0), stiffness=-1.0), "stiffness must be non-negative"),
        (lambda: joints.Fixed(origin=jnp.eye(3)), "4x4"),
        (lambda: joints.Fixed(origin=(2 * jnp.eye(3), jnp.zeros(3))), "orthonormal"),
        (lambda: sr.Robot([]), "at least one link"),
        (lambda: sr.Robot([1]), "softrigid.Link"),
        (
            # a chain without coordinates failed inside the mass matrix's check before
            lambda: sr.Robot(
                [sr.Link(joints.Fixed(), sr.RigidBody(1.0, jnp.zeros(3), jnp.eye(3)))]
            ),
            r"no coordinates \(every joint Fixed",
        ),
        (lambda: sr.Link(joints.Fixed(), "body"), "RigidBody or SoftBody"),
        (
            lambda: sr.Robot(
                [sr.Link(joints.Fixed(), sr.RigidBody(1.0, jnp.zeros(3), jnp.eye(3)))],
                gravity=(0, 9.8),
            ),
            "gravity",
        ),
        (lambda: quadrature.cylinder(-0.1, 1.0), "radius must be finite and positive"),
        (lambda: quadrature.tube(0.2, 0.1, 1.0), "smaller than outer_radius"),
    ],
)
def test_invalid_model_inputs_are_named(build, message):
    with pytest.raises((ValueError, TypeError), match=message):
        build()


def test_soft_body_errors():
    vol = quadrature.cylinder(0.1, 1.0, 2, 1, 3)
    cc = kinematics.PlanarConstantCurvature(1.0)
    with pytest.raises(ValueError, match="density must be finite and positive"):
        sr.SoftBody(cc, vol, -5.0)
    with pytest.raises(ValueError, match="give a density"):
        sr.SoftBody(cc, vol)
    with pytest.raises(ValueError, match=r"density must be a scalar or have shape \(6,\)"):
        sr.SoftBody(cc, vol, jnp.ones(3))
    with pytest.raises(ValueError, match="needs n_q="):
        sr.SoftBody(lambda x, q: x, vol, 1.0)
    with pytest.raises(ValueError, match=r"'bad_map' must return a \(3,\) position"):

        def bad_map(x, q):
            return x[:2] * q[0]

        sr.SoftBody(bad_map, vol, 1.0, n_q=1)
    with pytest.raises(ValueError, match="orthogonal about the pivot"):
        sr.SoftBody(
            lambda x, q: x * (1 + q[0]),
            vol,
            1.0,
            n_q=1,
            pivot=(0, 0, 1.0),
            contact_points=((0.05, 0, 1.0), (0.05, 0.05, 1.0)),
        )
    with pytest.raises(ValueError, match="distal pose exactly"):
        sr.SoftBody(cc, vol, 1.0, pivot=(0, 0, 1.0))
    with pytest.raises(TypeError, match="QuadratureRule"):
        sr.SoftBody(cc, np.zeros((4, 3)), 1.0)


def test_contact_points_very_close_to_the_pivot_are_warned_about():
    """Contact points 1e-9 of the body's size from the pivot gave the inverse dynamics to 1e-8
    only (the frame from differences of nearby images), with no word."""
    vol = quadrature.cylinder(0.1, 1.0, 2, 1, 3)

    def body(offset):
        return sr.SoftBody(
            lambda x, q: x * (1 + q[0]),
            vol,
            1.0,
            n_q=1,
            pivot=(0, 0, 1.0),
            contact_points=((offset, 0, 1.0), (0, offset, 1.0)),
        )

    with pytest.warns(UserWarning, match=r"contact point lies 1e-09 from the pivot"):
        body(1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        body(1e-3)

    # a rule from a traced radius under an eager vmap or grad, the frame points given: the
    # check read the traced nodes (TracerArrayConversionError)
    def mass(radius):
        rule = quadrature.cylinder(radius, 1.0, 2, 1, 3)
        frame = {"pivot": (0, 0, 1.0), "contact_points": ((0.05, 0, 1.0), (0, 0.05, 1.0))}
        return sr.SoftBody(
            lambda x, q: x * (1 + q[0]), rule, 1.0, n_q=1, **frame
        ).mass_weights.sum()

    np.testing.assert_allclose(
        jax.vmap(mass)(jnp.array([0.1, 0.2])), np.pi * np.array([0.01, 0.04])
    )
    np.testing.assert_allclose(jax.grad(mass)(0.1), 2 * np.pi * 0.1)


def test_user_exception_passes_through():
    class BoomError(RuntimeError):
        pass

    def exploding(x, q):
        raise BoomError("from the user's map")

    with pytest.raises(BoomError, match="user's map"):
        sr.SoftBody(exploding, quadrature.cylinder(0.1, 1.0, 2, 1, 3), 1.0, n_q=1)


def test_state_errors(robot):
    q = jnp.zeros(2)
    # the argument checks' messages name the public function, as its own messages do
    with pytest.raises(ValueError, match=r"^inverse_dynamics: q must have shape \(2,\) for this"):
        sr.inverse_dynamics(robot, jnp.zeros(3), q, q)
    message = r"^forward_dynamics: u must have shape \(2,\) \(generalized forces: the robot has no"
    with pytest.raises(ValueError, match=message):
        sr.forward_dynamics(robot, q, q, jnp.zeros(3))
    # a class where an instance was meant is named as such ("got ABCMeta")
    with pytest.raises(TypeError, match=r"joint must be .* got the class Fixed itself .* Fixed\("):
        sr.Link(joints.Fixed, robot.links[0].body)
    with pytest.raises(TypeError, match=r"body must be .* got the class RigidBody itself"):
        sr.Link(joints.Fixed(), sr.RigidBody)
    with pytest.raises(ValueError, match="qdd contains non-finite values"):
        sr.inverse_dynamics(robot, q, q, jnp.array([0.0, jnp.nan]))
    with pytest.raises(ValueError, match="use jax.vmap"):
        sr.mass_matrix(robot, jnp.zeros((4, 2)))
    with pytest.raises(TypeError, match="softrigid.Robot"):
        sr.mass_matrix("robot", q)
    with pytest.raises(ValueError, match=r"Wrench: link must be an integer in \[0, 1\), got 3"):
        sr.inverse_dynamics(robot, q, q, q, loads=sr.Wrench(3, (1.0, 0, 0)))
    with pytest.raises(ValueError, match="frame must be one of"):
        sr.PointLoad(0, (0, 0, 0.1), (1, 0, 0), frame="body")
    with pytest.raises(ValueError, match=r"world_points: link index i must be an integer in \[0, "):
        sr.world_points(robot, q, 5, jnp.zeros((1, 3)))
    # one link validator: a TypeError for a non-integer, a ValueError out of range
    with pytest.raises(TypeError, match="Wrench: link must be a non-negative integer index"):
        sr.Wrench(1.0, (1.0, 0, 0))
    with pytest.raises(ValueError, match="PointLoad: link must be a non-negative integer index"):
        sr.PointLoad(-1, (0, 0, 0.1), (1, 0, 0))
    with pytest.raises(
        TypeError, match="world_points: link index i must be a non-negative integer"
    ):
        sr.world_points(robot, q, True, jnp.zeros((1, 3)))
    # a point load on the body's surface acts; one beside it (0.05 m off the 0.03 m radius) is
    # refused by the eager call, the statics and jit with the load as a constant
    on_surface = sr.PointLoad(0, (0.03, 0.0, 0.3), (1.0, 0, 0))
    assert np.isfinite(sr.inverse_dynamics(robot, q, q, q, loads=on_surface)).all()
    outside = sr.PointLoad(0, (0.05, 0.0, 0.15), (1.0, 0, 0))
    match = r"PointLoad: the material point \(0.05, 0, 0.15\) is outside the cylinder volume of"
    with pytest.raises(ValueError, match=match):
        sr.inverse_dynamics(robot, q, q, q, loads=outside)
    with pytest.raises(ValueError, match=match):
        jax.jit(lambda q: sr.inverse_dynamics(robot, q, q, q, loads=outside))(q)


def test_model_is_a_pytree_with_static_structure(robot):
    leaves, treedef = jax.tree_util.tree_flatten(robot)
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    q = jnp.array([0.2, -0.4])
    np.testing.assert_allclose(sr.mass_matrix(rebuilt, q), sr.mass_matrix(robot, q), rtol=0, atol=0)
    # the model is immutable
    with pytest.raises(AttributeError):
        robot.gravity = jnp.zeros(3)


@pytest.mark.parametrize("n_data, n_meta", [(0, 0), (1, 0), (0, 1), (1, 1), (3, 2)])
def test_module_flattening_keeps_fields_in_order(n_data, n_meta):
    # `module` flattens with one attribute getter per kind of field (the tuple it returns for
    # one name built by hand): leaves and aux data in declaration order, with or without keys
    from softrigid._module import module, static

    names = [f"d{k}" for k in range(n_data)] + [f"m{k}" for k in range(n_meta)]
    namespace = {"__annotations__": dict.fromkeys(names, "object"), "__module__": __name__}
    namespace.update({f"m{k}": static() for k in range(n_meta)})
    cls = module(type("Probe", (), namespace))
    obj = cls(*(jnp.full(2, float(k)) for k in range(n_data)), *(f"s{k}" for k in range(n_meta)))
    leaves, treedef = jax.tree_util.tree_flatten(obj)
    assert [float(x[0]) for x in leaves] == [float(k) for k in range(n_data)]
    keyed = jax.tree_util.tree_flatten_with_path(obj)[0]
    assert [jax.tree_util.keystr(path) for path, _ in keyed] == [f".d{k}" for k in range(n_data)]
    rebuilt = jax.tree_util.tree_unflatten(treedef, [2 * x for x in leaves])
    assert all(getattr(rebuilt, f"m{k}") == f"s{k}" for k in range(n_meta))
    assert [float(getattr(rebuilt, f"d{k}")[0]) for k in range(n_data)] == [
        2.0 * k for k in range(n_data)
    ]
    assert treedef == jax.tree_util.tree_structure(rebuilt)


def test_distal_frame_from_contact_points_matches_exact_pose():
    """A plain-function planar CC map gets its distal frame from the pivot and two contact
    points (eqs. 5–7); it must equal the family's exact pose."""
    cc = kinematics.PlanarConstantCurvature(0.5)
    vol = quadrature.cylinder(0.05, 0.5, 3, 2, 3)
    plain = sr.SoftBody(lambda x, q: cc(x, q), vol, 1000.0, n_q=1)
    exact = sr.SoftBody(cc, vol, 1000.0)
    for qv in (0.0, 0.7, -2.0):
        q = jnp.array([qv])
        r1, t1 = plain.distal_pose(q)
        r2, t2 = exact.distal_pose(q)
        np.testing.assert_allclose(r1, r2, atol=1e-14)
        np.testing.assert_allclose(t1, t2, atol=1e-14)


def test_parameters_given_as_tuples_of_traced_numbers():
    # `com=(0, 0, l)` or `gravity=(0, 0, -g)` differentiated in `l` or `g`: the check of the
    # parameter converted the tuple with NumPy and met the tracer (TracerArrayConversionError)
    q = jnp.array([0.4])

    def bar(com, gravity=(0.0, 0.0, -9.81)):
        body = sr.RigidBody(mass=2.0, com=com, inertia=jnp.zeros((3, 3)))
        return sr.Robot([sr.Link(joints.Revolute(axis=(0, 1, 0)), body)], gravity=gravity)

    # M = m l² (a point mass at l on the axis), V = m g l cos q
    grad_m = jax.grad(lambda ell: sr.mass_matrix(bar((0.0, 0.0, ell)), q)[0, 0])(0.7)
    np.testing.assert_allclose(grad_m, 2 * 2.0 * 0.7, rtol=1e-12)
    grad_v = jax.grad(lambda g: sr.potential_energy(bar((0, 0, 0.7), (0.0, 0.0, -g)), q))(9.81)
    np.testing.assert_allclose(grad_v, 2.0 * 0.7 * np.cos(0.4), rtol=1e-12)
    # still refused: complex numbers in a tuple, concrete or traced
    with pytest.raises(TypeError, match="com must be real numbers"):
        bar((0.0, 0.0, 1j))
