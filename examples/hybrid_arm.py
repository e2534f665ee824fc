"""Seed 003, Simulation 2: a UR10e carrying a tendon-driven soft arm and a pressurized gripper.

Run:  python examples/hybrid_arm.py [--t-final T] [--out DIR] [--dt DT] [--repeat]

Eight bodies, n = 11 coordinates `q = (θ1..θ6, q7, q8, q9, q10, q11)`, gravity along −z:

- UR10e (links 0–5): Universal Robots' published DH and dynamic parameters ("DH Parameters for
  calculations of kinematics and dynamics", universal-robots.com, UR10e table: a, d, α, mass,
  centre of mass and inertia matrix of each link in its DH frame; the same values ship with
  ROS-Industrial's `ur_description`). Joint i turns about `z_{i−1}`; body i runs from there to
  DH frame i, `T = Rz(θ) Tz(d) Tx(a) Rx(α)`. The printed inertia of wrist 3,
  diag(0.0000, 0.0004, 0.0003) kg m², violates the triangle inequality `I_xx + I_zz ≥ I_yy` of a
  real body (a rounding artefact): its `I_xx` is taken as 0.0001 kg m².
- Soft arm (link 6, q7..q9) on the flange: constant curvature with elongation
  (`kinematics.ConstantCurvature3D`, the seed's piecewise-constant-strain Cosserat rod with
  strains κ1, κ2, ν3; `q7, q8` the bending-angle vector [rad], `q9` the elongation [m]),
  r = 0.02 m, L = 0.3 m, ρ = 1070 kg/m³, rod law `K = diag(E I, E I, ·, ·, ·, E A)` with the
  seed's elastic coefficient 0.17857 MPa read as the shear modulus G of E = 0.5 MPa, ν = 0.4
  (G = E / (2 (1 + ν)); only E enters bending and elongation), damping time 0.1 s. Three
  tendons at 0°, 120°, 240°, 0.015 m from the backbone, anchored at the arm's tip.
- Gripper (link 7, q10, q11): the seed's LVP stretch + source with modes `(x3/L)² q`
  (`lvp.gripper`, Table 5) on `meshes/gripper.vtu` (0.05 m, 12 mm chamber bore), its degree-2
  mesh rule (13,824 nodes) reduced to an empirical cubature (`quadrature.empirical`, 168 nodes)
  fitted to the body's integrals (`SoftBody.integrals`) at `GRIPPER_SAMPLES` seeded states of
  its range (`GRIPPER_RANGE`): in this robot its rows of `M` and the inverse dynamics are
  within 2e-11 of the mesh rule's, where the degree-4 compression used before (35 nodes) was
  3e-2 and 9e-2 off; the fit takes about 25 s, kept with the compilation cache; incompressible
  neo-Hookean `W = C (tr FᵀF − 3)` with the seed's elastic coefficient as C = 22.2 MPa,
  Kelvin–Voigt 0.05 s. Its input is the chamber's gauge pressure (`PressureChamber`,
  `A = ∂V_c/∂q`, `V_c` the volume of the mapped bore, bounded by the chamber's top and lateral
  surfaces: `π r² L + π ∫₀^Λ(L) g dz`; the stretch alone keeps it, its top rising as its wall
  contracts, so the pressure drives the source and, through it, the stretch).

Control (`schedule = (3, 5)` s, seed Sec. 7.2). Phase i [0, 3): the UR joints track a cubic
rest-to-rest motion from 0 to `UR_TARGET` by collocated PFBL, K_P = 100 I, K_D = 10 I, the soft
bodies passive. Phase ii [3, 5): the soft arm is regulated to `ARM_TARGET` = (−π/2, π/4, −0.02)
(q7, q8 [rad], q9 [m]: a bend of 1.76 rad towards ψ = atan2(q8, q7), shortened by 2 cm) by PD
with gravity and elastic compensation `u = A⁻¹ [K_P e − K_D q̇ + g + s(q, 0)]` on its three
tendons. The seed gives no gains: `ARM_KP`, `ARM_KD` place the bending modes near 10 rad/s,
critically damped, and the elongation (damped by the rod itself, η E A / L ≈ 210 N s/m) at a
time constant of about 0.1 s. Phase iii [5, 6]: 2 MPa feed-forward pressure. The UR's PFBL and
the arm's PD stay on after their phases (holding their targets), and the PFBL treats the other
inputs as known forces (`bias − A_o u_o`), so `ë + K_D ė + K_P e = 0` holds for the UR in every
phase.

Integrator, chosen by measurement: scipy's BDF with error control (`integrators.BDF`,
`rtol` 1e-6, `atol` 1e-8 on `(q, q̇)`; `--dt` is the output grid) and central differences of
the compiled closed loop for its Jacobian (`jacobian="central_differences"`, 44 evaluations of
`ẏ` per Jacobian). The gripper is stiff: linearized at rest its source mode has damping/mass
≈ 5e7 1/s (Kelvin–Voigt of a 44 MPa shear modulus on a 40 g body), so RK4 would need steps
below 6e-8 s; BDF's implicit steps follow the slow motion instead (840 steps and 63 Jacobians
for the 6 s) and restart at the phase switches, where the law jumps
(`Controller.switch_times`). The Jacobian must see the PFBL's dependence on `M`, the bias and
`A` (the law cancels the model's dynamics): the closed loop's forward-mode Jacobian
(`jacobian="autodiff"`, 732 steps and 26 Jacobians, the same trajectory to 2e-8) does, but
its program traces for 20 s and compiles for about a minute more (the example took 155 s, 65 s
with the compilation cache filled); central differences reuse the `ẏ` program: 48–50 s,
29–34 s with the cache filled (README, "Seed 003, Simulation 2").
Scipy's forward differences stall it (1,245 Jacobians by t = 0.41 s, measured).
Generalized-α at 2.5 ms, an earlier choice, gave the same phase errors to their digits but
compiles one program holding the whole Newton iteration (about 9 minutes, mostly tracing).

Writes to `--out` (default `out/hybrid_arm`): `coordinates.png`, `inputs.png`,
`snapshots.png`, `robot.pvd` (+ `robot/`: the whole robot for ParaView) and `summary.json`.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402
import softrigid.io  # noqa: E402
from softrigid import control, joints, kinematics, materials, meshing, quadrature  # noqa: E402
from softrigid.actuators import JointMotor, PressureChamber, Tendon  # noqa: E402
from softrigid.integrators import BDF  # noqa: E402
from softrigid.kinematics import lvp  # noqa: E402

MESHES = Path(__file__).resolve().parents[1] / "meshes"
GRAVITY = (0.0, 0.0, -9.81)
# UR10e, Universal Robots' table: a [m], d [m], α [rad], mass [kg], centre of mass [m] and
# inertia about it [kg m²] (xx, yy, zz, xy, xz, yz), both in DH frame i.
UR10E = (
    (
        0.0,
        0.1807,
        np.pi / 2,
        7.369,
        (0.021, 0.0, 0.027),
        (0.0341, 0.0353, 0.0216, 0, -0.0043, 1e-4),
    ),
    (-0.6127, 0.0, 0.0, 13.051, (0.38, 0.0, 0.158), (0.0281, 0.7707, 0.7694, 1e-4, -0.0156, 0)),
    (-0.57155, 0.0, 0.0, 3.989, (0.24, 0.0, 0.068), (0.0101, 0.3093, 0.3065, 1e-4, 0.0092, 0)),
    (0.0, 0.17415, np.pi / 2, 2.1, (0.0, 0.007, 0.018), (0.003, 0.0022, 0.0026, 0, 0, -2e-4)),
    (0.0, 0.11985, -np.pi / 2, 1.98, (0.0, 0.007, 0.018), (0.003, 0.0022, 0.0026, 0, 0, -2e-4)),
    # I_xx printed as 0.0000: 0.0001 is the smallest value that makes a physical tensor
    (0.0, 0.11655, 0.0, 0.615, (0.0, 0.0, -0.026), (1e-4, 4e-4, 3e-4, 0, 0, 0)),
)
ARM_RADIUS, ARM_LENGTH, ARM_DENSITY = 0.02, 0.3, 1070.0
ARM_E, ARM_NU, ARM_ETA = 0.5e6, 0.4, 0.1  # G = E / (2 (1 + ν)) = 0.17857 MPa
TENDON_OFFSET, TENDON_ANGLES = 0.015, (0.0, 2 * np.pi / 3, 4 * np.pi / 3)
GRIPPER_LENGTH, CHAMBER_RADIUS, GRIPPER_DENSITY = 0.05, 0.012, 960.0
GRIPPER_C, GRIPPER_ETA = 22.2e6, 0.05
# the empirical rule's fitting states: (q10, q11) uniform in ±GRIPPER_RANGE[0] (the run reaches
# (3.34e-3, 1.55e-5 m²)), their rates in ±GRIPPER_RANGE[1]
GRIPPER_SAMPLES, GRIPPER_RANGE = 10, ((0.01, 3e-5), (1.0, 3e-3))
UR, ARM, GRIPPER = tuple(range(6)), (6, 7, 8), (9, 10)  # coordinates (and inputs 0..5, 6..8)
PRESSURE_INPUT = 9
UR_TARGET = (np.pi / 2, -np.pi / 4, -np.pi / 4, -np.pi / 5, np.pi / 8, -np.pi / 2)
ARM_TARGET = (-np.pi / 2, np.pi / 4, -0.02)
UR_KP, UR_KD = 100.0, 10.0  # N m, N m s (the seed's)
ARM_KP, ARM_KD = (0.5, 0.5, 2000.0), (0.1, 0.1, 0.0)  # N m/rad, N/m; N m s/rad, N s/m (ours)
PRESSURE = 2e6  # Pa
SCHEDULE = (3.0, 5.0)  # end of phase i, end of phase ii [s]
DT = 2.5e-3
METHOD = BDF(rtol=1e-6, atol=1e-8, jacobian="central_differences")  # module docstring
FLANGE, ARM_TIP, GRIPPER_TIP = 5, 6, 7  # links whose distal frames are traced


def _rx(alpha: float) -> np.ndarray:
    c, s = np.cos(alpha), np.sin(alpha)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _ur_links() -> list[sr.Link]:
    """The six UR10e links: body i's proximal frame is joint i's (turned by θ_i about
    `z_{i−1}`), its distal frame DH frame i, `(R, t) = (Rx(α_i), (a_i, 0, d_i))`; the centre of
    mass `c` and inertia `I` given in frame i become `R c + t` and `R I Rᵀ`."""
    links = []
    for a, d, alpha, mass, com, (xx, yy, zz, xy, xz, yz) in UR10E:
        rot, trans = _rx(alpha), np.array([a, 0.0, d])
        inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        body = sr.RigidBody(
            mass, rot @ np.asarray(com) + trans, rot @ inertia @ rot.T, distal=(rot, trans)
        )
        links.append(sr.Link(joints.Revolute((0.0, 0.0, 1.0)), body))
    return links


def _chamber_volume(kin: lvp.Composite) -> Any:
    """`V_c(q_B)`: the bore `r < 0.012 m` between the arm's tip face and the gripper's top."""
    return lambda qb: kin.cavity_volume(qb, CHAMBER_RADIUS, GRIPPER_LENGTH)


def gripper_rule(
    body: Callable[[quadrature.QuadratureRule], sr.SoftBody],
) -> quadrature.QuadratureRule:
    """The gripper's rule: its degree-2 mesh rule reduced by `quadrature.empirical` to the
    integrals of `body(rule)` at `GRIPPER_SAMPLES` seeded states (module docstring)."""
    fine = quadrature.from_mesh(MESHES / "gripper.vtu", degree=2)
    rng = np.random.default_rng(5)
    q, qd = (
        jnp.asarray(np.asarray(scale) * rng.uniform(-1.0, 1.0, (GRIPPER_SAMPLES, 2)))
        for scale in GRIPPER_RANGE
    )
    # kept on disk with the compilation cache: a later run reads the rule instead of fitting
    key = "examples/hybrid_arm.py: the gripper's SoftBody.integrals"
    return quadrature.empirical(fine, lambda r, s: body(r).integrals(*s), (q, qd), key=key)


def build() -> sr.Robot:
    """The hybrid robot (module docstring): 8 links, `n_q = 11`, inputs `u = (τ1..τ6 [N m],
    three tendon tensions [N], chamber pressure [Pa])`."""
    arm = sr.SoftBody(
        kinematics.ConstantCurvature3D(ARM_LENGTH),
        quadrature.cylinder(ARM_RADIUS, ARM_LENGTH, n_axial=3, n_radial=2, n_angular=5),
        density=ARM_DENSITY,
        material=materials.CosseratRod(E=ARM_E, G=ARM_E / (2 * (1 + ARM_NU)), eta=ARM_ETA),
    )
    kin = lvp.gripper(GRIPPER_LENGTH)
    tip, wall = (0.0, 0.0, GRIPPER_LENGTH), 0.016  # pivot on the axis, frame points mid-wall

    def gripper_body(rule: quadrature.QuadratureRule) -> sr.SoftBody:
        return sr.SoftBody(
            kin,
            rule,
            density=GRIPPER_DENSITY,
            material=materials.IncompressibleNeoHookean(C=GRIPPER_C, eta=GRIPPER_ETA),
            pivot=tip,
            contact_points=((wall, 0.0, GRIPPER_LENGTH), (0.0, wall, GRIPPER_LENGTH)),
        )

    gripper = gripper_body(gripper_rule(gripper_body))
    tendons = [
        Tendon(6, (TENDON_OFFSET * np.cos(a), TENDON_OFFSET * np.sin(a))) for a in TENDON_ANGLES
    ]
    actuators = [JointMotor(i) for i in range(6)] + tendons
    actuators.append(PressureChamber(7, volume=_chamber_volume(kin)))
    links = [*_ur_links(), sr.Link(joints.Fixed(), arm), sr.Link(joints.Fixed(), gripper)]
    return sr.Robot(links, gravity=GRAVITY, actuators=actuators)


def link_meshes() -> dict[int, Any]:
    """Cylinders (radius 5 cm) from each UR link's joint to its DH frame, for ParaView (every
    UR10e link has either `d` or `a` zero: one straight segment, along `z` or `−x`)."""
    meshes = {}
    for i, (a, d, *_rest) in enumerate(UR10E):
        mesh = meshing.cylinder(0.05, max(d, -a), n_radial=1, n_angular=8, n_axial=2)
        if a < 0:  # along −x: (x1, x2, x3) -> (−x3, x2, x1)
            mesh.points = mesh.points[:, [2, 1, 0]] * np.array([-1.0, 1.0, 1.0])
        meshes[i] = mesh
    return meshes


class HybridControl(eqx.Module, control.Controller):
    """The three phases (module docstring) as one law:

        u_o = soft(t, q, q̇) + gripper(t),    u = u_o + ur(t, q, q̇; bias − A u_o),

    `soft` and `gripper` are `control.Phases` that are zero before their phase; `ur` is the
    collocated PFBL on the joints, given the dynamics with the other inputs as known forces,
    so it imposes `ÿ = ÿ_d + K_D ė + K_P e` whatever the soft inputs do."""

    ur: control.Controller
    soft: control.Controller
    gripper: control.Controller

    def others(self, t: jax.Array, q: jax.Array, qd: jax.Array, terms: Any) -> jax.Array:
        """`u_o`: the tendon tensions and the pressure (zero on the joints)."""
        return self.soft(t, q, qd, terms) + self.gripper(t, q, qd, terms)

    def __call__(self, t: jax.Array, q: jax.Array, qd: jax.Array, terms: Any) -> jax.Array:
        u_o = self.others(t, q, qd, terms)
        known = terms._replace(bias=terms.bias - terms.actuation @ u_o)
        return u_o + self.ur(t, q, qd, known)


def controller(
    robot: sr.Robot, schedule: tuple[float, float] = SCHEDULE, ur_target: Any = UR_TARGET
) -> HybridControl:
    """The law of the seed's three phases, switching at `schedule = (t_i, t_ii)`; the UR's
    cubic runs from 0 to `ur_target` over phase i."""
    n_u = robot.n_u
    zero = control.Feedforward(jnp.zeros(n_u))
    ur_ref = control.CubicRestToRest(np.zeros(6), ur_target, 0.0, schedule[0])
    ur = control.CollocatedPFBL(robot, UR_KP, UR_KD, ur_ref, inputs=UR)
    arm = control.CompensatedPD(robot, ARM_KP, ARM_KD, ARM_TARGET, coordinates=ARM, inputs=ARM)
    pressure = control.Feedforward(jnp.zeros(n_u).at[PRESSURE_INPUT].set(PRESSURE))
    return HybridControl(
        ur=ur,
        soft=control.Phases([schedule[0]], [zero, arm]),
        gripper=control.Phases([schedule[1]], [zero, pressure]),
    )


class Result(NamedTuple):
    """A run: the trajectory, the UR reference `(S + 1, 6)` and the world paths `(S + 1, 3)`
    of the flange, the soft arm's tip and the gripper's tip."""

    traj: sr.Trajectory
    ur_ref: np.ndarray
    flange: np.ndarray
    arm_tip: np.ndarray
    gripper_tip: np.ndarray


def rollout(
    robot: sr.Robot,
    t_final: float,
    dt: float = DT,
    schedule: tuple[float, float] = SCHEDULE,
    ur_target: Any = UR_TARGET,
    progress: bool = True,
) -> Result:
    """Simulate from rest at `q = 0` (the UR's start and the soft bodies' undeformed shape)."""
    law = controller(robot, schedule, ur_target)
    zero = jnp.zeros(robot.n_q)
    traj = sr.simulate(
        robot, zero, zero, t_final, dt, controller=law, method=METHOD, progress=progress
    )
    ref = jax.vmap(lambda t: law.ur.reference(t)[0])(traj.t)
    frames = jax.jit(jax.vmap(lambda q: sr.forward_kinematics(robot, q)[1]))(traj.q)
    paths = (frames[:, k] for k in (FLANGE, ARM_TIP, GRIPPER_TIP))
    return Result(traj, *(np.asarray(x) for x in (ref, *paths)))


def phase_errors(result: Result, schedule: tuple[float, float] = SCHEDULE) -> dict[str, Any]:
    """Task errors per phase: the UR's `max |θ − θ_d(t)|` [rad] in each phase, the soft arm's
    `|q_arm − q_arm,f|` per coordinate at the end of phases ii and iii, the gripper's final
    coordinates, the smallest tendon tension of each phase (a tendon cannot push) and the
    joint torques' largest magnitudes per joint with the time of the largest."""
    t, q, u = (np.asarray(x) for x in (result.traj.t, result.traj.q, result.traj.u))
    ur_err = np.max(np.abs(q[:, UR] - result.ur_ref), axis=1)
    arm_err = np.abs(q[:, ARM] - np.asarray(ARM_TARGET))
    edges = (0.0, *schedule, np.inf)
    out: dict[str, Any] = {}
    for name, lo, hi in zip(("i", "ii", "iii"), edges[:-1], edges[1:]):
        inside = (t >= lo - 1e-9) & (t < hi - 1e-9)
        if not inside.any():
            continue
        last = np.flatnonzero(inside)[-1]
        torque = u[inside][:, list(UR)]
        out[name] = {
            "t": [float(t[inside][0]), float(t[last])],
            "ur_max_error_rad": float(ur_err[inside].max()),
            "arm_error_end": arm_err[last].tolist(),
            "min_tension_N": float(u[inside][:, list(ARM)].min()),
            "max_tension_N": float(u[inside][:, list(ARM)].max()),
            "max_pressure_Pa": float(u[inside][:, PRESSURE_INPUT].max()),
            "max_abs_torque_Nm": np.abs(torque).max(axis=0).tolist(),
            "peak_torque_t": float(t[inside][np.argmax(np.abs(torque).max(axis=1))]),
            "gripper_q_end": q[last, list(GRIPPER)].tolist(),
        }
    return out


