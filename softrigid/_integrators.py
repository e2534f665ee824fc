"""Fixed-step integration schemes for `M(q) q̈ + bias(q, q̇) = A(q) u` (`bias = c + g + s − Q_ext`).

Each scheme is a small immutable class with `init` and `step(dyn, t, state, h) -> (state, ok,
u)` (as Diffrax solvers): `ok` is `False` when the step's Newton iteration did not converge; the
driver (`softrigid._simulate`) reports it, never a silently wrong state. `u` are the inputs
`u(t, q, q̇)` at the step's start, which the driver records: the explicit schemes' first stage
evaluates them anyway; the implicit schemes, whose equations sit at the step's end, evaluate
them once more.

* `RK4`: classical 4th-order Runge–Kutta on `(q, q̇)`.
* `SemiImplicitEuler`: `q̇₁ = q̇₀ + h q̈(q₀, q̇₀)`, `q₁ = q₀ + h q̇₁` (1st order; symplectic
  only where `M` is constant, see the class).
* `ImplicitEuler`: backward Euler on `(q, q̇)` (L-stable, 1st order).
* `GeneralizedAlpha`: Chung–Hulbert in the Arnold–Brüls form (2nd order, tunable dissipation).

The implicit schemes solve for the new acceleration `x = q̈₁` the step residual
`ν(q₁(x), q̇₁(x), x) = M q̈ + bias − A u` by Newton (`softrigid._newton`) with the exact
iteration matrix `∂ν/∂x = M + h_v ∂ν/∂q̇ + h_q ∂ν/∂q` (with the controller's own feedback
`A ∂u/∂(q, q̇)`, its `M` and `A` held and its response to the bias's derivatives included,
`Dynamics.linearized`), kept from step to step
while the iteration converges fast (`newton="modified"`, the default) or evaluated at every
iterate (`newton="full"`), inside `lax.custom_root`, so `jax.grad` differentiates the converged
step by the implicit function theorem. The adaptive `Radau` is in `softrigid._radau`.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._checks import is_real_number
from ._closed_loop import Dynamics
from ._module import module, static
from ._newton import IterationMatrix, newton

__all__ = [
    "RK4",
    "GeneralizedAlpha",
    "Implicit",
    "ImplicitEuler",
    "Integrator",
    "SemiImplicitEuler",
    "State",
    "grid_margin",
    "stage_time",
]


def stage_time(t: Array, h: Array, c: Array | float) -> Array:
    """The time `t + c h` of a stage, its end (`c = 1`) taken as the left limit
    `t + h − δ`, `δ = max(1e-9 h, 8 ε |t + h|)`: a law that jumps at a step's end, such as a
    `Phases` switch on the time grid, acts with its earlier phase throughout the step that ends
    there and with the next from the next step on, so the step sees a smooth law (the switch
    time is the step's end, `t_k = k h` computed exactly as such). A law smooth in time moves
    by `δ u̇`, far below the step's error."""
    end = jnp.asarray(t + h)
    delta = grid_margin(end, h, jnp.finfo(end.dtype).eps)
    return jnp.where(c == 1, end - delta, t + c * h)


def grid_margin(end: Array | float, h: Array | float, eps: float) -> Array | float:
    """`δ = max(1e-9 h, 8 ε |end|)`: how far before a step's `end` its left limit is taken
    (`stage_time`), and how close to a step's ends a switch counts as on the time grid
    (`softrigid._switches`); `ε` the times' rounding. Arrays in, an array out; Python
    numbers in, a Python number out."""
    if isinstance(end, jax.Array):
        return jnp.maximum(1e-9 * h, 8 * eps * jnp.abs(end))
    return max(1e-9 * h, 8 * eps * abs(end))


class State(NamedTuple):
    """A scheme's state at `t_n`: `q`, `q̇`, and for the implicit schemes the acceleration `q̈`
    and the generalized-α acceleration-like variable `a` (zeros for the explicit schemes), and
    the iteration matrix an implicit scheme keeps for its next step (`None` for the explicit
    schemes)."""

    q: Array
    qd: Array
    qdd: Array
    a: Array
    matrix: IterationMatrix | None = None


class Integrator(abc.ABC):
    """A fixed-step scheme: `init(dyn, t0, q0, q̇0) -> State`, `step(dyn, t, state, h) ->
    (State, ok, u)`."""

    name: ClassVar[str]
    implicit: ClassVar[bool] = False
    restarts: ClassVar[bool] = False  # `restart` changes the state

    def init(self, dyn: Dynamics, t0: Array, q0: Array, qd0: Array) -> State:
        if self.implicit:
            qdd = dyn.accel(t0, q0, qd0)
            return State(q0, qd0, qdd, qdd, IterationMatrix.empty(q0.shape[0], q0.dtype))
        qdd = jnp.zeros_like(q0)
        return State(q0, qd0, qdd, qdd)

    @abc.abstractmethod
    def step(self, dyn: Dynamics, t: Array, state: State, h: Array) -> tuple[State, Array, Array]:
        """One step from `t` to `t + h`; `ok` is `False` if it failed; `u = u(t, q, q̇)` the
        inputs at the step's start."""

    def restart(self, dyn: Dynamics, t: Array, state: State) -> State:
        """`state` as the scheme starts from at `t` after a jump of the law there (a `Phases`
        switch: `softrigid._switches`): unchanged but for a scheme that carries the
        accelerations of earlier steps (`restarts`)."""
        return state


@module
class RK4(Integrator):
    """Classical 4th-order Runge–Kutta on `y = (q, q̇)`, `ẏ = f(t, y) = (q̇, q̈(t, q, q̇))`:

        k_i = f(t + c_i h, y + c_i h k_{i−1}),   c = (0, ½, ½, 1),
        y₁ = y + h Σ_i b_i k_i,                  b = (1, 2, 2, 1)/6.

    Each stage reads only the previous one, so the four stages are one loop body
    (`lax.scan`): the dynamics compile once per step instead of four times. The first stage's
    inputs are `u(t, q, q̇)`."""

    name: ClassVar[str] = "rk4"

    def step(self, dyn: Dynamics, t: Array, state: State, h: Array) -> tuple[State, Array, Array]:
        q, qd = state.q, state.qd

        def stage(carry: tuple[Array, ...], cb: Array) -> tuple[tuple[Array, ...], Array]:
            kq, kv, sq, sv = carry
            c, b = cb[0], cb[1]
            # k_i = f(t + c_i h, y + c_i h k_{i−1});  Σ b_i k_i
            x, xd = q + c * h * kq, qd + c * h * kv
            kv, u = dyn.evaluate(stage_time(t, h, c), x, xd)
            kq = xd
            return (kq, kv, sq + b * kq, sv + b * kv), u

        tableau = jnp.array([[0.0, 1 / 6], [0.5, 1 / 3], [0.5, 1 / 3], [1.0, 1 / 6]], q.dtype)
        zero = jnp.zeros_like(q)
        (_, _, sq, sv), u = jax.lax.scan(stage, (zero, zero, zero, zero), tableau)
        return state._replace(q=q + h * sq, qd=qd + h * sv), jnp.asarray(True), u[0]


@module
class SemiImplicitEuler(Integrator):
    """Semi-implicit Euler: `q̇₁ = q̇₀ + h q̈(t₀, q₀, q̇₀)`, `q₁ = q₀ + h q̇₁` (1st order,
    explicit: one evaluation of `q̈` per step).

    In velocities it is symplectic Euler only where the mass matrix is constant (one revolute
    joint, prismatic chains): there the energy of an undamped run stays bounded. With `M(q)`
    (two links or a soft body) symplectic Euler steps the momentum `p = M q̇` and is implicit;
    this velocity form is not, and the energy drifts at first order: measured (2026-11-30) on
    an undamped rigid double pendulum swinging chaotically, `max |E − E₀|` over 2 s was
    0.17 J at `h = 1` ms and 0.025 J at 0.1 ms (of `E₀` = 1.77 J), against 3e-8 J for `rk4`
    at 1 ms. For long conservative runs use `rk4` or `generalized_alpha` (`rho_inf = 1`)."""

    name: ClassVar[str] = "semi_implicit_euler"

    def step(self, dyn: Dynamics, t: Array, state: State, h: Array) -> tuple[State, Array, Array]:
        qdd, u = dyn.evaluate(t, state.q, state.qd)
        qd1 = state.qd + h * qdd
        return state._replace(q=state.q + h * qd1, qd=qd1), jnp.asarray(True), u


class Implicit(Integrator):
    """An implicit scheme (`ImplicitEuler`, `GeneralizedAlpha`): the step's acceleration
    `x = q̈₁` by Newton (`softrigid._newton`), the iteration matrix carried in the `State`
    from step to step. The options, fields of the concrete scheme:

    Args:
        tol: the iteration stops when `η ‖Δx‖∞ ≤ tol (1 + ‖x‖∞)`, `η = θ/(1 − θ)` from the
            observed contraction `θ` (Newton's own increment test at a new matrix); no
            tighter than 100 units of the state's rounding (float32: 1.2e-5). A traced
            argument of the compiled run, as `theta_max`: a scheme with another `tol` reuses
            the program of one with the same `max_iter` and `newton`.
        max_iter: iterations per step; a step that has not converged then fails, and
            `simulate` names it.
        newton: `"modified"` (default: the matrix kept while the iteration contracts faster
            than `theta_max`) or `"full"` (evaluated at every iterate).
        theta_max: the contraction in `(0, 1)` above which a kept matrix is re-evaluated.
    """

    implicit: ClassVar[bool] = True
    tol: float
    max_iter: int
    newton: str
    theta_max: float

    def check_options(self) -> None:
        """Refuse bad Newton options (called by the schemes' `__post_init__`)."""
        name = type(self).__name__
        if self.newton not in ("modified", "full"):
            raise ValueError(f"{name}: newton must be 'modified' or 'full', got {self.newton!r}")
        if not (is_real_number(self.theta_max) and 0.0 < self.theta_max < 1.0):
            raise ValueError(f"{name}: theta_max must be in (0, 1), got {self.theta_max!r}")
        if not (is_real_number(self.tol) and 0 < self.tol < math.inf):
            raise ValueError(f"{name}: tol must be a finite positive number, got {self.tol!r}")
        count = isinstance(self.max_iter, (int, np.integer)) and is_real_number(self.max_iter)
        if not (count and 1 <= self.max_iter < 2**31):
            raise ValueError(
                f"{name}: max_iter must be a positive integer below 2**31, got {self.max_iter!r}"
            )
        # NumPy scalars as Python numbers (`max_iter` a static field: hashed and compared)
        for field, kind in (("theta_max", float), ("tol", float), ("max_iter", int)):
            object.__setattr__(self, field, kind(getattr(self, field)))

    def solve(
        self,
        dyn: Dynamics,
        t1: Array,
        kin: Callable[[Array], tuple[Array, Array]],
        h_q: Array,
        h_v: Array,
        state: State,
    ) -> tuple[Array, Array, IterationMatrix]:
        """`(q̈₁, ok, matrix)` of the step, Newton from the last acceleration."""
        return newton(
            dyn,
            t1,
            kin,
            h_q,
            h_v,
            state.qdd,
            state.matrix,
            self.tol,
            self.max_iter,
            self.theta_max,
            self.newton == "full",
        )


@module
class ImplicitEuler(Implicit):
    """Backward Euler on `(q, q̇)` (L-stable, 1st order): with `x = q̈₁`,

        q̇₁ = q̇₀ + h x,   q₁ = q₀ + h q̇₁ = q₀ + h q̇₀ + h² x,
        M(q₁) x + bias(q₁, q̇₁) = A(q₁) u(t₁, q₁, q̇₁),

    solved by Newton with the matrix `M + h ∂ν/∂q̇ + h² ∂ν/∂q` (options `tol`, `max_iter`,
    `newton`, `theta_max`: `integrators.Implicit`)."""

    tol: float = 1e-10
    max_iter: int = static(default=20)
    newton: str = static(default="modified")
    theta_max: float = 0.25
    name: ClassVar[str] = "implicit_euler"

    def __post_init__(self) -> None:
        self.check_options()

    def step(self, dyn: Dynamics, t: Array, state: State, h: Array) -> tuple[State, Array, Array]:
        def kin(x: Array) -> tuple[Array, Array]:
            qd1 = state.qd + h * x
            return state.q + h * qd1, qd1

        x, ok, matrix = self.solve(dyn, stage_time(t, h, 1.0), kin, h * h, h, state)
        q1, qd1 = kin(x)
        return State(q1, qd1, x, x, matrix), ok, dyn.inputs(t, state.q, state.qd)


@module
class GeneralizedAlpha(Implicit):
    """Generalized-α (Chung–Hulbert 1993) in the form of Arnold & Brüls (2007) for `M q̈ = f`,
    2nd order, with the high-frequency spectral radius `rho_inf ∈ [0, 1]`:

        α_m = (2ρ∞ − 1)/(ρ∞ + 1),  α_f = ρ∞/(ρ∞ + 1),  γ = ½ − α_m + α_f,
        β = ¼ (1 − α_m + α_f)²,

        q₁ = q₀ + h q̇₀ + h² (½ − β) a₀ + h² β a₁,
        q̇₁ = q̇₀ + h (1 − γ) a₀ + h γ a₁,
        (1 − α_m) a₁ + α_m a₀ = (1 − α_f) q̈₁ + α_f q̈₀,
        M(q₁) q̈₁ + bias(q₁, q̇₁) = A(q₁) u(t₁, q₁, q̇₁),

    with `a₀ = q̈₀` at the start. Newton on `x = q̈₁` with the matrix
    `M + h γ c ∂ν/∂q̇ + h² β c ∂ν/∂q`, `c = (1 − α_f)/(1 − α_m)`. `rho_inf = 1` is the
    trapezoidal rule (Newmark average acceleration, energy-conserving for linear systems);
    `rho_inf = 0` annihilates the highest frequencies in one step. Newton's options `tol`,
    `max_iter`, `newton`, `theta_max`: `integrators.Implicit`.

    Overshoot: the start's `a₀ = q̈₀` enters `q₁` as `h² (½ − β) a₀`. Where a strong
    Kelvin–Voigt damping (`ηω ≫ 1`) holds a stiff mode released from a strain at a long step
    (`ωh ≫ 1`), the implicit part cannot take it back and `rho_inf < 1` overshoots by a factor
    that grows like `(ωh)²`: `ẍ + ηω² ẋ + ω² x = 0`, `ω = 1000`, `η = 0.05`, `h = 0.01` goes
    from 2 to 7.7 in one step with `rho_inf = 0.5` (31 with 0, 1.6 with 1). Use
    `ImplicitEuler` (L-stable), Radau or BDF for such bodies (README, "A limit of the
    fixed-step schemes").
    """

    rho_inf: float = static(default=0.9)
    tol: float = 1e-10
    max_iter: int = static(default=20)
    newton: str = static(default="modified")
    theta_max: float = 0.25
    name: ClassVar[str] = "generalized_alpha"
    restarts: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self.check_options()
        if not (is_real_number(self.rho_inf) and 0.0 <= self.rho_inf <= 1.0):
            raise ValueError(f"GeneralizedAlpha: rho_inf must be in [0, 1], got {self.rho_inf!r}")
        object.__setattr__(self, "rho_inf", float(self.rho_inf))

    def restart(self, dyn: Dynamics, t: Array, state: State) -> State:
        """`q̈₀ = a₀ = q̈(t, q, q̇)` at a jump of the law (as at the start): the carried `a`
        and `q̈` are the earlier law's, and stepping on from them after a switch is a
        first-order step (a double pendulum's `Phases` switch: 0.21, 0.10, 0.05 at 10, 5,
        2.5 ms instead of second order)."""
        qdd = dyn.accel(t, state.q, state.qd)
        return state._replace(qdd=qdd, a=qdd)

    def step(self, dyn: Dynamics, t: Array, state: State, h: Array) -> tuple[State, Array, Array]:
        rho = float(self.rho_inf)
        am, af = (2 * rho - 1) / (rho + 1), rho / (rho + 1)
        gamma, beta = 0.5 - am + af, 0.25 * (1 - am + af) ** 2
        c = (1 - af) / (1 - am)
        q0, qd0, qdd0, a0 = state.q, state.qd, state.qdd, state.a

        def alpha_acc(x: Array) -> Array:
            # (1 − α_m) a₁ + α_m a₀ = (1 − α_f) q̈₁ + α_f q̈₀
            return ((1 - af) * x + af * qdd0 - am * a0) / (1 - am)

        def kin(x: Array) -> tuple[Array, Array]:
            a1 = alpha_acc(x)
            q1 = q0 + h * qd0 + h * h * ((0.5 - beta) * a0 + beta * a1)
            return q1, qd0 + h * ((1 - gamma) * a0 + gamma * a1)

        t1 = stage_time(t, h, 1.0)
        x, ok, matrix = self.solve(dyn, t1, kin, h * h * beta * c, h * gamma * c, state)
        q1, qd1 = kin(x)
        return State(q1, qd1, x, alpha_acc(x), matrix), ok, dyn.inputs(t, q0, qd0)
