"""Seed 003, Simulation 1: a trimmed-helicoid soft robot's three tips follow circles (PFBL).

The tips are driven by collocated partial feedback linearization (PFBL) on its nine tendons.

Run:  python examples/helicoid_tracking.py [--t-final 6] [--out DIR] [--samples K]
          [--degree D] [--statics-from DIR/equilibria.npz] [--blend SECONDS]

The robot, its tendon routing, the statics of the sampled task, the actuation reference
`y_d(t)`, and the seed's PFBL tracking it from the straight rest configuration, integrated by
scipy's BDF (`integrators.BDF`, the closed loop's exact Jacobian, `jacobian="autodiff"`;
progress printed). `--statics-from` reuses an earlier run's equilibria (from an empty cache
the statics' program takes about 40 s to compile, its solves about 20 s). While the statics solve, a second thread compiles the closed loop's
programs (`compile_ahead`, on a stand-in reference of the same structure: the reference's
values are arguments of those programs), so on two cores the two overlap. The statics pass
close to buckling and so depend on the compressed rule, whose nodes depended on OpenBLAS's
thread count: the script runs OpenBLAS on one thread
(below, and README, Simulation 1), so a run on any number of cores of one machine solves the
same model (on two cores without it, one sample of 20 stalled for minutes and missed its
targets by 3.5 mm).

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
nine tip coordinates, `softrigid.inverse_statics`, warm-started from the previous sample,
through the midpoints' targets when a solve falls short (`approach`); the first one reached
from the straight arm through `RAMP` intermediate targets)
gives an equilibrium `q_eq`; its actuation coordinates `y = −l(q_eq)` (the tendons' negative
lengths, so that `A = (∂y/∂q)ᵀ`) are interpolated by a periodic cubic spline `y_d(t)` (twice
differentiable), the reference the seed's collocated PFBL (`control.CollocatedPFBL`, K_P =
10 I₉ N, K_D = 1 I₉ N s) tracks from the straight rest configuration. Tensions may come out
negative (a tendon cannot push): reported, not clipped.

The equilibria pass close to buckling: the smallest eigenvalue of the statics' stiffness
`∂(g + s − A u)/∂q` falls from 3.9e-5 at t = 0 to 5.2e-6 at t = 3 s (1.5e-10 of the largest;
the soft direction is the blades' linear-curvature bending modes, under 350–370 N of
tendon tension in all). There the statics magnify any change of the model: two compressed
rules, both exact to degree 6, give tensions that differ by 3.3 N at t = 2.75 s, and with one
of them the solves from t = 3 s on stalled (591 steps, still 3.5 mm off). Which 84 nodes
`quadrature.compress` keeps depends on rounding, and OpenBLAS splits the long sums of its QR
over threads, so the rule changed with the number of cores (measured 2026-11-27: one core
and two kept different nodes). This script therefore runs OpenBLAS on one thread
(`OPENBLAS_NUM_THREADS=1`, set before NumPy loads unless you set it): the rule, the statics
and the run are then the same on any number of cores of one machine. Another CPU rounds
differently, and degree 6 was not accurate enough for these statics: on the host of
2026-11-28 (session 47) its one-thread rule stalled from t = 3 s as well (237 steps at the
13th sample, the 14th missed by 3.8 mm), with u1 = −15.7 N at t = 2.75 s where rules of
degree 8 and 10 (165 and 286 nodes) both give −9.1 N and agree on every tension to 0.6 N;
both solved all 20 samples in 3–6 steps (degree 8 on two BLAS threads, another rule, too).
`DEGREE` is therefore 8.

The start (our choice; the seed does not say how it meets `y_d(0)`, which is 4.6 cm of
tendon away from the straight arm). Tracked from the first instant, the output error rings
down as `ë + ė + 10 e = 0` prescribes (damping ratio 0.16): the outputs overshoot the
reference, and the arm, whose equilibria are already strongly deformed (principal stretches
of 0.12–5.8 at the first segment's nodes), is driven beyond them: at t = 0.84 s its stretches
span 0.08–8.3, the middle segment's curvature mode is at −69 (the equilibria's at most 45 in
magnitude), the tensions reach 3 kN, and BDF's steps fall to 5e-5 s (measured; `--blend 0`
runs it). So the tracked reference starts at the straight arm's outputs, at rest, and merges
into `y_d(t)` over the first `BLEND` = 1 s (`control.Blend`, a quintic: C², at rest at 0):
the output error starts at zero and the PFBL has nothing to ring down.

The closed loop is stiff (the blades' Kelvin–Voigt modes relax at up to 2e5 1/s), so it is
integrated implicitly: BDF with error control at `rtol` 1e-4 (`METHOD`), whose Jacobian is
the closed loop's exact one (`jacobian="autodiff"`, evaluated again only when BDF's Newton
iteration fails): `M`, the bias and `A` with their derivatives from the link-local
linearization of the model (each segment's nodes differentiated in its own 8 coordinates),
the PFBL law and the solve differentiated through them (`Dynamics.jacobian`), about 55 ms
against 0.35 s for central differences of the compiled closed loop
(`jacobian="central_differences"`, 96 evaluations of `ẏ`, this example's choice until
2026-11-27, and before that the forward-mode derivative of the whole loop, whose program took
minutes to compile). The Jacobian with the law's `M` and `A` held (`jacobian="exact"`) is not
enough for a PFBL: BDF took 1,109 steps for the first 0.18 s (measured). Scipy's forward differences (48
evaluations) were tried first: their columns were off by up to 37 % in this badly scaled
system, gave eigenvalues of +120 1/s where the closed loop's own are all stable, and stalled
the steps at 1e-5 s from t = 0.4 s. The output error is checked
against the linear ODE's solution from the same `e(0)`, `ė(0)` (`linear_error`), which the
PFBL makes exact.

Writes to `--out` (default `out/helicoid_tracking`): `statics.png` (the tensions and
`y_d(t)` over a period, and the equilibria at eight instants with the circles),
`coordinates.png`, `outputs.png` and `snapshots.png` (the seed's Figs. 5–7: the 24
coordinates; `y` with `y_d`, the output error with the PFBL's prediction, the tensions and
the tips' distances to their targets; the arm at t = 0, 0.5, …, 5.5 s with the circles and
the tip paths), `equilibria.pvd` and `tracking.pvd` (+ folders: the deformed meshes for
ParaView; a configuration whose map folds a mesh vertex, `folded_vertices`, is left out and
listed in the summary), `equilibria.npz`, `tracking.npz` and `summary.json`.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

# before NumPy loads: one OpenBLAS thread, so the compressed rule does not depend on the cores
# (module docstring)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402
import softrigid.io  # noqa: E402
from softrigid import control, joints, materials, quadrature  # noqa: E402
from softrigid.actuators import Tendon  # noqa: E402
from softrigid.integrators import BDF  # noqa: E402
from softrigid.kinematics import lvp  # noqa: E402

MESHES = Path(__file__).resolve().parents[1] / "meshes"
LENGTH, DENSITY, C, ETA = 0.1, 960.0, 0.178e6, 0.05  # m, kg/m³, Pa, s (the seed's)
DEGREE = 8  # the compressed rule's moment degree (6 is not enough near buckling: docstring)
GRAVITY = (0.0, 0.0, 9.81)  # base z along gravity: the arm hangs along +z
RHO = 0.017  # tendon radius [m], 3 mm inside the blade's rim
DROP = 0.01  # the spools' depth below the base plane [m]: no span of zero length at rest
TRIPLETS = tuple(tuple(np.deg2rad(40.0 * k + a) for a in (0.0, 120.0, 240.0)) for k in range(3))
OMEGA = 2 * np.pi / 5  # rad/s: one period of the references is 5 s
PERIOD = 2 * np.pi / OMEGA  # s
RADII, HEIGHTS = (0.02, 0.025, 0.03), (0.08, 0.15, 0.24)  # m: t_kd = (r cos ωt, r sin ωt, h)
RAMP = 4  # stages of the homotopy from the straight arm to the first sample
HALVINGS = 3  # a sample not reached from the previous one is approached through midpoints
SAMPLES = 20  # statics samples over one period of the references
TOL = 1e-9  # inverse statics: the tips to 1e-9 m (1e-10 ended one sample at 2.6e-10 m)
KP, KD = 10.0, 1.0  # the seed's PFBL gains on the tendon coordinates [N/m], [N s/m]
BLEND = 1.0  # s: the reference merges from the straight arm's outputs into y_d(t) (docstring)
T_FINAL = 6.0  # s (the seed's)
DT = 0.01  # the closed loop's output grid [s] (the adaptive method's own steps are its own)
FRAME_DT = 0.1  # the ParaView series' frame interval [s]
SNAPSHOTS = 0.5 * np.arange(12)  # s: the seed's Fig. 7
METHOD = BDF(rtol=1e-4, atol=1e-6, jacobian="autodiff")


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


def sample_times(samples: int) -> np.ndarray:
    """`samples` instants evenly over one period of the references, from `t = 0` [s]."""
    return np.arange(samples) * PERIOD / samples


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
    times = sample_times(samples)

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
    previous = times[0]
    for k, t in enumerate(times):
        tic = time.perf_counter()
        sol, steps = approach(robot, output, q, u, previous, t)
        q, u, previous = sol.q, sol.u, t
        rows["s"].append(time.perf_counter() - tic)
        rows["q"].append(np.asarray(q))
        rows["u"].append(np.asarray(u))
        rows["err"].append(float(np.max(np.abs(np.asarray(sol.output) - tip_targets(t)))))
        print(
            f"inverse statics {k + 1}/{samples}: t = {t:.3g} s, {steps} steps, "
            f"tip error {rows['err'][-1]:.1e} m, tensions {np.round(np.asarray(u), 2).tolist()} N, "
            f"{rows['s'][-1]:.1f} s",
            flush=True,
        )
    qs = np.stack(rows["q"])
    # one compiled program per configuration (the closed loop's thread compiled it already),
    # not a `vmap` run eagerly, operation by operation (3 s)
    ys = np.stack([np.asarray(control.actuation_coordinates(robot, jnp.asarray(x))) for x in qs])
    return Equilibria(
        times, qs, np.stack(rows["u"]), ys, np.asarray(rows["err"]), np.asarray(rows["s"])
    )


def approach(
    robot: sr.Robot,
    output: Any,
    q: jax.Array,
    u: jax.Array,
    t0: float,
    t1: float,
    halvings: int = HALVINGS,
) -> tuple[Any, int]:
    """Inverse statics for the targets at `t1`, warm-started from the equilibrium `(q, u)` of
    the targets at `t0`; when that does not reach them, through the targets at the midpoint
    (up to `halvings` times). The tensions are poorly determined (the statics' stiffness on
    the null space of `Aᵀ` is 1e-8 of its largest eigenvalue), so a solve's path, and where a
    long step strands it, depends on rounding: measured once, one sample of 20 ended 1 mm off
    its targets and stranded the rest. Returns the solution and the steps taken in all."""
    target = tip_targets(t1)
    sol = sr.inverse_statics(robot, output, target, q0=q, u0=u, tol=TOL, throw=False)
    steps = int(sol.iterations)
    if bool(sol.converged) or halvings == 0:
        if not bool(sol.converged):
            error = float(np.max(np.abs(np.asarray(sol.output) - target)))
            print(f"inverse statics: the targets at t = {t1:.4g} s are missed by {error:.1e} m")
        return sol, steps
    mid, first = approach(robot, output, q, u, t0, 0.5 * (t0 + t1), halvings - 1)
    sol, second = approach(robot, output, mid.q, mid.u, 0.5 * (t0 + t1), t1, halvings - 1)
    return sol, steps + first + second


def reference(eq: Equilibria, t_final: float) -> control.Spline:
    """`y_d(t)`: the periodic cubic spline through the sampled `y`, laid over as many periods
    as `[0, t_final]` needs (a periodic spline is the same over any number of periods)."""
    periods = int(np.ceil(t_final / PERIOD))
    k = len(eq.times) * periods
    times = np.arange(k + 1) * PERIOD / len(eq.times)
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


class Tracking(NamedTuple):
    """The closed loop on the output grid `t` `(S,)`: states `q`, `qd` `(S, 24)`, tensions `u`
    `(S, 9)`, outputs `y` and reference `y_d` `(S, 9)`, the output error the PFBL predicts
    (`ë + K_D ė + K_P e = 0` from the same `e(0)`, `ė(0)`) `e_linear` `(S, 9)`, the tips
    `(S, 9)` and their targets `(S, 9)`, and the wall times of the first call (a one-step run:
    tracing and compiling the callbacks) and of the run."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    u: np.ndarray
    y: np.ndarray
    y_d: np.ndarray
    e_linear: np.ndarray
    tips: np.ndarray
    targets: np.ndarray
    first_call_s: float
    run_s: float


