"""Seed 003, Simulation 1 (its quasi-static reference): a trimmed-helicoid soft robot whose
three tips are to follow circles.

Run:  python examples/helicoid_tracking.py [--out DIR] [--samples K] [--degree D]

What this script does is the first half of the seed's Simulation 1: the robot, its tendon
routing, the statics of the sampled task and the actuation reference `y_d(t)` that the seed's
PFBL tracks. The closed loop itself (PFBL over 6 s) is not run here yet: on this robot Radau
with finite-difference Jacobians covered 0.1 s in 118 s (README, "Seed 003, Simulation 1").

The robot (the seed's Sec. 7.1 and Table 4): three helicoid segments in a chain on fixed joints,
`kinematics.lvp.helicoid_segment(0.1)` (stretch, two bends with linear curvature, twist and two
shears: 8 coordinates each, `n = 24`) on `meshes/helicoid.vtu` (a helicoidal blade 8 mm thick,
one turn per segment, trimmed to r = 0.02 m; `meshes/README.md`), compressed to a positive rule
of degree `DEGREE` (`quadrature.compress`; README "Heavy bodies"), ρ = 960 kg/m³,
incompressible neo-Hookean `C = 0.178 MPa` with Kelvin–Voigt damping η = 0.05 s.

The base is rotated so that the straight arm hangs along gravity: the base frame's `z` axis
points down, so gravity is `+9.81 e_z` in base coordinates (the frame of the references) and
the straight arm's tips lie at `z = 0.1, 0.2, 0.3` m.

Tendons (our routing; the seed says only "nine straight tendons, running in triplets from one
body to its successor and routed along their external perimeters"). A blade is not a solid
rod: a straight line at radius `RHO` = 17 mm (3 mm inside the rim) and angle `θ` lies in the
blade only where the blade's long axis, which turns by `φ = 2π x3 / L` along the segment,
points along `θ` or `θ + π`, at `x3 = L (θ mod π) / 2π` and half a segment further. Each tendon
is threaded through eyelets at those two points of a segment (`Tendon(guides=...)`) and runs
straight in between, outside the material along the perimeter. "From one body to its
successor": triplet `k` (k = 0, 1, 2) runs from segment `k − 1` to segment `k`, tied at its
upper eyelet in segment `k − 1` and at its upper eyelet in segment `k`, through its lower
eyelet there; triplet 0 comes from a spool in the base, `DROP` = 1 cm below the base plane
(a spool on the plane would coincide with the eyelet of the tendon at 0° at rest: a span of
zero length, whose `|d|` has a kink where the LVP body's face moves in its plane, made the
statics stall and the closed loop non-smooth). The angles of triplet `k` are
`40° k + (0°, 120°, 240°)`, so the nine tendons are 40° apart around the perimeter. Routed
instead from the base through every segment below (measured, then dropped): the upper
triplets' tendons compress the lower segments too, and the task, which shortens segment 1
(the middle one) more than segment 0, then needs triplet 0 to push with 60–95 N. With the
tensions `u` `(9,)` [N], `A(q) = −(∂l/∂q)ᵀ` is 24 × 9: 15 coordinates are unactuated.

Task (the seed's): tip references in base coordinates
`t1d = (0.02 cos ωt, 0.02 sin ωt, 0.08)`, `t2d = (0.025 cos ωt, 0.025 sin ωt, 0.15)`,
`t3d = (0.03 cos ωt, 0.03 sin ωt, 0.24)` m, ω = 2π/5 rad/s. As the seed does: the references
are sampled at `--samples` instants over one period; at each, inverse statics (eq. (55): the
equilibrium `g(q) + s(q, 0) = A(q) u` whose three tips are on the targets: nine tensions for
nine tip coordinates, `softrigid.inverse_statics`, warm-started from the previous sample;
the first one reached from the straight arm through `RAMP` intermediate targets)
gives an equilibrium `q_eq`; its actuation coordinates `y = −l(q_eq)` (the tendons' negative
lengths, so that `A = (∂y/∂q)ᵀ`) are interpolated by a periodic cubic spline `y_d(t)` (twice
differentiable), the reference the seed's collocated PFBL (`control.CollocatedPFBL`, K_P =
10 I₉ N, K_D = 1 I₉ N s) is to track from the straight rest configuration. Tensions may come
out negative (a tendon cannot push): reported, not clipped.

Writes to `--out` (default `out/helicoid_tracking`): `statics.png` (the tensions and
`y_d(t)` over a period, and the equilibria at eight instants with the circles),
`equilibria.pvd` (+ `equilibria/`: the deformed meshes of the samples for ParaView; a sample
whose map folds a mesh vertex, `folded_vertices`, is left out and listed in the summary),
`equilibria.npz` (`times`, `q`, `u`, `y`, `tip_error`, `solve_s`) and `summary.json`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402
import softrigid.io  # noqa: E402
from softrigid import control, joints, materials, quadrature  # noqa: E402
from softrigid.actuators import Tendon  # noqa: E402
from softrigid.kinematics import lvp  # noqa: E402

MESHES = Path(__file__).resolve().parents[1] / "meshes"
LENGTH, DENSITY, C, ETA = 0.1, 960.0, 0.178e6, 0.05  # m, kg/m³, Pa, s (the seed's)
DEGREE = 6  # the compressed rule's moment degree (README "Heavy bodies": ~1e-7 on the helicoid)
GRAVITY = (0.0, 0.0, 9.81)  # base z along gravity: the arm hangs along +z
RHO = 0.017  # tendon radius [m], 3 mm inside the blade's rim
DROP = 0.01  # the spools' depth below the base plane [m]: no span of zero length at rest
TRIPLETS = tuple(tuple(np.deg2rad(40.0 * k + a) for a in (0.0, 120.0, 240.0)) for k in range(3))
OMEGA = 2 * np.pi / 5  # rad/s: one period of the references is 5 s
RADII, HEIGHTS = (0.02, 0.025, 0.03), (0.08, 0.15, 0.24)  # m: t_kd = (r cos ωt, r sin ωt, h)
RAMP = 4  # stages of the homotopy from the straight arm to the first sample
TOL = 1e-9  # inverse statics: the tips to 1e-9 m (1e-10 ended one sample at 2.6e-10 m)


def eyelets(theta: float) -> np.ndarray:
    """The two eyelets `(2, 3)` of a tendon at angle `theta` in one segment: where the blade's
    long axis (angle `φ = 2π x3 / L`) points along `theta` or `theta + π`, at radius `RHO`."""
    heights = LENGTH * ((theta % np.pi) / (2 * np.pi) + np.array([0.0, 0.5]))
    return np.stack(
        [np.full(2, RHO * np.cos(theta)), np.full(2, RHO * np.sin(theta)), heights], axis=1
    )


def tendons() -> list[Tendon]:
    """The nine tendons (module docstring): triplet `k` from segment `k − 1` (the base for
    `k = 0`) to segment `k`."""
    out = []
    for k, angles in enumerate(TRIPLETS):
        for theta in angles:
            own = eyelets(theta)
            if k == 0:  # from the base, `DROP` below the first eyelet's line's foot
                spool = (RHO * np.cos(theta), RHO * np.sin(theta), -DROP)
                out.append(Tendon([0], guides=[own], start=spool))
            else:  # from the upper eyelet of the segment below
                out.append(Tendon([k - 1, k], guides=[own[1:], own]))
    return out


def build(degree: int = DEGREE) -> sr.Robot:
    """The helicoid robot: 3 segments, `n_q = 24`, nine tendon tensions as inputs."""
    fine = quadrature.from_mesh(MESHES / "helicoid.vtu", degree=4)  # 37,632 nodes
    segment = sr.SoftBody(
        lvp.helicoid_segment(LENGTH),
        quadrature.compress(fine, degree),
        density=DENSITY,
        material=materials.IncompressibleNeoHookean(C=C, eta=ETA),
    )
    links = [sr.Link(joints.Fixed(), segment) for _ in range(3)]
    return sr.Robot(links, gravity=GRAVITY, actuators=tendons())


def tips(robot: sr.Robot, q: jax.Array) -> jax.Array:
    """The three tips (distal frame origins) stacked, `(9,)` [m]."""
    return sr.forward_kinematics(robot, q)[1].reshape(-1)


def tip_targets(t: Any) -> np.ndarray:
    """`(t1d, t2d, t3d)` stacked, `(..., 9)` [m], at times `t`."""
    t = np.asarray(t, dtype=float)[..., None]
    r, h = np.asarray(RADII), np.asarray(HEIGHTS)
    xyz = np.stack([r * np.cos(OMEGA * t), r * np.sin(OMEGA * t), h + 0 * t], axis=-1)
    return xyz.reshape(*t.shape[:-1], 9)


class Equilibria(NamedTuple):
    """The sampled reference: times `(K,)` over one period, equilibria `q` `(K, 24)`, tensions
    `u` `(K, 9)`, actuation coordinates `y` `(K, 9)` and each solve's tip error [m] and time."""

    times: np.ndarray
    q: np.ndarray
    u: np.ndarray
    y: np.ndarray
    tip_error: np.ndarray
    solve_s: np.ndarray


