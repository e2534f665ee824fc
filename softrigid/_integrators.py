"""Integration schemes for `M(q) q̈ + bias(q, q̇) = A(q) u` (`bias = c + g + s − Q_ext`).

Each fixed-step scheme is a small immutable class with `init` and `step(dyn, t, state, h) ->
(state, ok)` (as Diffrax solvers): `ok` is `False` when the step's Newton iteration did not
converge; the driver (`softrigid._simulate`) reports it, never a silently wrong state.

* `RK4`: classical 4th-order Runge–Kutta on `(q, q̇)`.
* `SemiImplicitEuler`: `q̇₁ = q̇₀ + h q̈(q₀, q̇₀)`, `q₁ = q₀ + h q̇₁` (symplectic, 1st order).
* `ImplicitEuler`: backward Euler on `(q, q̇)` (L-stable, 1st order).
* `GeneralizedAlpha`: Chung–Hulbert in the Arnold–Brüls form (2nd order, tunable dissipation).
* `Radau`: adaptive Radau IIA (order 5) with error control by `scipy.integrate.solve_ivp` and the
  exact Jacobian; eager only (not jittable).

The implicit schemes solve for the new acceleration `x = q̈₁` by Newton on the step residual
`ν(q₁(x), q̇₁(x), x) = M q̈ + bias − A u` with the exact iteration matrix
`∂ν/∂x = M + h_v ∂ν/∂q̇ + h_q ∂ν/∂q` (`softrigid._derivatives.residual_derivatives`; the
inputs `u` enter at their stage value, their own feedback `∂u/∂(q, q̇)` is left out of the
matrix), inside `lax.custom_root`, so `jax.grad` differentiates the converged step by the
implicit function theorem.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from scipy.integrate import solve_ivp

from ._articulated import articulated_accelerations, choose_solver
from ._constraints import Constraint, check_constraints, constrained_accelerations
from ._controller import Controller
from ._derivatives import residual_derivatives
from ._dynamics import DynamicsTerms, actuation, solve_accelerations, terms
from ._entry import check_finite, check_robot, check_states, raise_runtime_errors
from ._loads import check_loads
from ._model import Robot
from ._module import is_concrete, module, static

__all__ = [
    "RK4",
    "Dynamics",
    "GeneralizedAlpha",
    "ImplicitEuler",
    "Integrator",
    "Radau",
    "SemiImplicitEuler",
    "State",
    "closed_loop",
    "make_dynamics",
    "vector_field",
]


class Dynamics(NamedTuple):
    """The closed-loop dynamics one run integrates (built inside the compiled program).

    `law(t, q, q̇, terms) -> u` gives the robot's inputs; `terms` is the stage's
    `DynamicsTerms` when `needs_terms` (a `Controller`), else `None`. `constraints`
    (`softrigid.constraints`) act through the Udwadia–Kalaba equation in `accel`. `solver`
    (`"cholesky"` or `"articulated"`) computes `q̈` in `accel` when neither the controller nor
    the constraints need `M` (then `M` is built anyway and the Cholesky solve shares it)."""

    robot: Robot
    loads: tuple
    law: Callable[[Array, Array, Array, DynamicsTerms | None], Array]
    needs_terms: bool
    constraints: tuple[Constraint, ...] = ()
    solver: str = "cholesky"

    def checked(self, u: Any, q: Array) -> Array:
        u = jnp.asarray(u, dtype=q.dtype)
        if u.shape != (self.robot.n_u,):
            what = "actuator inputs" if self.robot.actuators else "generalized forces"
            raise ValueError(
                f"controller(t, q, qd) must return the robot's inputs, shape ({self.robot.n_u},) "
                f"({what}), got {u.shape}"
            )
        return u

    def inputs(self, t: Array, q: Array, qd: Array) -> Array:
        """`u(t, q, q̇)` (evaluating the terms only for a `Controller`)."""
        tm = terms(self.robot, q, qd, self.loads) if self.needs_terms else None
        return self.checked(self.law(t, q, qd, tm), q)

    def accel(self, t: Array, q: Array, qd: Array) -> Array:
        """`q̈ = M⁻¹ (A u − bias)`, or the Udwadia–Kalaba accelerations under `constraints`,
        the terms evaluated once and shared with the controller (a singular `M` gives NaN,
        reported by the driver as a divergence)."""
        if self.solver == "articulated" and not (self.needs_terms or self.constraints):
            u = self.checked(self.law(t, q, qd, None), q)
            nu = actuation(self.robot, q) @ u
            return articulated_accelerations(self.robot, q, qd, nu, self.loads, check=False)
        tm = terms(self.robot, q, qd, self.loads)
        u = self.checked(self.law(t, q, qd, tm), q)
        if self.constraints:
            return constrained_accelerations(self.robot, tm, u, self.constraints, t, q, qd).qdd
        return solve_accelerations(self.robot, tm, u, check=False)

    def residual(self, t: Array, q: Array, qd: Array, qdd: Array) -> Array:
        """`ν = M q̈ + bias − A u` at `(t, q, q̇, q̈)`."""
        tm = terms(self.robot, q, qd, self.loads)
        u = self.checked(self.law(t, q, qd, tm if self.needs_terms else None), q)
        return tm.mass_matrix @ qdd + tm.bias - tm.actuation @ u

    def hold(self, u: Array) -> Dynamics:
        """The same dynamics with the inputs held at `u` (zero-order hold)."""
        return self._replace(law=lambda t, q, qd, tm: u, needs_terms=False)


def make_dynamics(
    robot: Robot,
    loads: tuple,
    controller: Any,
    constraints: tuple[Constraint, ...] = (),
    solver: str = "cholesky",
) -> Dynamics:
    """`Dynamics` for `controller`: `None`, a `Controller` or a callable `u(t, q, q̇)`;
    `solver` is `"cholesky"` or `"articulated"` (resolved by `choose_solver`)."""
    if controller is None:
        dyn = Dynamics(robot, loads, lambda t, q, qd, tm: jnp.zeros(robot.n_u, q.dtype), False)
    elif isinstance(controller, Controller):
        dyn = Dynamics(robot, loads, lambda t, q, qd, tm: controller(t, q, qd, tm), True)
    else:
        dyn = Dynamics(robot, loads, lambda t, q, qd, tm: controller(t, q, qd), False)
    return dyn._replace(constraints=constraints, solver=solver)


def closed_loop(
    robot: Robot,
    loads: tuple,
    policy: Controller | None,
    law: Callable | None,
    constraints: tuple[Constraint, ...] = (),
    solver: str = "cholesky",
) -> Dynamics:
    """`make_dynamics` with the controller split for a module-level `jax.jit`: a `Controller`
    `policy` (a pytree, traced), or when it is `None` the callable or `None` `law` (static)."""
    return make_dynamics(robot, loads, law if policy is None else policy, constraints, solver)


class State(NamedTuple):
    """A scheme's state at `t_n`: `q`, `q̇`, and for the implicit schemes the acceleration `q̈`
    and the generalized-α acceleration-like variable `a` (zeros for the explicit schemes)."""

    q: Array
    qd: Array
    qdd: Array
    a: Array


class Integrator(abc.ABC):
    """A fixed-step scheme: `init(dyn, t0, q0, q̇0) -> State`, `step(dyn, t, state, h) ->
    (State, ok)`."""

    name: ClassVar[str]
    implicit: ClassVar[bool] = False

    def init(self, dyn: Dynamics, t0: Array, q0: Array, qd0: Array) -> State:
        if self.implicit:
            qdd = dyn.accel(t0, q0, qd0)
        else:
            qdd = jnp.zeros_like(q0)
        return State(q0, qd0, qdd, qdd)

    @abc.abstractmethod
    def step(self, dyn: Dynamics, t: Array, state: State, h: Array) -> tuple[State, Array]:
        """One step from `t` to `t + h`; `ok` is `False` if it failed."""


@module
class RK4(Integrator):
    """Classical 4th-order Runge–Kutta on `y = (q, q̇)`, `ẏ = f(t, y) = (q̇, q̈(t, q, q̇))`:

        k_i = f(t + c_i h, y + c_i h k_{i−1}),   c = (0, ½, ½, 1),
        y₁ = y + h Σ_i b_i k_i,                  b = (1, 2, 2, 1)/6.

    Each stage reads only the previous one, so the four stages are one loop body
    (`lax.scan`): the dynamics compile once per step instead of four times."""

    name: ClassVar[str] = "rk4"

    def step(self, dyn: Dynamics, t: Array, state: State, h: Array) -> tuple[State, Array]:
        q, qd = state.q, state.qd

        def stage(carry: tuple[Array, ...], cb: Array) -> tuple[tuple[Array, ...], None]:
            kq, kv, sq, sv = carry
            c, b = cb[0], cb[1]
            # k_i = f(t + c_i h, y + c_i h k_{i−1});  Σ b_i k_i
            x, xd = q + c * h * kq, qd + c * h * kv
            kq, kv = xd, dyn.accel(t + c * h, x, xd)
            return (kq, kv, sq + b * kq, sv + b * kv), None

        tableau = jnp.array([[0.0, 1 / 6], [0.5, 1 / 3], [0.5, 1 / 3], [1.0, 1 / 6]], q.dtype)
        zero = jnp.zeros_like(q)
        (_, _, sq, sv), _ = jax.lax.scan(stage, (zero, zero, zero, zero), tableau)
        return state._replace(q=q + h * sq, qd=qd + h * sv), jnp.asarray(True)


@module
class SemiImplicitEuler(Integrator):
    """Symplectic Euler: `q̇₁ = q̇₀ + h q̈(t₀, q₀, q̇₀)`, `q₁ = q₀ + h q̇₁` (1st order)."""

    name: ClassVar[str] = "semi_implicit_euler"

    def step(self, dyn: Dynamics, t: Array, state: State, h: Array) -> tuple[State, Array]:
        qd1 = state.qd + h * dyn.accel(t, state.q, state.qd)
        return state._replace(q=state.q + h * qd1, qd=qd1), jnp.asarray(True)


def _newton(
    dyn: Dynamics,
    t1: Array,
    kin: Callable[[Array], tuple[Array, Array]],
    h_q: Array,
    h_v: Array,
    x0: Array,
    tol: float,
    max_iter: int,
) -> tuple[Array, Array]:
    """Solve `ν(t₁, q₁(x), q̇₁(x), x) = 0` for `x` (`∂q₁/∂x = h_q`, `∂q̇₁/∂x = h_v`) by Newton:

        x ← x − (M + h_v ∂ν/∂q̇ + h_q ∂ν/∂q)⁻¹ ν,   until ‖Δx‖∞ ≤ tol (1 + ‖x‖∞).

    Returns `(x, ok)`; differentiated by the implicit function theorem (`lax.custom_root`)."""

    def residual(x: Array) -> Array:
        q1, qd1 = kin(x)
        return dyn.residual(t1, q1, qd1, x)

    def solve(_: Any, guess: Array) -> tuple[Array, Array]:
        def cond(c: tuple[Array, Array, Array]) -> Array:
            x, it, done = c
            return ~done & (it < max_iter) & jnp.all(jnp.isfinite(x))

        def body(c: tuple[Array, Array, Array]) -> tuple[Array, Array, Array]:
            x, it, _ = c
            q1, qd1 = kin(x)
            u = dyn.inputs(t1, q1, qd1)
            d = residual_derivatives(dyn.robot, q1, qd1, x, dyn.loads, u)
            dx = jnp.linalg.solve(d.mass_matrix + h_v * d.d_qd + h_q * d.d_q, d.nu)
            x = x - dx
            done = jnp.max(jnp.abs(dx)) <= tol * (1 + jnp.max(jnp.abs(x)))
            return x, it + 1, done

        x, _, done = jax.lax.while_loop(cond, body, (guess, jnp.asarray(0), jnp.asarray(False)))
        # a float flag: custom_root differentiates its auxiliary output too
        return x, (done & jnp.all(jnp.isfinite(x))).astype(x.dtype)

    def tangent_solve(g: Callable[[Array], Array], y: Array) -> Array:
        return jnp.linalg.solve(jax.jacobian(g)(y), y)

    x, ok = jax.lax.custom_root(residual, x0, solve, tangent_solve, has_aux=True)
    return x, jax.lax.stop_gradient(ok) > 0.5


@module
class ImplicitEuler(Integrator):
    """Backward Euler on `(q, q̇)` (L-stable, 1st order): with `x = q̈₁`,

        q̇₁ = q̇₀ + h x,   q₁ = q₀ + h q̇₁ = q₀ + h q̇₀ + h² x,
        M(q₁) x + bias(q₁, q̇₁) = A(q₁) u(t₁, q₁, q̇₁),

    solved by Newton with the matrix `M + h ∂ν/∂q̇ + h² ∂ν/∂q` (`tol`, `max_iter`)."""

    tol: float = static(default=1e-10)
    max_iter: int = static(default=20)
    name: ClassVar[str] = "implicit_euler"
    implicit: ClassVar[bool] = True

    def step(self, dyn: Dynamics, t: Array, state: State, h: Array) -> tuple[State, Array]:
        def kin(x: Array) -> tuple[Array, Array]:
            qd1 = state.qd + h * x
            return state.q + h * qd1, qd1

        x, ok = _newton(dyn, t + h, kin, h * h, h, state.qdd, self.tol, self.max_iter)
        q1, qd1 = kin(x)
        return State(q1, qd1, x, x), ok


@module
class GeneralizedAlpha(Integrator):
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
    `rho_inf = 0` annihilates the highest frequencies in one step.
    """

    rho_inf: float = static(default=0.9)
    tol: float = static(default=1e-10)
    max_iter: int = static(default=20)
    name: ClassVar[str] = "generalized_alpha"
    implicit: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if not (isinstance(self.rho_inf, (int, float)) and 0.0 <= self.rho_inf <= 1.0):
            raise ValueError(f"GeneralizedAlpha: rho_inf must be in [0, 1], got {self.rho_inf!r}")

    def step(self, dyn: Dynamics, t: Array, state: State, h: Array) -> tuple[State, Array]:
        rho = float(self.rho_inf)
        am, af = (2 * rho - 1) / (rho + 1), rho / (rho + 1)
        gamma, beta = 0.5 - am + af, 0.25 * (1 - am + af) ** 2
        c = (1 - af) / (1 - am)
        q0, qd0, qdd0, a0 = state

        def alpha_acc(x: Array) -> Array:
            # (1 − α_m) a₁ + α_m a₀ = (1 − α_f) q̈₁ + α_f q̈₀
            return ((1 - af) * x + af * qdd0 - am * a0) / (1 - am)

        def kin(x: Array) -> tuple[Array, Array]:
            a1 = alpha_acc(x)
            q1 = q0 + h * qd0 + h * h * ((0.5 - beta) * a0 + beta * a1)
            return q1, qd0 + h * ((1 - gamma) * a0 + gamma * a1)

        x, ok = _newton(
            dyn, t + h, kin, h * h * beta * c, h * gamma * c, qdd0, self.tol, self.max_iter
        )
        q1, qd1 = kin(x)
        return State(q1, qd1, x, alpha_acc(x)), ok


