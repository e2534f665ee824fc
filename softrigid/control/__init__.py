"""Controllers and reference trajectories (seed 003, Section 7).

A controller is an immutable pytree `u = controller(t, q, q̇, terms)` `(n_u,)` (the interface
`softrigid._controller.Controller`): its gains and references are traced leaves, so changing a
gain does not recompile a simulation and a batch of controllers runs under `jax.vmap`; its
structure (selected coordinates, options, user functions) is static. A model-based law reads
`M`, the bias `c + g + s − Q_ext` and `A(q)` from `terms` (`softrigid.dynamics_terms`), which
the integrator evaluates once per stage and shares with the acceleration solve.

Laws (`e = q_d − q` or `y_d − y`; gains `K` are scalars, diagonals `(k,)` or matrices `(k, k)`):

- `Feedforward`:     `u = u_d(t)`.
- `PD`:              `u = K_P (q_d − q) + K_D (q̇_d − q̇)` on selected coordinates.
- `CompensatedPD`:   `u = A⁻¹ [K_P (q_d − q) − K_D q̇ + g(q) + s(q, 0)]` (Simulation 2, ii).
- `ComputedTorque`:  `u = A⁻¹ [M (q̈_d + K_D ė + K_P e) + c + g + s]` (fully actuated).
- `CollocatedPFBL`:  `u = M̄_yy v + h̄_y`, `v = ÿ_d + K_D (ẏ_d − ẏ) + K_P (y_d − y)`
  (the law after eq. (55), Simulation 1).
- `Phases`:          controller `i` on `[t_{i−1}, t_i)` (Simulation 2 has three).
- `StateFeedback`:   `u = u₀ − K (x − x₀)`, `x = (q, q̇)` (an LQR on `softrigid.linearize`).

References `r(t) -> (position, velocity, acceleration)`: `Constant`, `CubicRestToRest`,
`Spline` (C² cubic spline through samples, e.g. the equilibria of Simulation 1), `Blend`
(from rest at a start value into another reference, C²).

Singular matrices are caught at run time (also under `jit`/`vmap`) with a message naming the
controller, never a silent NaN; shapes are checked when a controller is built or traced.
"""

from .._controller import Controller
from ._laws import PD, CompensatedPD, ComputedTorque, Feedforward, Phases
from ._pfbl import CollocatedPFBL, actuation_coordinates
from ._references import Blend, Constant, CubicRestToRest, Reference, Spline
from ._state_feedback import StateFeedback

__all__ = [
    "PD",
    "Blend",
    "CollocatedPFBL",
    "CompensatedPD",
    "ComputedTorque",
    "Constant",
    "Controller",
    "CubicRestToRest",
    "Feedforward",
    "Phases",
    "Reference",
    "Spline",
    "StateFeedback",
    "actuation_coordinates",
]
