"""Export of deformed robots to ParaView-readable files, and surfaces for plotting.

Every body is drawn from a mesh of its reference volume, mapped to the world by
`softrigid.world_points` (the body's map `f(x, q_B)` and the chain's placement):

- a `meshes` entry given for the link (a `meshio.Mesh`, a file path or a `ReferenceMesh`; any
  cell types, e.g. an STL surface for a rigid link), in the body's material coordinates (for a
  `RigidBody`, its proximal frame);
- else, for a `SoftBody`, its volume's own mesh (`quadrature.from_mesh`) or a mesh of its
  built-in geometry from `softrigid.meshing` (`cylinder`, `tube`, `box`; a `segment` is drawn
  as a polyline on the axis);
- else the body is skipped: a `RigidBody` carries only mass, centre of mass and inertia, so it
  is drawn only from a mesh you give (a `SoftBody` on a rule of unknown geometry is skipped
  with a warning).

Files (all through meshio, all ParaView-readable; bodies merged into one mesh with the cell
field `link` and the point field `material_coordinates`):

- `write_state(path, robot, q)`: one configuration, any meshio format by suffix (`.vtu`).
- `write_trajectory(path, robot, t, q)`: a time series. `.pvd`: one compressed binary `.vtu`
  per frame (in the folder `<stem>/` next to the `.pvd`), the geometry moves. `.xdmf`: one
  file, the reference geometry (the robot at `q = 0`) with the point field `displacement`
  per step (apply ParaView's *Warp By Vector*) and `position`; data are stored as XML text
  (`data_format="HDF"` needs `h5py`).

The meshes and their placement live in `_bodies`, the files in `_files`.
"""

from ._bodies import body_meshes, deformed_meshes, surface
from ._files import read_trajectory, write_state, write_trajectory

__all__ = [
    "body_meshes",
    "deformed_meshes",
    "read_trajectory",
    "surface",
    "write_state",
    "write_trajectory",
]
