"""Reference trajectories `r(t) -> (r, ṙ, r̈)` for the controllers (`softrigid.control`)."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from .._checks import as_float, as_scalar, check_finite, traced_check
from .._controller import concrete_times, held_switch_times, real_inputs
from .._module import is_concrete, module, static

__all__ = ["Blend", "Constant", "CubicRestToRest", "Reference", "Spline"]


class Reference(abc.ABC):
    """A reference `r(t) -> (r, ṙ, r̈)`, each `(size,)`; subclasses are `@module` pytrees."""

    size: int

    @abc.abstractmethod
    def __call__(self, t: Array) -> tuple[Array, Array, Array]:
        """Position, velocity and acceleration at time `t`."""

    def switch_times(self) -> tuple[float, ...]:
        """The times at which `r̈` may jump (see `Controller.switch_times`): by default those of
        the references this one holds."""
        return held_switch_times(self)


def _vector(name: str, value: Any) -> Array:
    """A non-empty finite vector of reals (`check_finite`: at once, or at run time when
    traced)."""
    x = as_float(value, name)
    if x.ndim != 1 or x.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty vector, got shape {x.shape}")
    return check_finite(name, x)


def _time(where: str, t: Any) -> Array:
    """`t` as a scalar array: a reference is evaluated at one time (`jax.vmap` it over many;
    a vector of times broadcast against the samples gave entries of different times)."""
    t = jnp.asarray(t)
    if t.ndim != 0:
        raise ValueError(
            f"{where}: t must be a scalar time, got shape {t.shape} (evaluate many times with "
            "jax.vmap)"
        )
    return t


def _span(message: str, start: Array, end: Array) -> tuple[Array, Array]:
    """`(start, end)`, scalars with `T = end − start > 0` and `1/T²` finite (the profiles divide
    by it): a `ValueError` `message` (with the values) at once or, traced, a run-time check."""
    span = end - start
    if is_concrete(span):
        if not (float(span) > 0.0 and np.isfinite(1.0 / float(span) ** 2)):
            raise ValueError(f"{message}, got T = {float(span):.6g}")
        return start, end
    bad = ~(span > 0.0) | ~jnp.isfinite(1.0 / span**2)
    return traced_check((start, end), bad, message)


@module
class Constant(Reference):
    """A constant reference `(r, 0, 0)` (a set point)."""

    value: Array

    def __init__(self, value: Any) -> None:
        object.__setattr__(self, "value", _vector("Constant: value", value))

    @property
    def size(self) -> int:
        return self.value.shape[0]

    def __call__(self, t: Array) -> tuple[Array, Array, Array]:
        _time("Constant", t)
        zero = jnp.zeros_like(self.value)
        return self.value, zero, zero


@module
class CubicRestToRest(Reference):
    """Rest-to-rest cubic from `start` at `t0` to `end` at `t1`, held outside `[t0, t1)`:

        r = r₀ + s(τ) (r₁ − r₀),  s = 3τ² − 2τ³,  τ = (t − t₀)/T,  T = t₁ − t₀,
        ṙ = 6τ(1 − τ)/T (r₁ − r₀),  r̈ = (6 − 12τ)/T² (r₁ − r₀)  on [t₀, t₁), else ṙ = r̈ = 0.

    The velocity vanishes at both ends; the acceleration is `±6 (r₁ − r₀)/T²` there (a cubic
    cannot also bring it to zero) and jumps to zero outside. At each end the reference takes
    its right limit (`r̈ = 6 (r₁ − r₀)/T²` at `t₀`, `0` at `t₁`): a fixed step that starts at
    an end integrates the law that holds after it (`softrigid._switches`).
    """

    start: Array
    end: Array
    t0: Array
    t1: Array

    def __init__(self, start: Any, end: Any, t0: Any, t1: Any) -> None:
        start = _vector("CubicRestToRest: start", start)
        end = _vector("CubicRestToRest: end", end)
        if end.shape != start.shape:
            raise ValueError(
                f"CubicRestToRest: end has shape {end.shape}, start has shape {start.shape}"
            )
        t0 = as_scalar("CubicRestToRest: t0", t0)
        t1 = as_scalar("CubicRestToRest: t1", t1)
        t0, t1 = _span(
            "CubicRestToRest: t1 must exceed t0 (T = t1 − t0 > 0 with 1/T² finite)", t0, t1
        )
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)
        object.__setattr__(self, "t0", t0)
        object.__setattr__(self, "t1", t1)

    @property
    def size(self) -> int:
        return self.start.shape[0]

    def __call__(self, t: Array) -> tuple[Array, Array, Array]:
        t = _time("CubicRestToRest", t)
        period = self.t1 - self.t0
        # half-open: at t₁ the held reference, r̈'s right limit (a step from t₁ integrates it)
        inside = (t >= self.t0) & (t < self.t1)
        # τ clipped outside only: at t₀ its derivative is the inside one, as the values
        tau = jnp.where(inside, (t - self.t0) / period, jnp.where(t < self.t0, 0.0, 1.0))
        delta = self.end - self.start
        s = tau * tau * (3.0 - 2.0 * tau)
        sd = jnp.where(inside, 6.0 * tau * (1.0 - tau) / period, 0.0)
        sdd = jnp.where(inside, (6.0 - 12.0 * tau) / period**2, 0.0)
        return self.start + s * delta, sd * delta, sdd * delta

    def switch_times(self) -> tuple[float, ...]:
        """`t0` and `t1`, where `r̈` jumps between zero and `±6 (r₁ − r₀)/T²`."""
        return concrete_times(jnp.stack([self.t0, self.t1]))


@module
class Spline(Reference):
    """Twice continuously differentiable cubic spline through samples `r(t_k) = r_k`, held
    (with `ṙ = r̈ = 0`) outside `[t_0, t_K)` (at `t_K` the held value, the right limit that a
    fixed step starting there integrates). On `[t_k, t_{k+1}]`, with `δ = t − t_k`,

        r = Σ_j c_{kj} δ^{3−j},   ṙ and r̈ its derivatives,

    with the coefficients of `scipy.interpolate.CubicSpline` (computed once, when the spline
    is built, from concrete samples); evaluation is `jnp` only (jit, vmap, grad in `t`).

    Args:
        times: `(K + 1,)` strictly increasing sample times, `K ≥ 1`.
        samples: `(K + 1, m)` sampled configurations or outputs.
        bc_type: scipy's end conditions; the default `"clamped"` (ṙ = 0 at both ends) starts
            and ends at rest, so the held reference is C¹ across the ends.
    """

    times: Array
    coefficients: Array  # (K, 4, m)

    def __init__(self, times: Any, samples: Any, bc_type: Any = "clamped") -> None:
        from scipy.interpolate import CubicSpline

        if not is_concrete(times, samples):
            raise TypeError(
                "Spline: times and samples must be concrete (the spline is fitted by scipy when "
                "it is built): build it outside jit, or pass it into the traced function"
            )
        t = np.asarray(check_finite("Spline: times", as_float(times, "Spline: times")))
        r = np.asarray(check_finite("Spline: samples", as_float(samples, "Spline: samples")))
        if t.ndim != 1 or t.shape[0] < 2 or not np.all(np.diff(t) > 0):
            raise ValueError(
                "Spline: times must be a strictly increasing vector of at least 2 entries, "
                f"got shape {t.shape}"
            )
        if r.ndim != 2 or r.shape[0] != t.shape[0] or r.shape[1] == 0:
            raise ValueError(
                f"Spline: samples must have shape ({t.shape[0]}, m), one row per time, "
                f"got {r.shape}"
            )
        try:
            c = CubicSpline(t, r, bc_type=bc_type, axis=0).c  # (4, K, m)
        except ValueError as err:  # scipy's own checks (bc_type, spacing) name its arguments
            raise ValueError(f"Spline: scipy's CubicSpline refused the data: {err}") from None
        if not np.all(np.isfinite(c)):
            raise ValueError(
                "Spline: the fitted coefficients are not finite (times spaced too far apart "
                "or too close for float64?)"
            )
        object.__setattr__(self, "times", jnp.asarray(t))
        object.__setattr__(self, "coefficients", jnp.asarray(np.moveaxis(c, 0, 1)))

    @property
    def size(self) -> int:
        return self.coefficients.shape[2]

    def __call__(self, t: Array) -> tuple[Array, Array, Array]:
        t = _time("Spline", t)
        k = jnp.clip(jnp.searchsorted(self.times, t, side="right") - 1, 0, self.times.shape[0] - 2)
        # half-open: at t_K the held reference, the right limit (a step from t_K integrates it)
        inside = (t >= self.times[0]) & (t < self.times[-1])
        # held outside only: at t_0 the derivative in t is the inside one
        d = jnp.where(inside, t, jnp.clip(t, self.times[0], self.times[-1])) - self.times[k]
        c3, c2, c1, c0 = self.coefficients[k]
        r = ((c3 * d + c2) * d + c1) * d + c0
        rd = (3.0 * c3 * d + 2.0 * c2) * d + c1
        rdd = 6.0 * c3 * d + 2.0 * c2
        return r, jnp.where(inside, rd, 0.0), jnp.where(inside, rdd, 0.0)

    def switch_times(self) -> tuple[float, ...]:
        """`t_0` and `t_K`, where the held reference's `r̈` (and, unless clamped, `ṙ`) jumps
        to zero (the adaptive methods restart there)."""
        return concrete_times(jnp.stack([self.times[0], self.times[-1]]))


@module
class Blend(Reference):
    """A reference that starts at rest at `start` and merges into `reference` by `duration`:

        r = r₀ + σ(τ) (r_d(t) − r₀),  τ = clip(t / T, 0, 1),  σ = 10τ³ − 15τ⁴ + 6τ⁵,
        ṙ = σ̇ (r_d − r₀) + σ ṙ_d,   r̈ = σ̈ (r_d − r₀) + 2 σ̇ ṙ_d + σ r̈_d,

    with `σ̇ = 30τ²(1 − τ)²/T` and `σ̈ = 60τ(1 − τ)(1 − 2τ)/T²` on `[0, T]`, zero after. The
    quintic `σ` has `σ = σ' = σ'' = 0` at `τ = 0` and `σ = 1, σ' = σ'' = 0` at `τ = 1`, so
    `r(0) = r₀`, `ṙ(0) = r̈(0) = 0`, and `r` is twice continuously differentiable, equal to
    `r_d` from `T` on. For a tracking controller started at rest at the output `r₀`, the
    error starts at zero instead of at `r_d(0) − r₀`, so the error dynamics are not rung by
    an initial step.

    Args:
        reference: the reference to merge into, `(m,)`.
        start: `(m,)` where the blend starts (at `t = 0`, at rest).
        duration: `T > 0`, when the blend has become `reference`.
    """

    reference: Reference
    start: Array
    duration: Array

    def __init__(self, reference: Reference, start: Any, duration: Any) -> None:
        if not isinstance(reference, Reference):
            raise TypeError(f"Blend: reference must be a Reference, got {type(reference).__name__}")
        start = _vector("Blend: start", start)
        if start.shape != (reference.size,):
            raise ValueError(
                f"Blend: start has shape {start.shape}, the reference has size {reference.size}"
            )
        duration = as_scalar("Blend: duration", duration)
        duration = _span(
            "Blend: duration must be positive (T > 0 with 1/T² finite)",
            jnp.zeros((), duration.dtype),
            duration,
        )[1]
        object.__setattr__(self, "reference", reference)
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "duration", duration)

    @property
    def size(self) -> int:
        return self.start.shape[0]

    def __call__(self, t: Array) -> tuple[Array, Array, Array]:
        t = _time("Blend", t)
        r, rd, rdd = self.reference(t)
        T = self.duration
        # σ̇ = σ̈ = 0 at τ = 1: no branch needed after T; clipped outside [0, T] only, so that
        # at 0 and T the derivative in t is the inside one
        tau = jnp.where((t >= 0.0) & (t <= T), t / T, jnp.clip(t / T, 0.0, 1.0))
        s = tau**3 * (10.0 - 15.0 * tau + 6.0 * tau * tau)
        sd = 30.0 * tau**2 * (1.0 - tau) ** 2 / T
        sdd = 60.0 * tau * (1.0 - tau) * (1.0 - 2.0 * tau) / T**2
        delta = r - self.start
        return self.start + s * delta, sd * delta + s * rd, sdd * delta + 2.0 * sd * rd + s * rdd


@module
class _Function(Reference):
    """A user function `u(t) -> (m,)` as a reference (its derivatives are not used)."""

    function: Callable[[Array], Array] = static()
    size: int = static()

    def __call__(self, t: Array) -> tuple[Array, Array, Array]:
        u = real_inputs("Feedforward: inputs(t)", self.function(t))
        if u.shape != (self.size,):
            raise ValueError(
                f"Feedforward: inputs(t) must return shape ({self.size},), got {u.shape}"
            )
        zero = jnp.zeros_like(u)
        return u, zero, zero


def _reference(where: str, value: Any, size: int | None = None) -> Reference:
    """`value` as a `Reference` (a vector: a `Constant`, its errors naming `where`)."""
    if isinstance(value, Reference):
        ref = value
    else:
        ref = object.__new__(Constant)
        object.__setattr__(ref, "value", _vector(where, value))
    if size is not None and ref.size != size:
        raise ValueError(f"{where} has size {ref.size}, expected {size}")
    return ref
