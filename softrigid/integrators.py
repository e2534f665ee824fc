"""Integration schemes for `softrigid.simulate(..., method=...)` and the first-order vector field.

Fixed step, inside `lax.scan` (jit, vmap and grad through them): `RK4`, `SemiImplicitEuler`,
`ImplicitEuler` (backward Euler, L-stable, first order) and `GeneralizedAlpha` (Chung–Hulbert /
Arnold–Brüls, second order, `rho_inf ∈ [0, 1]`; `rho_inf = 1` is the trapezoidal rule), the
implicit ones by Newton with the iteration matrix from the derivatives of the residual
`ν − A(q) u` (those of `inverse_dynamics_derivatives`, with the inputs' term; the controller's
feedback with the dynamics terms held: exact for laws that do not read `M` or `A`).
Adaptive, on the host (not jittable): `Radau` and `BDF` (scipy's, with the model's exact
Jacobian, the closed loop's by automatic differentiation, or forward or central differences:
`jacobian="exact"`, `"autodiff"`, `"finite_differences"`, `"central_differences"`). A string
works too: `method="generalized_alpha"`. `Implicit` and `Adaptive`, the bases of the implicit
and the adaptive methods, document their options.

`vector_field(robot, controller=None, loads=None)` is `f(t, (q, q̇)) = (q̇, q̈)`, for your own
solvers, e.g. diffrax: `diffrax.ODETerm(lambda t, y, args: f(t, y))`.
"""

from ._closed_loop import vector_field
from ._integrators import RK4, GeneralizedAlpha, Implicit, ImplicitEuler, SemiImplicitEuler
from ._radau import BDF, Adaptive, Radau

__all__ = [
    "BDF",
    "RK4",
    "Adaptive",
    "GeneralizedAlpha",
    "Implicit",
    "ImplicitEuler",
    "Radau",
    "SemiImplicitEuler",
    "vector_field",
]