def linear_error(t: np.ndarray, e0: np.ndarray, ed0: np.ndarray) -> np.ndarray:
    """`e(t)` `(S, m)` of `ë + K_D ė + K_P e = 0` (underdamped for the seed's gains:
    `σ = K_D / 2`, `ω = √(K_P − σ²)`): `e = e^{−σt} (e0 cos ωt + (ė0 + σ e0) / ω sin ωt)`."""
    sigma = KD / 2
    omega = np.sqrt(KP - sigma**2)
    t = np.asarray(t)[:, None]
    return np.exp(-sigma * t) * (
        e0 * np.cos(omega * t) + (ed0 + sigma * e0) / omega * np.sin(omega * t)
    )


@jax.jit
def _along(robot: sr.Robot, q: jax.Array, qd: jax.Array) -> tuple[jax.Array, ...]:
    """`y`, `ẏ = Aᵀ q̇` and the tips along a trajectory `(S, ·)` (one compiled program)."""

    def one(x: jax.Array, v: jax.Array) -> tuple[jax.Array, ...]:
        y, yd = jax.jvp(lambda z: control.actuation_coordinates(robot, z), (x,), (v,))
        return y, yd, tips(robot, x)

    return jax.vmap(one)(q, qd)


def closed_loop_law(
    robot: sr.Robot, eq: Equilibria, t_final: float, blend: float = BLEND
) -> control.CollocatedPFBL:
    """The seed's collocated PFBL (K_P = 10 I₉ N, K_D = 1 I₉ N s, on `y = −l(q)`) tracking
    `y_d(t)` over `[0, t_final]`. With `blend > 0` the tracked reference starts at the straight
    arm's outputs at rest and merges into `y_d(t)` by `t = blend` (`control.Blend`); with 0 it
    is `y_d(t)` from the start (an output error of 4.6 cm at `t = 0`)."""
    ref = reference(eq, t_final)
    if blend > 0:
        ref = control.Blend(ref, control.actuation_coordinates(robot, jnp.zeros(robot.n_q)), blend)
    return control.CollocatedPFBL(robot, KP, KD, ref)


