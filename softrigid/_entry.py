"""The one argument-check preamble of the public algorithms, and their output checks.

`algorithm(...)` turns a core `core(robot, q, …)` into its public function: the robot, the state
vectors (`(n_q,)`, real, finite when concrete, promoted to one floating dtype), the inputs `u`
(`(n_u,)`) and the external loads are checked once, at the entry, with messages that name the
argument; then the core runs compiled (`jax.jit`, one compiled program per robot structure and
option). Under an outer `jit`/`vmap` the checks run at trace time on shapes and dtypes; a
`vmap` over many states runs chunk by chunk on CPU (`softrigid._batching`).

An eager call first tries the fast path (`softrigid._fastpath`): the robot flattened once, a
program cached for it, checks on types and shapes only and the values' finiteness inside that
program; whatever the fast path does not accept, or any fault it finds, runs the checked path
here, which raises the error.

The outputs are checked at run time, inside the compiled program (so also under the user's
`jit`/`vmap`): a non-finite value raises an error naming the algorithm and the first bad
coordinate (its link, and whether it is a joint or body coordinate). The check is one fused
reduction and a branch (`softrigid._fault.fault_if`, no host callback). Eager calls raise it as
a `ValueError`; inside the user's `jit` it surfaces as JAX's runtime error carrying the same
message.

The library's own iterations probe trial points that may lie outside a body's range (a Newton
step past a stretch of zero): there a non-finite value is information, and the solver rejects
the trial and reports through its status. Traced inside `trial_evaluations()`, the public
algorithms that a user's actuator or output function calls leave out their output checks.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from . import _batching, _fastpath
from . import _recursion as rec
from ._cache import jit
from ._checks import as_flag, check_state, is_real_dtype, raise_if
from ._loads import check_loads
from ._model import Robot
from ._module import is_concrete
from .kinematics._base import kinematics_name

__all__ = [
    "PREFIX",
    "algorithm",
    "check_finite",
    "check_inputs",
    "check_positive_definite",
    "check_robot",
    "check_states",
    "describe_coordinate",
    "diagnose",
    "raise_runtime_errors",
    "trial_evaluations",
]

# Every runtime message starts with this, so that eager calls can re-raise it cleanly.
PREFIX = "softrigid: "
NON_FINITE_HINT = (
    " The state or the inputs (u, loads; eager calls check them first, inside jit a check of "
    "the model's may fire before theirs), a "
    "body's map or its derivatives (e.g. sqrt or norm at 0, a stop_gradient, an overflow) "
    "produced it."
)

F = TypeVar("F", bound=Callable[..., Any])

_TRIAL = contextvars.ContextVar("softrigid_trial_evaluations", default=False)


@contextlib.contextmanager
def trial_evaluations() -> Iterator[None]:
    """Trace the public algorithms called inside without their run-time output checks: for
    the trial points of the library's solvers (Newton's line search, the inverse statics'
    trial inputs, scipy's Radau stages), which reject a non-finite trial themselves. A
    trace-time switch: it selects which compiled program a traced call builds."""
    token = _TRIAL.set(True)
    try:
        yield
    finally:
        _TRIAL.reset(token)


def in_trial_evaluations() -> bool:
    """Whether the trace is inside `trial_evaluations` (model-level run-time checks that a
    solver's trial may fail, e.g. a chamber volume past the map's range, stand down there)."""
    return _TRIAL.get()


STATE_NAMES = ("q", "qd", "qdd", "nu")


def check_robot(robot: Any, where: str | None = None) -> Robot:
    """`robot` if it is a `softrigid.Robot`, else a `TypeError` (naming `where`, the function
    or object that takes it, when given)."""
    if not isinstance(robot, Robot):
        got = type(robot).__name__
        if where is not None:
            raise TypeError(f"{where}: robot must be a softrigid.Robot, got {got}")
        raise TypeError(f"expected a softrigid.Robot as first argument, got {got}")
    return robot


def check_states(robot: Robot, **arrays: Any) -> list[Array]:
    """The state vectors `(n_q,)`, checked and promoted to one floating dtype with the robot's
    parameters (mixed float32 and float64 inputs are computed in float64)."""
    out = []
    for name, value in arrays.items():
        arr = check_state(name, value, robot.n_q)
        if arr.ndim != 1:
            raise ValueError(
                f"{name} must have shape ({robot.n_q},); for a batch of states use jax.vmap, "
                f"got {arr.shape}"
            )
        out.append(arr)
    # one dtype for the states and the model (float32 states on a float64 model are computed
    # in float64); a float32 computation is one with JAX's x64 mode off
    dtype = jnp.result_type(robot.gravity, *out) if out else None
    if dtype == jnp.float32 and jax.config.read("jax_enable_x64"):
        raise TypeError(
            "a float32 robot with float32 states under JAX's x64 mode: softrigid computes in "
            "float32 with x64 off (jax.config.update('jax_enable_x64', False), or inside "
            "`with jax.enable_x64(False):`); with x64 on, build the robot from float64 values"
        )
    return [x.astype(dtype) for x in out]


def check_inputs(robot: Robot, u: Any, dtype: Any, name: str = "u") -> Array:
    """The robot's inputs `u` `(n_u,)`: actuator inputs, or generalized forces without
    actuators."""
    what = (
        "actuator inputs" if robot.actuators else "generalized forces (the robot has no actuators)"
    )
    if isinstance(u, str):
        raise TypeError(f"{name} must be a real array of shape ({robot.n_u},) ({what}), got {u!r}")
    try:
        arr = jnp.asarray(u)
    except (TypeError, ValueError, OverflowError) as err:
        raise TypeError(
            f"{name} must be a real array of shape ({robot.n_u},) ({what}), got {u!r} ({err})"
        ) from None
    if not is_real_dtype(arr.dtype):
        raise TypeError(f"{name} must be real ({what}), got dtype {arr.dtype}")
    if arr.shape != (robot.n_u,):
        hint = "; for a batch use jax.vmap" if arr.ndim > 1 else ""
        raise ValueError(f"{name} must have shape ({robot.n_u},) ({what}), got {arr.shape}{hint}")
    if is_concrete(arr) and not bool(np.all(np.isfinite(np.asarray(arr)))):
        bad = np.flatnonzero(~np.isfinite(np.asarray(arr)))
        raise ValueError(f"{name} contains non-finite values (NaN or inf) at index {bad.tolist()}")
    return arr.astype(dtype)


def _body_label(body: Any) -> str:
    kin = getattr(body, "kinematics", None)
    name = kinematics_name(kin) if kin is not None else ""
    return f"{type(body).__name__} {name!r}" if name else type(body).__name__


def describe_coordinate(robot: Robot, j: int) -> str:
    """`"link i, joint coordinate k (Revolute)"` or `"link i, body coordinate k (SoftBody …)"`."""
    for i, (link, sl) in enumerate(zip(robot.links, robot.q_slices())):
        if sl.start <= j < sl.stop:
            k, nj = j - sl.start, link.joint.n_q
            if k < nj:
                return f"link {i}, joint coordinate {k} ({type(link.joint).__name__})"
            return f"link {i}, body coordinate {k - nj} ({_body_label(link.body)})"
    return f"coordinate {j}"


def _float_leaves(out: Any) -> list[Array]:
    """The non-empty floating leaves of `out` (what the finiteness check reads)."""
    leaves = jax.tree_util.tree_leaves(out)
    return [x for x in leaves if jnp.issubdtype(x.dtype, jnp.inexact) and x.size > 0]


def check_finite(where: str, robot: Robot, out: Any, inputs: dict[str, Any] | None = None) -> Any:
    """`out` (a pytree of outputs) unchanged, with one run-time check (also under `jit`/`vmap`)
    that every floating leaf is finite; the error names `where` and, when a leaf over the
    coordinates is bad, the first bad coordinate, or first the argument among `inputs`
    (name → array or pytree, in order of priority) that was not finite itself: inside `jit`,
    where the public function could not check its arguments (eager calls check them before).
    One fused reduction (the largest message index of the bad entries, `raise_if` with a
    given index) and one branch, and every output depends on it (none can be used
    unchecked)."""
    leaves = _float_leaves(out)
    if not leaves:
        return out
    n = robot.n_q
    named = [(k, _float_leaves(v)) for k, v in (inputs or {}).items()]
    named = [(k, xs) for k, xs in named if xs]
    # message n − j names coordinate j, message 0 a bad entry of another leaf, n + 1 + i the
    # input i from the last: the largest index of the bad entries (`fault_if`) is the first
    # bad input, else the first bad coordinate
    msgs = (
        f"{PREFIX}{where}: non-finite value (NaN or inf).{NON_FINITE_HINT}",
        *(
            f"{PREFIX}{where}: non-finite value (NaN or inf) at coordinate {j} "
            f"({describe_coordinate(robot, j)}).{NON_FINITE_HINT}"
            for j in range(n - 1, -1, -1)
        ),
        *(
            f"{PREFIX}{where}: the argument {k} contains non-finite values (NaN or inf)."
            for k, _ in reversed(named)
        ),
    )
    index = [
        np.broadcast_to(
            np.arange(n, 0, -1).reshape((n,) + (1,) * (x.ndim - 1))
            if x.ndim >= 1 and x.shape[0] == n
            else 0,
            x.shape,
        ).ravel()
        for x in leaves
    ]
    for i, (_, xs) in enumerate(named):
        index += [np.full(x.size, n + len(named) - i) for x in xs]
        leaves = leaves + xs
    bad = jnp.concatenate([~jnp.isfinite(x).ravel() for x in leaves])
    return raise_if(out, bad, np.concatenate(index), msgs)


def check_positive_definite(
    where: str, robot: Robot, mass: Array, factor: Array, q: Array | None = None
) -> Array:
    """The Cholesky factor of `M` unchanged, with a run-time check that `M` was positive
    definite: its factorization did not fail and no coordinate's own inertia `M_jj` vanishes
    against the largest (`inertialess`). A failed factorization is NaN throughout, so the
    message names the first row of `M` that is not finite (the state or the model produced NaN
    or inf), else the first coordinate whose own inertia vanishes, else the first bad pivot;
    first of all, given the configuration `q` (what `M` depends on), the argument `q` where it
    is not finite (inside `jit`, where the public function could not check it, a NaN `q` was
    reported as a non-finite `M`; read only when the check fires)."""
    n = robot.n_q

    def failed_pivots(factor: Array) -> Array:
        pivots = jnp.diagonal(factor)
        return ~jnp.isfinite(pivots) | (pivots <= 0)

    def inertialess(mass: Array) -> Array:
        """Coordinates whose own inertia `M_jj` vanishes against the largest (1e-24): `M` is
        singular to rounding there even where Cholesky's pivots stay positive (e.g. a rotation
        vector at |φ| = 2π, where `M` has eigenvalues of 1e-35 beside 1e-2). A Jacobian column
        of rounding noise gives `M_jj` of ε² ≈ 5e-32 of the largest; real bodies far lighter
        than others are not singular (Cholesky is accurate under any diagonal scaling: a 1e-9
        kg link 1 mm across beside a 1 t base, `M_jj` 1e-18 of the largest, solves to its own
        rounding, as the articulated solver does; 1e-13 refused it)."""
        diag = jnp.diagonal(mass)
        return ~(diag > 1e-24 * jnp.max(jnp.abs(diag)))

    def index(checked: tuple[Array, ...]) -> Array:
        """The message's index, computed only when the check fires (from the checked value
        alone: a lazy index may not close over traced values)."""
        factor, mass, *given = checked
        failed = failed_pivots(factor)
        non_finite = ~jnp.all(jnp.isfinite(mass), axis=1)
        none = inertialess(mass)
        bad = jnp.where(jnp.any(none), none, failed)
        found = jnp.where(jnp.any(non_finite), n + jnp.argmax(non_finite), jnp.argmax(bad))
        return jnp.where(jnp.all(jnp.isfinite(given[0])), found, 2 * n) if given else found

    msgs = (
        *(
            f"{PREFIX}{where}: the mass matrix is not positive definite at coordinate {j} "
            f"({describe_coordinate(robot, j)}): nothing in the model moves with it (e.g. a map "
            "through stop_gradient or that ignores q, a massless body, a rotation vector at "
            "|φ| = 2π: simulate re-charts it)."
            for j in range(n)
        ),
        *(
            f"{PREFIX}{where}: the mass matrix is not finite in row {j} "
            f"({describe_coordinate(robot, j)}).{NON_FINITE_HINT}"
            for j in range(n)
        ),
        f"{PREFIX}{where}: the argument q contains non-finite values (NaN or inf).",
    )
    failed = jnp.any(failed_pivots(factor)) | jnp.any(inertialess(mass))
    checked = (factor, mass) if q is None else (factor, mass, q)
    return raise_if(checked, failed, index, msgs)[0]


def _finite_tree(x: Any) -> Array:
    leaves = [jnp.all(jnp.isfinite(v)) for v in jax.tree_util.tree_leaves(x)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.array(True)


@jit
def _finite_terms(robot: Robot, q: Array, qd: Array) -> tuple[Array, Array]:
    """Per link, whether its position-level and velocity-level terms are finite `(N,)` each."""
    pos = rec.position_level(robot, q)
    vel = rec.velocity_level(robot, pos, q, qd)
    position, velocity = [], []
    for k, g in enumerate(rec.groups(robot)):
        per_link = (pos.jac_t[k], pos.jac_w[k], pos.moments[k])
        position.append(
            jax.vmap(_finite_tree)(per_link)
            & jax.vmap(_finite_tree)((g.rows(pos.rot), g.rows(pos.trans)))
        )
        velocity.append(
            jax.vmap(_finite_tree)((vel.body[k], g.rows(vel.a_bias), g.rows(vel.dw_bias)))
        )
    return jnp.concatenate(position), jnp.concatenate(velocity)


def diagnose(robot: Robot, q: Array, qd: Array | None = None) -> str:
    """Where a non-finite result comes from: the first link whose position-level terms (its
    pose, their Jacobians, the body's mass moments) or velocity-level terms are not finite."""
    if not jnp.all(jnp.isfinite(q)) or (qd is not None and not jnp.all(jnp.isfinite(qd))):
        return ""
    qd = jnp.zeros_like(q) if qd is None else qd
    position, velocity = (np.asarray(x) for x in _finite_terms(robot, q, qd))
    for i, link in enumerate(robot.links):
        level = "position" if not position[i] else "velocity" if not velocity[i] else None
        if level is not None:
            terms = "second derivatives along q̇" if level == "velocity" else "pose, map, Jacobians"
            return (
                f" It starts in link {i} ({type(link.joint).__name__} + {_body_label(link.body)}):"
                f" its {level}-level terms ({terms}) are not finite there."
            )
    return ""


def raise_runtime_errors(
    fn: Callable[[], Any], robot: Robot | None = None, states: dict | None = None
) -> Any:
    """Run `fn()` to completion; a softrigid run-time check that fired becomes a `ValueError`
    with its message (instead of JAX's runtime error around it), completed by `diagnose` when
    the robot and states are given. (A check that fires on a compiled program's first call
    arrives as `JaxRuntimeError`, on its later calls as a `ValueError`, both with XLA's status
    code before the message: both are cleaned.)"""
    try:
        return jax.block_until_ready(fn())
    except (jax.errors.JaxRuntimeError, ValueError) as err:
        text = str(err)
        start = text.find(PREFIX)
        if start < 0:
            raise
        message = text[start + len(PREFIX) :].split("\n", 1)[0].strip()
        if robot is not None and states and "q" in states and "non-finite" in message:
            message += diagnose(robot, states["q"], states.get("qd"))
        raise ValueError(message) from None


def algorithm(static_argnames: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Decorator: the public function of a core `core(robot, <states>, [u], [loads], …)`.

    Arguments named `q`, `qd`, `qdd`, `nu` are checked as states, `u` as the robot's inputs,
    `loads` as external loads (normalized to a tuple); `static_argnames` are compile-time
    options. The core is compiled once per robot structure and option. Every floating output
    is checked finite at run time (`check_finite`). Eager calls take the fast path of
    `softrigid._fastpath` when it accepts them (algorithms whose parameters are all states,
    inputs, loads and static options).
    """

    def decorate(core: F) -> F:
        signature = inspect.signature(core)
        name = core.__name__.lstrip("_")

        inputs = [k for k in (*STATE_NAMES, "u", "loads") if k in signature.parameters]

        @functools.wraps(core)
        def checked_core(robot: Robot, *args: Any, **kwargs: Any) -> Any:
            given = signature.bind(robot, *args, **kwargs).arguments
            named = {k: given[k] for k in inputs if k in given}
            return check_finite(name, robot, core(robot, *args, **kwargs), named)

        # (checked, under a `vmap`) -> program; under a `vmap` many states run chunk by chunk
        # on CPU (softrigid._batching); unchecked inside `trial_evaluations()`
        jitted = {
            (checked, batched): jit(
                _batching.chunked(fn) if batched else fn, static_argnames=static_argnames
            )
            for checked, fn in ((True, checked_core), (False, core))
            for batched in (False, True)
        }
        fast = _fastpath.Signature.of(core, static_argnames)
        flags = _fastpath.flag_names(core, static_argnames)

        @functools.wraps(core)
        def public(*args: Any, **kwargs: Any) -> Any:
            if fast is not None:
                out = _fastpath.call(fast, args, kwargs)
                if out is not _fastpath.SLOW:
                    return out
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as err:
                raise TypeError(f"{core.__name__}: {err}") from None
            bound.apply_defaults()
            values = bound.arguments
            for flag in flags:  # a string "False" or an array is not read by its truth value
                values[flag] = as_flag(f"{name}: {flag}", values[flag])
            robot = check_robot(values["robot"])
            states = {k: values[k] for k in STATE_NAMES if k in values}
            checked = dict(zip(states, check_states(robot, **states)))
            values.update(checked)
            dtype = next(iter(checked.values())).dtype if checked else float
            if "u" in values:
                values["u"] = check_inputs(robot, values["u"], dtype)
            if "loads" in values:
                values["loads"] = check_loads(robot, values["loads"])
            if not is_concrete(bound.args, bound.kwargs):
                batched = _batching.under_vmap((bound.args, bound.kwargs))
                program = jitted[(not _TRIAL.get(), batched)]
                return program(*bound.args, **bound.kwargs)
            return raise_runtime_errors(
                lambda: jitted[(True, False)](*bound.args, **bound.kwargs), robot, checked
            )

        return public  # type: ignore[return-value]

    return decorate
