"""Control laws `u = controller(t, q, q̇, terms)` (`softrigid.control`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .._controller import Controller
from .._dynamics import DynamicsTerms, _nu
from .._entry import PREFIX
from .._model import Robot
from .._module import is_concrete, module, static
from ..actuators import JointMotor, PressureChamber, Tendon
from ._references import Reference, _Function, _reference

__all__ = [
    "PD",
    "CollocatedPFBL",
    "CompensatedPD",
    "ComputedTorque",
    "Feedforward",
    "Phases",
    "actuation_coordinates",
]

# A square matrix is singular for the control laws when σ_min ≤ _RCOND σ_max.
_RCOND = 1e-10


def _gain(where: str, value: Any, k: int) -> Array:
    """A gain for `k` errors: a scalar, a diagonal `(k,)` or a matrix `(k, k)`."""
    g = jnp.asarray(value, dtype=float)
    if g.shape not in ((), (k,), (k, k)):
        raise ValueError(f"{where} must be a scalar, shape ({k},) or ({k}, {k}); got {g.shape}")
    return g


def _apply(gain: Array, e: Array) -> Array:
    return gain @ e if gain.ndim == 2 else gain * e


def _indices(where: str, value: Sequence[int] | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    idx = tuple(int(i) for i in value)
    if not idx or len(set(idx)) != len(idx) or min(idx) < 0:
        raise ValueError(f"{where} must be distinct non-negative indices, got {value}")
    return idx


def _driven(where: str, inputs: Sequence[int] | None, robot: Robot) -> tuple[Any, int]:
    """The driven `inputs` (checked indices into `u`, `None` for all) and their number."""
    inputs = _indices(f"{where}: inputs", inputs)
    if inputs is not None and max(inputs) >= robot.n_u:
        raise ValueError(f"{where}: inputs {inputs} out of range n_u = {robot.n_u}")
    return inputs, robot.n_u if inputs is None else len(inputs)


def _select(x: Array, idx: tuple[int, ...] | None, where: str, name: str) -> Array:
    if idx is None:
        return x
    if max(idx) >= x.shape[0]:
        raise ValueError(f"{where}: {name} {idx} out of range for {x.shape[0]} entries")
    return x[np.asarray(idx)]


def _place(v: Array, idx: tuple[int, ...] | None, n_u: int, where: str) -> Array:
    if idx is None:
        if v.shape[0] != n_u:
            raise ValueError(
                f"{where}: the law gives {v.shape[0]} inputs but the robot has n_u = {n_u}; "
                "pass inputs=(...) to choose which inputs it drives"
            )
        return v
    if max(idx) >= n_u:
        raise ValueError(f"{where}: inputs {idx} out of range for n_u = {n_u}")
    return jnp.zeros(n_u, v.dtype).at[np.asarray(idx)].set(v)


def _check_rank(where: str, a: Array, what: str) -> Array:
    """`a` with a run-time check that it has full column rank (`σ_min > 1e-10 σ_max`)."""
    s = jnp.linalg.svd(jax.lax.stop_gradient(a), compute_uv=False)
    msg = f"{PREFIX}{where}: {what} is singular (rank-deficient) at this state"
    return eqx.error_if(a, ~(s[-1] > _RCOND * s[0]), msg)


def _actuation_solve(where: str, a: Array, nu: Array, pseudo_inverse: bool) -> Array:
    """`u` with `a u = ν`: `a⁻¹ ν` for a square, invertible `a`, or `a⁺ ν` (least squares /
    minimum norm) with `pseudo_inverse`."""
    if pseudo_inverse:
        return jnp.linalg.pinv(a) @ nu
    if a.shape[0] != a.shape[1]:
        raise ValueError(
            f"{where}: needs a square actuation matrix on the controlled coordinates, got "
            f"{a.shape}; choose coordinates/inputs that match, or pseudo_inverse=True"
        )
    return jnp.linalg.solve(_check_rank(where, a, "the actuation matrix A"), nu)


def _controlled_actuation(
    where: str, a: Array, coordinates: tuple | None, inputs: tuple | None
) -> Array:
    rows = _select(a, coordinates, where, "coordinates")
    return _select(rows.T, inputs, where, "inputs").T


# ---------------------------------------------------------------- controllers


@module
class Feedforward(Controller):
    """Open loop `u = u_d(t)`: a constant `(n_u,)`, a `Reference` (its position) or a
    function `u_d(t)` (static; the reference's derivatives are unused)."""

    signal: Reference

    def __init__(self, inputs: Any, size: int | None = None) -> None:
        if callable(inputs) and not isinstance(inputs, Reference):
            if size is None:
                raise ValueError("Feedforward: give size=n_u with a function inputs(t)")
            signal: Reference = _Function(inputs, int(size))
        else:
            signal = _reference("Feedforward: inputs", inputs, size)
        object.__setattr__(self, "signal", signal)

    def __call__(self, t: Array, q: Array, qd: Array, terms: DynamicsTerms) -> Array:
        u = self.signal(t)[0]
        n_u = terms.actuation.shape[1]
        if u.shape != (n_u,):
            raise ValueError(f"Feedforward: inputs has size {u.shape[0]}, the robot n_u = {n_u}")
        return u.astype(q.dtype)


@module
class PD(Controller):
    """Joint-space PD on the coordinates `c` driving the inputs `i` (others zero):

        u_i = K_P (q_d − q_c) + K_D (q̇_d − q̇_c).

    Model-free: no compensation, so with gravity or elasticity it leaves a steady-state error.

    Args:
        kp, kd: gains (scalar, `(k,)` or `(k, k)`), `k` = the reference size.
        reference: `(k,)` set point or a `Reference` `q_d(t)`.
        coordinates: indices `c` of the controlled coordinates (default: all `n_q`).
        inputs: indices `i` of the driven inputs (default: all `n_u`).
    """

    kp: Array
    kd: Array
    reference: Reference
    coordinates: tuple[int, ...] | None = static()
    inputs: tuple[int, ...] | None = static()

    def __init__(
        self,
        kp: Any,
        kd: Any,
        reference: Any,
        coordinates: Sequence[int] | None = None,
        inputs: Sequence[int] | None = None,
    ) -> None:
        ref = _reference("PD", reference)
        coordinates = _indices("PD: coordinates", coordinates)
        inputs = _indices("PD: inputs", inputs)
        for name, idx in (("coordinates", coordinates), ("inputs", inputs)):
            if idx is not None and len(idx) != ref.size:
                raise ValueError(f"PD: {name} has {len(idx)} entries, the reference {ref.size}")
        object.__setattr__(self, "kp", _gain("PD: kp", kp, ref.size))
        object.__setattr__(self, "kd", _gain("PD: kd", kd, ref.size))
        object.__setattr__(self, "reference", ref)
        object.__setattr__(self, "coordinates", coordinates)
        object.__setattr__(self, "inputs", inputs)

    def __call__(self, t: Array, q: Array, qd: Array, terms: DynamicsTerms) -> Array:
        qc = _select(q, self.coordinates, "PD", "coordinates")
        if qc.shape[0] != self.reference.size:
            raise ValueError(f"PD: reference has size {self.reference.size}, q has {qc.shape[0]}")
        qdc = _select(qd, self.coordinates, "PD", "coordinates")
        r, rd, _ = self.reference(t)
        u = _apply(self.kp, r - qc) + _apply(self.kd, rd - qdc)
        return _place(u, self.inputs, terms.actuation.shape[1], "PD")


@module
class CompensatedPD(Controller):
    """PD with gravity and elastic compensation on the coordinates `c` (seed 003,
    Simulation 2, phase ii), driving the inputs `i` (others zero):

        u_i = A_ci⁻¹ [K_P (q_d − q_c) − K_D q̇_c + g_c(q) + s_c(q, 0)],   A_ci = A(q)[c, i],

    with `g(q) + s(q, 0) = ID(q, 0, 0)` (one extra pass of the inverse dynamics). At rest at
    `q_d` it gives the static holding input `A_ci u_i = g_c + s_c`; for a fully actuated
    selection the closed loop converges to `q_d` with no steady-state error.

    `A_ci` must be square and invertible (checked: its shape when traced, its rank at run
    time). With `pseudo_inverse=True` a non-square `A_ci` is allowed and `u_i = A_ci⁺ [·]`
    (Moore–Penrose: least squares when there are fewer inputs than coordinates, which then
    keeps a residual error; the minimum-norm input when there are more).

    Args:
        robot: the robot (for `g + s`).
        kp, kd: gains (scalar, `(k,)` or `(k, k)`), `k` = number of controlled coordinates.
        target: `(k,)` set point `q_d` or a `Reference` (only its position is used).
        coordinates, inputs: the indices `c` and `i` (default: all).
    """

    robot: Robot
    kp: Array
    kd: Array
    target: Reference
    coordinates: tuple[int, ...] | None = static()
    inputs: tuple[int, ...] | None = static()
    pseudo_inverse: bool = static()

    def __init__(
        self,
        robot: Robot,
        kp: Any,
        kd: Any,
        target: Any,
        coordinates: Sequence[int] | None = None,
        inputs: Sequence[int] | None = None,
        pseudo_inverse: bool = False,
    ) -> None:
        coordinates = _indices("CompensatedPD: coordinates", coordinates)
        k = robot.n_q if coordinates is None else len(coordinates)
        if coordinates is not None and max(coordinates) >= robot.n_q:
            raise ValueError(
                f"CompensatedPD: coordinates {coordinates} out of range n_q = {robot.n_q}"
            )
        inputs, m = _driven("CompensatedPD", inputs, robot)
        if m != k and not pseudo_inverse:
            raise ValueError(
                f"CompensatedPD: A restricted to the controlled coordinates is {k} x {m}, not "
                "square; choose coordinates/inputs that match, or pseudo_inverse=True"
            )
        object.__setattr__(self, "robot", robot)
        object.__setattr__(self, "kp", _gain("CompensatedPD: kp", kp, k))
        object.__setattr__(self, "kd", _gain("CompensatedPD: kd", kd, k))
        object.__setattr__(self, "target", _reference("CompensatedPD: target", target, k))
        object.__setattr__(self, "coordinates", coordinates)
        object.__setattr__(self, "inputs", inputs)
        object.__setattr__(self, "pseudo_inverse", bool(pseudo_inverse))

    def __call__(self, t: Array, q: Array, qd: Array, terms: DynamicsTerms) -> Array:
        where = "CompensatedPD"
        zero = jnp.zeros_like(q)
        # g(q) + s(q, 0) = ID(q, 0, 0)
        static = _nu(self.robot, q, zero, zero, ())[0]
        qc = _select(q, self.coordinates, where, "coordinates")
        qdc = _select(qd, self.coordinates, where, "coordinates")
        nu = (
            _apply(self.kp, self.target(t)[0] - qc)
            - _apply(self.kd, qdc)
            + _select(static, self.coordinates, where, "coordinates")
        )
        a = _controlled_actuation(where, terms.actuation, self.coordinates, self.inputs)
        u = _actuation_solve(where, a, nu, self.pseudo_inverse)
        return _place(u, self.inputs, terms.actuation.shape[1], where)


@module
class ComputedTorque(Controller):
    """Computed torque (inverse dynamics) for a fully actuated robot:

        ν = M(q) (q̈_d + K_D ė + K_P e) + c + g + s − Q_ext,   e = q_d − q,   u = A(q)⁻¹ ν,

    so that `ë + K_D ė + K_P e = 0` exactly. `M` and the bias come from `terms` (no extra
    evaluation). `A` must be square `(n_q, n_q)` and invertible (its shape is checked when
    traced, its rank at run time); an underactuated robot needs `CollocatedPFBL`.

    Args:
        kp, kd: gains (scalar, `(n_q,)` or `(n_q, n_q)`).
        reference: `(n_q,)` set point or a `Reference` `q_d(t)`.
    """

    kp: Array
    kd: Array
    reference: Reference

    def __init__(self, kp: Any, kd: Any, reference: Any) -> None:
        ref = _reference("ComputedTorque", reference)
        object.__setattr__(self, "kp", _gain("ComputedTorque: kp", kp, ref.size))
        object.__setattr__(self, "kd", _gain("ComputedTorque: kd", kd, ref.size))
        object.__setattr__(self, "reference", ref)

    def __call__(self, t: Array, q: Array, qd: Array, terms: DynamicsTerms) -> Array:
        where = "ComputedTorque"
        if self.reference.size != q.shape[0]:
            raise ValueError(
                f"{where}: reference has size {self.reference.size}, n_q = {q.shape[0]}"
            )
        a = terms.actuation
        if a.shape[0] != a.shape[1]:
            raise ValueError(
                f"{where}: needs a fully actuated robot (square A), got A of shape {a.shape}; "
                "use CollocatedPFBL for an underactuated one"
            )
        r, rd, rdd = self.reference(t)
        v = rdd + _apply(self.kd, rd - qd) + _apply(self.kp, r - q)
        nu = terms.mass_matrix @ v + terms.bias
        return _actuation_solve(where, a, nu, False)


def actuation_coordinates(robot: Robot, q: Array) -> Array:
    """The actuation coordinates `y(q)` `(n_u,)` with `(∂y/∂q)ᵀ = A(q)`, one per input in the
    order of `robot.actuators`: a `JointMotor`'s joint coordinates, a `Tendon`'s negative
    length `−l(q)` (since `A = −(∂l/∂q)ᵀ`: pulling shortens it, `y` grows), a
    `PressureChamber`'s volume `V_c(q)`. Without actuators, `y = q`."""
    if not robot.actuators:
        return q
    parts = []
    for act in robot.actuators:
        if isinstance(act, JointMotor):
            start = robot.q_slices()[act.link].start
            parts.append(q[start : start + robot.links[act.link].joint.n_q])
        elif isinstance(act, Tendon):
            parts.append(-act.length(robot, q)[None])
        elif isinstance(act, PressureChamber):
            parts.append(act.chamber_volume(robot, q)[None])
        else:
            raise TypeError(
                f"actuation_coordinates: no actuation coordinate known for a "
                f"{type(act).__name__}; pass output=y(robot, q) to CollocatedPFBL"
            )
    return jnp.concatenate(parts)


@module
class CollocatedPFBL(Controller):
    """Collocated partial feedback linearization of an underactuated robot (Pustina et al.;
    the law after eq. (55) of seed 003) in its actuation coordinates `y(q)` `(m,)`,
    `A(q) = J(q)ᵀ`, `J = ∂y/∂q` `(m, n)`:

        u = M̄_yy v + h̄_y,   v = ÿ_d + K_D (ẏ_d − ẏ) + K_P (y_d − y),
        M̄_yy = M_yy − M_yz M_zz⁻¹ M_zy,   h̄_y = h_y − M_yz M_zz⁻¹ h_z,

    which imposes `ÿ = v`, i.e. the output error `e = y_d − y` obeys `ë + K_D ė + K_P e = 0`.

    Derivation. Complete `y` with `z = N q`, `N` `(n − m, n)` an orthonormal basis of the null
    space of `J` at the current state (from the QR factorization `Jᵀ = A = [Q₁ Q₂] [R; 0]`,
    `N = Q₂ᵀ`, frozen over the instant, so `Ṅ = 0`). Then `θ = (y, z)`, `θ̇ = T q̇`,
    `T = [J; N]`, `T⁻¹ = [J⁺ Q₂]`, `J⁺ = Q₁ R⁻ᵀ`, and `q̈ = T⁻¹ (θ̈ − (J̇ q̇, 0))`. Multiplying
    `M q̈ + h = Jᵀ u` (`h` = the bias `c + g + s − Q_ext`) by `T⁻ᵀ`, with `J T⁻¹ = [I 0]`:

        M_θ θ̈ + h_θ = (u, 0),   M_θ = T⁻ᵀ M T⁻¹,   h_θ = T⁻ᵀ (h − M J⁺ J̇ q̇).

    The `z` rows give `z̈ = −M_zz⁻¹ (M_zy ÿ + h_z)`; the `y` rows then give `u` above for
    `ÿ = v`. `J̇ q̇ = d²/ds² y(q + s q̇)` is a nested `jvp`; `ẏ = Aᵀ q̇`; `M`, `h`, `A` come
    from `terms`. The law does not depend on the choice of `z` (it equals
    `u = (J M⁻¹ Jᵀ)⁻¹ (v − J̇ q̇ + J M⁻¹ h)`); `z` only names the zero dynamics, whose
    stability is the user's to check. With `m = n` it is computed torque in `y`.

    `A(q)` must keep full column rank `m`: where it loses rank, `T` is singular, some
    combination of outputs cannot be accelerated, and the law is undefined; this is caught at
    run time (`σ_min(A) ≤ 1e-10 σ_max(A)`) with a message, not returned as NaN/∞.

    With `inputs`, only those inputs `i` are driven (the others are zero, passive): `A` and
    `y` are their columns and entries (Simulation 2, phase i: the arm's joints while the soft
    bodies stay passive).

    Args:
        robot: the robot (for `y(q)`).
        kp, kd: gains (scalar, `(m,)` or `(m, m)`), `m` = the number of driven inputs.
        reference: `(m,)` set point or a `Reference` `y_d(t)`.
        output: `y(robot, q) -> (n_u,)` with `(∂y/∂q)ᵀ = A(q)` (default
            `actuation_coordinates`: joint angles, tendon `−l`, chamber volumes); static.
        inputs: indices `i` of the driven inputs (default: all `n_u`).
    """

    robot: Robot
    kp: Array
    kd: Array
    reference: Reference
    output: Callable[[Robot, Array], Array] = static()
    inputs: tuple[int, ...] | None = static()

    def __init__(
        self,
        robot: Robot,
        kp: Any,
        kd: Any,
        reference: Any,
        output: Callable[[Robot, Array], Array] = actuation_coordinates,
        inputs: Sequence[int] | None = None,
    ) -> None:
        inputs, m = _driven("CollocatedPFBL", inputs, robot)
        if m > robot.n_q:
            raise ValueError(f"CollocatedPFBL: more driven inputs ({m}) than coordinates")
        object.__setattr__(self, "robot", robot)
        object.__setattr__(self, "kp", _gain("CollocatedPFBL: kp", kp, m))
        object.__setattr__(self, "kd", _gain("CollocatedPFBL: kd", kd, m))
        object.__setattr__(self, "reference", _reference("CollocatedPFBL: reference", reference, m))
        object.__setattr__(self, "output", output)
        object.__setattr__(self, "inputs", inputs)

    def __call__(self, t: Array, q: Array, qd: Array, terms: DynamicsTerms) -> Array:
        where = "CollocatedPFBL"
        mass, h = terms.mass_matrix, terms.bias
        n_u = terms.actuation.shape[1]
        a = _select(terms.actuation.T, self.inputs, where, "inputs").T
        a = _check_rank(where, a, "the actuation matrix A = (∂y/∂q)ᵀ")
        n, m = a.shape

        def output(x: Array) -> Array:
            y = self.output(self.robot, x)
            if y.shape != (n_u,):
                raise ValueError(f"{where}: output(robot, q) must return ({n_u},), got {y.shape}")
            return _select(y, self.inputs, where, "inputs")

        def y_dot(x: Array) -> tuple[Array, Array]:
            return jax.jvp(output, (x,), (qd,))

        (y, yd), (_, jdqd) = jax.jvp(y_dot, (q,), (qd,))  # (y, ẏ), (ẏ, J̇ q̇)
        r, rd, rdd = self.reference(t)
        v = rdd + _apply(self.kd, rd - yd) + _apply(self.kp, r - y)
        # Aᵀ = J:  A = [Q₁ Q₂] [R; 0],  T⁻¹ = [Q₁ R⁻ᵀ, Q₂]
        qmat, rmat = jnp.linalg.qr(a, mode="complete")
        j_pinv = jax.scipy.linalg.solve_triangular(rmat[:m].T, qmat[:, :m].T, lower=True).T
        t_inv = jnp.concatenate([j_pinv, qmat[:, m:]], axis=1)
        # M_θ = T⁻ᵀ M T⁻¹,  h_θ = T⁻ᵀ (h − M J⁺ J̇ q̇)
        m_theta = t_inv.T @ mass @ t_inv
        h_theta = t_inv.T @ (h - mass @ (j_pinv @ jdqd))
        m_yy, h_y = m_theta[:m, :m], h_theta[:m]
        if m == n:
            return _place(m_yy @ v + h_y, self.inputs, n_u, where)
        m_yz, m_zz, h_z = m_theta[:m, m:], m_theta[m:, m:], h_theta[m:]
        # M_zz⁻¹ [M_zy, h_z] by Cholesky (M_zz is a principal block of an SPD matrix)
        fac = jax.scipy.linalg.cho_factor(m_zz)
        x = jax.scipy.linalg.cho_solve(fac, jnp.concatenate([m_yz.T, h_z[:, None]], axis=1))
        u = (m_yy - m_yz @ x[:, :m]) @ v + h_y - m_yz @ x[:, m]
        return _place(u, self.inputs, n_u, where)


@module
class Phases(Controller):
    """Switch controllers at given times: controller `i` acts on `[t_{i−1}, t_i)` (with
    `t_{−1} = −∞`, `t_K = ∞`), e.g. Simulation 2's three phases with `times = (3, 5)`.

        u = controllers[i](t, q, q̇, terms),   i = #{k : t_k ≤ t}.

    The switch is `lax.switch` (under `vmap` over `t` every phase is evaluated and selected).

    Args:
        times: `(K,)` strictly increasing switching times (traced).
        controllers: `K + 1` controllers.
    """

    times: Array
    controllers: tuple[Controller, ...]

    def __init__(self, times: Any, controllers: Sequence[Controller]) -> None:
        controllers = tuple(controllers)
        ts = jnp.asarray(times, dtype=float).reshape(-1)
        if len(controllers) != ts.shape[0] + 1:
            raise ValueError(
                f"Phases: {ts.shape[0]} switching times need {ts.shape[0] + 1} controllers, "
                f"got {len(controllers)}"
            )
        for c in controllers:
            if not isinstance(c, Controller):
                raise TypeError(f"Phases: controllers must be Controllers, got {type(c).__name__}")
        if is_concrete(ts) and not np.all(np.diff(np.asarray(ts)) > 0):
            raise ValueError(f"Phases: times must be strictly increasing, got {np.asarray(ts)}")
        object.__setattr__(self, "times", ts)
        object.__setattr__(self, "controllers", controllers)

    def __call__(self, t: Array, q: Array, qd: Array, terms: DynamicsTerms) -> Array:
        index = jnp.searchsorted(self.times, t, side="right")
        branches = [lambda c=c: c(t, q, qd, terms).astype(q.dtype) for c in self.controllers]
        return jax.lax.switch(index, branches)
