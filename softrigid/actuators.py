"""Actuators: the actuation matrix `A(q)` with `ν = A(q) u` (`forces.md`).

Every actuator contributes columns to `A(q)` `(n_q, m)`, derived by virtual work from a scalar
of the configuration, so that the actuation power is `q̇ᵀ A u` exactly:

- `JointMotor`: generalized forces on the coordinates of one joint, columns of the identity.
- `Tendon`: a cable of length `l(q)` under tension `u ≥ 0`, `A = −(∂l/∂q)ᵀ`, along material
  paths inside the bodies or straight between guides (eyelets).
- `PressureChamber`: a cavity of volume `V_c(q)` under gauge pressure `u`, `A = ∂V_c/∂q`.

Actuators belong to the robot model: `softrigid.Robot(links, actuators=[...])`. Its inputs `u`
stack the actuators' inputs in that order; `softrigid.actuation_matrix(robot, q)` is `A(q)` and
`softrigid.actuation_force(robot, q, u)` is `A(q) u`, the `ν` that `inverse_dynamics` balances.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import Array

from ._actuator import Actuator
from ._checks import as_index, check_index, raise_if
from ._entry import in_trial_evaluations
from ._model import Robot
from ._module import is_concrete, module, static
from ._reports import PREFIX
from ._tendon import Tendon, soft_body
from .kinematics._base import check_real_scalar, real_result, trace_user
from .materials import deformation_gradient
from .quadrature._geometry import INSIDE_TOL, has_geometry, region_outside
from .quadrature._rule import QuadratureRule

__all__ = ["Actuator", "JointMotor", "PressureChamber", "Tendon"]


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
            return real_result(self.volume(qb), q.dtype)
        body = robot.links[self.link].body
        # V_c = Σ_k w_k det F(x_k, q_B)
        f = deformation_gradient(body, qb, self.region.points)
        return jnp.sum(self.region.weights * jnp.linalg.det(f))

    def n_inputs(self, robot: Robot) -> int:
        return 1

    def columns(self, robot: Robot, q: Array) -> Array:
        # A = ∂V_c/∂q, where V_c is finite (the gradient of a NaN constant reads 0: no force)
        volume, grad = jax.value_and_grad(lambda x: self.chamber_volume(robot, x))(q)
        if in_trial_evaluations():  # a solver's trial rejects a non-finite one itself
            return grad[:, None]
        message = (
            f"{PREFIX}PressureChamber on link {self.link}: the chamber volume V_c(q_B) is not "
            "finite at this state (its actuation column would read 0)"
        )
        return raise_if(grad[:, None], ~jnp.isfinite(volume), jnp.zeros((), int), (message,))

    def check(self, robot: Robot) -> None:
        check_index("PressureChamber: link", self.link, robot.n_links)
        body = soft_body("PressureChamber", robot, self.link)
        region = self.region
        if region is not None and has_geometry(body.volume) and is_concrete(region):
            x = region_outside(body.volume, region, tol=INSIDE_TOL)
            if x is not None:
                shape = f"{region.geometry} " if has_geometry(region) else ""
                raise ValueError(
                    f"PressureChamber: the {shape}region leaves the {type(body).__name__} of "
                    f"link {self.link}: its point ({x[0]:.6g}, {x[1]:.6g}, {x[2]:.6g}) is "
                    f"outside the body's {body.volume.geometry} volume and its cavities"
                )
        if self.volume is not None:
            qb = jax.ShapeDtypeStruct((body.n_q,), jnp.dtype(float))
            try:
                out = trace_user("PressureChamber volume", "q_B", self.volume, qb)
            except TypeError as err:  # e.g. a string returned: JAX's own words name no argument
                if str(err).startswith("PressureChamber"):
                    raise
                raise TypeError(
                    f"PressureChamber: volume(q_B) must return a real scalar ({err})"
                ) from None
            if getattr(out, "shape", None) != ():
                raise ValueError(
                    f"PressureChamber: volume(q_B) must return a scalar for q_B ({body.n_q},), "
                    f"got {getattr(out, 'shape', type(out).__name__)}"
                )
            check_real_scalar("PressureChamber: volume(q_B)", out)
