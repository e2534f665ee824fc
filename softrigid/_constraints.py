"""Equality constraints `a(t, q, q̇) q̈ = b(t, q, q̇)` and the Udwadia–Kalaba equation (seed 002).

Gauss's principle: the constrained accelerations minimize `(q̈ − q̈_f)ᵀ M (q̈ − q̈_f)` subject
to `a q̈ = b`, with `q̈_f = M⁻¹ (A u − bias)` the free accelerations. With `M = L Lᵀ`
(Cholesky) and `z = Lᵀ (q̈ − q̈_f)` this is the least-norm solution of `D z = b − a q̈_f`,
`D = a L⁻ᵀ`:

    q̈ = q̈_f + L⁻ᵀ D⁺ (b − a q̈_f),                     (Udwadia–Kalaba)
    Q_c = M (q̈ − q̈_f) = L D⁺ (b − a q̈_f) = aᵀ λ,     λ = (a M⁻¹ aᵀ)⁺ (b − a q̈_f) = D⁺ᵀ z,

which is the seed's `M^{1/2} (a M^{-1/2})⁺` with the Cholesky factor in place of the symmetric
square root (any `L` with `M = L Lᵀ` gives the same `q̈`). `D⁺` is the Moore–Penrose
pseudo-inverse, so redundant constraints (dependent rows of `a`) are handled; inconsistent ones
are met in the least-squares sense. `Q_c` is the generalized constraint force:
`M q̈ + bias = A u + Q_c`.

Kinds (their rows are stacked in the order given):

* `Holonomic(phi)`: position constraints `φ(q) = 0` (closed loops). With `J = ∂φ/∂q` and
  Baumgarte's drift control `φ̈ + 2α φ̇ + β² φ = 0`:
  `J q̈ = −J̇ q̇ − 2α J q̇ − β² φ`. `J̇ q̇ = ∂²φ/∂q² [q̇, q̇]` comes from nested `jax.jvp`.
* `Nonholonomic(a)`: velocity constraints `a(q) q̇ = 0` (rolling). With `ψ = a q̇` and the
  drift control `ψ̇ + γ ψ = 0`: `a q̈ = −ȧ q̇ − γ a q̇`, `ȧ q̇ = (∂a/∂q · q̇) q̇` by `jax.jvp`.
* `AccelerationForm(fn)`: the general form, `fn(t, q, q̇) -> (a, b)`.

Baumgarte's gains: without them (`α = β = γ = 0`) the constraints hold at the acceleration
level only and the position and velocity residuals drift with the integrator's error; with
them the residuals decay like a damped oscillator. `α = β = ω` is critically damped; keep
`ω dt` well below 1 (e.g. `ω ≈ 10`–`50` 1/s at `dt = 1 ms`). The gains are pytree leaves
(traced: new gains do not recompile); the user functions are static.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from ._cache import jit
from ._checks import as_scalar, as_tuple_of, raise_if
from ._dynamics import DynamicsTerms, terms
from ._entry import algorithm
from ._model import Robot
from ._module import module, static
from ._reports import PREFIX, check_positive_definite, raise_runtime_errors
from .kinematics._base import trace_user, user_array

__all__ = [
    "AccelerationForm",
    "ConstrainedAccelerations",
    "Constraint",
    "Holonomic",
    "Nonholonomic",
    "check_constraints",
    "check_constraints_at",
    "constrained_accelerations",
    "constrained_forward_dynamics",
    "trace_constraints",
]


def _shape(where: str, value: Any, shapes: str, ok: Callable[[tuple[int, ...]], bool]) -> Array:
    """`value` as a floating array if its shape passes `ok`, else a `ValueError` naming
    `where` (checked at trace time; a tuple or a non-floating result: `user_array`'s
    `TypeError`)."""
    arr = jnp.asarray(user_array(where, value))
    if not ok(arr.shape):
        raise ValueError(f"{where} must return a real array of shape {shapes}, got {arr.shape}")
    return arr


def _is_vector(shape: tuple[int, ...]) -> bool:
    return len(shape) == 1


class Constraint(abc.ABC):
    """Equality constraints in acceleration form, `a(t, q, q̇) q̈ = b(t, q, q̇)`, `m` rows."""

    @abc.abstractmethod
    def acceleration(self, t: Array, q: Array, qd: Array) -> tuple[Array, Array]:
        """`(a (m, n_q), b (m,))` at time `t` and state `(q, q̇)`."""


@module
class Holonomic(Constraint):
    """Position constraints `φ(q) = 0` with Baumgarte stabilization,

        J q̈ = −J̇ q̇ − 2α J q̇ − β² φ,   J = ∂φ/∂q,   (φ̈ + 2α φ̇ + β² φ = 0).

    Args:
        phi: `φ(q) -> (m,)` (or a scalar for one constraint), a JAX-traceable function of
            `q` `(n_q,)`; `J` and `J̇ q̇` come from automatic differentiation.
        alpha, beta: Baumgarte gains `α, β ≥ 0` [1/s] (default 0: no drift control).
    """

    alpha: Array
    beta: Array
    phi: Callable[[Array], Array] = static()

    def __init__(self, phi: Callable[[Array], Array], alpha: Any = 0.0, beta: Any = 0.0) -> None:
        if not callable(phi):
            raise TypeError(f"Holonomic: phi must be a function phi(q), got {type(phi).__name__}")
        object.__setattr__(self, "phi", phi)
        object.__setattr__(self, "alpha", as_scalar("Holonomic: alpha", alpha, nonnegative=True))
        object.__setattr__(self, "beta", as_scalar("Holonomic: beta", beta, nonnegative=True))

    def residual(self, q: Array) -> Array:
        """`φ(q)` `(m,)`."""
        phi = jnp.atleast_1d(user_array("Holonomic: phi(q)", self.phi(q)))
        return _shape("Holonomic: phi(q)", phi, "(m,)", _is_vector)

    def acceleration(self, t: Array, q: Array, qd: Array) -> tuple[Array, Array]:
        del t

        def rate(x: Array) -> tuple[Array, Array]:
            # (φ, φ̇ = J q̇)
            return jax.jvp(self.residual, (x,), (qd,))

        # (φ, J q̇) and their derivative along q̇: (J q̇, J̇ q̇)
        (value, velocity), (_, curvature) = jax.jvp(rate, (q,), (qd,))
        jac = jax.jacfwd(self.residual)(q)
        return jac, -curvature - 2 * self.alpha * velocity - self.beta**2 * value


@module
class Nonholonomic(Constraint):
    """Velocity constraints `a(q) q̇ = 0` (Pfaffian form) with the drift control
    `ψ̇ + γ ψ = 0` of `ψ = a q̇`:

        a q̈ = −ȧ q̇ − γ a q̇,   ȧ q̇ = (∂a/∂q · q̇) q̇.

    Args:
        a: `a(q) -> (m, n_q)` (or `(n_q,)` for one constraint), JAX-traceable.
        gamma: gain `γ ≥ 0` [1/s] (default 0).
    """

    gamma: Array
    a: Callable[[Array], Array] = static()

    def __init__(self, a: Callable[[Array], Array], gamma: Any = 0.0) -> None:
        if not callable(a):
            raise TypeError(f"Nonholonomic: a must be a function a(q), got {type(a).__name__}")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "gamma", as_scalar("Nonholonomic: gamma", gamma, nonnegative=True))

    def matrix(self, q: Array) -> Array:
        """`a(q)` `(m, n_q)`."""
        n = q.shape[0]
        mat = _shape(
            "Nonholonomic: a(q)", self.a(q), f"(m, {n}) or ({n},)", lambda s: s[-1:] == (n,)
        )
        return _shape("Nonholonomic: a(q)", jnp.atleast_2d(mat), f"(m, {n})", lambda s: len(s) == 2)

    def residual(self, q: Array, qd: Array) -> Array:
        """`a(q) q̇` `(m,)`."""
        return self.matrix(q) @ qd

    def acceleration(self, t: Array, q: Array, qd: Array) -> tuple[Array, Array]:
        del t
        mat = self.matrix(q)
        # ȧ q̇: the derivative of a(q) q̇ along q̇ at fixed q̇
        adot_qd = jax.jvp(lambda x: self.matrix(x) @ qd, (q,), (qd,))[1]
        return mat, -adot_qd - self.gamma * (mat @ qd)


@module
class AccelerationForm(Constraint):
    """The general form `a(t, q, q̇) q̈ = b(t, q, q̇)` (e.g. prescribed or time-dependent
    motions, already differentiated twice).

    Args:
        fn: `fn(t, q, q̇) -> (a (m, n_q), b (m,))`, JAX-traceable.
    """

    fn: Callable[[Array, Array, Array], tuple[Array, Array]] = static()

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise TypeError(
                f"AccelerationForm: fn must be a function fn(t, q, qd), got {type(self.fn).__name__}"
            )

    def acceleration(self, t: Array, q: Array, qd: Array) -> tuple[Array, Array]:
        out = self.fn(t, q, qd)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise ValueError("AccelerationForm: fn(t, q, qd) must return a pair (a, b)")
        n = q.shape[0]
        a = _shape("AccelerationForm: a", out[0], f"(m, {n})", lambda s: len(s) == 2 and s[1] == n)
        m = a.shape[0]
        b = _shape("AccelerationForm: b", out[1], f"({m},) (one per row of a)", lambda s: s == (m,))
        return a, b


def check_constraints(constraints: Any) -> tuple[Constraint, ...]:
    """`constraints` (a `Constraint`, a sequence of them, or `None`) as a tuple."""
    what = "a softrigid.constraints constraint (Holonomic, Nonholonomic, AccelerationForm)"
    return as_tuple_of(constraints, Constraint, "constraints", what)


def trace_constraints(constraints: tuple[Constraint, ...], t: Array, q: Array, qd: Array) -> None:
    """Each constraint traced on the state's shapes, and all of them stacked: a function JAX
    cannot trace (NumPy on `q`), one that takes other arguments or returns the wrong shapes
    is named (`constraints[k] (Kind)`) before the model is traced."""
    for k, c in enumerate(constraints):
        what = f"constraints[{k}] ({type(c).__name__})"
        try:
            a, _ = trace_user(f"{what}: its function", "q, qd or t", c.acceleration, t, q, qd)
        except TypeError as err:
            if str(err).startswith(what):
                raise
            raise TypeError(f"{what}: {err}") from err
        if a.shape[0] == 0:  # the free dynamics would come back, as if constrained
            raise ValueError(
                f"{what} has no rows (a of shape (0, {q.shape[0]})): nothing to impose"
            )
    jax.eval_shape(lambda: _rows(constraints, t, q, qd, None))


def _rows(
    constraints: tuple[Constraint, ...], t: Array, q: Array, qd: Array, where: str | None
) -> tuple[Array, Array]:
    """The stacked `(a, b)`; with `where`, a run-time check (also under `jit`) that each
    constraint's rows are finite, naming the first that is not."""
    parts = [c.acceleration(t, q, qd) for c in constraints]
    parts = [(a.astype(q.dtype), b.astype(q.dtype)) for a, b in parts]
    if where is not None:
        finite = jnp.stack([jnp.all(jnp.isfinite(a)) & jnp.all(jnp.isfinite(b)) for a, b in parts])
        msgs = tuple(
            f"{PREFIX}{where}: constraints[{k}] ({type(c).__name__}) is not finite (NaN or inf) "
            "at this state: check its function and its derivatives there"
            for k, c in enumerate(constraints)
        )
        first = jnp.argmin(finite)
        parts = raise_if(parts, ~jnp.all(finite), first, msgs)
    return jnp.concatenate([a for a, _ in parts]), jnp.concatenate([b for _, b in parts])


