"""Built-in body kinematics families `f(x, q)` and the interface user maps implement.

Families: `Rigid`, `PlanarConstantCurvature`, `ConstantCurvature3D`, `PlanarPCS`,
`SpatialPCS`, `Cosserat` (GVS rod, with the strain bases `PiecewiseConstant`, `Monomial`,
`Legendre`, `Chebyshev` or any callable), and the locally volume-preserving primitives of
`softrigid.kinematics.lvp`.
"""

from . import lvp
from ._base import FunctionKinematics, Kinematics
from ._bases import (
    Chebyshev,
    FunctionBasis,
    Legendre,
    Monomial,
    PiecewiseConstant,
    StrainBasis,
)
from ._cc3d import ConstantCurvature3D
from ._cosserat import Cosserat
from ._pcs import PlanarPCS
from ._pcs3d import SpatialPCS
from ._planar_cc import PlanarConstantCurvature
from ._rigid import Rigid

__all__ = [
    "Chebyshev",
    "ConstantCurvature3D",
    "Cosserat",
    "FunctionBasis",
    "FunctionKinematics",
    "Kinematics",
    "Legendre",
    "Monomial",
    "PiecewiseConstant",
    "PlanarConstantCurvature",
    "PlanarPCS",
    "Rigid",
    "SpatialPCS",
    "StrainBasis",
    "lvp",
]