@module
class Radau:
    """Adaptive Radau IIA (order 5) with error control: `scipy.integrate.solve_ivp(method=
    "Radau")` on `y = (q, q̇)` with the exact Jacobian of the first-order system,

        ∂q̈/∂q = −M⁻¹ ∂ν/∂q,   ∂q̈/∂q̇ = −M⁻¹ ∂ν/∂q̇   (inputs held at their value),

    from jitted callbacks. Runs eagerly on the host: not jittable, not differentiable, not
    `vmap`-able (a `TypeError` with traced inputs); the output is sampled on the fixed grid.
    """

    rtol: float = static(default=1e-8)
    atol: float = static(default=1e-10)
    name: ClassVar[str] = "radau"

    def integrate(
        self,
        robot: Robot,
        loads: tuple,
        policy: Controller | None,
        law: Callable | None,
        solver: str,
        q0: Array,
        qd0: Array,
        times: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """`(q, q̇)` at `times` `(S + 1, n_q)` each, from `(q0, q̇0)` at `times[0]`, under the
        controller split as `closed_loop`'s (the callbacks compile once per robot structure,
        controller and solver, not once per call)."""
        n = robot.n_q
        args = (robot, loads, policy, law, solver)
        y0 = np.concatenate([np.asarray(q0), np.asarray(qd0)])

        def typed(t: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
            # scipy passes `t` as a Python or a NumPy float: one dtype, one compilation
            return np.asarray(t, y0.dtype), np.asarray(y, y0.dtype)

        sol = solve_ivp(
            lambda t, y: np.asarray(_radau_rhs(*args, *typed(t, y))),
            (float(times[0]), float(times[-1])),
            y0,
            method="Radau",
            t_eval=times,
            jac=lambda t, y: np.asarray(_radau_jacobian(*args, *typed(t, y))),
            rtol=self.rtol,
            atol=self.atol,
        )
        if not sol.success or sol.y.shape[1] != len(times) or not np.isfinite(sol.y).all():
            raise ValueError(
                f"simulate: method 'radau' failed at t = {float(sol.t[-1]):.6g} s: {sol.message}"
            )
        return sol.y[:n].T, sol.y[n:].T


@functools.partial(jax.jit, static_argnames=("law", "solver"))
def _radau_rhs(
    robot: Robot,
    loads: tuple,
    policy: Controller | None,
    law: Callable | None,
    solver: str,
    t: Array,
    y: Array,
) -> Array:
    """`ẏ = (q̇, q̈)` of the closed loop at `y = (q, q̇)`."""
    dyn = closed_loop(robot, loads, policy, law, solver=solver)
    n = robot.n_q
    q, qd = y[:n], y[n:]
    return jnp.concatenate([qd, dyn.accel(t, q, qd)])


@functools.partial(jax.jit, static_argnames=("law", "solver"))
def _radau_jacobian(
    robot: Robot,
    loads: tuple,
    policy: Controller | None,
    law: Callable | None,
    solver: str,
    t: Array,
    y: Array,
) -> Array:
    """`∂ẏ/∂y` of `_radau_rhs`, the inputs held at their value."""
    dyn = closed_loop(robot, loads, policy, law, solver=solver)
    n = robot.n_q
    q, qd = y[:n], y[n:]
    tm = terms(robot, q, qd, loads)
    u = dyn.checked(dyn.law(t, q, qd, tm if dyn.needs_terms else None), q)
    qdd = solve_accelerations(robot, tm, u, check=False)
    d = residual_derivatives(robot, q, qd, qdd, loads, u)
    lower = -jnp.linalg.solve(d.mass_matrix, jnp.concatenate([d.d_q, d.d_qd], axis=1))
    upper = jnp.concatenate([jnp.zeros((n, n), y.dtype), jnp.eye(n, dtype=y.dtype)], axis=1)
    return jnp.concatenate([upper, lower])


def vector_field(
    robot: Robot,
    controller: Any = None,
    loads: Any = None,
    constraints: Any = None,
    solver: str = "auto",
) -> Callable[[Array, tuple[Array, Array]], tuple[Array, Array]]:
    """The first-order vector field of the closed loop, for the user's own ODE solvers:

        f(t, (q, q̇)) = (q̇, M⁻¹ (A(q) u − bias)),   u = controller(t, q, q̇[, terms]),

    or the Udwadia–Kalaba accelerations under `constraints`.

    `y = (q, q̇)` is a tuple (a pytree); `f` is jit-, vmap- and grad-traceable. With diffrax:

        term = diffrax.ODETerm(lambda t, y, args: f(t, y))
        sol = diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, 1e-3, (q0, qd0))

    Args:
        robot: the robot.
        controller: `None`, a `softrigid._controller.Controller` (called with the stage's
            `DynamicsTerms`) or a callable `u(t, q, q̇)` `(n_u,)`.
        loads: constant external loads.
        constraints: optional `softrigid.constraints` equality constraints.
        solver: how `q̈` is computed, as `softrigid.forward_dynamics`: `"auto"`,
            `"articulated"` (`O(N)`) or `"cholesky"`.

    `f` checks `q`, `q̇` as the public algorithms do (shape `(n_q,)`, batches through
    `jax.vmap`, real, mixed precisions promoted to one dtype) and its outputs at run time: a
    non-finite `q̈` raises an error naming the first bad coordinate (a `ValueError` in eager
    calls, JAX's runtime error under `jit`).
    """
    robot = check_robot(robot)
    solver = choose_solver("vector_field", robot, solver)
    loads = check_loads(robot, loads)
    if controller is not None and not callable(controller):
        raise TypeError("vector_field: controller must be a Controller, a callable or None")
    dyn = make_dynamics(robot, loads, controller, check_constraints(constraints), solver)

    @jax.jit
    def evaluate(t: Array, q: Array, qd: Array) -> tuple[Array, Array]:
        qdd = dyn.accel(jnp.asarray(t, q.dtype), q, qd)
        return check_finite("vector_field", robot, (qd, qdd))

    def f(t: Array, y: tuple[Array, Array]) -> tuple[Array, Array]:
        if not (isinstance(y, (tuple, list)) and len(y) == 2):
            raise TypeError(f"vector_field: y must be the pair (q, qd), got {type(y).__name__}")
        q, qd = check_states(robot, q=y[0], qd=y[1])
        if is_concrete(t, q, qd):
            return raise_runtime_errors(lambda: evaluate(t, q, qd), robot, {"q": q, "qd": qd})
        return evaluate(t, q, qd)

    return f