class ConstrainedAccelerations(NamedTuple):
    """The constrained motion `M q̈ + bias = A u + Q_c`, `a q̈ = b` (Udwadia–Kalaba).

    Attributes:
        qdd: `(n_q,)` the constrained accelerations.
        force: `(n_q,)` the generalized constraint force `Q_c = M (q̈ − q̈_f) = aᵀ λ`.
        multipliers: `(m,)` `λ = (a M⁻¹ aᵀ)⁺ (b − a q̈_f)`, the rows of all constraints in
            order (the least-norm multipliers when rows are redundant).
    """

    qdd: Array
    force: Array
    multipliers: Array


def constrained_accelerations(
    robot: Robot,
    tm: DynamicsTerms,
    u: Array,
    constraints: tuple[Constraint, ...],
    t: Array,
    q: Array,
    qd: Array,
    where: str | None = None,
) -> ConstrainedAccelerations:
    """Udwadia–Kalaba from the state's `DynamicsTerms` (unchecked core; with `where`, run-time
    checks that `M` is positive definite and the constraints are finite)."""
    # M = L Lᵀ,  q̈_f = M⁻¹ (A u − bias)
    lower = jnp.linalg.cholesky(tm.mass_matrix)
    if where is not None:
        lower = check_positive_definite(where, robot, tm.mass_matrix, lower, q)
    qdd_free = jax.scipy.linalg.cho_solve((lower, True), tm.actuation @ u - tm.bias)
    a, b = _rows(constraints, t, q, qd, where)
    # D = a L⁻ᵀ  (L Dᵀ = aᵀ)
    d = jax.scipy.linalg.solve_triangular(lower, a.T, lower=True).T
    d_pinv = jnp.linalg.pinv(d)
    # z = D⁺ (b − a q̈_f) = Lᵀ (q̈ − q̈_f)
    z = d_pinv @ (b - a @ qdd_free)
    # q̈ = q̈_f + L⁻ᵀ z,  Q_c = L z,  λ = D⁺ᵀ z
    qdd = qdd_free + jax.scipy.linalg.solve_triangular(lower.T, z, lower=False)
    return ConstrainedAccelerations(qdd, lower @ z, d_pinv.T @ z)


