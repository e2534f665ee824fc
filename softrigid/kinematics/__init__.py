"""Built-in body kinematics families `f(x, q)` and the interface user maps implement."""

from ._base import FunctionKinematics, Kinematics
from ._planar_cc import PlanarConstantCurvature
from ._rigid import Rigid

__all__ = ["Kinematics", "FunctionKinematics", "Rigid", "PlanarConstantCurvature"]
