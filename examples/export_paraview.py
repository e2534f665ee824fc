"""A rigid link carrying two trimmed-helicoid segments (meshed bodies), exported for ParaView.

Run:  python examples/export_paraview.py [output-folder]

Simulates 1 s of the arm swinging down under gravity and writes to the output folder (default
`out/export_paraview`):
- `arm.pvd` + `arm/arm_*.vtu`: the time series with moving geometry (File > Open in ParaView);
- `arm.xdmf`: the same as one file, reference geometry plus `displacement` (Warp By Vector);
- `rest.vtu`: the robot at rest; `snapshots.png`: the boundary surfaces at a few instants.
"""

from __future__ import annotations

import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402
import softrigid.io  # noqa: E402
from softrigid import joints, kinematics, materials, meshing, quadrature  # noqa: E402

MESHES = Path(__file__).resolve().parents[1] / "meshes"
LINK_LENGTH = 0.2


def build_robot() -> tuple[sr.Robot, dict[int, object]]:
    """A 0.2 m, 0.5 kg link on a damped revolute joint about y (starting horizontal), then two
    helicoid segments (`meshes/helicoid.vtu`, one node per tetrahedron) with 3D
    constant-curvature kinematics and the Cosserat rod law with the seed's Simulation 1
    material (density 960 kg/m³, E = 6 C = 1.07 MPa, G = E/3). The damping time is 1 ms, not
    the seed's 50 ms: explicit RK4 needs `η ω_max² dt` below about 2.8, and the stiffest mode
    (elongation) has `ω_max ≈ 940 rad/s`.

    Returns the robot and the mesh drawn for the rigid link (a box, in its proximal frame)."""
    rigid = sr.RigidBody(
        mass=0.5,
        com=(0.0, 0.0, LINK_LENGTH / 2),
        inertia=jnp.diag(jnp.array([1.0, 1.0, 0.02]) * 0.5 * LINK_LENGTH**2 / 12),
        distal=(jnp.eye(3), jnp.array([0.0, 0.0, LINK_LENGTH])),
    )
    helicoid = quadrature.from_mesh(MESHES / "helicoid.vtu", degree=1)
    segment = sr.SoftBody(
        kinematics.ConstantCurvature3D(0.1),
        helicoid,
        density=960.0,
        material=materials.CosseratRod(E=1.07e6, G=1.07e6 / 3, eta=1e-3),
    )
    horizontal = (jnp.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]), jnp.zeros(3))
    base = joints.Revolute(axis=(0.0, 1.0, 0.0), origin=horizontal, damping=0.02)
    links = [
        sr.Link(base, rigid),
        sr.Link(joints.Fixed(), segment),
        sr.Link(joints.Fixed(), segment),
    ]
    link_mesh = meshing.box((0.03, 0.03, LINK_LENGTH), (1, 1, 4))
    return sr.Robot(links), {0: link_mesh}


def plot_snapshots(robot: sr.Robot, traj: sr.Trajectory, meshes: dict, path: Path) -> None:
    """Boundary surfaces (`softrigid.io.surface`) of all bodies at five instants, one colour
    per instant (darker later)."""
    fig = plt.figure(figsize=(6, 5))
    ax = fig.add_subplot(projection="3d")
    instants = np.linspace(0, len(traj.t) - 1, 5).astype(int)
    for shade, k in zip(np.linspace(0.35, 0.95, instants.size), instants, strict=True):
        colour = plt.cm.viridis(1.0 - shade)
        for mesh in softrigid.io.deformed_meshes(robot, traj.q[k], meshes):
            s = softrigid.io.surface(mesh)
            ax.plot_trisurf(
                *s.points.T, triangles=s.cells_dict["triangle"], color=colour, alpha=0.6
            )
        # a proxy line for the legend (3-D surfaces take no legend entry of their own)
        ax.plot([], [], color=colour, label=f"t = {traj.t[k]:.2f} s")
    ax.legend(loc="upper left", fontsize="small")
    ax.set(xlabel="x [m]", ylabel="y [m]", zlabel="z [m]")
    ax.set(xlim=(-0.45, 0.45), ylim=(-0.1, 0.1), zlim=(-0.45, 0.05), yticks=[-0.1, 0.0, 0.1])
    ax.set_box_aspect((0.9, 0.2, 0.5))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(out: Path) -> None:
    robot, meshes = build_robot()
    q0 = jnp.zeros(robot.n_q)
    start = time.perf_counter()
    traj = sr.simulate(robot, q0, jnp.zeros(robot.n_q), t_final=1.0, dt=1e-3, method="rk4")
    jax.block_until_ready(traj.q)
    print(f"simulated {len(traj.t) - 1} RK4 steps in {time.perf_counter() - start:.1f} s")
    out.mkdir(parents=True, exist_ok=True)
    frames = slice(None, None, 20)  # 50 frames per second
    softrigid.io.write_trajectory(out / "arm.pvd", robot, traj.t[frames], traj.q[frames], meshes)
    softrigid.io.write_trajectory(out / "arm.xdmf", robot, traj.t[frames], traj.q[frames], meshes)
    softrigid.io.write_state(out / "rest.vtu", robot, q0, meshes)
    plot_snapshots(robot, traj, meshes, out / "snapshots.png")
    print(f"wrote arm.pvd (+ arm/), arm.xdmf, rest.vtu and snapshots.png to {out.resolve()}")


if __name__ == "__main__":
    from _cli import folder_main  # beside this script

    sr.fast_compilation()  # XLA:CPU compiles 2-2.7x faster (README, "Fast start")
    sr.enable_compilation_cache()  # a later run loads the compiled programs (README, "Fast start")
    folder_main(main, __doc__.splitlines()[0], "out/export_paraview")