def equilibria(robot: sr.Robot, samples: int) -> Equilibria:
    """Inverse statics at `samples` instants over one period of the references, each solve
    warm-started from the previous sample's `(q, u)` (the first from rest)."""
    times = np.arange(samples) * (2 * np.pi / OMEGA) / samples

    def output(q: jax.Array) -> jax.Array:
        return tips(robot, q)

    q, u = jnp.zeros(robot.n_q), jnp.zeros(robot.n_u)
    # the first sample by a homotopy from the straight arm's tips (a few intermediate targets)
    straight = np.asarray(tips(robot, q))
    for s in np.linspace(0.0, 1.0, RAMP + 1)[1:-1]:
        target = (1 - s) * straight + s * tip_targets(0.0)
        sol = sr.inverse_statics(robot, output, target, q0=q, u0=u, tol=TOL)
        q, u = sol.q, sol.u
        print(f"inverse statics, ramp to the first sample {s:.2f}: {int(sol.iterations)} steps")
    rows: dict[str, list[Any]] = {k: [] for k in ("q", "u", "err", "s")}
    for k, t in enumerate(times):
        tic = time.perf_counter()
        sol = sr.inverse_statics(robot, output, tip_targets(t), q0=q, u0=u, tol=TOL)
        q, u = sol.q, sol.u
        rows["s"].append(time.perf_counter() - tic)
        rows["q"].append(np.asarray(q))
        rows["u"].append(np.asarray(u))
        rows["err"].append(float(np.max(np.abs(np.asarray(sol.output) - tip_targets(t)))))
        print(
            f"inverse statics {k + 1}/{samples}: t = {t:.3g} s, {int(sol.iterations)} steps, "
            f"tip error {rows['err'][-1]:.1e} m, tensions {np.round(np.asarray(u), 2).tolist()} N, "
            f"{rows['s'][-1]:.1f} s",
            flush=True,
        )
    qs = np.stack(rows["q"])
    ys = np.asarray(jax.vmap(lambda x: control.actuation_coordinates(robot, x))(jnp.asarray(qs)))
    return Equilibria(
        times, qs, np.stack(rows["u"]), ys, np.asarray(rows["err"]), np.asarray(rows["s"])
    )