def first_call(robot: sr.Robot, law: control.CollocatedPFBL, method: Any, dt: float = DT) -> float:
    """One output step of the closed loop from rest (what compiles its programs, or loads them
    from the cache); seconds."""
    rest = jnp.zeros(robot.n_q)
    tic = time.perf_counter()
    sr.simulate(robot, rest, rest, dt, dt, controller=law, method=method)
    return time.perf_counter() - tic


def compile_ahead(
    robot: sr.Robot, samples: int, t_final: float, method: Any, blend: float = BLEND
) -> Future[float]:
    """The closed loop's first call in a second thread, started before the statics: its
    programs take the reference's values as arguments (the law is a pytree), so a stand-in of
    the real reference's structure (the straight arm's outputs at every sample) compiles the
    very programs that `track` then calls, on the second core while the statics solve on the
    first (the tracing holds Python's lock; compiling, loading and solving do not). The
    future's result is the thread's seconds (its errors are raised there)."""

    def stand_in_first_call() -> float:
        times = sample_times(samples)
        y_rest = np.asarray(control.actuation_coordinates(robot, jnp.zeros(robot.n_q)))
        stand_in = Equilibria(times, None, None, np.tile(y_rest, (samples, 1)), None, None)
        return first_call(robot, closed_loop_law(robot, stand_in, t_final, blend), method)

    return in_thread(stand_in_first_call)


