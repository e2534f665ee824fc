"""The closed-loop dynamics a simulation integrates, and its first-order vector field.

`Dynamics` bundles the robot, its constant loads, the input law `u(t, q, q̇[, terms])` and the
constraints, and evaluates, once per stage, the dynamics terms shared by the controller and the
acceleration solve:

    q̈ = M(q)⁻¹ (A(q) u − bias(q, q̇)),   bias = c + g + s − Q_ext,
    r(t, q, q̇, q̈) = M q̈ + bias − A u   (the implicit schemes' residual).

`vector_field` is the public `f(t, (q, q̇)) = (q̇, q̈)` for the user's own ODE solvers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from ._articulated import articulated_accelerations, choose_solver
from ._cache import jit
from ._checks import as_scalar, is_real_dtype
from ._constraints import (
    Constraint,
    check_constraints,
    check_constraints_at,
    constrained_accelerations,
)
from ._controller import Controller
from ._derivatives import linearized_terms, residual_derivatives
from ._dynamics import DynamicsTerms, actuation, solve_accelerations, terms
from ._entry import check_robot, check_states
from ._loads import check_loads
from ._model import Robot
from ._module import is_concrete
from ._reports import check_finite, raise_runtime_errors

__all__ = ["Dynamics", "closed_loop", "make_dynamics", "vector_field"]


class Dynamics(NamedTuple):
    """The closed-loop dynamics one run integrates (built inside the compiled program).

    `law(t, q, q̇, terms) -> u` gives the robot's inputs; `terms` is the stage's
    `DynamicsTerms` when `needs_terms` (a `Controller`), else `None`. `constraints`
    (`softrigid.constraints`) act through the Udwadia–Kalaba equation in `accel`. `solver`
    (`"cholesky"` or `"articulated"`) computes `q̈` in `accel` when neither the controller nor
    the constraints need `M` (then `M` is built anyway and the Cholesky solve shares it).
    `differentiable` false says that nothing will differentiate the run (an eager `simulate`):
    the implicit schemes' step solves then leave out the implicit function theorem
    (`softrigid._newton`)."""

    robot: Robot
    loads: tuple
    law: Callable[[Array, Array, Array, DynamicsTerms | None], Array]
    needs_terms: bool
    constraints: tuple[Constraint, ...] = ()
    solver: str = "cholesky"
    constant: bool = False
    differentiable: bool = True

    def checked(self, u: Any, q: Array) -> Array:
        raw = jnp.asarray(u)
        what = "actuator inputs" if self.robot.actuators else "generalized forces"
        if not is_real_dtype(raw.dtype):
            raise TypeError(
                f"controller(t, q, qd) must return the robot's real inputs ({what}), got dtype "
                f"{raw.dtype}"
            )
        u = raw.astype(q.dtype)
        if u.shape != (self.robot.n_u,):
            raise ValueError(
                f"controller(t, q, qd) must return the robot's inputs, shape ({self.robot.n_u},) "
                f"({what}), got {u.shape}"
            )
        return u

    def inputs(self, t: Array, q: Array, qd: Array) -> Array:
        """`u(t, q, q̇)` (evaluating the terms only for a `Controller`)."""
        tm = terms(self.robot, q, qd, self.loads) if self.needs_terms else None
        return self.checked(self.law(t, q, qd, tm), q)

    def evaluate(self, t: Array, q: Array, qd: Array) -> tuple[Array, Array]:
        """`(q̈, u)`: the inputs `u(t, q, q̇)` and `q̈ = M⁻¹ (A u − bias)`, or the
        Udwadia–Kalaba accelerations under `constraints`, the terms evaluated once and shared
        with the controller (a singular `M` gives NaN, reported by the driver as a
        divergence)."""
        if self.solver == "articulated" and not (self.needs_terms or self.constraints):
            u = self.checked(self.law(t, q, qd, None), q)
            nu = actuation(self.robot, q) @ u
            qdd = articulated_accelerations(self.robot, q, qd, nu, self.loads, check=False)
            return qdd, u
        tm = terms(self.robot, q, qd, self.loads)
        u = self.checked(self.law(t, q, qd, tm), q)
        if self.constraints:
            parts = constrained_accelerations(self.robot, tm, u, self.constraints, t, q, qd)
            return parts.qdd, u
        return solve_accelerations(self.robot, tm, u, check=False), u

    def accel(self, t: Array, q: Array, qd: Array) -> Array:
        """`q̈(t, q, q̇)` of `evaluate`."""
        return self.evaluate(t, q, qd)[0]

    def residual(self, t: Array, q: Array, qd: Array, qdd: Array) -> Array:
        """`ν = M q̈ + bias − A u` at `(t, q, q̇, q̈)`."""
        tm = terms(self.robot, q, qd, self.loads)
        u = self.checked(self.law(t, q, qd, tm if self.needs_terms else None), q)
        return tm.mass_matrix @ qdd + tm.bias - tm.actuation @ u

    def jacobian(self, t: Array, q: Array, qd: Array) -> Array:
        """`∂q̈/∂(q, q̇)` `(n_q, 2 n_q)` of the closed loop `q̈ = M⁻¹ (A u(t, q, q̇, terms) −
        bias)` without constraints, exact: the model's `M`, bias, `A` and world poses with their
        derivatives from the link-local linearization (`linearized_terms`: each body's node
        terms differentiated in its own `n_i` coordinates), then the law and the solve
        differentiated through them in forward mode, `2 n_q` tangents."""
        value, jac = linearized_terms(self.robot, q, qd, self.loads)
        n = q.shape[0]

        def accel(z: Array, tm: DynamicsTerms) -> Array:
            u = self.checked(self.law(t, z[:n], z[n:], tm if self.needs_terms else None), q)
            return solve_accelerations(self.robot, tm, u, check=False)

        def column(k: Array, e: Array) -> Array:
            tangent = jax.tree_util.tree_map(lambda d: d[..., k], jac)
            return jax.jvp(accel, (jnp.concatenate([q, qd]), value), (e, tangent))[1]

        eye = jnp.eye(2 * n, dtype=q.dtype)
        return jax.vmap(column, out_axes=1)(jnp.arange(2 * n), eye)

    def hold(self, u: Array) -> Dynamics:
        """The same dynamics with the inputs held at `u` (zero-order hold)."""
        return self._replace(law=lambda t, q, qd, tm: u, needs_terms=False, constant=True)

    def feedback(
        self,
        t: Array,
        q: Array,
        qd: Array,
        tm: DynamicsTerms | None = None,
        d_bias: tuple[Array, Array] | None = None,
    ) -> tuple[Array, Array, Array]:
        """`u(t, q, q̇)` and the law's feedback on the generalized forces,

            A ∂u/∂q,   A ∂u/∂q̇   `(n_q, n_q)` each,

        with the stage's `M` and `A` held at their value, and the bias held too unless its
        derivatives `d_bias = (∂bias/∂q, ∂bias/∂q̇)` are given: then the law's response to
        the bias, `A ∂u/∂bias ∂bias/∂(q, q̇)`, is included (a computed-torque or PFBL law, or
        a PD with gravity and elastic compensation, cancels the stiffness and damping it reads
        from the bias: holding the bias would leave them in the iteration matrix). The
        implicit schemes' iteration matrix subtracts it (`∂(−A u)/∂x`, `linearized`): without
        it a stiff feedback law (a PD, a PFBL with large gains) makes Newton converge linearly
        or not at all.
        `tm`: the terms at `(q, q̇)` when the caller has them already."""
        if self.constant:
            zero = jnp.zeros((self.robot.n_q, self.robot.n_q), q.dtype)
            return self.inputs(t, q, qd), zero, zero
        if tm is None and self.needs_terms:
            tm = terms(self.robot, q, qd, self.loads)
        a = tm.actuation if tm is not None else actuation(self.robot, q)
        tm = tm if self.needs_terms else None

        def law(x: Array, xd: Array, bias: Array | None = None) -> Array:
            held = tm if bias is None else tm._replace(bias=bias)
            return self.checked(self.law(t, x, xd, held), q)

        if tm is None or d_bias is None:  # the bias held: no tangents along it
            du_dq, du_dqd = jax.jacfwd(law, argnums=(0, 1))(q, qd)
        else:
            du_dq, du_dqd, du_db = jax.jacfwd(law, argnums=(0, 1, 2))(q, qd, tm.bias)
            du_dq, du_dqd = du_dq + du_db @ d_bias[0], du_dqd + du_db @ d_bias[1]
        return law(q, qd), a @ du_dq, a @ du_dqd

    def linearized(
        self, t: Array, q: Array, qd: Array, qdd: Array, tm: DynamicsTerms | None = None
    ) -> tuple[Array, Array, Array, Array]:
        """`(r, M, ∂r/∂q, ∂r/∂q̇)` of the closed loop's residual `r = ν − A u(t, q, q̇)` at
        `(q, q̇, q̈)`: the model's derivatives at fixed inputs minus the law's feedback
        (`feedback`, with the bias's derivatives: exact for a law that reads the bias but not `M`
        or `A`)."""
        if not self.needs_terms:
            tm = None
        elif tm is None:
            tm = terms(self.robot, q, qd, self.loads)
        u = self.checked(self.law(t, q, qd, tm), q)
        d = residual_derivatives(self.robot, q, qd, qdd, self.loads, u, bias=tm is not None)
        d_bias = None if tm is None else (d.bias_q, d.bias_qd)
        _, fb_q, fb_qd = self.feedback(t, q, qd, tm, d_bias)
        return d.residual, d.mass_matrix, d.d_q - fb_q, d.d_qd - fb_qd


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
        dyn = Dynamics(
            robot, loads, lambda t, q, qd, tm: jnp.zeros(robot.n_u, q.dtype), False, constant=True
        )
    elif isinstance(controller, Controller):
        controller.check_robot(robot)
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
    non-finite `q̈` raises an error naming the controller when its output `u` was not finite,
    else the first bad coordinate (a `ValueError` in eager calls, JAX's runtime error under
    `jit`).
    """
    robot = check_robot(robot)
    solver = choose_solver("vector_field", robot, solver)
    loads = check_loads(robot, loads)
    if controller is not None and not callable(controller):
        raise TypeError("vector_field: controller must be a Controller, a callable or None")
    constraints = check_constraints(constraints)
    dyn = make_dynamics(robot, loads, controller, constraints, solver)

    @jit
    def evaluate(t: Array, q: Array, qd: Array) -> tuple[Array, Array]:
        qdd, u = dyn.evaluate(jnp.asarray(t, q.dtype), q, qd)
        produced = {} if controller is None else {"the controller's output u": u}
        return check_finite("vector_field", robot, (qd, qdd), {"q": q, "qd": qd}, produced)

    def f(t: Array, y: tuple[Array, Array]) -> tuple[Array, Array]:
        if not (isinstance(y, (tuple, list)) and len(y) == 2):
            raise TypeError(f"vector_field: y must be the pair (q, qd), got {type(y).__name__}")
        t = as_scalar("vector_field: t", t)
        q, qd = check_states(robot, q=y[0], qd=y[1])
        if not is_concrete(t, q, qd):
            return evaluate(t, q, qd)
        try:
            return raise_runtime_errors(lambda: evaluate(t, q, qd), robot, {"q": q, "qd": qd})
        except ValueError:
            if constraints:  # a constraint that is not finite there is named first
                check_constraints_at("vector_field", constraints, t.astype(q.dtype), q, qd)
            raise

    return f
