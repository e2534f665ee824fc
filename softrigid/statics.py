"""Statics: equilibria under actuation, and inverse statics for output targets.

An equilibrium solves (`algorithm.md`, `forces.md`)

    r(q) = g(q) + s(q, 0) − Q_ext(q) − A(q) u = ID(q, 0, 0) − A(q) u = 0

by Newton's method with the exact Jacobian (`equilibrium`); inverse statics finds the inputs
`u` whose equilibrium puts outputs `y(q)` on targets, by Levenberg–Marquardt over `u` with the
equilibrium solved at every iterate (`inverse_statics`). Both are single `lax.while_loop`s:
they run under `jit` and `vmap`, report through a status, and raise (`softrigid._fault` under
`jit`) unless `throw=False`; the equilibrium, and the inverse statics with as many outputs as
inputs, are differentiable by the implicit function theorem (reverse mode too). The algorithms
live in `_statics_residual` (the residual `r`), `_statics_newton` (the Newton loop),
`_statics_equilibrium` (its entry and errors), `_statics_levenberg` (the inverse statics'
loop) and `_statics_inverse` (its entry).
"""

from ._statics_equilibrium import StaticSolution, equilibrium
from ._statics_inverse import InverseStaticSolution, inverse_statics

__all__ = ["InverseStaticSolution", "StaticSolution", "equilibrium", "inverse_statics"]
