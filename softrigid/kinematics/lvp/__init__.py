"""Locally volume-preserving (LVP) primitives (Xu and Chirikjian, 2023) and their compositions.

Each primitive `h(x, q)` has `det(∂h/∂x) = 1` wherever it is defined, so any composition
`f = h_P ∘ … ∘ h_1` preserves volume locally (the determinant of a composition is the product)
and the body mass is independent of `q`. Every primitive is driven by one or more scalar fields
of the axial coordinate `z = x3` **of its own input point**, each a modal expansion

    field(z) = Σ_j m_j(z) q_j = m(z) · q,

with mode functions `m` given as `Modes` (`Polynomial` in `z/L`, or any callable `z -> (n,)`).
At `q = 0` every primitive is the identity, so the rest configuration is the reference volume
(to rounding for `Bend` and `Bend3D`: `ψ(0) = 1 + 2e-16` by Viète's form, Gauss sums of `∫_0^z`).
Coordinates `(x, y, z) = (x1, x2, x3)`; the body axis is `x3 ∈ [0, L]`.

Primitives: `Twist`, `Stretch`, `Shear`, `Bend` (planar), `Bend3D` (on a backbone), `Source`
(cavity of a hollow body). `compose(h_1, …, h_P)` builds one body map (a `Kinematics`) applying
`h_1` first, with the coordinate vectors concatenated (or placed by `coordinates=`).
`helicoid_segment` and `gripper` are the bodies of seed 003's Simulations 1 and 2 (its
Tables 4 and 5).

Outside a primitive's valid range (stated in each docstring) the map returns NaN, which the
dynamics propagates; `valid(x, q)` tells where a configuration is admissible (usable under `jit`)
and `check(points, q)` raises a `ValueError` naming the primitive and the condition.

Modules: `_modes` (`Modes`, `Polynomial`, `FunctionModes`), `_primitives` (`Primitive`, `Twist`,
`Stretch`, `Shear`, `Bend`, `Source`), `_bend3d` (`Bend3D` and its cubic root `psi_root`),
`_composite` (`Composite`, `compose`), `_seed003` (`helicoid_segment`, `gripper`).
"""

from ._bend3d import U_MIN, Bend3D, psi_root
from ._composite import Composite, compose
from ._modes import FunctionModes, Modes, Polynomial
from ._primitives import Bend, Primitive, Shear, Source, Stretch, Twist
from ._seed003 import gripper, helicoid_segment

__all__ = [
    "U_MIN",
    "Bend",
    "Bend3D",
    "Composite",
    "FunctionModes",
    "Modes",
    "Polynomial",
    "Primitive",
    "Shear",
    "Source",
    "Stretch",
    "Twist",
    "compose",
    "gripper",
    "helicoid_segment",
    "psi_root",
]
