"""The learned-kinematics example at tiny sizes: the MLP body is the identity at q = 0, the fit
lowers its loss, and the gradient of a loss on the inverse dynamics with respect to the
network's weights is finite, nonzero and equal to a central difference."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scripts import load_example


@pytest.fixture(scope="module")
def ex():
    return load_example("learned_kinematics")


def test_mlp_body_is_identity_at_rest(ex):
    params = ex.init_mlp(jax.random.PRNGKey(3), hidden=4)
    x = jnp.array([0.01, -0.02, 0.2])
    np.testing.assert_array_equal(ex.mlp_map(x, jnp.zeros(1), params), x)
    assert not np.allclose(ex.mlp_map(x, jnp.ones(1), params), x)


@pytest.mark.slow
def test_fit_and_weight_gradient(ex, tmp_path):
    params = ex.init_mlp(jax.random.PRNGKey(0), hidden=4)
    fit = ex.fit_to_constant_curvature(params, steps=5, n_axial=2)
    assert fit.losses[-1] < fit.losses[0]
    grad_norm, along, fd = ex.gradient_check(fit.params, n_axial=2, count=2)
    assert np.isfinite(grad_norm) and grad_norm > 0
    assert abs(along) > 0 and abs(along - fd) < 1e-6 * abs(fd)
    ex.plot_fit(fit, tmp_path / "fit.png")
    assert (tmp_path / "fit.png").stat().st_size > 0