def reference(eq: Equilibria, t_final: float) -> control.Spline:
    """`y_d(t)`: the periodic cubic spline through the sampled `y`, laid over as many periods
    as `[0, t_final]` needs (a periodic spline is the same over any number of periods)."""
    period = 2 * np.pi / OMEGA
    periods = int(np.ceil(t_final / period))
    k = len(eq.times) * periods
    times = np.arange(k + 1) * period / len(eq.times)
    samples = eq.y[np.arange(k + 1) % len(eq.times)]
    return control.Spline(times, samples, bc_type="periodic")


def folded_vertices(robot: sr.Robot, qs: np.ndarray) -> np.ndarray:
    """`(K, 3)`: per sample and segment, the mesh vertices whose map is not finite. Strong
    bends with the stretch's radial swelling push the blade's outer corners past the bend's
    fold (`κ r ≥ 1`): the map is defined at the quadrature nodes inside, not there."""
    mesh = robot.links[0].body.volume.mesh.points
    kin = robot.links[0].body.kinematics
    segments = jnp.asarray(qs).reshape(len(qs), 3, -1)
    mapped = jax.jit(jax.vmap(jax.vmap(lambda qb: kin.map_points(jnp.asarray(mesh), qb))))
    return np.sum(~np.isfinite(np.asarray(mapped(segments))).all(axis=-1), axis=-1)


