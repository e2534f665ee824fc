"""Reference volumes and quadrature rules (points and volume weights in material coordinates).

Gauss product rules on the built-in volumes (`segment`, `box`, `cylinder`, `tube`), and rules
over tetrahedral meshes from any file meshio reads (`from_mesh`); `contains` tests whether
material points lie in a rule's reference volume; `compress` (polynomial moments) and
`empirical` (sampled integrands) reduce a rule to a few of its nodes.
"""

from ._compress import CompressionInfo, compress
from ._distal import distal_points
from ._empirical import EmpiricalInfo, empirical
from ._geometry import contains
from ._mesh import from_mesh, tetrahedron
from ._reference_mesh import ReferenceMesh
from ._rule import GEOMETRIES, QuadratureRule
from ._shapes import box, cylinder, segment, tube
from ._tetra import MAX_DEGREE, tetrahedron_rule

__all__ = [
    "GEOMETRIES",
    "MAX_DEGREE",
    "CompressionInfo",
    "EmpiricalInfo",
    "QuadratureRule",
    "ReferenceMesh",
    "box",
    "compress",
    "contains",
    "cylinder",
    "distal_points",
    "empirical",
    "from_mesh",
    "segment",
    "tetrahedron",
    "tetrahedron_rule",
    "tube",
]
