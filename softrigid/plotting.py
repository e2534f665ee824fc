"""Plots of robots and trajectories (needs the optional `plot` extra: matplotlib).

`backbones` is pure JAX and needs no plotting library; the `plot_*` functions import matplotlib
when called and write image files.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from ._cache import jit
from ._chain import proximal_poses
from ._checks import is_real_dtype
from ._entry import check_robot, check_states
from ._model import Robot
from ._simulate import Trajectory
from ._soft_body import SoftBody

__all__ = ["backbones", "plot_snapshots", "plot_trajectory"]

_AXES = {"xy": (0, 1), "xz": (0, 2), "yz": (1, 2)}


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "softrigid.plotting needs matplotlib: pip install 'softrigid[plot]'"
        ) from err
    return plt


def backbones(robot: Robot, q: Array, n: int = 16) -> list[Array]:
    """World polylines `(n, 3)` of every body's axis at `q`.

    A soft body's axis is the image of `(0, 0, x3)`, `x3 ∈ [0, L]` with `L` the third
    coordinate of its volume's pivot; a rigid body is drawn from its proximal origin through its
    centre of mass to its distal origin.
    """
    robot = check_robot(robot)
    (q,) = check_states(robot, q=q)
    if not isinstance(n, int) or isinstance(n, bool) or n < 2:
        raise ValueError(f"backbones: n must be an integer >= 2, got {n!r}")
    return _backbones(robot, q, n)


@functools.partial(jit, static_argnames="n")
def _backbones(robot: Robot, q: Array, n: int) -> list[Array]:
    """`backbones`' polylines, compiled once per robot structure and `n` (a figure of many
    snapshots calls it once per snapshot)."""
    rots, transs = proximal_poses(robot, q)
    lines = []
    for i, link in enumerate(robot.links):
        body, rot, trans = link.body, rots[i], transs[i]
        qb = q[robot.body_slice(i)]
        if isinstance(body, SoftBody) and body.volume.pivot is not None:
            x3 = jnp.linspace(0.0, body.volume.pivot[2], n)
            axis = jnp.stack([jnp.zeros(n), jnp.zeros(n), x3], -1).astype(q.dtype)
            pts = body.map_points(qb, axis)
        else:
            _, tb = body.distal_pose(qb)
            pts = jnp.stack([jnp.zeros(3), body.mass_points(qb)[0].mean(0), tb])
        lines.append(pts @ rot.T + trans)
    return lines


def _trajectory(where: str, traj: Any) -> tuple[np.ndarray, np.ndarray]:
    """`(t (S,), q (S, n))` of a `Trajectory` (or anything with `t` and `q`), `S ≥ 1`."""
    if not (hasattr(traj, "t") and hasattr(traj, "q")):
        raise TypeError(
            f"{where}: traj must be a softrigid.Trajectory (with t and q), got "
            f"{type(traj).__name__}"
        )
    t, q = np.asarray(traj.t), np.asarray(traj.q)
    for name, value in (("t", t), ("q", q)):
        if not is_real_dtype(value.dtype):
            raise TypeError(f"{where}: traj.{name} must be real numbers, got dtype {value.dtype}")
    if t.ndim != 1 or q.ndim != 2 or q.shape[0] != t.shape[0] or t.size == 0:
        raise ValueError(
            f"{where}: traj must hold S ≥ 1 times t (S,) and configurations q (S, n_q), got "
            f"t {t.shape}, q {q.shape}"
        )
    for name, value in (("t", t), ("q", q)):
        if not np.all(np.isfinite(value)):
            first = np.argwhere(~np.isfinite(value))[0].tolist()
            raise ValueError(
                f"{where}: traj.{name} is not finite at {first} (a diverged run?): plot the "
                "samples before it"
            )
    return t, q


def plot_trajectory(
    traj: Trajectory, path: str | Path, labels: Sequence[str] | None = None
) -> Path:
    """Plot `q(t)` (one curve per coordinate) and save it to `path` (PNG, SVG, PDF…).

    Args:
        traj: a `Trajectory` (from `simulate`).
        path: the file to write; its suffix picks the format.
        labels: one legend entry per coordinate (default `q1`, `q2`, …).

    Returns:
        The path written.
    """
    t, q = _trajectory("plot_trajectory", traj)
    if labels is not None and len(labels) != q.shape[1]:
        raise ValueError(
            f"plot_trajectory: labels has {len(labels)} entries for {q.shape[1]} coordinates"
        )
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for j in range(q.shape[1]):
        ax.plot(t, q[:, j], label=labels[j] if labels else f"q{j + 1}")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("q [rad, m]")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small", ncol=2)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def plot_snapshots(
    robot: Robot,
    traj: Trajectory,
    path: str | Path,
    times: Sequence[float] | None = None,
    plane: str = "xz",
) -> Path:
    """Draw the robot's backbones at a few instants of `traj` projected on `plane`
    (`"xy"`, `"xz"` or `"yz"`), darker for later times, and save to `path`."""
    if plane not in _AXES:
        raise ValueError(f"plane must be one of {tuple(_AXES)}, got {plane!r}")
    t, _ = _trajectory("plot_snapshots", traj)
    if times is None:
        times = np.linspace(t[0], t[-1], 6)
    times = np.atleast_1d(np.asarray(times, dtype=float))
    if times.ndim != 1 or times.size == 0 or not np.all(np.isfinite(times)):
        raise ValueError(f"plot_snapshots: times must be finite numbers, got {times}")
    plt = _pyplot()
    a, b = _AXES[plane]
    fig, ax = plt.subplots(figsize=(5, 5))
    cmap = plt.get_cmap("viridis")
    for k, time in enumerate(times):
        idx = int(np.argmin(np.abs(t - time)))
        colour = cmap(k / max(1, len(times) - 1))
        for j, line in enumerate(backbones(robot, traj.q[idx])):
            line = np.asarray(line)
            ax.plot(
                line[:, a],
                line[:, b],
                color=colour,
                lw=3 if j else 4,
                label=f"t = {t[idx]:.2f} s" if j == 0 else None,
            )
    ax.set_aspect("equal")
    ax.set_xlabel(f"{plane[0]} [m]")
    ax.set_ylabel(f"{plane[1]} [m]")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
