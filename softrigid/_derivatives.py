"""Derivatives of the inverse dynamics in one call, for implicit integrators, Newton statics and
linearization:

    ν(q, q̇, q̈) = M(q) q̈ + c(q, q̇) + g(q) + s(q, q̇) − Q_ext(q),
    returns (ν, M, ∂ν/∂q, ∂ν/∂q̇)

(`inverse_dynamics_derivatives`); the implicit integrators take the same of the residual
`ν − A(q) u` at fixed inputs (`residual_derivatives`), and `linearize` the state-space matrices
of `q̈ = M⁻¹ (A u − ν(q, q̇, 0))` about a state and input.

Everything a link contributes is a function of its own coordinates only: its pose and Jacobians
`(R_i, t_i, ∂t_i/∂q_i, G_i)`, its body's mass moments, the velocity-level terms
`(∂²t_i[q̇_i, q̇_i], vee(∂²R_i[q̇_i, q̇_i] R_iᵀ), moments of h)` and its internal force
`s_i = ∂U_i/∂q_i + ∂R_i/∂q̇_i`. Their derivatives are therefore taken link by link, with `n_i`
tangents (`∂/∂q_i`, and `∂/∂q̇_i` for the velocity-level terms), where the expensive per-node work
of a soft body lives. The rest of the recursion (passes over the links, projection) is cheap and
is differentiated in forward mode over all `2 n_q` coordinates, with each link's terms replaced by
their first-order expansion about the state,

    X_i(x_i, ẋ_i) = X_i + ∂X_i/∂q_i (x_i − q_i) + ∂X_i/∂q̇_i (ẋ_i − q̇_i),

which has the same value and first derivatives at `(x, ẋ) = (q, q̇)` as `X_i` itself, so the
result is exact. A link's node-level derivatives thus cost `O(n_i)` tangents instead of `O(n_q)`
(with the second-order `h` inside, `O(n_i)` instead of `O(n_q²)`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from . import _recursion as rec
from ._ad import value_and_jacfwd
from ._body import MassMoments, VelocityMoments
from ._cache import jit
from ._dynamics import DynamicsTerms, _mass, actuation, terms
from ._energy import link_internal_derivatives
from ._entry import algorithm
from ._loads import external_loads
from ._model import Link, Robot
from ._reports import check_positive_definite

__all__ = [
    "InverseDynamicsDerivatives",
    "Linearization",
    "ResidualDerivatives",
    "inverse_dynamics_derivatives",
    "linearize",
    "linearized_terms",
    "residual_derivatives",
]


class InverseDynamicsDerivatives(NamedTuple):
    """`(ν, M, ∂ν/∂q, ∂ν/∂q̇)` at one state (`(n_q,)`, then three `(n_q, n_q)`)."""

    nu: Array
    mass_matrix: Array
    d_q: Array
    d_qd: Array


class ResidualDerivatives(NamedTuple):
    """`r = ν − A(q) u` at fixed inputs `u`, `M`, `∂r/∂q`, `∂r/∂q̇ = ∂ν/∂q̇`, and, when asked
    for, the derivatives of the bias `ν(q, q̇, 0) = c + g + s − Q_ext` (what a law that reads
    the bias responds to; `None` otherwise)."""

    residual: Array
    mass_matrix: Array
    d_q: Array
    d_qd: Array
    bias_q: Array | None = None
    bias_qd: Array | None = None


class _Position(NamedTuple):
    """A link's position-level terms (functions of `q_i`)."""

    rot: Array
    trans: Array
    jac_t: Array
    jac_w: Array
    moments: MassMoments


class _Rates(NamedTuple):
    """A link's velocity-level terms and internal force (functions of `q_i, q̇_i`)."""

    a_bias: Array
    dw_bias: Array
    body: VelocityMoments
    internal: Array


