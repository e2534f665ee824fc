"""softrigid: dynamics of serial robots made of rigid and soft bodies."""

from . import kinematics, quadrature

__all__ = ["kinematics", "quadrature"]
