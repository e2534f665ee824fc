"""Simulation speed (issue 12): real-time factor after compile and first-call time per robot and
integration method, and the cost of closing the loop.

Per configuration (robot, method, step `dt`, horizon `t_final`): the first `simulate` call
(trace + compile + run, what a user waits for once per process), the steady-state wall time of a
whole `simulate` call (min and median over `--repeats` calls, `jax.block_until_ready`), the
real-time factor `t_final / min`, and the accuracy: the largest deviation of `q` from a
tight-tolerance Radau reference on the common grid. Robots:

- `swinging_arm`: the README's main example (`examples/swinging_arm.py`, 4 coordinates, 1 s),
  with RK4, implicit Euler and generalized-α, each at several steps (`--arm-steps` overrides
  them): the fastest run whose error stays below `--tol` is the method's best (`simulate.best`);
- `cosserat10`: ten planar PCS Cosserat segments (bend, shear, axial; 30 coordinates) hanging
  from a horizontal clamp, RK4 at the step its stiff axial modes allow against generalized-α at
  5 ms (with the iteration matrix kept while it converges, `newton="modified"`, and
  evaluated at every iterate, `"full"`);
- `helicoid`: the seed's 3-segment helicoid robot (`kinematics.lvp.helicoid_segment(0.1)` on
  `meshes/helicoid.vtu`, density 960, `IncompressibleNeoHookean(C=0.178e6, eta=0.05)`, 24
  coordinates) on the compressed rule `quadrature.compress(from_mesh(..., degree=4), 6)`, with
  generalized-α at `--helicoid-dt` (≥ 5 ms) over `--t-final` (its 6 s estimated from that
  horizon), and adaptive BDF (`rtol` 1e-4, central differences of `ẏ` for its Jacobian, on the
  grid `--helicoid-dt`) over the whole `--helicoid-t-final` (target: 6 s in ≤ 60 s wall)
  against BDF at `rtol` 1e-7 (same run);
- `closed_loop`: one run of the swinging arm with `control.ComputedTorque` against the same run
  without a controller, same method and step, the two timed in alternation (ratio of per-step
  cost, by the wall clock and by the process's CPU time; target ≤ 1.2×): RK4 at 4 ms, and
  generalized-α at `--closed-loop-alpha-dt` (2 ms: at 10 and 20 ms its Newton iteration does
  not converge under computed torque, with the kept or the full matrix);
- `soromox`: with `soromox` and `diffrax` importable, SoRoMoX's planar PCS rollout against
  the same chain in softrigid (`_soromox_rollout`), in the same run; otherwise a line says
  it was skipped.

`simulate` keys its compiled program on the scheme's static options (a new instance with the
same options reuses it; Newton's `tol` and `theta_max` are arguments). Time on one core (`taskset -c 1`); the machine may be shared, so the
minimum over repeats is the figure, the median shows the spread, and each line also gives the
process's CPU time (`cpu_min_s`), which leaves out the time other processes hold the core.
One JSON object per line.

Run: taskset -c 1 python benchmarks/simulate.py [--t-final 0.05] [--only swinging_arm ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
from pathlib import Path
from typing import Any

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid import control, joints, kinematics, materials, quadrature  # noqa: E402
from softrigid.integrators import BDF, RK4, GeneralizedAlpha, ImplicitEuler  # noqa: E402
from softrigid.kinematics import lvp  # noqa: E402

try:
    from _runs import measure, measure_loops, reference
    from _timing import emit, load_example, positive_int
except ImportError:  # run as a module
    from benchmarks._runs import measure, measure_loops, reference
    from benchmarks._timing import emit, load_example, positive_int

ROOT = Path(__file__).resolve().parents[1]
# the base joint frame turned so that the arm's z axis points along world +x (horizontal)
HORIZONTAL = (jnp.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]), jnp.zeros(3))


def swinging_arm() -> tuple[sr.Robot, jax.Array]:
    """The README's main example robot and its initial configuration."""
    return load_example("swinging_arm").build_robot(), jnp.array([0.0, 0.3, -0.2, 0.1])


def cosserat_arm(n_segments: int = 10) -> tuple[sr.Robot, jax.Array]:
    """`n_segments` planar PCS segments (length 0.05 m, radius 1 cm, silicone: density 1070,
    E = 1 MPa, G = E/3, damping time 0.01 s) clamped horizontally, slightly bent."""
    segment = sr.SoftBody(
        kinematics.PlanarPCS(0.05, strains=("bend", "shear", "axial")),
        quadrature.cylinder(0.01, 0.05, n_axial=2, n_radial=1, n_angular=3),
        density=1070.0,
        material=materials.CosseratRod(E=1e6, G=1e6 / 3, eta=0.01),
    )
    links = [sr.Link(joints.Fixed(origin=HORIZONTAL), segment)]
    links += [sr.Link(joints.Fixed(), segment) for _ in range(n_segments - 1)]
    robot = sr.Robot(links, gravity=(0.0, 0.0, -9.81))
    return robot, jnp.tile(jnp.array([1.0, 0.0, 0.0]), n_segments)