def _link_terms(link: Link, q: Array, qd: Array) -> tuple:
    """Values and local derivatives of a link's terms: `(P, ∂P/∂q_i, V, ∂V/∂q_i, ∂V/∂q̇_i)`."""

    def at(x: Array) -> tuple[_Position, tuple, Any]:
        rot, trans, jac_t, jac_w, moments, data = rec.link_position(link, x)
        bias = rec.link_bias(link, x, qd, rot, trans, data)
        return _Position(rot, trans, jac_t, jac_w, moments), bias, data

    (pos, bias, data), (d_pos, d_bias, d_data) = value_and_jacfwd(at, q)
    d_bias_qd = _bias_rates(link, qd, pos, d_pos, data, d_data)
    if d_bias_qd is None:  # a body that does not give its moments' rate: forward mode over q̇
        _, d_bias_qd = value_and_jacfwd(
            lambda y: rec.link_bias(link, q, y, pos.rot, pos.trans, data), qd
        )
    # s_i and its derivatives (∂s_i/∂q̇_i: the damping matrix) in the material's own form
    s, d_s, d_s_qd = link_internal_derivatives(link, q, qd)
    return pos, d_pos, _Rates(*bias, s), _Rates(*d_bias, d_s), _Rates(*d_bias_qd, d_s_qd)


def _bias_rates(
    link: Link, qd: Array, pos: _Position, d_pos: _Position, data: Any, d_data: Any
) -> tuple | None:
    """`∂/∂q̇_i` of `link_bias` (tangent axis last) from the terms of the `q`-pass, exactly:
    every bias term is a quadratic form in `q̇`, `∂Q/∂q̇_j = 2 B(q̇, e_j)` with `B` its
    polarization, so with `J_t = ∂t_i/∂q_i`, `G` (`ω_rel = G q̇`) and `∂_j = ∂/∂q_j`,

        ∂(∂²t[q̇, q̇])/∂q̇_j = 2 (∂_j J_t) q̇,
        ∂ vee(∂²R[q̇, q̇] Rᵀ)/∂q̇_j = 2 (∂_j G) q̇ + (G q̇) × G e_j

    (`vee(∂²R[a, b] Rᵀ) = ∂_b (G a) + ½ (G a) × (G b)`), and the body's moments from
    `Body.velocity_moments_rate`; `None` where the body does not give them. Replaces a forward
    pass over `q̇` through the nodes' second derivatives (the helicoid robot's derivatives:
    38.3k → 31.5k lines of program, first call 23.9 → 22.1 s)."""
    nj = link.joint.n_q
    body = link.body.velocity_moments_rate(
        data, jax.tree_util.tree_map(lambda d: d[..., nj:], d_data), qd[nj:]
    )
    if body is None:
        return None
    x = qd.astype(pos.jac_t.dtype)
    w = pos.jac_w @ x
    a_rate = 2.0 * jnp.einsum("ikj,k->ij", d_pos.jac_t, x)
    w_rate = 2.0 * jnp.einsum("ikj,k->ij", d_pos.jac_w, x) + jnp.cross(
        w[:, None], pos.jac_w, axisa=0, axisb=0, axisc=0
    )

    def pad(m: Array) -> Array:  # the joint's columns: the body's moments do not depend on them
        return jnp.concatenate([jnp.zeros((*m.shape[:-1], nj), m.dtype), m], -1)

    return a_rate, w_rate, VelocityMoments(*(pad(m) for m in body))


# staged on its own, so that JAX traces a link's terms once per process and link structure:
# the statics' Newton Jacobian and the closed loop's linearization reuse the same jaxpr
_link_terms_staged = jit(_link_terms)


def _expand(value: Any, jac: Any, d: Array) -> Any:
    """`X + ∂X/∂x · d` per link of a group (leading axis `size`, tangent axis last)."""
    return jax.tree_util.tree_map(
        lambda v, j: v + jnp.einsum("s...n,sn->s...", j, d.astype(j.dtype)), value, jac
    )


