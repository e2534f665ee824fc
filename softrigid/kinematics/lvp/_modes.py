"""Mode functions `m(z) -> (n,)` of the LVP primitives' fields `field(z) = m(z) · q`."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

from ..._checks import as_count, as_float, check_finite
from ..._module import module, static
from ...quadrature._gauss import gauss_legendre
from .._base import trace_user
from .._rod import check_length

__all__ = ["FunctionModes", "Modes", "Polynomial"]


class Modes(abc.ABC):
    """Mode functions `m(z) -> (n,)` of a primitive's field `m(z) · q`.

    `integral(z) = ∫_0^z m(s) ds` (needed by `Stretch`, `Bend` and `Source`) defaults to a
    Gauss–Legendre rule with `n_gauss` nodes on `[0, z]` (exact for polynomials of degree
    `2 n_gauss − 1`).
    """

    n: int
    n_gauss: int = 8

    @abc.abstractmethod
    def __call__(self, z: Array) -> Array:
        """`m(z)` `(n,)`."""

    def integral(self, z: Array) -> Array:
        """`∫_0^z m(s) ds` `(n,)`."""
        t, w = gauss_legendre(self.n_gauss)
        values = jax.vmap(self)(z * jnp.asarray(t, dtype=jnp.result_type(z, float)))
        return z * (jnp.asarray(w, dtype=values.dtype) @ values)

    def field(self, z: Array, q: Array) -> Array:
        """The field `m(z) · q` (scalar)."""
        return self(z) @ q

    def field_integral(self, z: Array, q: Array) -> Array:
        """`∫_0^z m(s) ds · q` (scalar)."""
        return self.integral(z) @ q


@module
class Polynomial(Modes):
    """Polynomial modes in `s = z / L`: `m_j(z) = Σ_k C[j, k] s^k`, integrals in closed form.

    Args:
        coefficients: `C` `(n, d + 1)` (a list of lists; row `j` is mode `j`, column `k` the
            coefficient of `s^k`).
        length: the scale `L` (default 1).

    Example: `Polynomial([[0, 1, -1]], L)` is the single mode `(z/L)(1 − z/L)`.
    """

    coefficients: Array
    length: Array
    n: int = static()

    def __init__(self, coefficients: Any, length: Any = 1.0) -> None:
        c = as_float(coefficients, "Polynomial: coefficients")
        if c.ndim != 2 or c.shape[0] < 1 or c.shape[1] < 1:
            raise ValueError(
                f"Polynomial: coefficients must have shape (n_modes, degree + 1), got {c.shape}"
            )
        object.__setattr__(self, "coefficients", check_finite("Polynomial: coefficients", c))
        object.__setattr__(self, "length", check_length("Polynomial", length))
        object.__setattr__(self, "n", int(c.shape[0]))

    def _powers(self, s: Array, count: int) -> Array:
        out = [jnp.ones_like(s)]
        for _ in range(1, count):
            out.append(out[-1] * s)
        return jnp.stack(out)

    def __call__(self, z: Array) -> Array:
        s = z / self.length
        return self.coefficients @ self._powers(s, self.coefficients.shape[1])

    def integral(self, z: Array) -> Array:
        # ∫_0^z s^k dz = L s^{k+1} / (k + 1)
        s = z / self.length
        d = self.coefficients.shape[1]
        powers = self._powers(s, d + 1)[1:] / jnp.arange(1, d + 1, dtype=s.dtype)
        return self.length * (self.coefficients @ powers)

    def field(self, z: Array, q: Array) -> Array:
        # m(z) · q = Σ_k a_k s^k with a = Cᵀ q, per body
        return _horner(q @ self.coefficients.astype(q.dtype), z / self.length)

    def field_integral(self, z: Array, q: Array) -> Array:
        # ∫_0^z m · q = L s Σ_k a_k s^k / (k + 1)
        s = z / self.length
        a = q @ self.coefficients.astype(q.dtype)
        return self.length * s * _horner(a / jnp.arange(1, a.shape[0] + 1, dtype=a.dtype), s)


def _horner(a: Array, s: Array) -> Array:
    """`Σ_k a_k s^k` by Horner's rule, elementwise in a point's `s`. Stacked powers contracted
    with a dot leave, once vectorized over points and tangents, the batch axes of the fields in
    orders that differ from their neighbours', and XLA's reshape mover then moves each of the
    transposes between them one operation per pass (25 rounds of its simplifier on the
    helicoid robot's programs)."""
    out = a[-1]
    for k in range(a.shape[0] - 2, -1, -1):
        out = out * s + a[k]
    return out


@module
class FunctionModes(Modes):
    """Mode functions from a callable `fn(z) -> (n,)` (constants inside it are not traced;
    subclass `Modes` as a `@module` for traced parameters).

    Args:
        fn: the mode functions.
        n_gauss: nodes of the Gauss rule of `integral` (default 8).
        name: shown in error messages (defaults to the function's name).
    """

    fn: Callable[[Array], Array] = static()
    n: int = static()
    n_gauss: int = static()
    name: str = static()

    def __init__(self, fn: Callable[[Array], Array], n_gauss: int = 8, name: str = "") -> None:
        if not callable(fn):
            raise TypeError(f"FunctionModes: fn must be callable, got {type(fn).__name__}")
        name = name or getattr(fn, "__name__", repr(fn))
        scalar = jax.ShapeDtypeStruct((), jnp.dtype(float))
        out = trace_user(f"mode functions {name!r}", "z", fn, scalar)
        shape = getattr(out, "shape", None)
        if shape is None or len(shape) != 1 or shape[0] < 1:
            raise ValueError(
                f"mode functions {name!r} must return a (n,) vector for a scalar z, got {shape}"
            )
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "n", int(shape[0]))
        object.__setattr__(self, "n_gauss", as_count("FunctionModes: n_gauss", n_gauss))
        object.__setattr__(self, "name", name)

    def __call__(self, z: Array) -> Array:
        return self.fn(z)


def _as_modes(cls: str, modes: Any) -> Modes:
    if isinstance(modes, Modes):
        return modes
    if callable(modes):
        return FunctionModes(modes)
    raise TypeError(
        f"{cls}: modes must be a lvp.Modes or a callable z -> (n,), got {type(modes).__name__}"
    )
