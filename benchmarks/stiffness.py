"""The stiffness `K = ∂²U/∂q²` block by block against the Hessian of the whole energy.

`U = Σ_i U_i(q_i)` couples no two links, so `softrigid.stiffness_matrix` (and the statics'
Newton Jacobian) takes one Hessian per link in its own `n_i` coordinates; the same-run
reference is `jax.hessian` of `softrigid.elastic_energy` (what `stiffness_matrix` computed
before), which pushes all `n_q` tangents through every body. Robots: chains of N planar
constant-curvature bodies of a compressible neo-Hookean solid on fixed joints (radius 0.02 m,
length 0.25 m, E = 5 MPa, ν = 0.4, density 1000 kg/m³, a 3 × 2 × 5 cylinder rule; a Cosserat
rod's energy is quadratic in these coordinates, its Hessian a constant that XLA folds), N = 2,
5, 10, 20 (`--sizes`); with `--helicoid`, also the seed's 3-segment
helicoid robot of `examples/helicoid_tracking.py` (compressed rule, nine tendons) and its
statics Jacobian `softrigid._statics_residual.jacobian` against `jax.jacfwd` of the residual
(about a minute of compilation each).

Each function under `jax.jit` with the robot closed over, at a seeded random state; first call
(trace + compile + run), then the two timed interleaved (`_timing.time_interleaved`, median
per call) and their ratio `hessian / blocks`; `max_abs_difference` between them. One pinned
core (`--core`), float64, one JSON object per line.

Run: python benchmarks/stiffness.py [--sizes 2 5 10 20] [--helicoid] [--core 0]
"""

from __future__ import annotations

import argparse
from typing import Any

try:
    from _timing import (
        emit,
        load_example,
        machine,
        pin_core,
        positive_int,
        time_first_call,
        time_interleaved,
    )
except ImportError:  # run as a module
    from benchmarks._timing import (
        emit,
        load_example,
        machine,
        pin_core,
        positive_int,
        time_first_call,
        time_interleaved,
    )

LENGTH, RADIUS, YOUNG = 0.25, 0.02, 5e6


def solid_chain(n: int) -> Any:
    """N planar CC bodies of a compressible neo-Hookean solid on fixed joints."""
    import softrigid as sr
    from softrigid import joints, kinematics, materials, quadrature

    body = sr.SoftBody(
        kinematics.PlanarConstantCurvature(LENGTH),
        quadrature.cylinder(RADIUS, LENGTH, n_axial=3, n_radial=2, n_angular=5),
        density=1000.0,
        material=materials.CompressibleNeoHookean(*materials.lame_parameters(YOUNG, 0.4)),
    )
    return sr.Robot([sr.Link(joints.Fixed(), body) for _ in range(n)], gravity=(0, 0, -9.81))


def helicoid() -> Any:
    """The seed's helicoid robot as `examples/helicoid_tracking.py` builds it."""
    return load_example("helicoid_tracking").build()


def compare(label: str, fns: dict[str, Any], *args: Any, **fields: Any) -> None:
    """First calls, interleaved per-call times, the ratio and the agreement of two functions."""
    import numpy as np

    first = {name: time_first_call(lambda f=fn: f(*args)) for name, fn in fns.items()}
    times = time_interleaved({name: (lambda f=fn: f(*args)) for name, fn in fns.items()})
    (a, ta), (b, tb) = ((name, times[name]["median_s"]) for name in fns)
    diff = float(np.max(np.abs(np.asarray(fns[a](*args)) - np.asarray(fns[b](*args)))))
    emit(
        label,
        **fields,
        **{f"{name}_first_call_s": first[name] for name in fns},
        **{f"{name}_per_call_ms": 1e3 * times[name]["median_s"] for name in fns},
        ratio=ta / tb,
        max_abs_difference=diff,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=positive_int, nargs="+", default=[2, 5, 10, 20])
    parser.add_argument("--helicoid", action="store_true", help="also the helicoid robot")
    parser.add_argument("--core", type=int, default=0)
    args = parser.parse_args()
    pin_core(args.core)

    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    import softrigid as sr

    emit("machine", **machine())
    rng = np.random.default_rng(0)

    def pair(robot: Any) -> dict[str, Any]:
        return {
            "hessian": jax.jit(jax.hessian(lambda q: sr.elastic_energy(robot, q))),
            "blocks": jax.jit(lambda q: sr.stiffness_matrix(robot, q)),
        }

    for n in args.sizes:
        robot = solid_chain(n)
        q = jnp.asarray(rng.uniform(-1.0, 1.0, robot.n_q))
        compare("stiffness.solid_chain", pair(robot), q, n_bodies=n, n_q=robot.n_q)
    if args.helicoid:
        from softrigid._statics_residual import jacobian, residual

        robot = helicoid()
        q = jnp.asarray(0.1 * rng.uniform(-1.0, 1.0, robot.n_q))
        u = jnp.asarray(rng.uniform(0.0, 50.0, robot.n_u))
        compare("stiffness.helicoid", pair(robot), q, n_q=robot.n_q)
        statics = {
            "jacfwd_of_residual": jax.jit(jax.jacfwd(lambda x, v: residual(robot, (), v, x)[0])),
            "jacobian": jax.jit(lambda x, v: jacobian(robot, (), v, x)[0]),  # (J, A): J
        }
        compare("stiffness.helicoid_statics_jacobian", statics, q, u, n_q=robot.n_q)


if __name__ == "__main__":
    main()
