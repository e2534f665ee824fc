"""Errors a new user meets with kinematics (issue 10): maps that JAX cannot trace, model data
held by reference, and capabilities a family does not declare."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import kinematics as km
from softrigid import quadrature
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


@pytest.mark.parametrize("case", MUTATIONS)
def test_params_are_copied(case):
    params = {"scale": np.array([1.0, 2.0, 3.0]), "offset": [np.array([0.1, 0.0, -0.2])]}
    body = sr.SoftBody(scaled, VOLUME, 1000.0, n_q=1, params=params)
    x, q = jnp.array([0.01, -0.02, 0.2]), jnp.array([0.3])
    before = np.asarray(body.kinematics(x, q))
    points = np.asarray(body.kinematics.map_points(VOLUME.points, q))
    MUTATIONS[case](params)
    np.testing.assert_array_equal(body.kinematics(x, q), before)
    np.testing.assert_array_equal(body.kinematics.map_points(VOLUME.points, q), points)


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
