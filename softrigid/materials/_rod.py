"""The Cosserat rod energy of strain-parameterized bodies (constant curvature, PCS, GVS)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .._cache import jit
from .._checks import as_scalar
from .._module import is_concrete, module, static
from ..kinematics._base import kinematics_name, trace_user
from ._base import Material, check_eta

if TYPE_CHECKING:
    from .._soft_body import SoftBody

__all__ = ["CosseratRod"]


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
        object.__setattr__(self, "eta", check_eta("CosseratRod", eta))
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
        name = kinematics_name(kin)
        if self.strain is None and not callable(getattr(kin, "strain", None)):
            raise TypeError(
                f"CosseratRod: the body map {name!r} is not strain-parameterized (it has no "
                "method strain(X, q) -> (6,)); pass CosseratRod(..., strain=fn) or use a solid law"
            )
        x = jax.ShapeDtypeStruct((), jnp.dtype(float))
        q = jax.ShapeDtypeStruct((body.n_q,), jnp.dtype(float))
        out = trace_user(f"CosseratRod: strain of {name!r}", "X or q", self._strain_fn(body), x, q)
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
        self._check_rest(body, name)

    def _check_rest(self, body: SoftBody, name: str) -> None:
        """A `ValueError` where the strain at rest `ξ*(X) = ξ(X, 0)` is not finite at an axial
        node (`U` is NaN there, while its gradient, in which a constant `ξ*` cancels, looks
        finite); a warning when the axial rule cannot resolve the strain basis: the stiffness
        at rest `K₀ = Σ_rows (∂ξ/∂q)ᵀ diag(K_row) (∂ξ/∂q)` is then singular, and the
        coordinates in its null space have no restoring force (an equilibrium is not
        isolated)."""
        if not is_concrete(self, body):
            return
        x3, k = self._rows(body)
        rest, jac = (np.asarray(a) for a in _rest_strain(self, body, x3))  # (R, 6), (R, 6, n)
        bad = ~np.isfinite(rest)
        if bad.any():
            row, comp = np.argwhere(bad)[0]
            raise ValueError(
                f"CosseratRod: strain(X, q) of {name!r} is not finite at rest (q = 0): component "
                f"{comp} is {rest[row, comp]} at X = {float(x3[row]):.6g}"
            )
        if body.n_q == 0:
            return
        weighted = (np.sqrt(np.asarray(k))[:, :, None] * jac).reshape(-1, body.n_q)
        sv = np.linalg.svd(weighted, compute_uv=False)
        rank = int(np.sum(sv > 1e-10 * sv[0])) if sv.size and sv[0] > 0 else 0
        if rank < body.n_q:
            warnings.warn(
                f"CosseratRod: the rod energy of {name!r} is integrated at {x3.shape[0]} axial "
                f"nodes, too few to resolve its {body.n_q} strain coordinates: the stiffness at "
                f"rest has rank {rank}, so {body.n_q - rank} coordinate(s) have no restoring "
                "force. Use more axial quadrature nodes (n_axial) or a smaller strain basis.",
                stacklevel=4,
            )


@jit
def _rest_strain(material: CosseratRod, body: SoftBody, x3: Array) -> tuple[Array, Array]:
    """`ξ(X, 0)` `(R, 6)` and `∂ξ/∂q` at `q = 0` `(R, 6, n)` at the axial coordinates `x3`."""

    def twice(q: Array) -> tuple[Array, Array]:
        xi = material._strains(body, x3, q)
        return xi, xi

    jac, rest = jax.jacfwd(twice, has_aux=True)(jnp.zeros(body.n_q, x3.dtype))
    return rest, jac