def in_thread(fn: Callable[[], Any]) -> Future[Any]:
    """`fn()` started in a thread of its own; the future gives its result (or raises its
    error)."""
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(fn)
    pool.shutdown(wait=False)
    return future


def track(
    robot: sr.Robot,
    eq: Equilibria,
    t_final: float,
    dt: float = DT,
    method: Any = METHOD,
    blend: float = BLEND,
) -> Tracking:
    """The closed loop of `closed_loop_law` from the straight rest configuration over
    `[0, t_final]`, integrated by `method` (progress printed) and sampled every `dt`."""
    law = closed_loop_law(robot, eq, t_final, blend)
    reference_along = jax.jit(jax.vmap(law.reference))
    first_call_s = first_call(robot, law, method, dt)
    rest = jnp.zeros(robot.n_q)
    # the programs that read the trajectory, compiled (or loaded) in a second thread while
    # the closed loop runs, on zeros of the shape of `simulate`'s output grid
    samples = max(1, math.ceil(t_final / dt - 1e-9)) + 1
    grid = jnp.zeros((samples, robot.n_q))
    along_ready = in_thread(lambda: (_along(robot, grid, grid), reference_along(grid[:, 0])))
    tic = time.perf_counter()
    traj = sr.simulate(robot, rest, rest, t_final, dt, controller=law, method=method, progress=True)
    run_s = time.perf_counter() - tic
    along_ready.result()
    y, yd, tip = _along(robot, traj.q, traj.qd)
    r, rd, _ = reference_along(traj.t)
    t = np.asarray(traj.t)
    e0, ed0 = np.asarray(r[0] - y[0]), np.asarray(rd[0] - yd[0])
    return Tracking(
        t,
        np.asarray(traj.q),
        np.asarray(traj.qd),
        np.asarray(traj.u),
        np.asarray(y),
        np.asarray(r),
        linear_error(t, e0, ed0),
        np.asarray(tip),
        tip_targets(t),
        first_call_s,
        run_s,
    )


