"""Control laws `u = controller(t, q, q̇, terms)` (`softrigid.control`): feed-forward, PD,
PD with gravity and elastic compensation, computed torque, and switching between laws at given
times. Collocated PFBL lives in `_pfbl`, the pieces the laws share in `_common`."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .._checks import as_count
from .._controller import Controller, concrete_times, held_switch_times, real_inputs
from .._dynamics import DynamicsTerms, _nu
from .._entry import check_robot
from .._model import Robot
from .._module import is_concrete, module, static
from ._common import (
    _actuation_solve,
    _apply,
    _controlled_actuation,
    _driven,
    _gain,
    _indices,
    _place,
    _select,
)
from ._references import Reference, _Function, _reference

__all__ = ["PD", "CompensatedPD", "ComputedTorque", "Feedforward", "Phases"]


@module
class Feedforward(Controller):
    """Open loop `u = u_d(t)`: a constant `(n_u,)`, a `Reference` (its position) or a
    function `u_d(t)` (static; the reference's derivatives are unused).

    Args:
        inputs: the constant, `Reference` or function `u_d(t) -> (n_u,)`.
        size: `n_u`, required with a function (its output is checked against it); with a
            constant or a `Reference`, optional (checked against theirs).
    """

    signal: Reference

    def __init__(self, inputs: Any, size: int | None = None) -> None:
        if callable(inputs) and not isinstance(inputs, Reference):
            if size is None:
                raise ValueError("Feedforward: give size=n_u with a function inputs(t)")
            signal: Reference = _Function(inputs, as_count("Feedforward: size", size))
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
        kp, kd: gains (scalar, `(k,)` or `(k, k)`, positive semi-definite), `k` = the
            reference size.
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
        ref = _reference("PD: reference", reference)
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

    External loads (`simulate(..., loads=...)`) are not compensated: a constant load leaves
    the steady-state error `e = −K_P⁻¹ Q_ext,c` (to first order); `ComputedTorque` cancels
    them (its bias includes `Q_ext`).

    Args:
        robot: the robot (for `g + s`).
        kp, kd: gains (scalar, `(k,)` or `(k, k)`, positive semi-definite), `k` = number
            of controlled coordinates.
        target: `(k,)` set point `q_d` or a `Reference` (only its position is used).
        coordinates, inputs: the indices `c` and `i` (default: all).
        pseudo_inverse: allow a non-square `A_ci` (above; default `False`).
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
        robot = check_robot(robot, "CompensatedPD")
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
        kp, kd: gains (scalar, `(n_q,)` or `(n_q, n_q)`, positive semi-definite).
        reference: `(n_q,)` set point or a `Reference` `q_d(t)`.
    """

    kp: Array
    kd: Array
    reference: Reference

    def __init__(self, kp: Any, kd: Any, reference: Any) -> None:
        ref = _reference("ComputedTorque: reference", reference)
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


@module
class Phases(Controller):
    """Switch controllers at given times: controller `i` acts on `[t_{i−1}, t_i)` (with
    `t_{−1} = −∞`, `t_K = ∞`), e.g. Simulation 2's three phases with `times = (3, 5)`.

        u = controllers[i](t, q, q̇, terms),   i = #{k : t_k ≤ t}.

    The switch is `lax.switch` (under `vmap` over `t` every phase is evaluated and selected).

    Args:
        times: `(K,)` strictly increasing switching times (traced: they may be arguments of
            a jitted or vmapped function; their derivative is zero, the inputs jump at them,
            so a fixed-step run's result is piecewise constant in them).
        controllers: `K + 1` controllers.
    """

    times: Array
    controllers: tuple[Controller, ...]

    def __init__(self, times: Any, controllers: Sequence[Controller]) -> None:
        controllers = tuple(controllers)
        ts = jnp.asarray(times, dtype=float)
        if ts.ndim > 1:  # (a scalar is one switching time)
            raise ValueError(f"Phases: times must be a 1-D sequence, got shape {ts.shape}")
        ts = ts.reshape(-1)
        if len(controllers) != ts.shape[0] + 1:
            raise ValueError(
                f"Phases: {ts.shape[0]} switching times need {ts.shape[0] + 1} controllers, "
                f"got {len(controllers)}"
            )
        for c in controllers:
            if not isinstance(c, Controller):
                raise TypeError(f"Phases: controllers must be Controllers, got {type(c).__name__}")
        if is_concrete(ts) and not np.all(np.isfinite(np.asarray(ts))):
            raise ValueError(f"Phases: times must be finite, got {np.asarray(ts)}")
        if is_concrete(ts) and not np.all(np.diff(np.asarray(ts)) > 0):
            raise ValueError(f"Phases: times must be strictly increasing, got {np.asarray(ts)}")
        object.__setattr__(self, "times", ts)
        object.__setattr__(self, "controllers", controllers)

    def __call__(self, t: Array, q: Array, qd: Array, terms: DynamicsTerms) -> Array:
        index = jnp.searchsorted(self.times, t, side="right")

        def phase(k: int) -> Array:
            u = self.controllers[k](t, q, qd, terms)
            return real_inputs(f"Phases: controller {k}", u).astype(q.dtype)

        branches = [functools.partial(phase, k) for k in range(len(self.controllers))]
        return jax.lax.switch(index, branches)

    def switch_times(self) -> tuple[float, ...]:
        """Its switching times and those of its controllers."""
        return tuple(sorted({*concrete_times(self.times), *held_switch_times(self)}))
