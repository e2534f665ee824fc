"""Tendons (`softrigid.actuators.Tendon`): a cable of length `l(q)` under tension `u`,
`A = −(∂l/∂q)ᵀ`.

A tendon runs through consecutive soft bodies either along a material path (inside the body,
its length the deformed length of that curve) or straight between guides (eyelets, spacer-disk
holes: material points it is threaded through, with free spans in between)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._actuator import Actuator
from ._chain import grouped_world_array, proximal_poses
from ._checks import as_count, as_float, as_index, as_vector, check_index, traced_check
from ._math import matvec
from ._model import Robot
from ._module import is_concrete, module, static
from ._soft_body import SoftBody
from .kinematics._base import trace_user
from .quadrature._gauss import gauss_legendre
from .quadrature._geometry import INSIDE_TOL, contains, has_geometry

__all__ = ["Tendon", "soft_body"]


def soft_body(cls: str, robot: Robot, link: int) -> SoftBody:
    """The soft body of link `link`, or a `TypeError` naming the actuator class `cls`."""
    body = robot.links[link].body
    if not isinstance(body, SoftBody):
        raise TypeError(f"{cls}: link {link} carries a {type(body).__name__}, not a SoftBody")
    return body


def _span(d: Array) -> Array:
    # |d| with the derivative 0 where d = 0 (a span that stays closed, e.g. across a fixed
    # joint); double where, so no NaN enters the gradient
    n2 = jnp.sum(d * d, axis=-1)
    positive = n2 > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, n2, 1.0)), 0.0)


def _guides(value: Any, count: int) -> tuple[Array, ...]:
    """One `(g_k, 3)` array of material points per body of the route, `g_k ≥ 1`."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError("Tendon: guides must be a sequence of (g, 3) point arrays, one per link")
    if len(value) != count:
        raise ValueError(f"Tendon: give one guides array per link ({count}), got {len(value)}")
    out = []
    for k, pts in enumerate(value):
        arr = as_float(pts, f"Tendon: guides[{k}]")
        if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] != 3:
            raise ValueError(
                f"Tendon: guides[{k}] must be a (g, 3) array of material points with g >= 1, "
                f"got shape {arr.shape}"
            )
        if is_concrete(arr) and not np.all(np.isfinite(np.asarray(arr))):
            raise ValueError(f"Tendon: guides[{k}] must be finite")
        if not is_concrete(arr):
            arr = traced_check(arr, ~jnp.isfinite(arr), f"Tendon: guides[{k}] must be finite")
        out.append(arr)
    return tuple(out)


def _guided_lengths(robot: Robot, q: Array, tendons: Sequence[Tendon]) -> Array:
    """Lengths `(T,)` of tendons with guides: the world points of the guides, those of all the
    tendons in a body mapped in one call, then the straight spans along each route,

        l = |p_1 − start| + Σ_j |p_{j+1} − p_j|,   p = R_i f(x, q_B) + t_i  (the proximal pose),

    over the guides of every body of the route in order (the spans across joints included)."""
    # every guide of every tendon, mapped in one call per group of identical bodies
    entries = [(t, k) for t, tendon in enumerate(tendons) for k in range(len(tendon.links))]
    world, spans = grouped_world_array(
        robot,
        q,
        [(tendons[t].links[k], tendons[t].guides[k].astype(q.dtype)) for t, k in entries],
    )
    # every route point in one array: the guides' world points, then the tendons' starts
    rows_of = dict(zip(entries, spans))
    starts = [t.start[None].astype(q.dtype) for t in tendons if t.start is not None]
    anchors = iter(range(world.shape[0], world.shape[0] + len(starts)))
    rows = []
    for t, tendon in enumerate(tendons):
        row = [next(anchors)] if tendon.start is not None else []
        for k in range(len(tendon.links)):
            row += range(*rows_of[t, k])
        rows.append(row)
    # the routes `(T, P, 3)` by one gather, each padded with copies of its last point (spans of
    # length 0, derivative 0), and one sum of spans for all the tendons: a route assembled and
    # summed per tendon is code of its own in every derivative (Simulation 1's closed-loop
    # Jacobian, 9 tendons: 31k of its 268k lines of compiled code, 2k since)
    most = max(len(row) for row in rows)
    index = np.array([row + [row[-1]] * (most - len(row)) for row in rows])
    pts = jnp.concatenate([world, *starts])[index]
    return jnp.sum(_span(pts[:, 1:] - pts[:, :-1]), axis=1)


