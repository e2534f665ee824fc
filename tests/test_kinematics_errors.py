"""Errors a new user meets with kinematics (issue 10): maps that JAX cannot trace, model data
held by reference, and capabilities a family does not declare."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import joints, quadrature
from softrigid import kinematics as km
from softrigid.kinematics import lvp

VOLUME = quadrature.cylinder(0.04, 0.3, 3, 2, 3)


# --------------------------------------------------------------------------------------------
# User functions that JAX cannot trace


def uses_numpy(x, q):
    return x + np.sin(q[0])


def python_if(x, q):
    if q[0] > 0:
        return x
    return -x


def calls_float(x, q):
    return x * float(q[0])


def traced_index(x, q):
    return x * [1.0, 2.0, 3.0][q[0].astype(int)]


NOT_TRACEABLE = {
    "numpy": (uses_numpy, jax.errors.TracerArrayConversionError),
    "if": (python_if, jax.errors.TracerBoolConversionError),
    "float": (calls_float, jax.errors.ConcretizationTypeError),
    "index": (traced_index, jax.errors.TracerIntegerConversionError),
}


@pytest.mark.parametrize("case", NOT_TRACEABLE)
def test_untraceable_map_names_the_function(case):
    fn, cause = NOT_TRACEABLE[case]
    with pytest.raises(TypeError) as info:
        sr.SoftBody(fn, VOLUME, 1000.0, n_q=1)
    message = str(info.value)
    assert f"kinematics {fn.__name__!r}" in message
    assert "jax.numpy" in message and "x or q" in message and "jnp.where" in message
    assert isinstance(info.value.__cause__, cause)


def modes_numpy(z):
    return np.array([np.sin(z)])


def basis_if(X):
    if X > 0.1:
        return jnp.ones((6, 1))
    return jnp.zeros((6, 1))


def rest_float(X):
    return jnp.array([0.0, 0.0, 0.0, 0.0, 0.0, float(X)])


UNTRACEABLE_PARTS = {
    "modes": (lambda: lvp.FunctionModes(modes_numpy), "mode functions 'modes_numpy'", "z"),
    "twist": (lambda: lvp.Twist(modes_numpy), "mode functions 'modes_numpy'", "z"),
    "basis": (lambda: km.FunctionBasis(basis_if), "strain basis 'basis_if'", "X"),
    "rest": (
        lambda: km.Cosserat(0.3, km.Legendre(0.3, 1, "bend"), rest_float),
        "rest_strain 'rest_float'",
        "X",
    ),
}


@pytest.mark.parametrize("case", UNTRACEABLE_PARTS)
def test_untraceable_part_names_the_function(case):
    build, name, argument = UNTRACEABLE_PARTS[case]
    with pytest.raises(TypeError, match="jax.numpy") as info:
        build()
    message = str(info.value)
    assert name in message and f"NumPy on {argument}," in message
    assert isinstance(info.value.__cause__, tuple(cause for _, cause in NOT_TRACEABLE.values()))


def energy_numpy(F):
    return np.linalg.det(F) - 1.0


def potential_if(q):
    if q[0] > 0:
        return q[0] ** 2
    return -q[0]


def rayleigh_float(q, qd):
    return float(qd[0]) ** 2


def path_numpy(s):
    return np.array([0.0, 0.0, 0.3 * s])


def volume_if(q):
    if q[0] > 0:
        return 1.0 + q[0]
    return 1.0


def output_numpy(q):
    return np.asarray(q)


def _segment(material=None):
    return sr.SoftBody(km.PlanarConstantCurvature(0.3), VOLUME, 1000.0, material=material)


def _actuated(actuator):
    return sr.Robot([sr.Link(sr.joints.Fixed(), _segment())], actuators=actuator)


UNTRACEABLE_CALLBACKS = {
    "StrainEnergy W": (
        lambda: sr.materials.StrainEnergy(energy_numpy),
        "StrainEnergy W 'energy_numpy'",
        "F",
    ),
    "Energy potential": (
        lambda: _segment(sr.materials.Energy(potential_if)),
        "Energy potential 'potential_if'",
        "q or qd",
    ),
    "Energy rayleigh": (
        lambda: _segment(sr.materials.Energy(lambda q: q[0] ** 2, rayleigh_float)),
        "Energy rayleigh 'rayleigh_float'",
        "q or qd",
    ),
    "Tendon path": (
        lambda: sr.actuators.Tendon(0, paths=[path_numpy]),
        "Tendon paths[0]",
        "s",
    ),
    "PressureChamber volume": (
        lambda: _actuated(sr.actuators.PressureChamber(0, volume=volume_if)),
        "PressureChamber volume",
        "q_B",
    ),
    "inverse_statics output": (
        lambda: sr.statics.inverse_statics(
            _actuated(sr.actuators.PressureChamber(0, volume=lambda q: q[0])),
            output_numpy,
            jnp.zeros(1),
        ),
        "inverse_statics output",
        "q",
    ),
}


@pytest.mark.parametrize("case", UNTRACEABLE_CALLBACKS)
def test_untraceable_callback_names_the_function(case):
    build, name, argument = UNTRACEABLE_CALLBACKS[case]
    with pytest.raises(TypeError, match="jax.numpy") as info:
        build()
    message = str(info.value)
    assert name in message and f"NumPy on {argument}," in message
    assert isinstance(info.value.__cause__, tuple(cause for _, cause in NOT_TRACEABLE.values()))


class UserError(Exception):
    pass


def raises_user_error(x, q):
    raise UserError("from the user's code")


def divides_by_zero(x, q):
    return x * (1 / 0)


def wrong_key(x, q, params):
    return x * params["missing"]


PASS_THROUGH = {
    "custom": (raises_user_error, None, UserError),
    "zero": (divides_by_zero, None, ZeroDivisionError),
    "key": (wrong_key, {"w": np.ones(3)}, KeyError),
}


@pytest.mark.parametrize("case", PASS_THROUGH)
def test_other_user_errors_pass_through(case):
    fn, params, error = PASS_THROUGH[case]
    with pytest.raises(error) as info:
        sr.SoftBody(fn, VOLUME, 1000.0, n_q=1, params=params)
    assert type(info.value) is error


def test_wrong_output_shape_is_a_value_error():
    def two_numbers(x, q):
        return x[:2] * q[0]

    with pytest.raises(ValueError, match="kinematics 'two_numbers' must return a \\(3,\\)"):
        sr.SoftBody(two_numbers, VOLUME, 1000.0, n_q=1)


def test_complex_or_integer_map_is_a_type_error():
    # a complex map gave complex mass matrices silently; an integer one a float0 error
    def complex_map(x, q):
        return x * (1.0 + q[0]) + 0j

    def rounded(x, q):
        return jnp.round(x * (1.0 + q[0])).astype(int)

    for fn, dtype in ((complex_map, "complex128"), (rounded, "int")):
        message = f"kinematics '{fn.__name__}' must return a real floating-point position, got dtype {dtype}"
        with pytest.raises(TypeError, match=message):
            sr.SoftBody(fn, VOLUME, 1000.0, n_q=1)


# --------------------------------------------------------------------------------------------
# Model data is copied, not held by reference


def scaled(x, q, params):
    return params["scale"] * x + q[0] * params["offset"][0]


MUTATIONS = {
    "array": lambda p: p["scale"].__setitem__(slice(None), 7.0),
    "dict": lambda p: p.__setitem__("scale", np.full(3, 9.0)),
    "list": lambda p: p["offset"].__setitem__(0, np.full(3, 5.0)),
    "list item": lambda p: p["offset"][0].__setitem__(slice(None), 4.0),
}


def _map_results(params):
    body = sr.SoftBody(scaled, VOLUME, 1000.0, n_q=1, params=params)
    x, q = jnp.array([0.01, -0.02, 0.2]), jnp.array([0.3])
    return lambda: (body.kinematics(x, q), body.kinematics.map_points(VOLUME.points, q))


def _strain_energy_results(params):
    def density(F, p):
        return jnp.sum(p["scale"] * jnp.diagonal(F)) + jnp.sum(p["offset"][0] * F[0])

    material = sr.materials.StrainEnergy(density, params=params)
    F = jnp.eye(3) + 0.1 * jnp.arange(9.0).reshape(3, 3)
    return lambda: (material.density(F),)


def _energy_results(params):
    def potential(q, p):
        return jnp.sum(p["scale"]) * q[0] ** 2 + p["offset"][0][0] * q[0]

    def rayleigh(q, qd, p):
        return p["scale"][0] * qd[0] ** 2 + p["offset"][0][2] * q[0] * qd[0] ** 2

    material = sr.materials.Energy(potential, rayleigh, params=params)
    q, qd = jnp.array([0.3]), jnp.array([-0.2])
    return lambda: (material.energy(None, q), material.dissipation(None, q, qd))


MODELS_WITH_PARAMS = {
    "map": _map_results,
    "StrainEnergy": _strain_energy_results,
    "Energy": _energy_results,
}


@pytest.mark.parametrize("model", MODELS_WITH_PARAMS)
@pytest.mark.parametrize("case", MUTATIONS)
def test_params_are_copied(model, case):
    params = {"scale": np.array([1.0, 2.0, 3.0]), "offset": [np.array([0.1, 0.0, -0.2])]}
    results = MODELS_WITH_PARAMS[model](params)
    before = [np.asarray(r) for r in results()]
    MUTATIONS[case](params)
    for after, ref in zip(results(), before):
        np.testing.assert_array_equal(after, ref)


def test_a_map_indexing_past_n_q_is_named():
    # JAX clamps q[1] on a (1,) q to q[0]: the body moved with the wrong coordinate
    def bend(x, q):
        return x + q[0] * x[2] * jnp.array([0.0, 0.0, 1.0]) + q[1] * x[2] * jnp.array([1, 0, 0])

    with pytest.raises(ValueError, match=r"kinematics 'bend' indexes past its arguments .*index 1"):
        sr.SoftBody(bend, VOLUME, 1000.0, n_q=1)
    assert sr.SoftBody(bend, VOLUME, 1000.0, n_q=2).n_q == 2


def _id_of_body(body):
    robot = sr.Robot([sr.Link(sr.joints.Fixed(), body)])
    n = body.n_q
    return sr.inverse_dynamics(robot, jnp.full(n, 0.3), jnp.full(n, 0.5), jnp.ones(n))


def test_an_index_past_n_q_is_named_when_the_body_is_built_inside_transformations():
    """Built inside `jit`, `grad` or `vmap` (a learned map's training loop), with its weights
    traced or closed over, the body's map is still checked (it ran unchecked with traced
    weights, and a closed-over one failed with a tracer-to-bool error)."""

    def mlp(x, q, p):  # reads q[1] with n_q = 1
        h = jnp.tanh(p["w1"] @ jnp.concatenate([x / 0.2, jnp.array([q[0], q[1]])]))
        return x + 0.2 * (p["w2"] @ h) * x[2]

    rng = np.random.default_rng(0)
    params = {"w1": rng.normal(size=(4, 5)), "w2": 0.1 * rng.normal(size=(3, 4))}

    def loss(p):
        return _id_of_body(sr.SoftBody(mlp, VOLUME, 1000.0, n_q=1, params=p))[0]

    def closed(scale):
        def bend(x, q):
            return x + q[0] * x[2] * jnp.array([0.0, 0.0, 1.0]) + q[1] * jnp.array([1.0, 0, 0])

        return _id_of_body(sr.SoftBody(bend, VOLUME, 1000.0 * scale, n_q=1))[0]

    match = r"indexes past its arguments \(x \(3,\), q \(1,\)\).*index 1"
    for run in (jax.jit(loss), jax.grad(loss)):
        with pytest.raises(ValueError, match=match):
            run(params)
    stacked = jax.tree_util.tree_map(lambda a: jnp.stack([a, a]), params)
    with pytest.raises(ValueError, match=match):
        jax.vmap(loss)(stacked)
    for run in (jax.jit(closed), jax.grad(closed)):
        with pytest.raises(ValueError, match=match):
            run(1.0)


def test_an_index_that_depends_on_x_is_checked_at_the_nodes():
    """A map of pieces reads `q[k]` with `k` from `x3`: at the origin it reads `q[0]` only;
    at the distal nodes `q[2]`, past `n_q = 2` (JAX clamped it to `q[1]`)."""
    length = 0.2

    def pieces(x, q):
        k = jnp.clip(jnp.floor(3 * x[2] / length), 0, 2).astype(int)
        return x + jnp.array([q[k] * x[2], 0.0, 0.0])

    volume = sr.quadrature.cylinder(0.02, length, 3, 1, 3)
    with pytest.raises(ValueError, match=r"'pieces' indexes past .*index 2"):
        sr.SoftBody(pieces, volume, 1000.0, n_q=2)
    assert sr.SoftBody(pieces, volume, 1000.0, n_q=3).n_q == 3


def test_a_map_closing_over_a_traced_value_is_built_inside_transformations():
    """A map that reads a traced value of the caller cannot be checked apart; it is built and
    differentiated as before."""

    def loss(scale):
        def bend(x, q):
            return x + scale * q[0] * x[2] * jnp.array([1.0, 0.0, 0.0])

        return _id_of_body(sr.SoftBody(bend, VOLUME, 1000.0, n_q=1))[0]

    value = loss(1.5)
    np.testing.assert_allclose(jax.jit(loss)(1.5), value, rtol=1e-13)
    step = 1e-6
    difference = (loss(1.5 + step) - loss(1.5 - step)) / (2 * step)
    np.testing.assert_allclose(jax.grad(loss)(1.5), difference, rtol=1e-6)


def test_a_map_computing_in_float32_is_warned_about():
    """A map casting to float32 inside a float64 program made the dynamics float32-accurate
    (1e-8 relative in the inverse dynamics), silently."""

    def single(x, q):
        return (x + q[0] * x[2] * jnp.array([1.0, 0.0, 0.0])).astype(jnp.float32)

    with pytest.warns(UserWarning, match=r"'single' returns float32 positions for float64"):
        sr.SoftBody(single, VOLUME, 1000.0, n_q=1)


def test_params_leaves_are_arrays_or_numbers():
    with pytest.raises(TypeError, match=r"params\['layers'\]\[1\] must be an array or a number"):
        km.FunctionKinematics(lambda x, q, p: x, 1, {"layers": [np.ones(2), "relu"]})


def test_params_copy_keeps_gradients():
    def loss(w):
        kin = km.FunctionKinematics(lambda x, q, p: p * x, 1, w)
        return jnp.sum(kin(jnp.array([1.0, 2.0, 3.0]), jnp.zeros(1)))

    np.testing.assert_allclose(jax.grad(loss)(jnp.ones(3)), [1.0, 2.0, 3.0], rtol=0, atol=0)


# --------------------------------------------------------------------------------------------
# Capabilities are declared, not probed


FAMILIES = {
    "rigid": (km.Rigid(), False, False),
    "planar cc": (km.PlanarConstantCurvature(0.3), True, True),
    "cc3d": (km.ConstantCurvature3D(0.3), True, True),
    "pcs": (km.PlanarPCS(0.3), True, True),
    "spatial pcs": (km.SpatialPCS(0.3), True, True),
    "cosserat": (km.Cosserat(0.3, km.Legendre(0.3, 1, "bend")), True, True),
    "function": (km.FunctionKinematics(lambda x, q: x, 1), False, False),
    "lvp": (lvp.helicoid_segment(0.3), False, False),
}


@pytest.mark.parametrize("case", FAMILIES)
def test_capabilities_are_declared(case):
    kin, exact, rod = FAMILIES[case]
    assert kin.exact_distal is exact and kin.has_backbone is rod
    q = jnp.zeros(kin.n_q)
    name = type(kin).__name__
    if not exact:
        with pytest.raises(NotImplementedError, match=f"{name} .*exact_distal is False"):
            kin.distal_pose(q)
    if not rod:
        with pytest.raises(NotImplementedError, match=f"{name} .*has_backbone is False"):
            kin.backbone(jnp.zeros(2), q)


def test_traced_lengths_are_checked_and_a_basis_spans_its_rod():
    # a length traced inside jit was never checked (a negative one computed silently)
    volume = quadrature.cylinder(0.02, 0.1, n_axial=3, n_radial=2)

    def mass(length):
        body = sr.SoftBody(km.ConstantCurvature3D(length), volume, 1000.0)
        return sr.mass_matrix(sr.Robot([sr.Link(joints.Fixed(), body)]), jnp.full(3, 0.3))

    np.testing.assert_allclose(jax.jit(mass)(0.1), mass(0.1), rtol=1e-13)
    with pytest.raises(Exception, match="ConstantCurvature3D: length must be finite and positive"):
        jax.block_until_ready(jax.jit(mass)(-0.1))

    def planar(length):  # its own check substituted 1.0 for a traced length
        body = sr.SoftBody(km.PlanarConstantCurvature(length), volume, 1000.0)
        return sr.mass_matrix(sr.Robot([sr.Link(joints.Fixed(), body)]), jnp.full(1, 0.3))

    np.testing.assert_allclose(jax.jit(planar)(0.1), planar(0.1), rtol=1e-13)
    with pytest.raises(Exception, match="PlanarConstantCurvature: length must be finite and pos"):
        jax.block_until_ready(jax.jit(planar)(-0.1))
    # a basis laid out over twice the rod: its second piece was never reached (M singular)
    with pytest.raises(ValueError, match="basis PiecewiseConstant spans length 0.2, the rod 0.1"):
        km.Cosserat(0.1, km.PiecewiseConstant(0.2, 2, strains=("bend",)))


# --------------------------------------------------------------------------------------------
# A map called directly checks its arguments' shapes (JAX would clamp the indices of a short
# q and ignore the rest of a long one)

DIRECT = {
    "planar_cc": km.PlanarConstantCurvature(0.3),
    "cosserat": km.Cosserat(0.3, km.PiecewiseConstant(0.3, 2, ("bend", "axial"))),
    "helicoid": lvp.helicoid_segment(0.1),
    "function": km.FunctionKinematics(lambda x, q: x + q[0], 1),
}


@pytest.mark.parametrize("case", DIRECT)
def test_direct_calls_check_shapes(case):
    kin = DIRECT[case]
    x, q = jnp.array([0.0, 0.0, 0.05]), jnp.zeros(kin.n_q)
    assert kin(x, q).shape == (3,)
    for bad in (jnp.zeros(kin.n_q + 2), jnp.zeros((kin.n_q, 1))):
        with pytest.raises(ValueError, match=rf"q must have shape \({kin.n_q},\)"):
            kin(x, bad)
        with pytest.raises(ValueError, match=rf"map_points: q must have shape \({kin.n_q},\)"):
            kin.map_points(x[None], bad)
    with pytest.raises(ValueError, match=r"x must be one material point of shape \(3,\)"):
        kin(x[:2], q)
    with pytest.raises(ValueError, match=r"points must have shape \(K, 3\)"):
        kin.map_points(x, q)
    # under jit the check is made at trace time
    with pytest.raises(ValueError, match="q must have shape"):
        jax.jit(kin.map_points)(x[None], jnp.zeros(kin.n_q + 1))
    if kin.exact_distal:
        with pytest.raises(ValueError, match=r"distal_pose: q must have shape"):
            kin.distal_pose(jnp.zeros(kin.n_q + 1))
    if kin.has_backbone:
        with pytest.raises(ValueError, match=r"backbone: q must have shape"):
            kin.backbone(jnp.zeros(2), jnp.zeros(kin.n_q + 1))
        with pytest.raises(ValueError, match=r"backbone: x3 must have shape \(R,\)"):
            kin.backbone(jnp.zeros(()), q)


# --------------------------------------------------------------------------------------------
# A user's own subclass of `Kinematics`: checked at build time beyond its `__call__`


def _bend(x, q):
    return x + jnp.stack([q[0] * x[2] ** 2 / 0.3, 0.0 * q[0], 0.0 * q[0]])


@dataclasses.dataclass(frozen=True)
class _Bend(km.Kinematics):
    """A valid subclass: a dataclass registered as a pytree, `n_q` static."""

    gain: jax.Array = dataclasses.field(default_factory=lambda: jnp.ones(()))
    n_q: int = dataclasses.field(default=1, metadata={"static": True})

    def __call__(self, x, q):
        return _bend(x, self.gain * q)


jax.tree_util.register_dataclass(_Bend)


def _variant(**methods):
    """A registered subclass of `_Bend` overriding `methods`."""
    cls = dataclasses.dataclass(frozen=True)(type("Variant", (_Bend,), methods))
    return jax.tree_util.register_dataclass(cls)


class _NotAPytree(km.Kinematics):
    n_q = 1

    def __call__(self, x, q):
        return _bend(x, q)


@pytest.mark.parametrize(
    ("kin", "error", "message"),
    [
        (_NotAPytree(), TypeError, "'_NotAPytree' .* is not a JAX pytree.*FunctionKinematics"),
        (
            _variant(
                map_points=lambda self, p, q, n_axial=None: jax.vmap(_bend, (0, None))(p, q).T
            )(),
            ValueError,
            r"map_points for points \(2, 3\) must return shape \(2, 3\), got \(3, 2\)",
        ),
        (
            _variant(map_points=lambda self, p, q, n_axial=None: jnp.zeros(p.shape, int))(),
            TypeError,
            "map_points .* must return real floating-point values, got dtype int",
        ),
        (
            _variant(
                exact_distal=True, distal_pose=lambda self, q: (jnp.eye(3), q * jnp.ones(2))
            )(),
            ValueError,
            r"distal_pose's t must return shape \(3,\), got \(2,\)",
        ),
        (
            _variant(
                exact_distal=True, distal_pose=lambda self, q: (2 * jnp.eye(3), jnp.ones(3))
            )(),
            ValueError,
            "distal_pose at q = 0: the rotation must be orthonormal",
        ),
        (
            _variant(exact_distal=True, distal_pose=lambda self, q: (jnp.eye(3), q[0]))(),
            ValueError,
            r"distal_pose's t must return shape \(3,\), got \(\)",
        ),
    ],
    ids=[
        "not-a-pytree",
        "map-points-transposed",
        "map-points-int",
        "distal-t",
        "distal-rotation",
        "distal-t-scalar",
    ],
)
def test_a_users_kinematics_subclass_is_checked_at_build(kin, error, message):
    # before: accepted, then JAX's messages at the first dynamics call, naming nothing, or
    # (a rotation 2 I) dynamics that disagreed with the Euler–Lagrange baseline by 6e-3
    with pytest.raises(error, match=message):
        sr.SoftBody(kin, VOLUME, 1000.0)


def test_a_valid_kinematics_subclass_builds_and_moves():
    body = sr.SoftBody(_Bend(), VOLUME, 1000.0)
    robot = sr.Robot([sr.Link(joints.Fixed(), body)], gravity=(0.0, 0.0, -9.81))
    q = jnp.array([0.3])
    np.testing.assert_allclose(
        sr.mass_matrix(robot, q), sr.lagrangian.mass_matrix(robot, q), rtol=1e-12
    )