def plot(
    robot: sr.Robot, result: Result, out: Path, schedule: tuple[float, float] = SCHEDULE
) -> list[Path]:
    """The seed's Figs. 9–10: coordinates with references, inputs, snapshots with tip paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from softrigid.plotting import backbones

    t, q, u = (np.asarray(x) for x in (result.traj.t, result.traj.q, result.traj.u))
    paths = [out / n for n in ("coordinates.png", "inputs.png", "snapshots.png")]
    switches = [s for s in schedule if s <= t[-1]]

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    groups = ((UR, "UR10e θ1..θ6 [rad]", result.ur_ref), (ARM, "soft arm", None))
    for ax, (idx, title, ref) in zip(axes, groups):
        for k, i in enumerate(idx):
            ax.plot(t, q[:, i], label=f"q{i + 1}")
            target = (
                ref[:, k] if ref is not None else np.where(t >= schedule[0], ARM_TARGET[k], np.nan)
            )
            ax.plot(t, target, "k--", lw=0.8)
        ax.set(title=title + (" (q9 [m])" if ref is None else ""), xlabel="t [s]")
        ax.legend(fontsize="x-small", ncol=2)
    axes[2].plot(t, q[:, GRIPPER[0]], label="q10 (stretch)")
    axes[2].plot(t, q[:, GRIPPER[1]] * 1e4, label="q11 (source) [cm²]")
    axes[2].set(title="gripper", xlabel="t [s]")
    axes[2].legend(fontsize="x-small")
    for ax in axes:
        for s in switches:
            ax.axvline(s, color="grey", lw=0.5)
    fig.tight_layout()
    fig.savefig(paths[0], dpi=80)
    plt.close(fig)

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    names = (("joint torques [N m]", UR), ("tendon tensions [N]", ARM), ("pressure [Pa]", (9,)))
    for ax, (title, idx) in zip(axes, names):
        for i in idx:
            ax.plot(t, u[:, i], label=f"u{i + 1}")
        ax.set(title=title, xlabel="t [s]")
        ax.legend(fontsize="x-small", ncol=2)
    fig.tight_layout()
    fig.savefig(paths[1], dpi=80)
    plt.close(fig)

    wanted = [0.0, 1.0, 2.0, schedule[0], schedule[0] + 0.2, schedule[1], schedule[1] + 0.2, t[-1]]
    instants = sorted({int(np.argmin(np.abs(t - s))) for s in wanted if s <= t[-1]})
    fig = plt.figure(figsize=(12, 6.5))
    tips = (
        (result.flange, "flange"),
        (result.arm_tip, "arm tip"),
        (result.gripper_tip, "gripper tip"),
    )
    for n, k in enumerate(instants):
        ax = fig.add_subplot(2, 4, n + 1, projection="3d")
        for j, line in enumerate(backbones(robot, q[k])):
            ax.plot(
                *np.asarray(line).T,
                color=("grey" if j < 6 else "tab:blue" if j == 6 else "tab:red"),
                lw=3,
            )
        for path, label in tips:
            ax.plot(*path[: k + 1].T, lw=0.8, label=label)
        ax.set(title=f"t = {t[k]:.2f} s", xlim=(-1.4, 0.6), ylim=(-1.0, 1.0), zlim=(-0.6, 1.0))
        ax.tick_params(labelsize=6)
    fig.axes[0].legend(fontsize="x-small")
    fig.tight_layout()
    fig.savefig(paths[2], dpi=80)
    plt.close(fig)
    return paths


def run(
    t_final: float = 6.0,
    out: Path | str = Path("out/hybrid_arm"),
    dt: float = DT,
    schedule: tuple[float, float] = SCHEDULE,
    repeat: bool = False,
    ur_target: Any = UR_TARGET,
) -> dict[str, Any]:
    """Build, simulate over `[0, t_final]`, write the figures, the ParaView series and
    `summary.json` to `out`; print and return the summary (`first_call_s`: the simulation
    including its compilation; with `repeat`, `compiled_s`: the same simulation again)."""
    start = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    robot = build()
    print(
        f"hybrid arm: n_q = {robot.n_q}, n_u = {robot.n_u}, built in {time.perf_counter() - start:.1f} s"
    )
    tic = time.perf_counter()
    result = rollout(robot, t_final, dt, schedule, ur_target)
    first = time.perf_counter() - tic
    compiled = None
    if repeat:
        tic = time.perf_counter()
        jax.block_until_ready(
            rollout(robot, t_final, dt, schedule, ur_target, progress=False).traj.q
        )
        compiled = time.perf_counter() - tic
    errors = phase_errors(result, schedule)
    figures = plot(robot, result, out, schedule)
    frames = slice(None, None, max(1, round(0.05 / dt)))  # 20 frames per second
    traj = result.traj
    softrigid.io.write_trajectory(
        out / "robot.pvd", robot, traj.t[frames], traj.q[frames], link_meshes()
    )
    summary = {
        "sim_s": float(traj.t[-1]),
        "dt": dt,
        "method": f"bdf(rtol={METHOD.rtol:g}, atol={METHOD.atol:g}, jacobian={METHOD.jacobian})",
        "first_call_s": first,
        "compiled_s": compiled,
        "wall_s": time.perf_counter() - start,
        "schedule": list(schedule),
        "errors": errors,
        "figures": [p.name for p in figures],
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(
        f"simulated {summary['sim_s']:.3g} s: first call {first:.1f} s (compilation included)"
        + (f", compiled {compiled:.1f} s" if compiled else "")
    )
    for name, e in errors.items():
        print(
            f"phase {name} [{e['t'][0]:.3g}, {e['t'][1]:.3g}] s: UR max |θ − θ_d| = "
            f"{e['ur_max_error_rad']:.2e} rad, soft arm |q − q_f| at its end = "
            f"{np.round(e['arm_error_end'], 4).tolist()}, min tension {e['min_tension_N']:.3g} N, "
            f"gripper q = {np.round(e['gripper_q_end'], 7).tolist()}"
        )
    print(
        f"wall {summary['wall_s']:.1f} s; wrote {', '.join(summary['figures'])}, robot.pvd and summary.json to {out.resolve()}"
    )
    return summary


def main() -> None:
    from _cli import output_folder, positive_float  # beside this script

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--t-final", type=positive_float, default=6.0, help="simulated time [s]")
    parser.add_argument(
        "--out", type=output_folder, default=Path("out/hybrid_arm"), help="output folder"
    )
    parser.add_argument("--dt", type=positive_float, default=DT, help="output grid [s]")
    parser.add_argument("--repeat", action="store_true", help="time a second, compiled run")
    args = parser.parse_args()
    run(args.t_final, args.out, args.dt, repeat=args.repeat)


if __name__ == "__main__":
    sr.fast_compilation()  # XLA:CPU compiles 2-2.7x faster (README, "Fast start")
    sr.enable_compilation_cache()  # a later run loads the compiled programs (README, "Fast start")
    main()