@module
class Tendon(Actuator):
    """A tendon routed through consecutive soft bodies, pulled with tension `u ≥ 0`.

    Inside body `i` the tendon either

    - follows a path of material points `x_t(s)`, `s ∈ [0, 1]` (entry at `s = 0`, exit at
      `s = 1`; `offset=` or `paths=`), with length
      `l_i(q) = ∫₀¹ |∂f/∂x (x_t(s), q_B) x_t'(s)| ds` by Gauss–Legendre quadrature with `order`
      nodes; or
    - runs straight between guides (`guides=`: eyelets or spacer-disk holes, material points
      `x_1 … x_g` of the body that it is threaded through, entering at the first and leaving at
      the last), with length `l_i(q) = Σ_j |f(x_{j+1}, q_B) − f(x_j, q_B)|`: the free spans
      between guides are straight whatever the body's deformation (a tendon routed along the
      outside of a body that is not a solid rod, e.g. a trimmed helicoid).

    Between consecutive bodies (across the joint) it runs straight from the exit point of one
    to the entry point of the next; with `start`, it also runs straight from that point, fixed
    in the base frame, to its entry into the first body. It is anchored at its exit from the
    last body. Virtual work of the tension `u` gives

        ν = A(q) u,   A = −(∂l/∂q)ᵀ,   l = Σ_i l_i + Σ spans.

    A tendon only pulls: `u ≥ 0` is the controller's (or the inverse statics') responsibility;
    a negative `u` is computed as given (a push) and is not physical. A straight span of zero
    length (exit and entry points coinciding, as across a fixed joint) has derivative 0. Such a
    span is harmless where it stays closed (the end faces of rods and constant-curvature
    segments are rigid); where the points can separate (the faces of LVP bodies deform in
    their plane, a `start` on a guide at rest) the span's length `|d|` has a kink at `d = 0`
    and everything that differentiates `A(q)` (the statics' Jacobian, PFBL's `J̇ q̇`, an
    implicit integrator's matrix) is not smooth there: keep the route's points apart.

    Checks: a tendon at signed offset `d` along `x1` in `PlanarConstantCurvature(L)` has
    `l = L + d q` exactly, so `A = −d`: pulling bends the body toward the tendon. With guides at
    arc lengths `s_j` on the same offset line, `l = Σ_j 2 (L/q + d) sin(q (s_{j+1} − s_j) / 2L)`
    (chords of the fibre's arc of radius `L/q + d`).

    Args:
        links: indices of the consecutive links whose (soft) bodies the tendon runs through.
        offset: `(d1, d2)` constant offset from the backbone: `x_t(s) = (d1, d2, s L_i)` with
            `L_i` the third coordinate of body `i`'s volume pivot.
        paths: alternatively one callable `x_t(s) -> (3,)` per body (material points).
        guides: alternatively one `(g_i, 3)` array of material points per body (`g_i ≥ 1`),
            the guides in the order the tendon passes them.
        start: optional `(3,)` anchor point in the base frame (e.g. the spool).
        order: Gauss nodes per body of a path (exact for polynomial integrands of degree
            `2 order − 1`; the constant-curvature integrand is constant).

    The path (or the guides) must lie inside each body: checked at its Gauss nodes and ends
    (every guide) against the exact reference volume of the body's rule
    (`softrigid.quadrature.contains`: the cylinder, tube, box or mesh itself, independent of the
    quadrature order), when the rule knows its geometry.
    """

    offset: Array | None
    start: Array | None
    guides: tuple[Array, ...] | None
    links: tuple[int, ...] = static()
    paths: tuple[Callable[[Array], Array], ...] | None = static()
    order: int = static()

    def __init__(
        self,
        links: int | Sequence[int],
        offset: Any = None,
        *,
        paths: Sequence[Callable[[Array], Array]] | None = None,
        guides: Sequence[Any] | None = None,
        start: Any = None,
        order: int = 4,
    ) -> None:
        if not isinstance(links, (int, np.integer, tuple, list)) or isinstance(links, bool):
            raise TypeError(
                f"Tendon: links must be a link index or a sequence of consecutive ones, got "
                f"{links!r}"
            )
        links = (links,) if isinstance(links, (int, np.integer)) else tuple(links)
        if not links:
            raise ValueError("Tendon: give at least one link")
        links = tuple(as_index("Tendon: link", i) for i in links)
        if links != tuple(range(links[0], links[0] + len(links))):
            raise ValueError(f"Tendon: links must be consecutive and increasing, got {links}")
        object.__setattr__(self, "links", links)
        if sum(x is not None for x in (offset, paths, guides)) != 1:
            raise ValueError("Tendon: give exactly one of offset=(d1, d2), paths= or guides=")
        if offset is not None:
            offset = as_vector("Tendon: offset (d1, d2)", offset, 2)
        if paths is not None:
            paths = tuple(paths)
            if len(paths) != len(links):
                raise ValueError(f"Tendon: give one path per link ({len(links)}), got {len(paths)}")
            for k, p in enumerate(paths):
                if not callable(p):
                    raise TypeError(f"Tendon: paths[{k}] must be callable x_t(s) -> (3,)")
                s = jax.ShapeDtypeStruct((), jnp.dtype(float))
                out = trace_user(f"Tendon paths[{k}]", "s", p, s)
                if getattr(out, "shape", None) != (3,):
                    raise ValueError(
                        f"Tendon: paths[{k}] must return a (3,) material point for a scalar s, "
                        f"got {getattr(out, 'shape', type(out).__name__)}"
                    )
        if guides is not None:
            guides = _guides(guides, len(links))
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "paths", paths)
        object.__setattr__(self, "guides", guides)
        if start is not None:
            # finite, also when traced: a NaN anchor would drop its span silently (`_span` is 0)
            start = as_vector("Tendon: start", start, 3)
        object.__setattr__(self, "start", start)
        order = as_count("Tendon: order", order)
        object.__setattr__(self, "order", order)

    def path(self, robot: Robot, k: int) -> Callable[[Array], Array]:
        """The material path `x_t(s)` of the `k`-th body of the route (not for `guides`)."""
        if self.paths is not None:
            return self.paths[k]
        length = robot.links[self.links[k]].body.volume.pivot[2]
        d1, d2 = self.offset[0], self.offset[1]

        def offset_path(s: Array) -> Array:
            # x_t(s) = (d1, d2, s L)
            return jnp.stack([d1 + 0.0 * s, d2 + 0.0 * s, s * length])

        return offset_path

    def _along_path(self, robot: Robot, k: int, qb: Array) -> tuple[Array, Array, Array]:
        """In body `k` of the route: the length of the path, and its entry and exit material
        points."""
        kin = robot.links[self.links[k]].body.kinematics
        path = self.path(robot, k)
        s, w = (jnp.asarray(a, dtype=qb.dtype) for a in gauss_legendre(self.order))

        def speed(t: Array) -> Array:
            # |d/ds f(x_t(s), q_B)| = |∂f/∂x x_t'(s)|
            tangent = jax.jvp(lambda a: kin(path(a), qb), (t,), (jnp.ones_like(t),))[1]
            return jnp.sqrt(jnp.sum(tangent * tangent))

        # l_i = Σ_j w_j |∂f/∂x x_t'(s_j)|
        ends = jax.vmap(path)(jnp.array([0.0, 1.0], dtype=qb.dtype))
        return jnp.sum(w * jax.vmap(speed)(s)), ends[0], ends[1]

    def length(self, robot: Robot, q: Array) -> Array:
        """Tendon length `l(q)` (scalar): the lengths inside the bodies plus straight spans.

        Along paths a span is evaluated in the distal frame `S_{i−1}` of the body it leaves
        (lengths do not depend on the frame), so the cost is linear in the number of bodies;
        with guides, `Tendon.lengths`.
        """
        if self.guides is not None:
            return _guided_lengths(robot, q, [self])[0]
        total = jnp.zeros((), q.dtype)
        exit_local = None
        for k, i in enumerate(self.links):
            link = robot.links[i]
            body = link.body
            qi = robot.split(q)[i]
            qj, qb = qi[: link.joint.n_q], qi[link.joint.n_q :]
            inside, entry_x, exit_x = self._along_path(robot, k, qb)
            total = total + inside
            if k == 0 and self.start is not None:
                # from the base anchor to the entry point, in the base frame
                rot, trans = proximal_poses(robot, q)
                entry = matvec(rot[i], body.kinematics(entry_x, qb)) + trans[i]
                total = total + _span(entry - self.start)
            elif k > 0:
                # across joint i: entry point T_J(q_J) f(x_entry, q_B) vs the previous exit, in S_{i−1}
                rot, trans = link.joint.transform(qj)
                entry = matvec(rot, body.kinematics(entry_x, qb)) + trans
                total = total + _span(entry - exit_local)
            # exit point in the distal frame S_i: R_Bᵀ (f(x_exit, q_B) − t_B)
            exit_local = body.local_points(qb, exit_x[None])[0]
        return total

    @staticmethod
    def lengths(robot: Robot, q: Array, tendons: Sequence[Tendon]) -> Array:
        """The lengths `(T,)` of several tendons at `q`; the guides of all the tendons with
        guides are mapped together, one map evaluation per body (and one chain of poses), so a
        bundle of tendons costs about what one does."""
        guided = [k for k, t in enumerate(tendons) if t.guides is not None]
        if len(guided) == len(tendons):  # all guided: their lengths as one array
            return _guided_lengths(robot, q, tendons)
        out: list[Array] = [t.length(robot, q) if t.guides is None else None for t in tendons]
        if guided:
            shared = _guided_lengths(robot, q, [tendons[k] for k in guided])
            for j, k in enumerate(guided):
                out[k] = shared[j]
        return jnp.stack(out)

    @classmethod
    def group_columns(cls, robot: Robot, q: Array, actuators: Sequence[Actuator]) -> Array:
        # A = −(∂l/∂q)ᵀ for the tendons together (their guides mapped once per body)
        return -jax.jacfwd(lambda x: cls.lengths(robot, x, actuators))(q).T

    def n_inputs(self, robot: Robot) -> int:
        return 1

    def columns(self, robot: Robot, q: Array) -> Array:
        # A = −(∂l/∂q)ᵀ: the group of this tendon alone
        return self.group_columns(robot, q, [self])

    def check(self, robot: Robot) -> None:
        for i in self.links:
            check_index("Tendon: link", i, robot.n_links)
            body = soft_body("Tendon", robot, i)
            if self.offset is not None and body.volume.pivot is None:
                raise ValueError(
                    f"Tendon: the volume of link {i} has no pivot (0, 0, L) to place an offset "
                    "path along; give paths= or guides="
                )
        for k, i in enumerate(self.links):
            self._check_inside(robot, k, i)

    def _material_points(self, robot: Robot, k: int) -> Any:
        """The points of body `k` checked to lie inside it: the guides, or the path's Gauss
        nodes and ends (`None` when they close over traced values)."""
        if self.guides is not None:
            return self.guides[k] if is_concrete(self.guides[k]) else None
        if not is_concrete(self.offset):
            return None
        nodes = np.concatenate([[0.0], gauss_legendre(self.order)[0], [1.0]])
        # evaluated now even inside a trace (actuation_matrix under jit or jacfwd); a path
        # that closes over traced values cannot be checked
        with jax.ensure_compile_time_eval():
            pts = jax.vmap(self.path(robot, k))(jnp.asarray(nodes))
        if not is_concrete(pts):
            return None
        if pts.shape != (nodes.size, 3):
            raise ValueError(f"Tendon: path {k} must return (3,) material points")
        finite = np.isfinite(np.asarray(pts)).all(axis=1)
        if not finite.all():
            s = nodes[np.argmin(finite)]
            raise ValueError(
                f"Tendon: path {k} (through link {self.links[k]}) is not finite at s = {s:.6g}: "
                f"x_t(s) = {np.asarray(pts)[np.argmin(finite)]}"
            )
        return pts

    def _check_inside(self, robot: Robot, k: int, i: int) -> None:
        vol = robot.links[i].body.volume
        pts = self._material_points(robot, k)  # checked finite
        if pts is None or not is_concrete(vol) or not has_geometry(vol):
            return
        pts = np.asarray(pts)
        outside = ~contains(vol, pts, tol=INSIDE_TOL)
        if outside.any():
            x = pts[np.argmax(outside)]
            what = "a guide in" if self.guides is not None else "the path through"
            raise ValueError(
                f"Tendon: {what} link {i} leaves the body: the material point "
                f"({x[0]:.6g}, {x[1]:.6g}, {x[2]:.6g}) is outside its {vol.geometry} volume"
            )