def helicoid_robot(degree: int) -> tuple[sr.Robot, jax.Array, dict[str, Any]]:
    """Three helicoid segments on the compressed mesh rule, clamped horizontally."""
    start = time.perf_counter()
    fine = quadrature.from_mesh(ROOT / "meshes/helicoid.vtu", degree=4)
    rule, info = quadrature.compress(fine, degree, return_info=True)
    segment = sr.SoftBody(
        lvp.helicoid_segment(0.1),
        rule,
        density=960.0,
        material=materials.IncompressibleNeoHookean(C=0.178e6, eta=0.05),
    )
    links = [sr.Link(joints.Fixed(origin=HORIZONTAL), segment)]
    links += [sr.Link(joints.Fixed(), segment) for _ in range(2)]
    robot = sr.Robot(links, gravity=(0.0, 0.0, -9.81))
    build = {
        "nodes_full": fine.n_points,
        "nodes": info.n_nodes,
        "moment_residual": float(info.residual),
        "build_s": time.perf_counter() - start,
    }
    return robot, jnp.zeros(robot.n_q), build


def bench_swinging_arm(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Every method at its candidate steps; the best (fastest within `--tol`) per method."""
    robot, q0 = swinging_arm()
    ref_dt = 5e-4
    ref = reference(robot, q0, args.arm_t_final, ref_dt)
    candidates = {
        "rk4": (RK4(), (1e-3, 2e-3, 4e-3, 8e-3)),
        "implicit_euler": (ImplicitEuler(), (1e-3, 5e-3)),
        "generalized_alpha": (GeneralizedAlpha(rho_inf=0.5), (5e-3, 1e-2, 2e-2)),
    }
    best: dict[str, dict[str, Any]] = {}
    for label in args.arm_methods:
        scheme, steps = candidates[label]
        steps = args.arm_steps or steps
        for dt in steps:
            rec = measure(
                "swinging_arm", robot, q0, args.arm_t_final, scheme, dt, args.repeats, (ref, ref_dt)
            )
            ok = rec is not None and rec["max_abs_error_q"] <= args.tol
            if ok and (label not in best or rec["min_s"] < best[label]["min_s"]):
                best[label] = rec
    for label, rec in best.items():
        emit(
            "simulate.best",
            robot="swinging_arm",
            method=label,
            tol=args.tol,
            dt=rec["dt"],
            real_time_factor=rec["real_time_factor"],
            first_call_s=rec["first_call_s"],
            max_abs_error_q=rec["max_abs_error_q"],
        )
    return best


def bench_closed_loop(args: argparse.Namespace) -> None:
    """Computed torque (all four coordinates, `A = I`) against no controller: same method, step
    and horizon, timed in alternation; the ratio of the minima (wall clock, and the process's
    CPU time, steadier on a shared core) is the cost of closing the loop."""
    robot, q0 = swinging_arm()
    target = control.CubicRestToRest(q0, jnp.array([0.5, 0.0, 0.0, 0.0]), 0.0, 1.0)
    loops = {"open": None, "computed_torque": control.ComputedTorque(25.0, 10.0, target)}
    for scheme, dt in ((RK4(), 4e-3), (GeneralizedAlpha(rho_inf=0.5), args.closed_loop_alpha_dt)):
        records = measure_loops(
            "swinging_arm", robot, q0, args.arm_t_final, scheme, dt, args.repeats, loops
        )
        if records is not None:
            open_loop, closed = records["open"], records["computed_torque"]
            emit(
                "simulate.closed_loop_ratio",
                method=scheme.name,
                dt=dt,
                ratio=closed["min_s"] / open_loop["min_s"],
                ratio_cpu=closed["cpu_min_s"] / open_loop["cpu_min_s"],
                ratio_median=closed["median_s"] / open_loop["median_s"],
                target=1.2,
                load=os.getloadavg(),
            )


def bench_cosserat(args: argparse.Namespace) -> None:
    """RK4 at the steps its stiff modes allow against generalized-α at 5 ms."""
    robot, q0 = cosserat_arm()
    t_final = args.t_final
    ref_dt = 2.5e-4
    ref = reference(robot, q0, t_final, ref_dt)
    for dt in (2.5e-4, 5e-4):
        measure("cosserat10", robot, q0, t_final, RK4(), dt, args.repeats, (ref, ref_dt))
    for newton in args.newton:
        alpha = GeneralizedAlpha(rho_inf=0.5, newton=newton)
        measure("cosserat10", robot, q0, t_final, alpha, 5e-3, args.repeats, (ref, ref_dt))


def bench_helicoid(args: argparse.Namespace) -> None:
    """Generalized-α at `--helicoid-dt` over `--t-final` (no reference: Radau on 24 stiff
    coordinates would dominate the run), its 6 s estimated; then BDF over the whole
    `--helicoid-t-final` against BDF at `rtol` 1e-7 (both by central differences: the exact
    Jacobian's program compiles for minutes on this robot)."""
    robot, q0, build = helicoid_robot(args.degree)
    emit("simulate.helicoid_model", degree=args.degree, **build)
    for newton in args.newton:
        alpha = GeneralizedAlpha(rho_inf=0.5, newton=newton)
        rec = measure(
            "helicoid", robot, q0, args.t_final, alpha, args.helicoid_dt, max(1, args.repeats - 1)
        )
        if rec is not None:
            emit(
                "simulate.helicoid_6s_estimate",
                newton=newton,
                wall_s=6.0 / rec["real_time_factor"],
                target_wall_s=60.0,
                from_t_final=args.t_final,
            )
    t_final, dt = args.helicoid_t_final, args.helicoid_dt
    tight = BDF(rtol=1e-7, atol=1e-9, jacobian="central_differences")
    start = time.perf_counter()
    ref = reference(robot, q0, t_final, dt, tight)
    emit(
        "simulate.helicoid_reference",
        method="bdf",
        rtol=tight.rtol,
        wall_s=time.perf_counter() - start,
    )
    bdf = BDF(rtol=1e-4, atol=1e-6, jacobian="central_differences")
    rec = measure("helicoid", robot, q0, t_final, bdf, dt, 1, (ref, dt), rtol=bdf.rtol)
    if rec is not None:
        emit(
            "simulate.helicoid_bdf",
            wall_s=rec["min_s"],
            first_call_s=rec["first_call_s"],
            t_final=t_final,
            target_wall_s=60.0 * t_final / 6.0,
            max_abs_error_q=rec["max_abs_error_q"],
        )


def bench_soromox(args: argparse.Namespace) -> None:
    """The same-run rollout comparison with SoRoMoX (`_soromox_rollout`), or a line saying it
    was skipped without soromox or diffrax."""
    missing = [m for m in ("soromox", "diffrax") if importlib.util.find_spec(m) is None]
    if missing:
        emit("simulate.soromox", skipped=True, reason=f"not installed: {', '.join(missing)}")
        return
    try:
        from _soromox_rollout import bench
    except ImportError:  # run as a module
        from benchmarks._soromox_rollout import bench
    bench(args.soromox_segments, args.soromox_t_final, args.repeats)


BENCHES = {
    "swinging_arm": bench_swinging_arm,
    "closed_loop": bench_closed_loop,
    "cosserat10": bench_cosserat,
    "helicoid": bench_helicoid,
    "soromox": bench_soromox,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=list(BENCHES), default=list(BENCHES))
    parser.add_argument(
        "--arm-methods",
        nargs="*",
        choices=["rk4", "implicit_euler", "generalized_alpha"],
        default=["rk4", "implicit_euler", "generalized_alpha"],
    )
    parser.add_argument("--arm-steps", nargs="*", type=float, help="override the candidate steps")
    parser.add_argument("--t-final", type=float, default=0.05, help="cosserat10 and helicoid [s]")
    parser.add_argument("--arm-t-final", type=float, default=1.0, help="swinging arm [s]")
    parser.add_argument("--helicoid-dt", type=float, default=5e-3)
    parser.add_argument(
        "--helicoid-t-final", type=float, default=6.0, help="the helicoid's BDF run [s]"
    )
    parser.add_argument(
        "--closed-loop-alpha-dt",
        type=float,
        default=2e-3,
        help="generalized-α's step in closed_loop (at 10 ms its Newton does not converge)",
    )
    parser.add_argument(
        "--degree", type=positive_int, default=6, help="helicoid rule's moment degree"
    )
    parser.add_argument("--soromox-segments", type=positive_int, default=4)
    parser.add_argument("--soromox-t-final", type=float, default=0.5)
    parser.add_argument("--tol", type=float, default=1e-3, help="max |q − q_ref| accepted")
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument(
        "--newton",
        nargs="*",
        choices=["modified", "full"],
        default=["modified", "full"],
        help="the implicit schemes' Newton variants compared on cosserat10 and helicoid",
    )
    args = parser.parse_args()
    for name in args.only:
        BENCHES[name](args)


if __name__ == "__main__":
    main()
