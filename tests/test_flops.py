"""`benchmarks/flops.py` counts a traced program's arithmetic: known counts of small programs,
loops and branches, and XLA's own count of a compiled loop-free robot program."""

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import softrigid as sr

_PATH = Path(__file__).parents[1] / "benchmarks" / "flops.py"
_SPEC = importlib.util.spec_from_file_location("flops", _PATH)
flops = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(flops)


def test_known_counts():
    # a (2, 3) @ (3, 4) product: 2 · 8 · 3; the + 1 and the sine: 8 each; the sum: 8
    total, lines = flops.flops(
        lambda a, b: jnp.sum(jnp.sin(a @ b + 1.0)), (np.ones((2, 3)), np.ones((3, 4)))
    )
    assert total == 48 + 8 + 8 + 8
    assert sum(lines.values()) == total
    assert any("test_flops.py" in line for line in lines)

    def looped(x):
        # a scan's body counts times its length (7 · 3 multiplications); the test one, and
        # both branches count
        y = jax.lax.scan(lambda c, _: (c * 2.0, None), x, None, length=7)[0]
        return jax.lax.cond(y[0] > 0, lambda v: v + 1.0, lambda v: v * v * v, y)

    assert flops.flops(looped, (np.ones(3),))[0] == 7 * 3 + 1 + 3 + 2 * 3


def test_a_robot_program_counts_as_xla_counts_it():
    # one planar constant-curvature segment (no loop in its compiled program): the traced
    # count within 10 % of XLA's cost analysis of the optimized program
    body = sr.SoftBody(
        sr.kinematics.PlanarConstantCurvature(0.2),
        sr.quadrature.cylinder(0.02, 0.2, 3, 1, 3),
        1000.0,
        material=sr.materials.CosseratRod(1e6, 4e5),
    )
    robot = sr.Robot([sr.Link(sr.joints.Fixed(), body)], gravity=(0.0, 0.0, -9.81))

    def fd(q, qd, tau):
        return sr.forward_dynamics(robot, q, qd, tau)

    state = (np.array([0.3]), np.array([0.1]), np.array([0.0]))
    traced = flops.flops(fd, state)[0]
    cost = jax.jit(fd).lower(*(jnp.asarray(x) for x in state)).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    assert 0.9 * cost["flops"] <= traced <= 1.1 * cost["flops"]
