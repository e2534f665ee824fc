"""Figure 1 and 2 of performance.md: cost against the number of bodies (seed Simulation 3).

Planar constant-curvature chains (radius 0.03 m, length 0.3 m, density 1000 kg/m³, fixed joints),
N = 1, 2, 5, 10, 20, 50. Per N, for the recursion and for the Euler–Lagrange baseline:
build time (robot construction + first call: trace and compile), time per call of `M q̈`
(IID at q̇ = 0) and of `c` (IID at q̈ = 0) at `q = q̇ = q̈ = 1`, and the relative difference of
the two inverse dynamics on 100 random states. The baseline is skipped once a build took longer
than `--el-max-build` seconds (that blow-up is the point of the figure). Figure 2: MIID (one
pass) against the inertia-based algorithm (n separate IID calls). The build times inside the
loop profit from what earlier sizes left in JAX's caches, so the build of `--cold` bodies is also
measured in a fresh interpreter (`scaling.cold_build`: what a user pays once, imports excluded).
One JSON object per line.

Run: python benchmarks/scaling.py [--sizes 1 2 5 10 20 50] [--el-max-build 120] [--cold 20]

`examples/scaling_figure.py` draws the seed's Figure 11 from these records (it calls `options`,
`cold_build` and `sweep`, or reads the printed lines).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid import joints, kinematics, quadrature  # noqa: E402

try:
    from _timing import emit, machine, positive_int, time_call, time_first_call
except ImportError:  # run as a module
    from benchmarks._timing import emit, machine, positive_int, time_call, time_first_call


def build_chain(n: int, n_axial: int, n_radial: int, n_angular: int) -> sr.Robot:
    body = sr.SoftBody(
        kinematics.PlanarConstantCurvature(0.3),
        quadrature.cylinder(0.03, 0.3, n_axial=n_axial, n_radial=n_radial, n_angular=n_angular),
        density=1000.0,
    )
    return sr.Robot([sr.Link(joints.Fixed(), body) for _ in range(n)], gravity=(0.0, 0.0, -9.81))


def random_states(n: int, count: int, seed: int) -> tuple[jnp.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return (
        jnp.asarray(rng.uniform(-np.pi, np.pi, (count, n))),
        jnp.asarray(rng.uniform(-10, 10, (count, n))),
        jnp.asarray(rng.uniform(-100, 100, (count, n))),
    )


def measure(n: int, args: argparse.Namespace, el_enabled: bool) -> list[dict[str, Any]]:
    """Figures 1-2 for `n` bodies, the baseline only if `el_enabled`; returns the records."""
    params = {"n_bodies": n, "quadrature": [args.n_axial, args.n_radial, args.n_angular]}
    ones, zeros = jnp.ones(n), jnp.zeros(n)

    def recursion_build() -> object:
        robot = build_chain(n, args.n_axial, args.n_radial, args.n_angular)
        fn = jax.jit(lambda q, qd, qdd: sr.inertial_inverse_dynamics(robot, q, qd, qdd))
        measure.robot, measure.iid = robot, fn
        return fn(ones, zeros, ones)

    build = time_first_call(recursion_build)
    robot, iid = measure.robot, measure.iid
    mqdd = time_call(lambda: iid(ones, zeros, ones))
    cvec = time_call(lambda: iid(ones, ones, zeros))
    records = [emit("scaling.recursion", **params, build_s=build, mqdd=mqdd, c=cvec, **machine())]

    # Figure 2: MIID in one pass against n separate IID calls (the inertia-based algorithm).
    miid = jax.jit(lambda q, qd, qdd: sr.mass_inertial_inverse_dynamics(robot, q, qd, qdd))
    miid_t = time_call(lambda: miid(ones, ones, ones))
    eye = [jnp.zeros(n).at[j].set(1.0) for j in range(n)]

    def n_calls() -> object:
        return [iid(ones, zeros, e) for e in eye] + [iid(ones, ones, ones)]

    ncall_t = time_call(n_calls, repeats=5)
    records.append(
        emit(
            "scaling.miid_vs_n_iid",
            **params,
            miid=miid_t,
            n_iid=ncall_t,
            speedup=ncall_t["median_s"] / miid_t["median_s"],
        )
    )

    if el_enabled:

        def el_build_fn() -> object:
            fn = jax.jit(
                lambda q, qd, qdd: (
                    sr.lagrangian.inverse_dynamics(robot, q, qd, qdd) - sr.gravity_force(robot, q)
                )
            )
            measure.el = fn
            return fn(ones, zeros, ones)

        el_build = time_first_call(el_build_fn)
        el = measure.el
        el_mqdd = time_call(lambda: el(ones, zeros, ones), repeats=5)
        el_c = time_call(lambda: el(ones, ones, zeros), repeats=5)
        # accuracy on random states (batched): ‖ID_EL − ID‖ / ‖ID_EL‖
        q, qd, qdd = random_states(n, args.states, seed=n)
        rec = jax.jit(jax.vmap(lambda a, b, c: sr.inverse_dynamics(robot, a, b, c)))(q, qd, qdd)
        ref = jax.jit(jax.vmap(lambda a, b, c: sr.lagrangian.inverse_dynamics(robot, a, b, c)))(
            q, qd, qdd
        )
        rel = np.linalg.norm(np.asarray(ref - rec), axis=1) / np.linalg.norm(
            np.asarray(ref), axis=1
        )
        records.append(
            emit(
                "scaling.euler_lagrange",
                **params,
                build_s=el_build,
                mqdd=el_mqdd,
                c=el_c,
                ratio_mqdd=el_mqdd["median_s"] / mqdd["median_s"],
                ratio_c=el_c["median_s"] / cvec["median_s"],
                rel_diff_max=float(rel.max()),
                rel_diff_median=float(np.median(rel)),
                states=args.states,
            )
        )
    return records


_COLD = """
import json, sys, time
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import softrigid as sr
from softrigid import joints, kinematics, quadrature
n, na, nr, nt = (int(a) for a in sys.argv[1:])
start = time.perf_counter()
body = sr.SoftBody(kinematics.PlanarConstantCurvature(0.3),
                   quadrature.cylinder(0.03, 0.3, n_axial=na, n_radial=nr, n_angular=nt),
                   density=1000.0)
