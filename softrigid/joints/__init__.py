"""Joints: the placement of a body's proximal frame in the previous body's distal frame.

Every joint has an `origin`, the fixed placement of the joint frame in the previous link's distal
frame (the base frame for the first link), given as `None` (identity), a 4×4 homogeneous matrix or
a `(rotation, translation)` pair. The joint motion acts in the joint frame:
`T_J(q_J) = origin · motion(q_J)`.

Joints and their charts (`q_J`, the motion `(R, t)` in the joint frame; `[a]θ` is the rotation
by `θ` about the unit axis `a`):

| joint | `n_q` | `q_J` | `R` | `t` |
| --- | --- | --- | --- | --- |
| `Fixed` | 0 | — | `I` | `0` |
| `Revolute(a)` | 1 | `θ` | `[a]θ` | `0` |
| `Prismatic(a)` | 1 | `d` | `I` | `d a` |
| `Helical(a, pitch)` | 1 | `θ` | `[a]θ` | `pitch θ / (2π) a` |
| `Cylindrical(a)` | 2 | `(d, θ)` | `[a]θ` | `d a` |
| `Universal(a1, a2)` | 2 | `(θ1, θ2)` | `[a1]θ1 [a2]θ2` | `0` |
| `Planar(n)` | 3 | `(x, y, θ)` | `[n]θ` | `x e1 + y e2` |
| `Spherical` | 3 | `φ` | `exp(skew φ)` | `0` |
| `Free` | 6 | `(p, φ)` | `exp(skew φ)` | `p` |

Every joint except `Fixed` and `Free` may carry linear springs and dampers on its coordinates
(seed 000): `U = ½ Σ_j k_j (q_j − r_j)²`, `R = ½ Σ_j d_j q̇_j²`, which enter `s` of
`ν = M q̈ + c + g + s`. `stiffness`, `damping` and `rest` are scalars (the same for every
coordinate) or `(n_q,)` vectors.
"""

from ._axes import Cylindrical, Helical, Planar, Prismatic, Revolute, Universal
from ._base import Fixed, Joint
from ._rotation_vector import Free, Spherical

__all__ = [
    "Cylindrical",
    "Fixed",
    "Free",
    "Helical",
    "Joint",
    "Planar",
    "Prismatic",
    "Revolute",
    "Spherical",
    "Universal",
]