def task_errors(run: Tracking) -> dict[str, Any]:
    """The closed loop's numbers: how exactly the output error obeys the PFBL's linear ODE,
    how it decays, how far the tips are from their moving targets (overall and over the last
    period, where the transient has decayed most), and the tensions' range."""
    e = run.y_d - run.y
    tip = np.linalg.norm((run.tips - run.targets).reshape(len(run.t), 3, 3), axis=2)
    late = run.t >= run.t[-1] - min(PERIOD, run.t[-1] / 2)
    return {
        "output_error_initial_m": float(np.abs(e[0]).max()),
        "output_error_final_m": float(np.abs(e[-1]).max()),
        "output_error_vs_linear_ode_max_m": float(np.abs(e - run.e_linear).max()),
        "tip_error_max_mm": (1e3 * tip.max(axis=0)).tolist(),
        "tip_error_late_max_mm": (1e3 * tip[late].max(axis=0)).tolist(),
        "tip_error_late_mean_mm": (1e3 * tip[late].mean(axis=0)).tolist(),
        "tensions_min_max_N": [float(run.u.min()), float(run.u.max())],
        "negative_tensions_min_N": {
            f"u{i + 1}": float(run.u[:, i].min())
            for i in range(run.u.shape[1])
            if run.u[:, i].min() < 0
        },
    }


