"""The run-time output checks of the public algorithms and how their failures are reported.

Every runtime message starts with `PREFIX`, so that eager calls can re-raise it cleanly
(`raise_runtime_errors`). `check_finite` names the first non-finite coordinate (its link, and
whether it is a joint or body coordinate) or the argument that was not finite;
`check_positive_definite` the coordinate where the mass matrix is singular; `diagnose` the first
link whose terms are not finite. Each check is one fused reduction and a branch
(`softrigid._fault.fault_if`, no host callback), inside the compiled program (so also under the
user's `jit`/`vmap`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from . import _recursion as rec
from ._cache import jit
from ._checks import raise_if
from ._model import Robot
from .kinematics._base import kinematics_name

__all__ = [
    "NON_FINITE_HINT",
    "PREFIX",
    "check_finite",
    "check_positive_definite",
    "describe_coordinate",
    "diagnose",
    "raise_runtime_errors",
]

# Every runtime message starts with this, so that eager calls can re-raise it cleanly.
PREFIX = "softrigid: "
NON_FINITE_HINT = (
    " The state or the inputs (u, loads; eager calls check them first, inside jit a check of "
    "the model's may fire before theirs), a "
    "body's map or its derivatives (e.g. sqrt or norm at 0, a stop_gradient, an overflow), "
    "or its material (a neo-Hookean energy where det F ≤ 0, an energy of the user's) "
    "produced it."
)


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


def check_finite(
    where: str,
    robot: Robot,
    out: Any,
    inputs: dict[str, Any] | None = None,
    produced: dict[str, Any] | None = None,
) -> Any:
    """`out` (a pytree of outputs) unchanged, with one run-time check (also under `jit`/`vmap`)
    that every floating leaf is finite; the error names `where` and, when a leaf over the
    coordinates is bad, the first bad coordinate, or first the argument among `inputs`
    (name → array or pytree, in order of priority) that was not finite itself: inside `jit`,
    where the public function could not check its arguments (eager calls check them before);
    after the arguments, the first of the intermediate values `produced` (a description, e.g.
    "the controller's output u", → array) that was not finite (what the user's code returned).
    One fused reduction (the largest message index of the bad entries, `raise_if` with a
    given index) and one branch, and every output depends on it (none can be used
    unchecked)."""
    leaves = _float_leaves(out)
    if not leaves:
        return out
    n = robot.n_q
    described = [(f"the argument {k}", v) for k, v in (inputs or {}).items()]
    described += list((produced or {}).items())
    named = [(k, xs) for k, v in described if (xs := _float_leaves(v))]
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
            f"{PREFIX}{where}: {k} contains non-finite values (NaN or inf)."
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

    def failed_pivots(factor: Array, mass: Array) -> Array:
        """Pivots that are not finite and positive, or that vanish against their own
        coordinate's inertia, `L_jj² ≤ 1e-14 M_jj`: coordinate `j` moves nothing, to rounding,
        that the coordinates before it do not move already (near a rotation vector's
        |φ| = 2π, 1e-7 from it, the solve returned q̈ of 1e16 without a failed pivot; the
        articulated solver's test, `1e-7` on `L_jj` within a link). Invariant under a scaling
        of the coordinates, so light bodies beside heavy ones pass (`inertialess`)."""
        pivots = jnp.diagonal(factor)
        own = jnp.diagonal(mass)
        return ~jnp.isfinite(pivots) | (pivots <= 0) | (pivots * pivots <= 1e-14 * own)

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
        failed = failed_pivots(factor, mass)
        non_finite = ~jnp.all(jnp.isfinite(mass), axis=1)
        none = inertialess(mass)
        bad = jnp.where(jnp.any(none), none, failed)
        found = jnp.where(jnp.any(non_finite), n + jnp.argmax(non_finite), jnp.argmax(bad))
        return jnp.where(jnp.all(jnp.isfinite(given[0])), found, 2 * n) if given else found

    msgs = (
        *(
            f"{PREFIX}{where}: the mass matrix is not positive definite at coordinate {j} "
            f"({describe_coordinate(robot, j)}): nothing in the model moves with it that the "
            "coordinates before it do not move already (e.g. a map through stop_gradient or "
            "that ignores q, a massless body, a rotation vector at or near |φ| = 2π: simulate "
            "re-charts it)."
            for j in range(n)
        ),
        *(
            f"{PREFIX}{where}: the mass matrix is not finite in row {j} "
            f"({describe_coordinate(robot, j)}).{NON_FINITE_HINT}"
            for j in range(n)
        ),
        f"{PREFIX}{where}: the argument q contains non-finite values (NaN or inf).",
    )
    failed = jnp.any(failed_pivots(factor, mass)) | jnp.any(inertialess(mass))
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