def plot(robot: sr.Robot, eq: Equilibria, ref: control.Spline, out: Path) -> Path:
    """The tensions and `y_d(t)` over a period, and the equilibria at eight instants."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from softrigid.plotting import backbones

    period = 2 * np.pi / OMEGA
    fine = np.linspace(0.0, period, 201)
    y_d = np.stack([np.asarray(ref(s)[0]) for s in fine])
    fig = plt.figure(figsize=(13, 8))
    ax = fig.add_subplot(3, 4, (1, 2))
    for i in range(9):
        ax.plot(eq.times, eq.u[:, i], "o-", ms=2, lw=1, label=f"u{i + 1}")
    ax.axhline(0.0, color="grey", lw=0.5)
    ax.set(title="equilibrium tensions [N]", xlabel="t [s]")
    ax.legend(fontsize="xx-small", ncol=3)
    ax = fig.add_subplot(3, 4, (3, 4))
    for i in range(9):
        line = ax.plot(fine, 1e3 * (y_d[:, i] - y_d[0, i]), lw=1)[0]
        ax.plot(eq.times, 1e3 * (eq.y[:, i] - y_d[0, i]), "o", ms=2, c=line.get_color())
    ax.set(title="y_d(t) − y_d(0) [mm] (spline through the samples)", xlabel="t [s]")
    circle = tip_targets(np.linspace(0.0, period, 73)).reshape(-1, 3, 3)
    for n, k in enumerate(np.linspace(0, len(eq.times), 9, endpoint=False).astype(int)[:8]):
        ax = fig.add_subplot(3, 4, 5 + n, projection="3d")
        # drawn with z up: the arm hangs from the base (base z along gravity)
        for line in backbones(robot, jnp.asarray(eq.q[k])):
            x = np.asarray(line)
            ax.plot(x[:, 0], x[:, 1], -x[:, 2], color="tab:blue", lw=3)
        target = tip_targets(eq.times[k]).reshape(3, 3)
        ax.scatter(target[:, 0], target[:, 1], -target[:, 2], c="k", s=6)
        for j in range(3):
            ax.plot(circle[:, j, 0], circle[:, j, 1], -circle[:, j, 2], "k--", lw=0.6)
        ax.set(title=f"t = {eq.times[k]:.2f} s", xlim=(-0.04, 0.04), ylim=(-0.04, 0.04))
        ax.set_zlim(-0.32, 0.0)
        ax.tick_params(labelsize=5)
    fig.tight_layout()
    path = out / "statics.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def run(
    out: Path | str = Path("out/helicoid_tracking"),
    samples: int = 20,
    degree: int = DEGREE,
    figures: bool = True,
) -> dict[str, Any]:
    """Build, solve the sampled statics, fit `y_d(t)`, write the figure, the ParaView series of
    the equilibria and `summary.json` to `out`; print and return the summary (`statics_s`: the
    inverse statics, compilation included)."""
    start = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    robot = build(degree)
    build_s = time.perf_counter() - start
    print(f"helicoid robot: n_q = {robot.n_q}, n_u = {robot.n_u}, built in {build_s:.1f} s")
    tic = time.perf_counter()
    eq = equilibria(robot, samples)
    statics_s = time.perf_counter() - tic
    ref = reference(eq, 2 * np.pi / OMEGA)
    names = [plot(robot, eq, ref, out).name] if figures else []
    folded = folded_vertices(robot, eq.q)
    whole = folded.sum(axis=1) == 0
    softrigid.io.write_trajectory(out / "equilibria.pvd", robot, eq.times[whole], eq.q[whole])
    np.savez(out / "equilibria.npz", **eq._asdict())
    negative = eq.u < 0
    summary = {
        "samples": samples,
        "nodes_per_body": int(robot.links[0].body.volume.n_points),
        "build_s": build_s,
        "statics_s": statics_s,
        "later_solve_s_median": float(np.median(eq.solve_s[1:])) if samples > 1 else None,
        "wall_s": time.perf_counter() - start,
        "tip_error_max_m": float(eq.tip_error.max()),
        "tensions_min_max_N": [float(eq.u.min()), float(eq.u.max())],
        "negative_tensions": {
            f"u{i + 1}": float(eq.u[:, i].min()) for i in range(9) if negative[:, i].any()
        },
        "samples_with_folded_mesh_vertices": {
            f"{t:g}": int(n) for t, n in zip(eq.times, folded.sum(axis=1)) if n
        },
        "figures": names,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(
        f"statics of {samples} samples in {statics_s:.1f} s (compilation included; "
        f"{summary['later_solve_s_median']} s per later sample); tips on the targets to "
        f"{summary['tip_error_max_m']:.1e} m; tensions {eq.u.min():.3g} … {eq.u.max():.3g} N, "
        f"negative (a push): {summary['negative_tensions'] or 'none'}"
    )
    print(
        f"wall {summary['wall_s']:.1f} s; wrote {names}, equilibria.pvd/.npz, summary.json to {out}"
    )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out/helicoid_tracking"))
    parser.add_argument("--samples", type=int, default=20, help="statics samples per period")
    parser.add_argument("--degree", type=int, default=DEGREE, help="compressed rule's degree")
    args = parser.parse_args()
    run(args.out, args.samples, args.degree)


if __name__ == "__main__":
    sr.fast_compilation()  # XLA:CPU compiles 2-2.7x faster (README, "Fast start")
    sr.enable_compilation_cache()  # a later run loads the compiled programs (README, "Fast start")
    main()