robot = sr.Robot([sr.Link(joints.Fixed(), body) for _ in range(n)])
model = time.perf_counter()
fn = jax.jit(lambda q, qd, qdd: sr.inertial_inverse_dynamics(robot, q, qd, qdd))
jax.block_until_ready(fn(jnp.ones(n), jnp.zeros(n), jnp.ones(n)))
done = time.perf_counter()
print(json.dumps({"model_s": model - start, "build_s": done - start}))
"""


def cold_build(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """Robot construction + first IID call of `n` bodies in a fresh interpreter; the record."""
    sizes = [str(v) for v in (n, args.n_axial, args.n_radial, args.n_angular)]
    out = subprocess.run(
        [sys.executable, "-c", _COLD, *sizes], capture_output=True, text=True, check=True
    )
    return emit("scaling.cold_build", n_bodies=n, **json.loads(out.stdout.strip().splitlines()[-1]))


def sweep(args: argparse.Namespace) -> list[dict[str, Any]]:
    """`measure` for every size of `args.sizes`, the baseline stopped after the first size whose
    build took longer than `args.el_max_build` seconds; returns the records."""
    records: list[dict[str, Any]] = []
    el_enabled = True
    for n in args.sizes:
        found = measure(n, args, el_enabled)
        records += found
        el = [r for r in found if r["name"] == "scaling.euler_lagrange"]
        if el and el[0]["build_s"] > args.el_max_build:
            records.append(
                emit(
                    "scaling.euler_lagrange_stopped",
                    after_n_bodies=n,
                    build_s=el[0]["build_s"],
                    limit_s=args.el_max_build,
                )
            )
            el_enabled = False
    return records


def options() -> argparse.ArgumentParser:
    """The benchmark's command-line options (sizes, baseline limit, quadrature, cold builds),
    without help so that other scripts can take them as a parent parser."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--sizes", type=positive_int, nargs="+", default=[1, 2, 5, 10, 20, 50])
    parser.add_argument(
        "--el-max-build", type=float, default=120.0, help="skip EL after a build this long [s]"
    )
    parser.add_argument("--states", type=positive_int, default=100)
    parser.add_argument("--n-axial", type=positive_int, default=4)
    parser.add_argument("--n-radial", type=positive_int, default=2)
    parser.add_argument("--n-angular", type=positive_int, default=3)
    parser.add_argument(
        "--cold", type=positive_int, nargs="*", default=[20], help="fresh-process builds"
    )
    return parser


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], parents=[options()])
    args = parser.parse_args()
    start = time.perf_counter()
    for n in args.cold:
        cold_build(n, args)
    sweep(args)
    emit("scaling.done", wall_s=time.perf_counter() - start)


if __name__ == "__main__":
    main()