def _assemble(pos: list[_Position]) -> rec.LinkPosition:
    """The robot's position level from the groups' terms (no body data: not needed past the
    velocity level)."""
    return rec.LinkPosition(
        rec.concat([p.rot for p in pos]),
        rec.concat([p.trans for p in pos]),
        tuple(p.jac_t for p in pos),
        tuple(p.jac_w for p in pos),
        tuple(p.moments for p in pos),
        tuple(None for _ in pos),
    )


def _linearize(
    robot: Robot,
    q: Array,
    qd: Array,
    qdd: Array,
    loads: tuple,
    rows: tuple[str, ...] = (),
    u: Array | None = None,
) -> tuple[InverseDynamicsDerivatives, dict[str, tuple[Any, Any]]]:
    """`(ν, M, ∂ν/∂q, ∂ν/∂q̇)` and, from the same link terms and forward pass, the value and
    `∂/∂(q, q̇)` (tangent axis last, `2 n_q`) of each of `rows`: `"bias"`, `ν(q, q̇, 0)`;
    `"input"`, `A(q) u`; `"mass"`, `M(q)`; `"actuation"`, `A(q)`; `"poses"`, the world poses of
    the distal frames."""
    terms = rec.map_groups(robot, _link_terms_staged, rec.coords(q), rec.coords(qd))
    grav = -robot.gravity.astype(q.dtype)
    n = robot.n_q

    def nu_of(z: Array) -> Array:
        x, xd = z[:n], z[n:]
        pos, rates = [], []
        for g, (p, dp, r, dr, drd) in zip(rec.groups(robot), terms):
            dx, dxd = g.coords(x) - g.coords(q), g.coords(xd) - g.coords(qd)
            pos.append(_expand(p, dp, dx))
            rates.append(_expand(_expand(r, dr, dx), drd, dxd))
        link_pos = _assemble(pos)
        v_rel, w_rel = rec.relative_rates(robot, link_pos, xd)
        vel = rec.Velocity(
            xd,
            w_rel,
            v_rel,
            rec.concat([r.a_bias for r in rates]),
            rec.concat([r.dw_bias for r in rates]),
            tuple(r.body for r in rates),
        )
        ext = external_loads(robot, x, link_pos, loads) if loads else None
        internal = rec.concat([r.internal.reshape(-1) for r in rates])
        zero = jnp.zeros_like(qdd)
        row = {
            "nu": lambda: rec.inertial_forces(robot, link_pos, vel, qdd, grav, ext) + internal,
            "bias": lambda: rec.inertial_forces(robot, link_pos, vel, zero, grav, ext) + internal,
            "mass": lambda: _mass(robot, link_pos),
            "poses": lambda: rec.world_poses(link_pos),
        }
        return {name: row[name]() for name in ("nu", *rows) if name in row}

    value, jac = value_and_jacfwd(nu_of, jnp.concatenate([q, qd]))
    value, jac = _with_actuation_rows(robot, q, rows, u, value, jac)
    mass = _mass(robot, _assemble([t[0] for t in terms]))
    nu = InverseDynamicsDerivatives(value["nu"], mass, jac["nu"][:, :n], jac["nu"][:, n:])
    return nu, {name: (value[name], jac[name]) for name in rows}


def _with_actuation_rows(
    robot: Robot, q: Array, rows: tuple[str, ...], u: Array | None, value: dict, jac: dict
) -> tuple[dict, dict]:
    """`value` and `jac` with the rows of `rows` that are the actuators' own, `"input"`
    (`A(q) u`) and `"actuation"` (`A(q)`): functions of `q` alone, evaluated through the
    actuators (not the link-local expansion: a tendon's `A = −(∂l/∂q)ᵀ` holds a derivative of
    its own) and differentiated by forward mode over the `n_q` configuration tangents only;
    their `q̇` columns are zero. Pushing the `2 n_q` tangents of the passes through them
    instead cost the helicoid robot's nine tendons 20 of 49 ms per call."""
    asked = tuple(name for name in rows if name in ("input", "actuation"))
    if not asked:
        return value, jac

    def own(x: Array) -> dict[str, Array]:
        a = actuation(robot, x)  # once, whichever rows are asked
        return {name: a @ u if name == "input" else a for name in asked}

    v, j = value_and_jacfwd(own, q)
    zero = {name: jnp.zeros((*j[name].shape[:-1], q.shape[0]), q.dtype) for name in asked}
    padded = {name: jnp.concatenate([j[name], zero[name]], -1) for name in asked}
    return {**value, **v}, {**jac, **padded}