@algorithm()
def _constrained_forward_dynamics(
    robot: Robot,
    q: Array,
    qd: Array,
    u: Array,
    constraints: tuple[Constraint, ...],
    loads: Any = None,
    t: Any = 0.0,
) -> ConstrainedAccelerations:
    t = jnp.asarray(t, q.dtype)
    trace_constraints(constraints, t, q, qd)  # a bad one is reported before the model is traced
    tm = terms(robot, q, qd, loads)
    return constrained_accelerations(
        robot, tm, u, constraints, t, q, qd, where="constrained_forward_dynamics"
    )


def constrained_forward_dynamics(
    robot: Robot,
    q: Array,
    qd: Array,
    u: Array,
    constraints: Constraint | Sequence[Constraint],
    loads: Any = None,
    t: Any = 0.0,
) -> ConstrainedAccelerations:
    """Forward dynamics under equality constraints `a(t, q, q̇) q̈ = b(t, q, q̇)` by the
    Udwadia–Kalaba equation (module `softrigid.constraints`):

        q̈ = q̈_f + L⁻ᵀ (a L⁻ᵀ)⁺ (b − a q̈_f),   q̈_f = M⁻¹ (A u − bias),   M = L Lᵀ,

    with `M`, the bias and `A` from one `dynamics_terms` evaluation.

    Args:
        robot: the robot.
        q, qd: `(n_q,)` configuration and velocity.
        u: `(n_u,)` the robot's inputs.
        constraints: a `Holonomic`, `Nonholonomic` or `AccelerationForm` constraint, or a
            sequence of them (their rows stacked in order).
        loads: optional external loads.
        t: time [s] (for time-dependent `AccelerationForm` constraints).

    Returns:
        `ConstrainedAccelerations(qdd, force, multipliers)`: the accelerations, the generalized
        constraint force `Q_c` (`M q̈ + bias = A u + Q_c`) and the multipliers `λ`
        (`Q_c = aᵀ λ`).

    Raises:
        TypeError, ValueError: bad arguments (a constraint function's output of the wrong
            shape names the function); a constraint that is not finite at the state names it.
    """
    constraints = check_constraints(constraints)
    if not constraints:
        raise ValueError("constrained_forward_dynamics: constraints must not be empty")
    t = as_scalar("constrained_forward_dynamics: t", t)
    return _constrained_forward_dynamics(robot, q, qd, u, constraints, loads, t)


@functools.partial(jit, static_argnames=("where",))
def _checked_rows(
    constraints: tuple[Constraint, ...], t: Array, q: Array, qd: Array, where: str
) -> tuple[Array, Array]:
    return _rows(constraints, t, q, qd, where)


def check_constraints_at(
    where: str, constraints: tuple[Constraint, ...], t: Array, q: Array, qd: Array
) -> None:
    """A `ValueError` naming the first constraint that is not finite at `(t, q, q̇)` (eager),
    after `trace_constraints`."""
    trace_constraints(constraints, t, q, qd)
    raise_runtime_errors(lambda: _checked_rows(constraints, t, q, qd, where))
