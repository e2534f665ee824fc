"""Strain bases `Φ(X) -> (6, n)` of geometric-variable-strain (GVS) rods.

A rod's strain is `ξ(X) = Φ(X) q + ξ*(X)` with `ξ = (κ1, κ2, κ3, ν1, ν2, ν3)` (angular first,
`bodies.md`). The built-in bases put one family of scalar functions of the normalized
coordinate `s = X / L` on each selected strain component:

    Φ[a, cols(a)] = (b_0(s), …, b_{d_a}(s)),      every other entry 0,

with the coordinates ordered component by component (all modes of the first selected
component, then the next, …). Components are selected by index `0…5` or by name:
`"bend1"` (κ1), `"bend2"` (κ2), `"twist"` (κ3), `"shear1"` (ν1), `"shear2"` (ν2),
`"axial"` (ν3, elongation), and the groups `"bend"` (κ1, κ2) and `"shear"` (ν1, ν2).
For example `Legendre(L, 2, strains=("bend", "axial"))` gives a rod that bends in 3D and
stretches, with quadratic strain profiles (`n = 9`).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .._checks import as_count, as_float
from .._module import module, static
from ._base import trace_user, user_array
from ._rod import check_length

__all__ = [
    "Chebyshev",
    "FunctionBasis",
    "Legendre",
    "Monomial",
    "PiecewiseConstant",
    "StrainBasis",
    "as_basis",
]

STRAIN_NAMES: dict[str, tuple[int, ...]] = {
    "bend1": (0,),
    "bend2": (1,),
    "twist": (2,),
    "shear1": (3,),
    "shear2": (4,),
    "axial": (5,),
    "bend": (0, 1),
    "shear": (3, 4),
}


class StrainBasis(abc.ABC):
    """A strain basis: `Φ(X) (6, n)` at the axial coordinate `X` (scalar).

    `breakpoints` are the fractions of the length (in `(0, 1)`) where `Φ` may jump; a rod
    integrator puts a step boundary there so that its order is not lost.
    """

    n: int
    breakpoints: tuple[float, ...] = ()

    @abc.abstractmethod
    def __call__(self, X: Array) -> Array:
        """`Φ(X)` `(6, n)`."""


def _components(cls: str, strains: Any, degree: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Expand strain names/indices (and one degree per entry, or one for all) into components."""
    if isinstance(strains, (str, int, np.integer)):
        strains = (strains,)
    if not isinstance(strains, (tuple, list, np.ndarray)):
        raise TypeError(
            f"{cls}: strains must be a name, an index 0..5 or a sequence of them, got {strains!r}"
        )
    strains = tuple(strains)
    if not strains:
        raise ValueError(f"{cls}: strains must select at least one component")
    if isinstance(degree, (int, np.integer)) and not isinstance(degree, bool):
        degrees = (int(degree),) * len(strains)
    elif isinstance(degree, (tuple, list, np.ndarray)):
        degrees = tuple(degree)
    else:
        raise ValueError(
            f"{cls}: degree must be a non-negative integer, or one per entry of strains, got "
            f"{degree!r}"
        )
    if len(degrees) != len(strains):
        raise ValueError(f"{cls}: give one degree per entry of strains {strains}, got {degree!r}")
    comps: list[int] = []
    degs: list[int] = []
    for entry, d in zip(strains, degrees):
        if isinstance(entry, str):
            if entry not in STRAIN_NAMES:
                raise ValueError(
                    f"{cls}: unknown strain {entry!r}; use an index 0..5 or one of "
                    f"{sorted(STRAIN_NAMES)}"
                )
            idx = STRAIN_NAMES[entry]
        elif (
            isinstance(entry, (int, np.integer)) and not isinstance(entry, bool) and 0 <= entry < 6
        ):
            idx = (int(entry),)
        else:
            raise ValueError(f"{cls}: strain components are indices 0..5 or names, got {entry!r}")
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 0:
            raise ValueError(f"{cls}: degrees must be non-negative integers, got {d!r}")
        for a in idx:
            if a in comps:
                raise ValueError(f"{cls}: strain component {a} selected twice in {strains}")
            comps.append(a)
            degs.append(int(d))
    return tuple(comps), tuple(degs)


@module
class _Separable(StrainBasis):
    """Basis with the same scalar family `b_k(s)` on each selected component."""

    length: Array
    components: tuple[int, ...] = static()
    degrees: tuple[int, ...] = static()
    n: int = static()

    def __init__(self, length: Any, degree: Any = 1, strains: Any = ("bend", "axial")) -> None:
        cls = type(self).__name__
        comps, degs = _components(cls, strains, degree)
        object.__setattr__(self, "length", check_length(cls, length))
        object.__setattr__(self, "components", comps)
        object.__setattr__(self, "degrees", degs)
        object.__setattr__(self, "n", sum(d + 1 for d in degs))

    @abc.abstractmethod
    def _functions(self, s: Array, count: int) -> Array:
        """`(b_0(s), …, b_{count−1}(s))` `(count,)`."""

    def __call__(self, X: Array) -> Array:
        # Φ = mask ⊙ b[col], with the static placement of each column
        rows = np.zeros((6, self.n))
        col_fn = np.zeros(self.n, dtype=int)
        j = 0
        for a, d in zip(self.components, self.degrees):
            rows[a, j : j + d + 1] = 1.0
            col_fn[j : j + d + 1] = np.arange(d + 1)
            j += d + 1
        b = self._functions(jnp.asarray(X) / self.length, max(self.degrees) + 1)
        return jnp.asarray(rows, dtype=b.dtype) * b[col_fn][None, :]


