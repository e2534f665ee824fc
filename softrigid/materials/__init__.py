"""Material laws of soft bodies: an elastic energy `U(q_B)` and a Rayleigh function `R(q_B, q̇_B)`.

A material is passed to `SoftBody(..., material=...)`. The engine adds `s = ∂U/∂q + ∂R/∂q̇`
(automatic differentiation of the two scalars) to the rows of the body coordinates in
`ν = M q̈ + c + g + s` (`forces.md`). Internal stresses have zero resultant on the body, so they
never enter the recursion. The dynamics' derivatives (`inverse_dynamics_derivatives`, the
implicit integrators) take `(s, ∂s/∂q, ∂s/∂q̇)` from `Material.internal_force_derivatives`:
forward mode of `internal_force` in `q` and `Material.damping_matrix`, which is forward mode
of `internal_force` in `q̇` by default, for the solids the Kelvin–Voigt form
`η Σ_k w_k B_kᵀ ℂ₀ B_k` with `B_k[:, j] = sym(F_kᵀ ∂F_k/∂q_j)`; a law of your own may
override either with a closed form.

Solids (`IncompressibleNeoHookean`, `CompressibleNeoHookean`, `SaintVenantKirchhoff`,
`StrainEnergy`) integrate a strain-energy density over the body's quadrature rule,

    U(q) = ∫_V W(F) dV ≈ Σ_k w_k W(F(x_k, q)),     F = ∂f/∂x,

with the deformation gradient of the body map by forward-mode differentiation, and damp by the
objective Kelvin–Voigt function

    R(q, q̇) = (η/2) ∫_V Ė : ℂ₀ : Ė dV,     E = ½ (FᵀF − I),  Ė = ½ (ḞᵀF + FᵀḞ),

with `ℂ₀` the small-strain elasticity of the law, so that the damping matrix at rest is `η` times
the stiffness matrix at rest (stiffness-proportional damping, `η` in seconds as in seed 003) and
a rigid motion of the body dissipates nothing (`Ė = 0`). Strain-parameterized rods
(`CosseratRod`) use the rod energy `U = ½ ∫ (ξ − ξ*)ᵀ K (ξ − ξ*) dX` and
`R = (η/2) ∫ ξ̇ᵀ K ξ̇ dX`. `Energy` plugs in any `U(q)` (and `R(q, q̇)`).

Why energies and not the seed's strong form `df = 2 C div B dV` (Section 6.2): as a volume density
the strong form drops the boundary-traction term (a homogeneous stretch has zero divergence but
a non-zero restoring force), and for the seed's own toy example it does not give the printed
`s = (π/4)(q + q̇)`; the energy gives `s = (π/2) q` there (`C = 1`, see `StrainEnergy`). The
energy form is variationally consistent, so `s_elastic = ∂U/∂q`, a symmetric stiffness matrix
and the power balance `d(T + V)/dt = q̇ᵀ ν − 2R` hold exactly.
"""

from ._base import Material
from ._gradient import deformation_gradient
from ._rod import CosseratRod
from ._solids import (
    CompressibleNeoHookean,
    Energy,
    IncompressibleNeoHookean,
    SaintVenantKirchhoff,
    StrainEnergy,
    lame_parameters,
)

__all__ = [
    "CompressibleNeoHookean",
    "CosseratRod",
    "Energy",
    "IncompressibleNeoHookean",
    "Material",
    "SaintVenantKirchhoff",
    "StrainEnergy",
    "deformation_gradient",
    "lame_parameters",
]
