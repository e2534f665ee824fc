"""The Stumpff coefficient functions of `softrigid._math` against an exact rational oracle."""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from softrigid._math import (
    fused_matmul,
    matmul,
    matmul_rows,
    sinc,
    stumpff,
    stumpffs,
    unrolled_matmul,
)

# below, at and above the series/recurrence split (t = 4), and far out
POINTS = (0.0, 1e-8, 0.05, 0.09, 0.5, 2.0, 3.999, 4.0, 4.001, 9.0, 30.0, 100.0)
# relative tolerance per derivative order (higher orders lose digits to cancellation at large t)
TOLERANCE = (5e-16, 2e-15, 4e-13, 1e-12)


def exact(k: int, t: float, order: int) -> float:
    """`d^n c_k / dt^n = Σ_{j ≥ n} (−1)^j j!/(j − n)! t^{j−n} / (k + 2j)!` in rationals."""
    x, total, j = Fraction(t), Fraction(0), order
    while True:
        term = Fraction((-1) ** j * math.perm(j, order), math.factorial(k + 2 * j))
        term *= x ** (j - order)
        total += term
        if j > order + 10 and abs(term) < Fraction(1, 10**40) * max(abs(total), Fraction(1)):
            return float(total)
        j += 1


def derivative(fn, order: int):
    for _ in range(order):
        fn = jax.grad(fn)
    return jax.jit(fn)


@pytest.mark.parametrize("k", [0, 1, 2, 3])
@pytest.mark.parametrize("order", [0, 1, 2, 3])
def test_stumpff_values_and_derivatives_are_exact(k, order):
    fn = derivative(lambda t: stumpff(k, t), order)
    for t in POINTS:
        got, want = float(fn(jnp.float64(t))), exact(k, t, order)
        assert abs(got - want) <= TOLERANCE[order] * abs(want), (k, order, t, got, want)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_a_run_of_stumpff_functions_is_exact(order):
    # a run of eight takes two series and the downward recurrence c_j = 1/j! − t c_{j+2} below
    # t = 4: there every member is as accurate as one series (TOLERANCE). Above, the upward
    # recurrence from cos θ and sin θ / θ loses digits in the high members just past the split
    # (c_7 at t = 4.001: 7e-15 relative; 4e-13 and 2e-11 in its first two derivatives)
    above = (1e-14, 1e-12, 1e-10)
    for j in range(8):
        fn = derivative(lambda t, j=j: stumpffs(0, 8, t)[j], order)
        for t in POINTS:
            got, want = float(fn(jnp.float64(t))), exact(j, t, order)
            tol = TOLERANCE[order] if t < 4.0 else above[order]
            assert abs(got - want) <= tol * abs(want), (j, order, t, got, want)


def test_rotation_coefficients_are_the_stumpff_functions():
    t = jnp.array([0.0, 0.3, 2.5, 7.0])
    theta = np.sqrt(np.asarray(t[1:]))
    coef_a, coef_b, coef_c = stumpffs(1, 3, t)  # A, B, C as the rotation formulas take them
    np.testing.assert_allclose(coef_a[1:], np.sin(theta) / theta, rtol=1e-15)
    np.testing.assert_allclose(coef_b[1:], (1 - np.cos(theta)) / theta**2, rtol=1e-14)
    np.testing.assert_allclose(coef_c[1:], (theta - np.sin(theta)) / theta**3, rtol=1e-13)
    np.testing.assert_allclose([coef_a[0], coef_b[0], coef_c[0]], [1, 0.5, 1 / 6])
    # the run's derivatives are each function's own, to the third order
    for order in (1, 2, 3):
        for j in range(3):
            run = derivative(lambda x, j=j: stumpffs(1, 3, x)[j], order)
            one = derivative(lambda x, j=j: stumpff(1 + j, x), order)
            for x in (0.0, 0.3, 7.0):
                assert float(run(x)) == float(one(x)), (order, j, x)
    u = jnp.array([-3.0, -0.2, 0.0, 0.2, 3.0])
    np.testing.assert_allclose(sinc(u), np.sinc(np.asarray(u) / np.pi), rtol=1e-15)
    # odd derivatives of the even sinc vanish at 0; the second is c_1'(0) · 2 = −1/3
    assert float(derivative(sinc, 3)(0.0)) == 0.0
    np.testing.assert_allclose(float(derivative(sinc, 2)(0.0)), -1 / 3, rtol=1e-15)


def test_stumpff_batches():
    t = jnp.linspace(0.0, 20.0, 41)
    batched = jax.vmap(jax.grad(lambda x: stumpff(2, x)))(t)
    one_by_one = [float(jax.grad(lambda x: stumpff(2, x))(x)) for x in t]
    np.testing.assert_array_equal(np.asarray(batched), np.asarray(one_by_one))


@pytest.mark.parametrize("product", [fused_matmul, unrolled_matmul])
def test_elementwise_matmuls_are_the_matrix_product(product):
    """`fused_matmul` and `unrolled_matmul` (the articulated passes' elementwise products)
    equal `@` for a matrix and for a vector right-hand side, also under `vmap`, and are not the
    transposed product."""
    rng = np.random.default_rng(7)
    a, b, v = rng.standard_normal((6, 4)), rng.standard_normal((4, 3)), rng.standard_normal(4)
    np.testing.assert_allclose(product(a, b), a @ b, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(product(a, v), a @ v, rtol=1e-14, atol=1e-14)
    stack_a, stack_b = rng.standard_normal((5, 6, 4)), rng.standard_normal((5, 4, 3))
    np.testing.assert_allclose(
        jax.vmap(product)(stack_a, stack_b), stack_a @ stack_b, rtol=1e-14, atol=1e-14
    )
    square = rng.standard_normal((3, 3))
    assert not np.allclose(product(square, square.T), square.T @ square)
    # nothing to contract: zeros of the product's shape
    np.testing.assert_array_equal(product(np.ones((6, 0)), np.ones(0)), np.zeros(6))
    np.testing.assert_array_equal(product(np.ones((6, 0)), np.ones((0, 2))), np.zeros((6, 2)))


def test_matmul_rows_is_matmul_to_the_bit():
    """`matmul_rows` (the link poses, row by row) equals `matmul` (column by column) to the bit,
    batched and under `vmap`, and is the matrix product, not its transpose."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 7, 3, 3))
    rows, columns = matmul_rows(a, b), jax.vmap(matmul)(a, b)
    np.testing.assert_array_equal(np.asarray(rows), np.asarray(columns))
    np.testing.assert_array_equal(np.asarray(jax.vmap(matmul_rows)(a, b)), np.asarray(rows))
    np.testing.assert_allclose(rows, a @ b, rtol=1e-14, atol=1e-14)
    assert not np.allclose(matmul_rows(a[0], b[0]), b[0] @ a[0])
