"""The LVP bodies of seed 003: `helicoid_segment` (Table 4) and `gripper` (Table 5).

`helicoid_segment` is the 8-coordinate segment of the seed's Simulation 1 (its Table 4),
`gripper` the 2-coordinate pressurized gripper of its Simulation 2 (its Table 5).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from .._rod import check_length
from ._bend3d import Bend3D
from ._composite import Composite, compose
from ._modes import Polynomial
from ._primitives import Shear, Source, Stretch, Twist

__all__ = ["gripper", "helicoid_segment"]


def helicoid_segment(length: Any, n_gauss: int = 8) -> Composite:
    """The 8-coordinate body of the seed's Simulation 1 (its Table 4), `s = x3 / L`:

    - `q1`: stretch, `λ − 1 = s (1 − s) q1` (end faces undeformed);
    - `q2, q3`: bending curvature `κ1 = (q2 + x3 q3) / L` (about `x1`);
    - `q4, q5`: bending curvature `κ2 = (q4 + x3 q5) / L` (about `x2`);
    - `q6`: twist, `φ = s q6`;
    - `q7, q8`: shear, `(s1, s2) = s (q7, q8)`.

    Applied as stretch, twist, shear, then one `Bend3D` carrying both curvatures on a common
    backbone (`n_gauss` nodes for its position), so that stretch, twist and shear act on the
    straight body and the bend places it. `f(x, 0) = x` (to rounding); the distal frame comes
    from the contact points. The composition knows its length, so the bend's backbone is
    computed once per body.
    """
    length = check_length("helicoid_segment", length)
    linear = Polynomial([[0.0, 1.0]], length)
    # κ = q_a / L + q_b x3 / L: modes (1/L, s)
    curvature = Polynomial(
        jnp.stack([jnp.stack([1.0 / length, 0.0]), jnp.array([0.0, 1.0])]), length
    )
    return compose(
        Stretch(Polynomial([[0.0, 1.0, -1.0]], length)),
        Twist(linear),
        Shear(linear, linear),
        Bend3D(curvature, curvature, n_gauss=n_gauss),
        coordinates=((0,), (5,), (6, 7), (1, 2, 3, 4)),
        length=length,
    )


def gripper(length: Any) -> Composite:
    """The 2-coordinate soft gripper of the seed's Simulation 2 (its Table 5), `s = x3 / L`:
    stretch `λ − 1 = s² q1`, then a source `g = s² q2` [m²] on the cavity. Both modes vanish at
    the proximal face and not at the distal one, whose face deforms (the gripper ends the chain).
    Use it on a hollow volume (`softrigid.quadrature.tube`); `cavity_volume(q, r_i, L)` is the
    chamber volume for a pressure actuator."""
    length = check_length("gripper", length)
    square = Polynomial([[0.0, 0.0, 1.0]], length)
    return compose(Stretch(square), Source(square))