def write_frames(robot: sr.Robot, path: Path, t: np.ndarray, q: np.ndarray) -> dict[str, int]:
    """The ParaView series of the configurations whose mesh maps entirely (`folded_vertices`);
    returns the left-out times with their counts of folded vertices."""
    folded = folded_vertices(robot, q).sum(axis=1)
    softrigid.io.write_trajectory(path, robot, t[folded == 0], q[folded == 0])
    return {f"{s:g}": int(n) for s, n in zip(t, folded) if n}


def run(
    out: Path | str = Path("out/helicoid_tracking"),
    samples: int = SAMPLES,
    degree: int = DEGREE,
    t_final: float = T_FINAL,
    figures: bool = True,
    statics_from: Path | str | None = None,
    method: Any = METHOD,
    blend: float = BLEND,
) -> dict[str, Any]:
    """Build, solve the sampled statics (or load them, `statics_from`: an `equilibria.npz` of
    an earlier run), fit `y_d(t)`, run the closed loop over `t_final` (none for 0), write the
    figures, the ParaView series and `summary.json` to `out`; print and return the summary
    (`statics_s`: the inverse statics, compilation included; `first_call_s`: the closed loop's
    compilation; `closed_loop_s`: its run; `wall_s`: everything)."""
    start = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    robot = build(degree)
    build_s = time.perf_counter() - start
    print(f"helicoid robot: n_q = {robot.n_q}, n_u = {robot.n_u}, built in {build_s:.1f} s")
    # the closed loop compiles on the second core while the statics solve (compile_ahead)
    ahead = None
    if t_final > 0 and not statics_from:
        ahead = compile_ahead(robot, samples, t_final, method, blend)
    tic = time.perf_counter()
    eq = Equilibria(**np.load(statics_from)) if statics_from else equilibria(robot, samples)
    statics_s = time.perf_counter() - tic
    if figures:
        sys.path.insert(0, str(Path(__file__).resolve().parent))  # its figures, beside it
        import helicoid_figures as figs

    def write_statics() -> tuple[list[str], dict[str, int]]:
        """The statics' figure, ParaView series and `equilibria.npz`."""
        names = []
        if figures:
            ref = reference(eq, PERIOD)
            y_d = lambda s: np.asarray(ref(s)[0])  # noqa: E731
            names.append(figs.statics(robot, eq, y_d, tip_targets, PERIOD, out).name)
        folded = write_frames(robot, out / "equilibria.pvd", eq.times, eq.q)
        np.savez(out / "equilibria.npz", **eq._asdict())
        return names, folded

    # written in a second thread while the closed loop's programs finish loading and while it
    # runs (it waits on XLA, not on Python)
    statics_written = in_thread(write_statics)
    ahead_s = ahead.result() if ahead is not None else None
    summary: dict[str, Any] = {
        "samples": len(eq.times),
        "nodes_per_body": int(robot.links[0].body.volume.n_points),
        "build_s": build_s,
        "statics_s": statics_s,
        "statics_loaded_from": str(statics_from) if statics_from else None,
        "statics_tip_error_max_m": float(eq.tip_error.max()),
        "statics_tensions_min_max_N": [float(eq.u.min()), float(eq.u.max())],
        "statics_negative_tensions": {
            f"u{i + 1}": float(eq.u[:, i].min()) for i in range(9) if (eq.u[:, i] < 0).any()
        },
    }
    print(
        f"statics of {len(eq.times)} samples in {statics_s:.1f} s; tips on the targets to "
        f"{summary['statics_tip_error_max_m']:.1e} m; tensions {eq.u.min():.3g} … "
        f"{eq.u.max():.3g} N, negative (a push): {summary['statics_negative_tensions'] or 'none'}"
    )
    run = track(robot, eq, t_final, method=method, blend=blend) if t_final > 0 else None
    names, folded_eq = statics_written.result()
    summary["statics_samples_with_folded_mesh_vertices"] = folded_eq
    if run is not None:
        frames = np.arange(0, len(run.t), max(1, round(FRAME_DT / DT)))
        np.savez(out / "tracking.npz", **run._asdict())
        # the ParaView series in a second thread while the figures are drawn
        folded = in_thread(
            lambda: write_frames(robot, out / "tracking.pvd", run.t[frames], run.q[frames])
        )
        errors = task_errors(run)
        summary.update(
            sim_s=float(run.t[-1]),
            compile_ahead_s=ahead_s,
            first_call_s=run.first_call_s,
            closed_loop_s=run.run_s,
            real_time_factor=float(run.t[-1]) / run.run_s,
            method=repr(method),
            blend_s=blend,
            **errors,
        )
        if figures:
            names.append(figs.coordinates(run.t, run.q, out).name)
            tip = np.linalg.norm((run.tips - run.targets).reshape(len(run.t), 3, 3), axis=2)
            names.append(figs.outputs(run.t, run.y, run.y_d, run.e_linear, run.u, tip, out).name)
            shots = SNAPSHOTS[SNAPSHOTS <= run.t[-1]]
            names.append(
                figs.snapshots(robot, run.t, run.q, run.tips, tip_targets, PERIOD, shots, out).name
            )
        summary["frames_with_folded_mesh_vertices"] = folded.result()
        print(
            f"closed loop: {run.t[-1]:.3g} s simulated in {run.run_s:.1f} s (first call "
            f"{run.first_call_s:.1f} s); output error {errors['output_error_initial_m']:.2e} → "
            f"{errors['output_error_final_m']:.2e} m, from the PFBL's linear ODE by "
            f"{errors['output_error_vs_linear_ode_max_m']:.1e} m; tips from their targets "
            f"({'last period' if run.t[-1] >= 2 * PERIOD else 'last half of the run'}) "
            f"{np.round(errors['tip_error_late_max_mm'], 1).tolist()} mm; "
            f"negative tensions: {errors['negative_tensions_min_N'] or 'none'}"
        )
    summary.update(wall_s=time.perf_counter() - start, figures=names)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"wall {summary['wall_s']:.1f} s; wrote {names}, .pvd/.npz, summary.json to {out}")
    return summary