def residual_derivatives(
    robot: Robot, q: Array, qd: Array, qdd: Array, loads: tuple, u: Array, bias: bool = False
) -> ResidualDerivatives:
    """`(r, M, ∂r/∂q, ∂r/∂q̇)` of the dynamics residual `r = ν − A(q) u` at fixed inputs `u`
    (`∂r/∂q` includes `−∂(A(q) u)/∂q`, e.g. of tendons), and with `bias` the derivatives of
    the bias `ν(q, q̇, 0)` from the same pass: the unchecked core of the implicit integrators'
    Newton iterations and of the Radau Jacobian, for use inside compiled code."""
    d, extra = _linearize(robot, q, qd, qdd, loads, ("input", "bias") if bias else ("input",), u)
    au, d_au = extra["input"]
    n = robot.n_q
    d_bias = extra["bias"][1] if bias else None
    return ResidualDerivatives(
        d.nu - au,
        d.mass_matrix,
        d.d_q - d_au[:, :n],
        d.d_qd,
        None if d_bias is None else d_bias[:, :n],
        None if d_bias is None else d_bias[:, n:],
    )


def linearized_terms(
    robot: Robot, q: Array, qd: Array, loads: tuple
) -> tuple[DynamicsTerms, DynamicsTerms]:
    """The dynamics terms at `(q, q̇)` (`M`, the bias, `A`, the world poses) and their
    derivatives `∂/∂(q, q̇)` (same fields, tangent axis last, `2 n_q`), from the link-local
    linearization: what the closed loop's exact Jacobian needs of the model
    (`Dynamics.jacobian`)."""
    zero = jnp.zeros_like(q)
    _, rows = _linearize(robot, q, qd, zero, loads, ("mass", "bias", "actuation", "poses"))
    value = DynamicsTerms(*(rows[k][0] for k in ("mass", "bias", "actuation")), *rows["poses"][0])
    jac = DynamicsTerms(*(rows[k][1] for k in ("mass", "bias", "actuation")), *rows["poses"][1])
    return value, jac


@algorithm()
def inverse_dynamics_derivatives(
    robot: Robot, q: Array, qd: Array, qdd: Array, loads: Any = None
) -> InverseDynamicsDerivatives:
    """`(ν, M, ∂ν/∂q, ∂ν/∂q̇)` at `(q, q̇, q̈)` in one call, sharing the position-level work.

    `ν = M q̈ + c + g + s − Q_ext` is the inverse dynamics (`softrigid.inverse_dynamics`),
    whatever the robot's actuators: the inputs' `A(q) u` is not part of it (its derivative
    is `jax.jacfwd` of `softrigid.actuation_force`). Each link's node-level terms are
    differentiated with respect to its own coordinates only (`n_i` tangents), the passes over
    the links with respect to all of them (module docstring).

    Args:
        robot: the robot.
        q, qd, qdd: `(n_q,)` configuration, velocity and acceleration.
        loads: optional external loads.

    Returns:
        `InverseDynamicsDerivatives(nu, mass_matrix, d_q, d_qd)`; `∂ν/∂q̈ = M`.
    """
    return _linearize(robot, q, qd, qdd, loads)[0]


