"""Generate the reference volumes of seed 003's robots as mesh files (run from anywhere).

    python meshes/generate.py

writes `helicoid.vtu` and `gripper.vtu` next to this script (VTK XML unstructured grids, linear
tetrahedra, metres) with softrigid's own structured mesher, so neither this script nor the
files need an external mesh generator. The geometry choices are documented in `README.md`.
"""

from __future__ import annotations

from pathlib import Path

import meshio
import numpy as np

from softrigid import meshing

HERE = Path(__file__).resolve().parent

# Trimmed helicoid segment (Simulation 1): length and radius from the paper.
HELICOID_LENGTH = 0.10  # [m]
HELICOID_RADIUS = 0.02  # [m]
HELICOID_THICKNESS = 0.008  # blade thickness T [m]
HELICOID_TURNS = 1.0  # turns of the blade over the segment
HELICOID_DIVISIONS = (8, 2, 28)  # along the blade, across it, layers: 2,688 tetrahedra

# Soft gripper (Simulation 2): a hollow cylinder whose bore is the air chamber.
GRIPPER_LENGTH = 0.05  # [m]
GRIPPER_RADIUS = 0.02  # outer radius = the soft arm's radius [m]
CHAMBER_RADIUS = 0.012  # [m]
CAP_LENGTH = 0.0  # a solid cap closing the chamber at the distal end (0: none, see README)
GRIPPER_RINGS = (0.0, 0.006, 0.012, 0.016, 0.020)  # section rings [m] (one at the chamber wall)
GRIPPER_ANGULAR = 30  # sides of the outer polygon
GRIPPER_LAYER = 0.004  # target layer height [m]


def helicoid(
    radius: float = HELICOID_RADIUS,
    length: float = HELICOID_LENGTH,
    thickness: float = HELICOID_THICKNESS,
    turns: float = HELICOID_TURNS,
    divisions: tuple[int, int, int] = HELICOID_DIVISIONS,
) -> meshio.Mesh:
    """A helicoidal blade trimmed to the cylinder `r ≤ radius`, `x3 ∈ [0, length]`.

    Section at height `x3`: the strip `|y| ≤ thickness/2` across a diameter, trimmed by the
    circle (its ends are arcs of radius `radius`), rotated about `x3` by `2π turns x3/length`.
    The blade's mid-surface is the helicoid `(s cos φ, s sin φ, length φ/(2π turns))`.
    """
    n_along, n_across, n_layers = divisions
    pts, tri = meshing.rectangle_section(2.0 * radius, thickness, n_along, n_across)
    # trim: the strip's ends go onto the circle, x1 → x1/radius · √(radius² − x2²)
    pts[:, 0] *= np.sqrt(radius**2 - pts[:, 1] ** 2) / radius
    z = np.linspace(0.0, length, n_layers + 1)
    return meshing.extrude(pts, tri, z, twist=2.0 * np.pi * turns / length)


def gripper(cap_length: float = CAP_LENGTH) -> meshio.Mesh:
    """A cylinder with a coaxial cylindrical air chamber open at `x3 = 0`, closed at the
    distal end by a solid cap of `cap_length` (none by default: a tube, the chamber is the
    bore)."""
    pts, tri, band = meshing.disk_section(GRIPPER_RINGS, GRIPPER_ANGULAR)
    chamber = GRIPPER_LENGTH - cap_length
    z = np.linspace(0.0, chamber, round(chamber / GRIPPER_LAYER) + 1)
    if cap_length > 0:
        cap = np.linspace(chamber, GRIPPER_LENGTH, max(1, round(cap_length / GRIPPER_LAYER)) + 1)
        z = np.concatenate([z, cap[1:]])
    inside = np.asarray(GRIPPER_RINGS)[band + 1] <= CHAMBER_RADIUS + 1e-12  # bands in the chamber
    mid = 0.5 * (z[:-1] + z[1:])
    keep = ~(inside[None, :] & (mid < chamber)[:, None])
    return meshing.extrude(pts, tri, z, keep=keep)


def main() -> None:
    for name, mesh in (("helicoid", helicoid()), ("gripper", gripper())):
        path = HERE / f"{name}.vtu"
        meshio.write(path, mesh)
        cells = mesh.cells_dict["tetra"]
        volume = meshing.tet_volumes(mesh.points, cells).sum()
        print(
            f"{path.name}: {len(mesh.points)} nodes, {len(cells)} tetrahedra, V = {volume:.6e} m³"
        )


if __name__ == "__main__":
    main()
