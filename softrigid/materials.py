"""Material laws of soft bodies: an elastic energy `U(q_B)` and a Rayleigh function `R(q_B, q̇_B)`.

A material is passed to `SoftBody(..., material=...)`. The engine adds `s = ∂U/∂q + ∂R/∂q̇`
(automatic differentiation of the two scalars) to the rows of the body coordinates in
`ν = M q̈ + c + g + s` (`forces.md`). Internal stresses have zero resultant on the body, so they
never enter the recursion.

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

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from ._bodies import Material, SoftBody
from ._checks import as_scalar
from ._dynamics import _robot, _states, elastic_energy
from ._model import Robot
from ._module import is_concrete, module, static

__all__ = [
    "CompressibleNeoHookean",
    "CosseratRod",
    "Energy",
    "IncompressibleNeoHookean",
    "SaintVenantKirchhoff",
    "StrainEnergy",
    "deformation_gradient",
    "lame_parameters",
    "stiffness_matrix",
]

# Volume preservation is checked at q = 0 and at these many seeded random configurations.
_VP_SAMPLES = 3
_VP_SCALE = 0.05
_VP_TOL = 1e-8


def deformation_gradient(body: SoftBody, q: Array, points: Array | None = None) -> Array:
    """Deformation gradients `F_k = ∂f/∂x (x_k, q)` `(K, 3, 3)` of a soft body's map.

    Args:
        body: a `SoftBody` (anything with `.kinematics` and `.volume`).
        q: `(n_q,)` body coordinates.
        points: `(K, 3)` material points (default: the body's quadrature nodes, evaluated with
            the rule's axial-row structure).

    Returns:
        `(K, 3, 3)` with `F[k, i, j] = ∂f_i/∂x_j`: three forward-mode passes of the whole
        `map_points` along the unit material directions.
    """
    n_axial = None
    if points is None:
        points, n_axial = body.volume.points, body.volume.n_axial

    def mapped(p: Array) -> Array:
        return body.kinematics.map_points(p, q, n_axial)

    def column(e: Array) -> Array:
        return jax.jvp(mapped, (points,), (jnp.broadcast_to(e, points.shape),))[1]

    cols = jax.vmap(column)(jnp.eye(3, dtype=points.dtype))  # (3, K, 3): [j, k, i]
    return jnp.transpose(cols, (1, 2, 0))


def _green_rate(f: Array, fd: Array) -> Array:
    # Ė = ½ (Ḟᵀ F + Fᵀ Ḟ)
    a = jnp.swapaxes(fd, -1, -2) @ f
    return 0.5 * (a + jnp.swapaxes(a, -1, -2))


def lame_parameters(E: Any, nu: Any) -> tuple[Array, Array]:
    """Lamé constants from Young's modulus and Poisson's ratio:
    `μ = E / (2 (1 + ν))`, `λ = E ν / ((1 + ν)(1 − 2ν))` (requires `E > 0`, `−1 < ν < ½`)."""
    E = as_scalar("Young's modulus E", E, positive=True)
    nu = as_scalar("Poisson's ratio nu", nu)
    if is_concrete(nu) and not -1.0 < float(nu) < 0.5:
        raise ValueError(f"Poisson's ratio nu must lie in (-1, 0.5), got {float(nu)}")
    return E / (2.0 * (1.0 + nu)), E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))


def _check_lame(cls: str, mu: Any, lam: Any) -> tuple[Array, Array]:
    mu = as_scalar(f"{cls}: mu", mu, positive=True)
    lam = as_scalar(f"{cls}: lam", lam)
    if is_concrete(mu, lam) and not float(lam) + 2.0 * float(mu) / 3.0 > 0:
        raise ValueError(
            f"{cls}: the bulk modulus lam + 2 mu / 3 must be positive, got "
            f"{float(lam) + 2.0 * float(mu) / 3.0} (mu = {float(mu)}, lam = {float(lam)})"
        )
    return mu, lam


class _Solid(Material):
    """A hyperelastic solid: `U = ∫ W(F) dV`, Kelvin–Voigt damping with `ℂ₀` of the law."""

    eta: Array

    @abc.abstractmethod
    def density(self, F: Array) -> Array:
        """Strain-energy density `W(F)` for one `(3, 3)` deformation gradient."""

    @abc.abstractmethod
    def small_strain(self, E: Array) -> Array:
        """`E : ℂ₀ : E` for one symmetric `(3, 3)` strain (the small-strain quadratic form)."""

    def energy(self, body: SoftBody, q: Array) -> Array:
        # U = Σ_k w_k W(F_k)
        f = deformation_gradient(body, q)
        return jnp.sum(body.volume.weights * jax.vmap(self.density)(f))

    def dissipation(self, body: SoftBody, q: Array, qd: Array) -> Array:
        # R = (η/2) Σ_k w_k Ė_k : ℂ₀ : Ė_k
        f, fd = jax.jvp(lambda x: deformation_gradient(body, x), (q,), (qd,))
        quad = jax.vmap(self.small_strain)(_green_rate(f, fd))
        return 0.5 * self.eta * jnp.sum(body.volume.weights * quad)


def _check_eta(cls: str, eta: Any) -> Array:
    return as_scalar(f"{cls}: eta (damping time)", eta, nonnegative=True)


def _sample_configurations(n_q: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.concatenate([np.zeros((1, n_q)), _VP_SCALE * rng.standard_normal((_VP_SAMPLES, n_q))])


@jax.jit
def _jacobian_determinants(body: SoftBody, qs: Array) -> Array:
    """`det F` at the quadrature nodes `(S, K)` for the configurations `qs` `(S, n_q)`."""
    return jax.vmap(lambda q: jnp.linalg.det(deformation_gradient(body, q)))(qs)


def check_volume_preserving(body: SoftBody, where: str) -> None:
    """Raise `ValueError` unless `det F = 1` (to 1e-8) at every quadrature node of `body` at
    `q = 0` and at three seeded random configurations `q ~ 0.05 N(0, I)`.

    A necessary test (a map could preserve volume only at the sampled states), cheap enough to
    run whenever a body is built. Skipped when the body's parameters are traced.
    """
    if not is_concrete(body):
        return
    name = getattr(body.kinematics, "name", "") or type(body.kinematics).__name__
    qs = _sample_configurations(body.n_q)
    dets = np.asarray(_jacobian_determinants(body, jnp.asarray(qs)))
    for q, det in zip(qs, dets):
        if not np.all(np.isfinite(det)):
            raise ValueError(
                f"{where}: the deformation gradient of {name!r} is not finite at q = {q.tolist()}"
            )
        err = float(np.max(np.abs(det - 1.0)))
        if err > _VP_TOL:
            raise ValueError(
                f"{where} needs a volume-preserving body map, but {name!r} has "
                f"max |det F − 1| = {err:.3g} at q = {np.round(q, 4).tolist()}. An incompressible "
                "law on such a map gives a force at rest and a wrong stiffness. Use a "
                "volume-preserving (LVP) map, or CompressibleNeoHookean / SaintVenantKirchhoff."
            )


@module
class IncompressibleNeoHookean(_Solid):
    """Incompressible neo-Hookean solid, `W = C (tr FᵀF − 3)` (shear modulus `μ = 2C`).

    Only valid on volume-preserving body maps (`det F = 1`, the LVP primitives): the pressure
    that enforces incompressibility does no work on such maps and is left out. Building a
    `SoftBody` with this law checks `det F = 1` at every quadrature node at `q = 0` and at three
    seeded random configurations `q ~ 0.05 N(0, I)` (tolerance 1e-8) and raises `ValueError`
    otherwise.

    Kelvin–Voigt damping uses `ℂ₀ = 2μ 𝕀 = 4C 𝕀`: `R = 2 η C ∫ Ė : Ė dV`, which is `η` times
    the stiffness at rest on a volume-preserving map.

    Args:
        C: material constant [Pa], `C > 0`.
        eta: damping time `η ≥ 0` [s].
    """

    C: Array
    eta: Array

    def __init__(self, C: Any, eta: Any = 0.0) -> None:
        object.__setattr__(self, "C", as_scalar("IncompressibleNeoHookean: C", C, positive=True))
        object.__setattr__(self, "eta", _check_eta("IncompressibleNeoHookean", eta))

    def density(self, F: Array) -> Array:
        # W = C (tr FᵀF − 3)
        return self.C * (jnp.sum(F * F) - 3.0)

    def small_strain(self, E: Array) -> Array:
        # E : ℂ₀ : E = 4C E : E
        return 4.0 * self.C * jnp.sum(E * E)

    def validate(self, body: SoftBody) -> None:
        check_volume_preserving(body, "IncompressibleNeoHookean")


@module
class _LameSolid(_Solid):
    """An isotropic solid of Lamé constants `μ, λ` with Kelvin–Voigt damping of modulus
    `ℂ₀`: `E : ℂ₀ : E = λ (tr E)² + 2μ E : E`."""

    mu: Array
    lam: Array
    eta: Array

    def __init__(self, mu: Any, lam: Any, eta: Any = 0.0) -> None:
        name = type(self).__name__
        mu, lam = _check_lame(name, mu, lam)
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "lam", lam)
        object.__setattr__(self, "eta", _check_eta(name, eta))

    @classmethod
    def from_young(cls, E: Any, nu: Any, eta: Any = 0.0) -> _LameSolid:
        """From Young's modulus `E` [Pa] and Poisson's ratio `ν` (see `lame_parameters`)."""
        return cls(*lame_parameters(E, nu), eta=eta)

    def small_strain(self, E: Array) -> Array:
        # E : ℂ₀ : E = λ (tr E)² + 2μ E : E
        return self.lam * jnp.trace(E) ** 2 + 2.0 * self.mu * jnp.sum(E * E)


@module
class CompressibleNeoHookean(_LameSolid):
    """Compressible neo-Hookean solid,

        W = μ/2 (I₁ − 3 − 2 ln J) + λ/2 (ln J)²,    I₁ = tr FᵀF,  J = det F.

    Defined for `J > 0`; an inverted configuration (`J ≤ 0`) has no energy and gives NaN.
    Kelvin–Voigt damping with `E : ℂ₀ : E = λ (tr E)² + 2μ E : E`.

    Args:
        mu, lam: Lamé constants [Pa] (`μ > 0`, bulk modulus `λ + 2μ/3 > 0`); or build with
            `CompressibleNeoHookean.from_young(E, nu)`.
        eta: damping time `η ≥ 0` [s].
    """

    def density(self, F: Array) -> Array:
        # W = μ/2 (I₁ − 3 − 2 ln J) + λ/2 (ln J)²
        log_j = jnp.log(jnp.linalg.det(F))
        return 0.5 * self.mu * (jnp.sum(F * F) - 3.0 - 2.0 * log_j) + 0.5 * self.lam * log_j**2


@module
class SaintVenantKirchhoff(_LameSolid):
    """Saint-Venant–Kirchhoff solid, `W = μ E : E + λ/2 (tr E)²`, `E = ½ (FᵀF − I)`.

    Accurate for large rotations with small strains only (it softens in compression).
    Kelvin–Voigt damping with the same `ℂ₀`: `E : ℂ₀ : E = λ (tr E)² + 2μ E : E`.

    Args:
        mu, lam: Lamé constants [Pa] (`μ > 0`, `λ + 2μ/3 > 0`); or `from_young(E, nu)`.
        eta: damping time `η ≥ 0` [s].
    """

    def density(self, F: Array) -> Array:
        # W = μ E : E + λ/2 (tr E)²
        e = 0.5 * (F.T @ F - jnp.eye(3, dtype=F.dtype))
        return self.mu * jnp.sum(e * e) + 0.5 * self.lam * jnp.trace(e) ** 2


@module
class StrainEnergy(_Solid):
    """A user strain-energy density `W(F)`: `U = ∫ W(F) dV`.

    Kelvin–Voigt damping uses the second derivative of `W` at the reference,
    `Ė : ℂ₀ : Ė = d²/dt² W(I + t Ė)|₀` (the small-strain elasticity when the reference state is
    stress free).

    Example (the seed's toy body, which is not volume preserving, with `W = C (tr FᵀF − 3)`
    taken literally; it gives `s = (π/2) C q`):
    `StrainEnergy(lambda F: jnp.sum(F * F) - 3.0)`.

    Args:
        W: `W(F (3, 3)) -> scalar`, or `W(F, params)` when `params` is given.
        eta: damping time `η ≥ 0` [s].
        params: optional pytree of arrays passed to `W` (traced, differentiable).
    """

    W: Callable[..., Array] = static()
    eta: Array
    params: Any

    def __init__(self, W: Callable[..., Array], eta: Any = 0.0, params: Any = None) -> None:
        if not callable(W):
            raise TypeError(f"StrainEnergy: W must be callable W(F), got {type(W).__name__}")
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "eta", _check_eta("StrainEnergy", eta))
        object.__setattr__(self, "params", params)
        f = jax.ShapeDtypeStruct((3, 3), jnp.dtype(float))
        out = jax.eval_shape(self.density, f)
        if getattr(out, "shape", None) != ():
            name = getattr(W, "__name__", repr(W))
            raise ValueError(
                f"StrainEnergy: W {name!r} must return a scalar for F (3, 3), "
                f"got {getattr(out, 'shape', type(out).__name__)}"
            )

    def density(self, F: Array) -> Array:
        return self.W(F) if self.params is None else self.W(F, self.params)

    def small_strain(self, E: Array) -> Array:
        # d²/dt² W(I + t E) at t = 0
        eye = jnp.eye(3, dtype=E.dtype)

        def along(t: Array) -> Array:
            return jax.jvp(self.density, (eye + t * E,), (E,))[1]

        return jax.jvp(along, (jnp.zeros((), E.dtype),), (jnp.ones((), E.dtype),))[1]


@module
class Energy(Material):
    """A user elastic energy `U(q_B)` of the body coordinates, and optionally a Rayleigh
    function `R(q_B, q̇_B)` (non-negative, quadratic in `q̇_B`).

    Args:
        potential: `U(q) -> scalar`, or `U(q, params)`.
        rayleigh: `R(q, qd) -> scalar`, or `R(q, qd, params)`; `None` for no damping.
        params: optional pytree of arrays passed to both (traced, differentiable).
    """

    potential: Callable[..., Array] = static()
    rayleigh: Callable[..., Array] | None = static()
    params: Any

    def __init__(
        self,
        potential: Callable[..., Array],
        rayleigh: Callable[..., Array] | None = None,
        params: Any = None,
    ) -> None:
        if not callable(potential):
            raise TypeError(f"Energy: potential must be callable U(q), got {type(potential)}")
        if rayleigh is not None and not callable(rayleigh):
            raise TypeError(f"Energy: rayleigh must be callable R(q, qd), got {type(rayleigh)}")
        object.__setattr__(self, "potential", potential)
        object.__setattr__(self, "rayleigh", rayleigh)
        object.__setattr__(self, "params", params)

    def _args(self, *xs: Array) -> tuple:
        return xs if self.params is None else (*xs, self.params)

    def energy(self, body: SoftBody, q: Array) -> Array:
        return self.potential(*self._args(q))

    def dissipation(self, body: SoftBody, q: Array, qd: Array) -> Array:
        if self.rayleigh is None:
            return jnp.zeros((), q.dtype)
        return self.rayleigh(*self._args(q, qd))

    def validate(self, body: SoftBody) -> None:
        q = jax.ShapeDtypeStruct((body.n_q,), jnp.dtype(float))
        checks = [("potential", self.potential, (q,))]
        if self.rayleigh is not None:
            checks.append(("rayleigh", self.rayleigh, (q, q)))
        for label, fn, args in checks:
            out = jax.eval_shape(lambda *a, fn=fn: fn(*self._args(*a)), *args)
            if getattr(out, "shape", None) != ():
                name = getattr(fn, "__name__", repr(fn))
                raise ValueError(
                    f"Energy: {label} {name!r} must return a scalar for q ({body.n_q},), "
                    f"got {getattr(out, 'shape', type(out).__name__)}"
                )


@module
class CosseratRod(Material):
    """Cosserat rod energy of a strain-parameterized body (constant curvature, PCS, GVS):

        U = ½ ∫ (ξ − ξ*)ᵀ K (ξ − ξ*) dX,     R = (η/2) ∫ ξ̇ᵀ K ξ̇ dX,
        K = diag(E I₁, E I₂, G J, G A, G A, E A)

    in the order `ξ = (κ₁, κ₂, κ₃, ν₁, ν₂, ν₃)` (bending about `x1` and `x2`, twist, shears,
    elongation; `forces.md` lists the same moduli starting with the twist `G J`, which belongs
    to `κ₃`), with `ξ(X, q)` from the family's method
    `strain(X, q) -> (6,)` (or the `strain` argument), `X` the axial coordinate `x3`, and the
    rest strain `ξ*(X) = ξ(X, 0)` (the reference configuration is stress free).

    Section constants: by default from the body's volume, node by node,
    `A = ∫ dA`, `I₁ = ∫ x₂² dA`, `I₂ = ∫ x₁² dA`, `J = I₁ + I₂` (polar moment: the torsion
    constant of circular and annular sections), i.e. `U = ½ Σ_k w_k Σ_a D_a(x_k) e_a²` with
    `D = (E x₂², E x₁², G (x₁² + x₂²), G, G, E)`: tapered rods come out right. The axial
    integral is the rule's: exact for polynomial strains up to its degree; put the rule's
    nodes within the pieces of a piecewise-constant strain basis. Given
    `area`, `second_moments` and `polar`, `K` is constant and the axial integral uses the rule's
    weights divided by its mean section `V / L` (`L` = third coordinate of the volume's pivot;
    a `segment` rule has weights that sum to `L` and is used as is).

    Args:
        E, G: Young's and shear moduli [Pa] (positive).
        area: section area `A` [m²] (optional, with the two below).
        second_moments: `(I₁, I₂)` [m⁴], about `x1` (bending by `κ₁`) and `x2` (by `κ₂`).
        polar: torsion constant `J` [m⁴].
        eta: damping time `η ≥ 0` [s].
        strain: optional `strain(X, q) -> (6,)` for maps whose family has no `strain` method.
    """

    E: Array
    G: Array
    eta: Array
    section: Array | None
    strain: Callable[[Array, Array], Array] | None = static()

    def __init__(
        self,
        E: Any,
        G: Any,
        *,
        area: Any = None,
        second_moments: Any = None,
        polar: Any = None,
        eta: Any = 0.0,
        strain: Callable[[Array, Array], Array] | None = None,
    ) -> None:
        object.__setattr__(self, "E", as_scalar("CosseratRod: E", E, positive=True))
        object.__setattr__(self, "G", as_scalar("CosseratRod: G", G, positive=True))
        object.__setattr__(self, "eta", _check_eta("CosseratRod", eta))
        given = [v is not None for v in (area, second_moments, polar)]
        if any(given) and not all(given):
            raise ValueError(
                "CosseratRod: give all of area, second_moments and polar, or none (then they "
                "come from the body's volume)"
            )
        section = None
        if all(given):
            moments = jnp.asarray(second_moments, dtype=float)
            if moments.shape != (2,):
                raise ValueError(
                    f"CosseratRod: second_moments must be (I1, I2), got shape {moments.shape}"
                )
            a = as_scalar("CosseratRod: area", area, positive=True)
            j = as_scalar("CosseratRod: polar", polar, positive=True)
            i1 = as_scalar("CosseratRod: second_moments[0]", moments[0], positive=True)
            i2 = as_scalar("CosseratRod: second_moments[1]", moments[1], positive=True)
            section = jnp.stack([i1, i2, j, a, a, a])
        object.__setattr__(self, "section", section)
        if strain is not None and not callable(strain):
            raise TypeError(f"CosseratRod: strain must be callable, got {type(strain).__name__}")
        object.__setattr__(self, "strain", strain)

    def _strain_fn(self, body: SoftBody) -> Callable[[Array, Array], Array]:
        return self.strain if self.strain is not None else body.kinematics.strain

    def _rows(self, body: SoftBody) -> tuple[Array, Array]:
        """Axial coordinates `(n,)` of the strain evaluations and the stiffness per row
        `(n, 6)`: `Σ_{k ∈ row} w_k D(x_k)` (section from the volume) or `ℓ_row K`."""
        vol = body.volume
        pts, w = vol.points, vol.weights
        moduli = jnp.stack([self.E, self.E, self.G, self.G, self.G, self.E])
        if self.section is None:
            x1, x2 = pts[:, 0], pts[:, 1]
            one = jnp.ones_like(x1)
            per_node = jnp.stack([x2 * x2, x1 * x1, x1 * x1 + x2 * x2, one, one, one], -1)
            per_node = w[:, None] * per_node * moduli
        else:
            mean_section = jnp.sum(w) / vol.pivot[2]
            per_node = (w / mean_section)[:, None] * (moduli * self.section)
        if vol.n_axial is None:
            return pts[:, 2], per_node
        rows = pts[:, 2].reshape(vol.n_axial, -1)[:, 0]
        return rows, per_node.reshape(vol.n_axial, -1, 6).sum(1)

    def _strains(self, body: SoftBody, x3: Array, q: Array) -> Array:
        fn = self._strain_fn(body)
        return jax.vmap(fn, in_axes=(0, None))(x3, q)

    def energy(self, body: SoftBody, q: Array) -> Array:
        # U = ½ Σ_rows K_row · (ξ − ξ*)²
        x3, k = self._rows(body)
        e = self._strains(body, x3, q) - self._strains(body, x3, jnp.zeros_like(q))
        return 0.5 * jnp.sum(k * e * e)

    def dissipation(self, body: SoftBody, q: Array, qd: Array) -> Array:
        # R = (η/2) Σ_rows K_row · ξ̇²
        x3, k = self._rows(body)
        rate = jax.jvp(lambda x: self._strains(body, x3, x), (q,), (qd,))[1]
        return 0.5 * self.eta * jnp.sum(k * rate * rate)

    def validate(self, body: SoftBody) -> None:
        kin = body.kinematics
        name = getattr(kin, "name", "") or type(kin).__name__
        if self.strain is None and not callable(getattr(kin, "strain", None)):
            raise TypeError(
                f"CosseratRod: the body map {name!r} is not strain-parameterized (it has no "
                "method strain(X, q) -> (6,)); pass CosseratRod(..., strain=fn) or use a solid law"
            )
        x = jax.ShapeDtypeStruct((), jnp.dtype(float))
        q = jax.ShapeDtypeStruct((body.n_q,), jnp.dtype(float))
        out = jax.eval_shape(self._strain_fn(body), x, q)
        if getattr(out, "shape", None) != (6,):
            raise ValueError(
                f"CosseratRod: strain(X, q) of {name!r} must return (6,), "
                f"got {getattr(out, 'shape', type(out).__name__)}"
            )
        if self.section is not None and body.volume.pivot is None:
            raise ValueError(
                "CosseratRod: with given section constants the volume needs a pivot (0, 0, L) "
                "to know the rod length"
            )
        if self.section is None and is_concrete(body.volume.points):
            pts = np.asarray(body.volume.points)
            if not np.any(pts[:, 0] ** 2) or not np.any(pts[:, 1] ** 2):
                raise ValueError(
                    "CosseratRod: the volume has no cross-section extent (all nodes on the "
                    "axis, e.g. a segment rule); give area=, second_moments= and polar="
                )


def stiffness_matrix(robot: Robot, q: Array) -> Array:
    """Stiffness matrix `K(q) = ∂s_elastic/∂q = ∂²U/∂q²` `(n_q, n_q)`, symmetric.

    `U` is the elastic energy of the bodies' materials and the joint springs
    (`softrigid.elastic_energy`); gravity is not included (see `softrigid.statics` for the
    Jacobian of the full static balance).
    """
    robot = _robot(robot)
    (q,) = _states(robot, q=q)
    return _stiffness_jit(robot, q)


@jax.jit
def _stiffness_jit(robot: Robot, q: Array) -> Array:
    return jax.hessian(lambda x: elastic_energy(robot, x))(q)
