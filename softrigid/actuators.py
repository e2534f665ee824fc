"""Actuators: the actuation matrix `A(q)` with `ν = A(q) u` (`forces.md`).

Every actuator contributes columns to `A(q)` `(n_q, m)`, derived by virtual work from a scalar
of the configuration, so that the actuation power is `q̇ᵀ A u` exactly:

- `JointMotor`: generalized forces on the coordinates of one joint, columns of the identity.
- `Tendon`: a cable of length `l(q)` under tension `u ≥ 0`, `A = −(∂l/∂q)ᵀ`.
- `PressureChamber`: a cavity of volume `V_c(q)` under gauge pressure `u`, `A = ∂V_c/∂q`.

Actuators belong to the robot model: `softrigid.Robot(links, actuators=[...])`. Its inputs `u`
stack the actuators' inputs in that order; `softrigid.actuation_matrix(robot, q)` is `A(q)` and
`softrigid.actuation_force(robot, q, u)` is `A(q) u`, the `ν` that `inverse_dynamics` balances.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._actuator import Actuator
from ._chain import proximal_poses
from ._checks import as_index, as_vector, check_index, traced_check
from ._model import Robot
from ._module import is_concrete, module, static
from ._soft_body import SoftBody
from .kinematics._base import trace_user
from .materials import deformation_gradient
from .quadrature._gauss import gauss_legendre
from .quadrature._geometry import contains, has_geometry, region_outside
from .quadrature._rule import QuadratureRule

__all__ = ["Actuator", "JointMotor", "PressureChamber", "Tendon"]

_INSIDE_TOL = 1e-9


def _soft_body(cls: str, robot: Robot, link: int) -> SoftBody:
    body = robot.links[link].body
    if not isinstance(body, SoftBody):
        raise TypeError(f"{cls}: link {link} carries a {type(body).__name__}, not a SoftBody")
    return body


@module
class JointMotor(Actuator):
    """Generalized forces on the coordinates of the joint of link `link` (torques on a
    revolute joint, forces on a prismatic one; a `Free` joint takes 6 inputs): `A` has the
    columns `e_j` of the identity for those coordinates.

    Args:
        link: index of the link whose joint is driven.
    """

    link: int = static()

    def __init__(self, link: int) -> None:
        object.__setattr__(self, "link", as_index("JointMotor: link", link))

    def n_inputs(self, robot: Robot) -> int:
        return robot.links[self.link].joint.n_q

    def columns(self, robot: Robot, q: Array) -> Array:
        start = robot.q_slices()[self.link].start
        nj = robot.links[self.link].joint.n_q
        return jnp.eye(robot.n_q, dtype=q.dtype)[:, start : start + nj]

    def check(self, robot: Robot) -> None:
        check_index("JointMotor: link", self.link, robot.n_links)
        if robot.links[self.link].joint.n_q == 0:
            raise ValueError(f"JointMotor: the joint of link {self.link} has no coordinate")


def _span(d: Array) -> Array:
    # |d| with the derivative 0 where d = 0 (a span that stays closed, e.g. across a fixed
    # joint); double where, so no NaN enters the gradient
    n2 = jnp.sum(d * d)
    positive = n2 > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, n2, 1.0)), 0.0)


@module
class Tendon(Actuator):
    """A tendon routed through consecutive soft bodies, pulled with tension `u ≥ 0`.

    Inside body `i` the tendon follows a path of material points `x_t(s)`, `s ∈ [0, 1]` (entry
    at `s = 0`, exit at `s = 1`); its length there is
    `l_i(q) = ∫₀¹ |∂f/∂x (x_t(s), q_B) x_t'(s)| ds` by Gauss–Legendre quadrature with `order`
    nodes. Between consecutive bodies (across the joint) it runs straight from the exit point of
    one to the entry point of the next; with `start`, it also runs straight from that point,
    fixed in the base frame, to its entry into the first body. It is anchored at its exit from
    the last body. Virtual work of the tension `u` gives

        ν = A(q) u,   A = −(∂l/∂q)ᵀ,   l = Σ_i l_i + Σ spans.

    A tendon only pulls: `u ≥ 0` is the controller's (or the inverse statics') responsibility;
    a negative `u` is computed as given (a push) and is not physical. A straight span of zero
    length (exit and entry points coinciding, as across a fixed joint) has derivative 0.

    Check: a tendon at signed offset `d` along `x1` in `PlanarConstantCurvature(L)` has
    `l = L + d q` exactly, so `A = −d`: pulling bends the body toward the tendon.

    Args:
        links: indices of the consecutive links whose (soft) bodies the tendon runs through.
        offset: `(d1, d2)` constant offset from the backbone: `x_t(s) = (d1, d2, s L_i)` with
            `L_i` the third coordinate of body `i`'s volume pivot.
        paths: alternatively one callable `x_t(s) -> (3,)` per body (material points).
        start: optional `(3,)` anchor point in the base frame (e.g. the spool).
        order: Gauss nodes per body (exact for polynomial integrands of degree `2 order − 1`;
            the constant-curvature integrand is constant).

    The path must lie inside each body: checked at its Gauss nodes and ends against the exact
    reference volume of the body's rule (`softrigid.quadrature.contains`: the cylinder, tube,
    box or mesh itself, independent of the quadrature order), when the rule knows its geometry.
    """

    offset: Array | None
    start: Array | None
    links: tuple[int, ...] = static()
    paths: tuple[Callable[[Array], Array], ...] | None = static()
    order: int = static()

    def __init__(
        self,
        links: int | Sequence[int],
        offset: Any = None,
        *,
        paths: Sequence[Callable[[Array], Array]] | None = None,
        start: Any = None,
        order: int = 4,
    ) -> None:
        links = (links,) if isinstance(links, (int, np.integer)) else tuple(links)
        if not links:
            raise ValueError("Tendon: give at least one link")
        links = tuple(as_index("Tendon: link", i) for i in links)
        if links != tuple(range(links[0], links[0] + len(links))):
            raise ValueError(f"Tendon: links must be consecutive and increasing, got {links}")
        object.__setattr__(self, "links", links)
        if (offset is None) == (paths is None):
            raise ValueError("Tendon: give exactly one of offset=(d1, d2) or paths=")
        if offset is not None:
            offset = as_vector("Tendon: offset (d1, d2)", offset, 2)
        else:
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
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "paths", paths)
        if start is not None:
            start = as_vector("Tendon: start", start, 3)
            if not is_concrete(start):
                # a NaN anchor would drop its span silently (`_span` is 0 there)
                start = traced_check(start, ~jnp.isfinite(start), "Tendon: start must be finite")
        object.__setattr__(self, "start", start)
        if not isinstance(order, int) or isinstance(order, bool) or order < 1:
            raise ValueError(f"Tendon: order must be a positive integer, got {order!r}")
        object.__setattr__(self, "order", order)

    def path(self, robot: Robot, k: int) -> Callable[[Array], Array]:
        """The material path `x_t(s)` of the `k`-th body of the route."""
        if self.paths is not None:
            return self.paths[k]
        length = robot.links[self.links[k]].body.volume.pivot[2]
        d1, d2 = self.offset[0], self.offset[1]

        def offset_path(s: Array) -> Array:
            # x_t(s) = (d1, d2, s L)
            return jnp.stack([d1 + 0.0 * s, d2 + 0.0 * s, s * length])

        return offset_path

    def length(self, robot: Robot, q: Array) -> Array:
        """Tendon length `l(q)` (scalar): Gauss quadrature inside the bodies plus straight spans.

        A span is evaluated in the distal frame `S_{i−1}` of the body it leaves (lengths do not
        depend on the frame), so the cost is linear in the number of bodies.
        """
        s, w = (jnp.asarray(a, dtype=q.dtype) for a in gauss_legendre(self.order))
        ends = jnp.array([0.0, 1.0], dtype=q.dtype)
        total = jnp.zeros((), q.dtype)
        exit_local = None
        for k, i in enumerate(self.links):
            link = robot.links[i]
            body = link.body
            qi = robot.split(q)[i]
            qj, qb = qi[: link.joint.n_q], qi[link.joint.n_q :]
            path = self.path(robot, k)

            def speed(
                t: Array, path: Callable = path, kin: Any = body.kinematics, qb: Array = qb
            ) -> Array:
                # |d/ds f(x_t(s), q_B)| = |∂f/∂x x_t'(s)|
                tangent = jax.jvp(lambda a: kin(path(a), qb), (t,), (jnp.ones_like(t),))[1]
                return jnp.sqrt(jnp.sum(tangent * tangent))

            # l_i = Σ_j w_j |∂f/∂x x_t'(s_j)|
            total = total + jnp.sum(w * jax.vmap(speed)(s))
            end_points = jax.vmap(path)(ends)
            if k == 0 and self.start is not None:
                # from the base anchor to the entry point, in the base frame
                rot, trans = proximal_poses(robot, q)
                entry = rot[i] @ body.kinematics(end_points[0], qb) + trans[i]
                total = total + _span(entry - self.start)
            elif k > 0:
                # across joint i: entry point T_J(q_J) f(x_t(0), q_B) vs the previous exit, in S_{i−1}
                rot, trans = link.joint.transform(qj)
                entry = rot @ body.kinematics(end_points[0], qb) + trans
                total = total + _span(entry - exit_local)
            # exit point in the distal frame S_i: R_Bᵀ (f(x_t(1), q_B) − t_B)
            exit_local = body.local_points(qb, end_points[1:])[0]
        return total

    def n_inputs(self, robot: Robot) -> int:
        return 1

    def columns(self, robot: Robot, q: Array) -> Array:
        # A = −(∂l/∂q)ᵀ
        return -jax.jacfwd(lambda x: self.length(robot, x))(q)[:, None]

    def check(self, robot: Robot) -> None:
        for i in self.links:
            check_index("Tendon: link", i, robot.n_links)
            body = _soft_body("Tendon", robot, i)
            if self.offset is not None and body.volume.pivot is None:
                raise ValueError(
                    f"Tendon: the volume of link {i} has no pivot (0, 0, L) to place an offset "
                    "path along; give paths="
                )
        for k, i in enumerate(self.links):
            self._check_inside(robot, k, i)

    def _check_inside(self, robot: Robot, k: int, i: int) -> None:
        vol = robot.links[i].body.volume
        if not is_concrete(vol, self.offset) or not has_geometry(vol):
            return
        nodes = np.concatenate([[0.0], gauss_legendre(self.order)[0], [1.0]])
        # evaluated now even inside a trace (actuation_matrix under jit or jacfwd); a path
        # that closes over traced values cannot be checked
        with jax.ensure_compile_time_eval():
            pts = jax.vmap(self.path(robot, k))(jnp.asarray(nodes))
        if not is_concrete(pts):
            return
        pts = np.asarray(pts)
        if pts.shape != (nodes.size, 3):
            raise ValueError(f"Tendon: path {k} must return (3,) material points")
        outside = ~contains(vol, pts, tol=_INSIDE_TOL)
        if outside.any():
            x = pts[np.argmax(outside)]
            raise ValueError(
                f"Tendon: the path through link {i} leaves the body: the material point "
                f"({x[0]:.6g}, {x[1]:.6g}, {x[2]:.6g}) is outside its {vol.geometry} volume"
            )


@module
class PressureChamber(Actuator):
    """A pressurized cavity in the soft body of link `link`, input `u` = gauge pressure [Pa].

    Virtual work `δW = u δV_c` gives `A = ∂V_c/∂q` (non-zero in the rows of the body
    coordinates). The chamber volume `V_c(q_B)` is either

    - the quadrature of `det F` over a `region` of the body's material coordinates (a
      `QuadratureRule` over the reference cavity, mapped by the same body map):
      `V_c = Σ_k w_k det F(x_k, q_B)`; or
    - a user function `volume(q_B) -> scalar`.

    With a volume-preserving (LVP) body map `det F = 1` and the first form is constant: the
    pressure then does no work unless the map has a source/cavity primitive, whose cavity volume
    (`π ∫ (r_i² + g(z)) dz` for the radius law `R² = r² + g(z)`) is passed as `volume`.

    Args:
        link: index of the link whose soft body holds the chamber.
        region: `QuadratureRule` over the chamber's reference region (inside the body, its
            cavities included: checked against the body's exact reference volume and the
            region's own geometry, its box, cylinder, tube, segment or mesh, whatever the
            quadrature order; only the nodes of a rule without geometry), or
        volume: `V_c(q_B) -> scalar`.
    """

    region: QuadratureRule | None
    link: int = static()
    volume: Callable[[Array], Array] | None = static()

    def __init__(
        self,
        link: int,
        region: QuadratureRule | None = None,
        volume: Callable[[Array], Array] | None = None,
    ) -> None:
        object.__setattr__(self, "link", as_index("PressureChamber: link", link))
        if (region is None) == (volume is None):
            raise ValueError("PressureChamber: give exactly one of region= or volume=")
        if region is not None and not isinstance(region, QuadratureRule):
            raise TypeError(
                f"PressureChamber: region must be a QuadratureRule, got {type(region).__name__}"
            )
        if volume is not None and not callable(volume):
            raise TypeError("PressureChamber: volume must be callable V_c(q_B) -> scalar")
        object.__setattr__(self, "region", region)
        object.__setattr__(self, "volume", volume)

    def chamber_volume(self, robot: Robot, q: Array) -> Array:
        """`V_c(q)` (scalar)."""
        qb = q[robot.body_slice(self.link)]
        if self.volume is not None:
            return self.volume(qb)
        body = robot.links[self.link].body
        # V_c = Σ_k w_k det F(x_k, q_B)
        f = deformation_gradient(body, qb, self.region.points)
        return jnp.sum(self.region.weights * jnp.linalg.det(f))

    def n_inputs(self, robot: Robot) -> int:
        return 1

    def columns(self, robot: Robot, q: Array) -> Array:
        # A = ∂V_c/∂q
        return jax.grad(lambda x: self.chamber_volume(robot, x))(q)[:, None]

    def check(self, robot: Robot) -> None:
        check_index("PressureChamber: link", self.link, robot.n_links)
        body = _soft_body("PressureChamber", robot, self.link)
        region = self.region
        if region is not None and has_geometry(body.volume) and is_concrete(region):
            x = region_outside(body.volume, region, tol=_INSIDE_TOL)
            if x is not None:
                shape = f"{region.geometry} " if has_geometry(region) else ""
                raise ValueError(
                    f"PressureChamber: the {shape}region leaves the {type(body).__name__} of "
                    f"link {self.link}: its point ({x[0]:.6g}, {x[1]:.6g}, {x[2]:.6g}) is "
                    f"outside the body's {body.volume.geometry} volume and its cavities"
                )
        if self.volume is not None:
            qb = jax.ShapeDtypeStruct((body.n_q,), jnp.dtype(float))
            out = trace_user("PressureChamber volume", "q_B", self.volume, qb)
            if getattr(out, "shape", None) != ():
                raise ValueError(
                    f"PressureChamber: volume(q_B) must return a scalar for q_B ({body.n_q},), "
                    f"got {getattr(out, 'shape', type(out).__name__)}"
                )
