"""Collocated partial feedback linearization (`softrigid.control.CollocatedPFBL`, the law after
eq. (55) of seed 003) and the actuation coordinates `y(q)` it tracks by default
(`softrigid.control.actuation_coordinates`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax._src import core as jax_core  # trace_state_clean: no public equivalent

from .._cache import jit
from .._controller import Controller
from .._dynamics import DynamicsTerms
from .._entry import check_robot, check_states
from .._model import Robot
from .._module import module, static
from ..actuators import JointMotor, PressureChamber, Tendon
from ..kinematics._base import user_array
from ._common import _apply, _check_conditioned, _driven, _gain, _place, _select
from ._references import Reference, _reference

__all__ = ["CollocatedPFBL", "actuation_coordinates"]


def actuation_coordinates(robot: Robot, q: Array, inputs: Sequence[int] | None = None) -> Array:
    """The actuation coordinates `y(q)` `(n_u,)` with `(∂y/∂q)ᵀ = A(q)`, one per input in the
    order of `robot.actuators`: a `JointMotor`'s joint coordinates, a `Tendon`'s negative
    length `−l(q)` (since `A = −(∂l/∂q)ᵀ`: pulling shortens it, `y` grows), a
    `PressureChamber`'s volume `V_c(q)`. Without actuators, `y = q`. With `inputs`, only
    those entries, in that order; the others are not computed. Called outside any JAX
    transformation it runs as one compiled program per robot structure and `inputs` (not one
    dispatch per operation: the helicoid robot's nine tendons took 1.7 s eagerly)."""
    robot = check_robot(robot)
    (q,) = check_states(robot, q=q)
    key = None if inputs is None else tuple(inputs)
    if key == ():
        raise ValueError("actuation_coordinates: inputs must not be empty (None: all inputs)")
    if jax_core.trace_state_clean() and _hashable(key):
        return _compiled_coordinates(robot, q, key)
    return _coordinates(robot, q, inputs)


def _hashable(key: Any) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


def _coordinates(robot: Robot, q: Array, inputs: Sequence[int] | None) -> Array:
    """`actuation_coordinates`, traced."""
    if not robot.actuators:
        return q if inputs is None else q[_input_indices(inputs, robot.n_q)]
    offsets = np.cumsum([0, *(act.n_inputs(robot) for act in robot.actuators)])
    if inputs is None:
        needed = range(len(robot.actuators))
    else:
        idx = _input_indices(inputs, int(offsets[-1]))
        needed = np.unique(np.searchsorted(offsets, idx, side="right") - 1)  # their actuators
    parts = []
    for kind, group in itertools.groupby((robot.actuators[int(k)] for k in needed), type):
        group = list(group)
        if issubclass(kind, Tendon):
            # consecutive tendons together: their guides are mapped once per body
            parts.append(-Tendon.lengths(robot, q, group))
            continue
        for act in group:
            if isinstance(act, JointMotor):
                start = robot.q_slices()[act.link].start
                parts.append(q[start : start + robot.links[act.link].joint.n_q])
            elif isinstance(act, PressureChamber):
                parts.append(act.chamber_volume(robot, q)[None])
            else:
                raise TypeError(
                    f"actuation_coordinates: no actuation coordinate known for a "
                    f"{type(act).__name__}; pass output=y(robot, q) to CollocatedPFBL"
                )
    y = jnp.concatenate(parts)
    if inputs is None:
        return y
    # `y` holds the inputs `covered` (ascending); input i is its entry at i's rank there
    covered = np.concatenate([np.arange(offsets[k], offsets[k + 1]) for k in needed])
    return y[np.searchsorted(covered, idx)]


_compiled_coordinates = jit(_coordinates, static_argnames=("inputs",))


def _input_indices(inputs: Sequence[int], size: int) -> np.ndarray:
    """`inputs` as an index array, with a clear error for one outside `[0, size)`."""
    idx = tuple(int(i) for i in inputs)
    if any(not 0 <= i < size for i in idx):
        raise ValueError(f"actuation_coordinates: inputs {idx} out of range for n_u = {size}")
    return np.asarray(idx, dtype=int)


@jax.custom_jvp
def _complete_qr(a: Array) -> tuple[Array, Array]:
    """`A = [Q₁ Q₂] [R; 0]`, the complete QR factorization of a tall `A` `(n, m)`, with a
    derivative wherever `A` has full column rank: `dQ₁`, `dR` are the thin factorization's,

        dQ₂ = −Q₁ dQ₁ᵀ Q₂

    (it keeps `[Q₁ Q₂]` orthogonal to first order and does not turn `Q₂` within its span, on
    which the law does not depend). JAX's own rule for the complete factorization solves with
    `Q₁₁ − I` (its rows `:m`), singular when a column of `A` is a unit vector (a joint motor's),
    and returned NaN there."""
    qmat, rmat = jnp.linalg.qr(a, mode="complete")
    return qmat, rmat  # a plain pair, the structure of the rule's primal output


@_complete_qr.defjvp
def _complete_qr_jvp(
    primals: tuple[Array], tangents: tuple[Array]
) -> tuple[tuple[Array, Array], tuple[Array, Array]]:
    (a,), (da,) = primals, tangents
    n, m = a.shape
    qmat, rmat = _complete_qr(a)
    (q1, _), (dq1, dr) = jax.jvp(lambda x: jnp.linalg.qr(x, mode="reduced"), (a,), (da,))
    q2 = qmat[:, m:]
    dq = jnp.concatenate([dq1, -q1 @ (dq1.T @ q2)], axis=1)
    dr = jnp.concatenate([dr, jnp.zeros((n - m, m), dr.dtype)])
    return (qmat, rmat), (dq, dr)


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
    run time from the `R` of the factorization above (`κ_F(R) = ‖R‖_F ‖R⁻¹‖_F ≥ 1e10`, an
    upper bound of `σ_max(A)/σ_min(A)`) with a message, not returned as NaN/∞.

    With `inputs`, only those inputs `i` are driven (the others are zero, passive): `A` and
    `y` are their columns and entries (Simulation 2, phase i: the arm's joints while the soft
    bodies stay passive).

    Args:
        robot: the robot (for `y(q)`).
        kp, kd: gains (scalar, `(m,)` or `(m, m)`, positive semi-definite), `m` = the
            number of driven inputs.
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
        robot = check_robot(robot, "CollocatedPFBL")
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
        n, m = a.shape

        def output(x: Array) -> Array:
            if self.output is actuation_coordinates:  # the driven inputs' coordinates only
                return actuation_coordinates(self.robot, x, self.inputs)
            y = user_array(f"{where}: output(robot, q)", self.output(self.robot, x))
            if y.shape != (n_u,):
                raise ValueError(f"{where}: output(robot, q) must return ({n_u},), got {y.shape}")
            return _select(y, self.inputs, where, "inputs")

        def y_dot(x: Array) -> tuple[Array, Array]:
            return jax.jvp(output, (x,), (qd,))

        (y, yd), (_, jdqd) = jax.jvp(y_dot, (q,), (qd,))  # (y, ẏ), (ẏ, J̇ q̇)
        r, rd, rdd = self.reference(t)
        v = rdd + _apply(self.kd, rd - yd) + _apply(self.kp, r - y)
        # Aᵀ = J:  A = [Q₁ Q₂] [R; 0],  T⁻¹ = [Q₁ R⁻ᵀ, Q₂];  σ(A) = σ(R): R's inverse checks A
        qmat, rmat = _complete_qr(a)
        r_inv = jax.scipy.linalg.solve_triangular(rmat[:m], jnp.eye(m, dtype=a.dtype))
        j_pinv = qmat[:, :m] @ r_inv.T
        j_pinv = _check_conditioned(
            where, "the actuation matrix A = (∂y/∂q)ᵀ", j_pinv, rmat[:m], r_inv
        )
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
