"""Re-charting a robot's joint coordinates away from their charts' singularities.

The rotation vectors of `Spherical` and `Free` joints are singular at `|φ| = 2π` (the map
from `φ̇` to the angular velocity loses rank), which a tumbling body reaches in a long run.
`rechart` applies each joint's `Joint.rechart` to its coordinates: the same configuration in a
chart away from the singularity (`|φ| > π` becomes `φ (1 − 2πk/|φ|)`, `k` whole turns), with
the velocities and accelerations mapped by the chart change, `q̇' = ψ'(q) q̇`,
`q̈' = ψ'(q) q̈ + ψ''(q)[q̇, q̇]`. `softrigid.simulate` calls it after every fixed step.
"""

from __future__ import annotations

from jax import Array

from ._model import Robot
from .joints import Joint

__all__ = ["has_charts", "rechart"]


def _recharts(joint: Joint) -> bool:
    return type(joint).rechart is not Joint.rechart


def has_charts(robot: Robot) -> bool:
    """Whether some joint of `robot` changes charts (a `Spherical` or `Free` joint)."""
    return any(_recharts(link.joint) for link in robot.links)


def rechart(robot: Robot, q: Array, qd: Array, *accelerations: Array) -> tuple[Array, ...]:
    """`(q, q̇, q̈…)` `(n_q,)` each, with every joint's coordinates re-charted by its
    `Joint.rechart` (body coordinates and joints without a singular chart unchanged)."""
    rates = (q, qd, *accelerations)
    for i, link in enumerate(robot.links):
        if _recharts(link.joint):
            sl = robot.joint_slice(i)
            new = link.joint.rechart(*(x[sl] for x in rates))
            rates = tuple(x.at[sl].set(y) for x, y in zip(rates, new))
    return rates