class Linearization(NamedTuple):
    """The dynamics of the state `x = (q, q̇)` to first order about `(x₀, u₀)` (`linearize`):
    `ẋ ≈ (q̇₀, q̈₀) + A (x − x₀) + B (u − u₀)`."""

    qdd: Array  # (n_q,) q̈₀ = M⁻¹ (A(q₀) u₀ − bias)
    state_matrix: Array  # (2 n_q, 2 n_q) A = [[0, I], [∂q̈/∂q, ∂q̈/∂q̇]]
    input_matrix: Array  # (2 n_q, n_u) B = [[0], [M⁻¹ A(q₀)]]


@algorithm()
def linearize(robot: Robot, q: Array, qd: Array, u: Array, loads: Any = None) -> Linearization:
    """The state-space matrices of the dynamics about the state `(q, q̇)` and the inputs `u`
    (for LQR, stability and modal analysis about an equilibrium of `equilibrium`). With
    `q̈ = M⁻¹ (A(q) u − bias)` and the residual `r(q, q̇, q̈) = ν(q, q̇, q̈) − A(q) u`, which
    vanishes along it, differentiating `r = 0` at that `q̈` gives

        ∂q̈/∂x = −M⁻¹ ∂r/∂x = M⁻¹ (∂(A u)/∂x − ∂ν/∂x),   ∂q̈/∂u = M⁻¹ A,   x = (q, q̇),

        A = [[0, I], [∂q̈/∂q, ∂q̈/∂q̇]],   B = [[0], [M⁻¹ A]],

    `∂ν/∂x` taken at `q̈` (it holds `(∂M/∂q) q̈`): one evaluation of the dynamics terms for
    `q̈`, the residual's derivatives from one link-local linearization
    (`inverse_dynamics_derivatives`' pass) and one Cholesky factor of `M` (checked positive
    definite at run time, as `forward_dynamics`). Exact: equal to `jax.jacfwd` of
    `forward_dynamics` (tested), without differentiating the factorization. Coordinates on a
    chart (rotation vectors) are linearized in it.

    Args:
        robot: the robot.
        q, qd: `(n_q,)` configuration and velocity.
        u: `(n_u,)` the robot's inputs (the generalized forces without actuators).
        loads: optional external loads (held: they do not enter `B`).

    Returns:
        `Linearization(qdd, state_matrix, input_matrix)`.

    Example:
        >>> import jax.numpy as jnp, softrigid as sr
        >>> bar = sr.RigidBody(1.0, (0.0, 0.0, 0.5), jnp.zeros((3, 3)))
        >>> joint = sr.joints.Revolute((0, 1, 0), damping=0.1)
        >>> pendulum = sr.Robot([sr.Link(joint, bar)])
        >>> lin = sr.linearize(pendulum, jnp.zeros(1), jnp.zeros(1), jnp.zeros(1))
        >>> print(lin.state_matrix)  # upright: m l² q̈ = m g l q − c q̇ + u
        [[ 0.    1.  ]
         [19.62 -0.4 ]]
        >>> print(lin.input_matrix)
        [[0.]
         [4.]]
    """
    n = robot.n_q
    tm = terms(robot, q, qd, loads)
    factor, lower = jax.scipy.linalg.cho_factor(tm.mass_matrix)
    factor = check_positive_definite("linearize", robot, tm.mass_matrix, factor, q)
    act = tm.actuation  # I without actuators
    qdd = jax.scipy.linalg.cho_solve((factor, lower), act @ u - tm.bias)
    d = residual_derivatives(robot, q, qd, qdd, loads, u)
    rhs = jnp.concatenate([-d.d_q, -d.d_qd, act], axis=1)
    lower_rows = jax.scipy.linalg.cho_solve((factor, lower), rhs)
    upper = jnp.concatenate([jnp.zeros((n, n), q.dtype), jnp.eye(n, dtype=q.dtype)], 1)
    state = jnp.concatenate([upper, lower_rows[:, : 2 * n]])
    inputs = jnp.concatenate([jnp.zeros((n, act.shape[1]), q.dtype), lower_rows[:, 2 * n :]])
    return Linearization(qdd, state, inputs)