@module
class Monomial(_Separable):
    """Monomials `b_k(s) = s^k`, `k = 0…d`, `s = X / L`, on the selected strain components.

    Args:
        length: rod length `L`.
        degree: highest power `d` (one for all selected entries, or one per entry).
        strains: components (indices or names, see the module docstring).
    """

    def _functions(self, s: Array, count: int) -> Array:
        out = [jnp.ones_like(s)]
        for _ in range(1, count):
            out.append(out[-1] * s)
        return jnp.stack(out)


@module
class Legendre(_Separable):
    """Shifted Legendre polynomials `b_k(s) = P_k(2s − 1)`, `k = 0…d`, `s = X / L`
    (orthogonal on `[0, L]`), on the selected strain components.

    Args: as `Monomial`.
    """

    def _functions(self, s: Array, count: int) -> Array:
        # (k + 1) P_{k+1} = (2k + 1) t P_k − k P_{k−1}
        t = 2.0 * s - 1.0
        out = [jnp.ones_like(t), t][:count]
        for k in range(1, count - 1):
            out.append(((2 * k + 1) * t * out[k] - k * out[k - 1]) / (k + 1))
        return jnp.stack(out)


@module
class Chebyshev(_Separable):
    """Shifted Chebyshev polynomials of the first kind `b_k(s) = T_k(2s − 1)`, `k = 0…d`,
    `s = X / L`, on the selected strain components.

    Args: as `Monomial`.
    """

    def _functions(self, s: Array, count: int) -> Array:
        # T_{k+1} = 2 t T_k − T_{k−1}
        t = 2.0 * s - 1.0
        out = [jnp.ones_like(t), t][:count]
        for k in range(1, count - 1):
            out.append(2.0 * t * out[k] - out[k - 1])
        return jnp.stack(out)


@module
class PiecewiseConstant(_Separable):
    """Piecewise-constant strain (PCS): `n_pieces` equal pieces of `[0, L]`, the indicator of
    each piece on the selected strain components (`b_k(s) = 1` for `k ≤ n_pieces s < k + 1`,
    the last piece closed at `s = 1`; points beyond the ends take the end pieces).

    Args:
        length: rod length `L`.
        n_pieces: number of pieces.
        strains: components (indices or names, see the module docstring).
    """

    n_pieces: int = static()
    breakpoints: tuple[float, ...] = static()

    def __init__(
        self, length: Any, n_pieces: int = 1, strains: Any = ("bend", "shear", "twist", "axial")
    ) -> None:
        n_pieces = as_count("PiecewiseConstant: n_pieces", n_pieces)
        super().__init__(length, n_pieces - 1, strains)
        object.__setattr__(self, "n_pieces", n_pieces)
        object.__setattr__(self, "breakpoints", tuple(k / n_pieces for k in range(1, n_pieces)))

    def _functions(self, s: Array, count: int) -> Array:
        piece = jnp.clip(jnp.floor(s * self.n_pieces), 0, self.n_pieces - 1)
        return (jnp.arange(count) == piece).astype(jnp.result_type(s, float))


@module
class FunctionBasis(StrainBasis):
    """A user basis: any callable `fn(X) -> (6, n)` (its parameters are constants; subclass
    `StrainBasis` as a `@module` to make them traced leaves).

    Args:
        fn: the basis function.
        n: number of columns (inferred from `fn` when omitted).
        breakpoints: fractions of the length where `fn` jumps (step boundaries of the rod
            integrator).
        name: shown in error messages.
    """

    fn: Callable[[Array], Array] = static()
    n: int = static()
    breakpoints: tuple[float, ...] = static()
    name: str = static()

    def __init__(
        self,
        fn: Callable[[Array], Array],
        n: int | None = None,
        breakpoints: Sequence[float] = (),
        name: str = "",
    ) -> None:
        if not callable(fn):
            raise TypeError(f"FunctionBasis: fn must be callable, got {type(fn).__name__}")
        name = name or getattr(fn, "__name__", repr(fn))
        scalar = jax.ShapeDtypeStruct((), jnp.dtype(float))
        out = trace_user(f"strain basis {name!r}", "X", fn, scalar)
        shape = getattr(out, "shape", None)
        if shape is None or len(shape) != 2 or shape[0] != 6:
            raise ValueError(
                f"strain basis {name!r} must return a (6, n) matrix for a scalar X, got {shape}"
            )
        if isinstance(n, bool) or (n is not None and n != shape[1]):
            raise ValueError(f"strain basis {name!r} returns {shape[1]} columns, not n={n}")
        user_array(f"strain basis {name!r}", out)  # real floats (a complex basis leaked)
        given = np.atleast_1d(np.asarray(as_float(breakpoints, "FunctionBasis: breakpoints")))
        points = tuple(float(b) for b in given)
        if any(not 0.0 < b < 1.0 for b in points):
            raise ValueError(f"FunctionBasis: breakpoints must lie in (0, 1), got {points}")
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "n", int(shape[1]))
        object.__setattr__(self, "breakpoints", tuple(sorted(points)))
        object.__setattr__(self, "name", name)

    def __call__(self, X: Array) -> Array:
        return self.fn(X)


def as_basis(basis: Any) -> StrainBasis:
    """`basis` as a `StrainBasis` (plain callables are wrapped in `FunctionBasis`)."""
    if isinstance(basis, StrainBasis):
        return basis
    if not callable(basis):
        raise TypeError(
            f"basis must be a StrainBasis or a callable X -> (6, n), got {type(basis).__name__}"
        )
    return FunctionBasis(basis)
