"""Equality constraints `a(t, q, q̇) q̈ = b(t, q, q̇)`, imposed by the Udwadia–Kalaba equation
(seed 002; the derivation and Baumgarte's drift control are in `softrigid._constraints`):

    q̈ = q̈_f + L⁻ᵀ (a L⁻ᵀ)⁺ (b − a q̈_f),   M = L Lᵀ,   q̈_f = M⁻¹ (A u − bias).

* `Holonomic(phi, alpha, beta)`: position constraints `φ(q) = 0` (closed loops), stabilized by
  `φ̈ + 2α φ̇ + β² φ = 0`.
* `Nonholonomic(a, gamma)`: velocity constraints `a(q) q̇ = 0` (rolling), stabilized by
  `ψ̇ + γ ψ = 0`, `ψ = a q̇`.
* `AccelerationForm(fn)`: `fn(t, q, q̇) -> (a, b)`.

`constrained_forward_dynamics(robot, q, qd, u, constraints)` returns the accelerations, the
generalized constraint force `Q_c` (`M q̈ + bias = A u + Q_c`) and the multipliers;
`softrigid.simulate(..., constraints=...)` integrates them with the explicit methods.
"""

from ._constraints import (
    AccelerationForm,
    ConstrainedAccelerations,
    Constraint,
    Holonomic,
    Nonholonomic,
    constrained_forward_dynamics,
)

__all__ = [
    "AccelerationForm",
    "ConstrainedAccelerations",
    "Constraint",
    "Holonomic",
    "Nonholonomic",
    "constrained_forward_dynamics",
]