def main() -> None:
    from _cli import nonnegative_float, output_folder, positive_int  # beside this script

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=output_folder, default=Path("out/helicoid_tracking"), help="output folder"
    )
    parser.add_argument(
        "--samples", type=positive_int, help=f"statics samples per period (default {SAMPLES})"
    )
    parser.add_argument(
        "--degree", type=positive_int, default=DEGREE, help="compressed rule's degree"
    )
    parser.add_argument(
        "--t-final", type=nonnegative_float, default=T_FINAL, help="closed loop [s]; 0: none"
    )
    parser.add_argument(
        "--statics-from", type=Path, default=None, help="an earlier run's equilibria.npz"
    )
    parser.add_argument(
        "--blend",
        type=nonnegative_float,
        default=BLEND,
        help="s to merge into y_d from rest; 0: none",
    )
    args = parser.parse_args()
    if args.statics_from is not None and args.samples is not None:
        parser.error("--samples does not apply with --statics-from (the file holds its samples)")
    if args.statics_from is not None and not args.statics_from.is_file():
        parser.error(f"--statics-from: no file {str(args.statics_from)!r}")
    run(
        args.out,
        args.samples or SAMPLES,
        args.degree,
        args.t_final,
        statics_from=args.statics_from,
        blend=args.blend,
    )


if __name__ == "__main__":
    # Python's cyclic collector off for this run: its collections re-scan every live object,
    # and the traced programs leave millions of them alive in JAX's caches (two collections
    # of 0.85-1.1 s each on the critical path, measured); the run makes little cyclic garbage
    # (peak memory 4.63-4.66 GB with the collector on or off; README, Simulation 1)
    gc.disable()
    sr.fast_compilation()  # XLA:CPU compiles 2-2.7x faster (README, "Fast start")
    sr.enable_compilation_cache()  # a later run loads the compiled programs (README, "Fast start")
    main()
