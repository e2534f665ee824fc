"""`softrigid._trig.sincos`: sin and cos as vectorizable arithmetic, checked against the C
library in extended precision, with exact derivatives and no library call in the program."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid._trig import sincos

_SINCOS = jax.jit(sincos, compiler_options=sr.compiler_options())


def _ulps(value: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Error of float64 `value` in units of the last place of the float64 nearest `exact`."""
    return np.abs(value - exact) / np.spacing(np.abs(exact.astype(np.float64)))


@pytest.mark.parametrize(("bound", "ulps"), [(1e-6, 0.5), (4.0, 1.1), (1e4, 1.15), (1e6, 1.3)])
def test_sincos_is_within_an_ulp_or_two(bound: float, ulps: float) -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(-bound, bound, 200_000)
    # the hardest arguments of the reduction: near multiples of π/2
    k = np.arange(-8, 9) * np.round(bound / np.pi)
    near = (k[:, None] * np.pi / 2 + np.array([-1e-9, 0.0, 1e-9])).ravel()
    x = np.concatenate([x, near[np.abs(near) <= bound]])
    sin, cos = (np.asarray(v) for v in _SINCOS(x))
    exact = x.astype(np.longdouble)
    assert _ulps(sin, np.sin(exact)).max() <= ulps
    assert _ulps(cos, np.cos(exact)).max() <= ulps


def test_sincos_special_values() -> None:
    x = np.array([0.0, np.pi / 2, np.pi, 1e300, -1e300, np.inf, -np.inf, np.nan])
    sin, cos = (np.asarray(v) for v in _SINCOS(x))
    np.testing.assert_allclose(sin[:3], np.sin(x[:3]), rtol=0, atol=1e-16)
    np.testing.assert_allclose(cos[:3], np.cos(x[:3]), rtol=0, atol=1e-16)
    # no meaningful value for |x| ≥ 2⁵³ π/2, but one in [−1, 1]; inf and NaN give NaN
    assert np.all(np.abs(sin[3:5]) <= 1 + 1e-12) and np.all(np.abs(cos[3:5]) <= 1 + 1e-12)
    assert np.isnan(sin[5:]).all() and np.isnan(cos[5:]).all()


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_sincos_derivatives_are_exact(order: int) -> None:
    def nth(f: Callable[[jax.Array], jax.Array]) -> Callable[[jax.Array], jax.Array]:
        for _ in range(order):
            f = jax.grad(f)
        return f

    x = jnp.linspace(-7.0, 7.0, 29)
    for which, exact in ((0, np.sin), (1, np.cos)):
        got = jax.jit(jax.vmap(nth(lambda t, w=which: sincos(t)[w])))(x)
        # d^n sin = sin(x + nπ/2), d^n cos = cos(x + nπ/2)
        np.testing.assert_allclose(got, exact(np.asarray(x) + order * np.pi / 2), atol=2e-15)


def test_sincos_and_its_derivatives_call_no_library_sine() -> None:
    """The compiled program holds no `sine`/`cosine` instruction (a C library call per element
    on XLA:CPU), its derivatives included; other dtypes keep `jnp.sin`/`jnp.cos`."""

    def f(x: jax.Array) -> jax.Array:
        return jnp.sum(sincos(x)[0] * sincos(x)[1])

    hlo = jax.jit(jax.hessian(f)).lower(jnp.ones(5)).compile().as_text()
    assert " sine(" not in hlo and " cosine(" not in hlo
    x32 = jnp.linspace(-3.0, 3.0, 7, dtype=jnp.float32)
    sin, cos = sincos(x32)
    assert sin.dtype == jnp.float32
    np.testing.assert_array_equal(sin, jnp.sin(x32))
    np.testing.assert_array_equal(cos, jnp.cos(x32))
