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
    coordinate of its volume's pivot; a rigid body, and a soft body whose volume has no pivot
    (a mesh whose distal face is not flat), is drawn from its proximal origin through its
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
            # the centre of mass (a body without a pivot: the masses' mean, not the nodes')
            points, masses = body.mass_points(qb)
            com = masses @ points / jnp.sum(masses)
            pts = jnp.stack([jnp.zeros(3, q.dtype), com, tb])
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
    traj: Trajectory,
    path: str | Path,
    labels: Sequence[str] | None = None,
    legend: str | None = "best",
) -> Path:
    """Plot `q(t)` (one curve per coordinate) and save it to `path` (PNG, SVG, PDF…).

    Args:
        traj: a `Trajectory` (from `simulate`).
        path: the file to write; its suffix picks the format.
        labels: one legend entry per coordinate (default `q1`, `q2`, …).
        legend: where the legend goes: a matplotlib location inside the axes (`"best"`,
            `"upper right"`, …), `"outside"` (right of the axes, clear of the curves) or
            `None` (no legend).

    Returns:
        The path written.
    """
    _check_legend("plot_trajectory", legend)
    t, q = _trajectory("plot_trajectory", traj)
    if labels is not None and len(labels) != q.shape[1]:
        raise ValueError(
            f"plot_trajectory: labels has {len(labels)} entries for {q.shape[1]} coordinates"
        )
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    try:
        for j in range(q.shape[1]):
            ax.plot(t, q[:, j], label=f"q{j + 1}" if labels is None else labels[j])
        ax.set_xlabel("t [s]")
        ax.set_ylabel("q [rad, m]")
        ax.grid(alpha=0.3)
        _draw_legend(ax, legend, fontsize="small", ncol=2)
        return _save(plt, fig, path)
    finally:  # also when drawing or saving fails: no figure left open
        plt.close(fig)


# where the plots put their legend: matplotlib's locations inside the axes, "outside" (to the
# right of the axes, clear of the data) or None (no legend)
_LOCATIONS = (
    "best",
    "upper right",
    "upper left",
    "lower left",
    "lower right",
    "right",
    "center left",
    "center right",
    "lower center",
    "upper center",
    "center",
)


def _check_legend(where: str, legend: Any) -> None:
    valid = isinstance(legend, str) and (legend == "outside" or legend in _LOCATIONS)
    if legend is not None and not valid:
        raise ValueError(
            f"{where}: legend must be None, 'outside' or one of {_LOCATIONS}, got {legend!r}"
        )


def _draw_legend(ax: Any, legend: str | None, **kwargs: Any) -> None:
    """The axes' legend at `legend` (`_LOCATIONS`, `"outside"` or None: none)."""
    if legend == "outside":
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kwargs)
    elif legend is not None:
        ax.legend(loc=legend, **kwargs)


def _save(plt: Any, fig: Any, path: str | Path) -> Path:
    """Save `fig` to `path`; the file written (matplotlib appends its default format's suffix,
    `savefig.format`, to a path without one)."""
    path = Path(path)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    return path if path.suffix else path.with_name(f"{path.name}.{plt.rcParams['savefig.format']}")


def _time_labels(times: np.ndarray) -> list[str]:
    """`t = … s` for each time, with as many decimals as tell them apart (at least 2)."""
    for decimals in range(2, 10):
        labels = [f"t = {x:.{decimals}f} s" for x in times]
        if len(set(labels)) == len(set(times.tolist())):
            return labels
    return [f"t = {x!r} s" for x in times.tolist()]


def plot_snapshots(
    robot: Robot,
    traj: Trajectory,
    path: str | Path,
    times: Sequence[float] | None = None,
    plane: str = "xz",
    legend: str | None = "best",
) -> Path:
    """Draw the robot's backbones at a few instants of `traj` projected on `plane`
    (`"xy"`, `"xz"` or `"yz"`), darker for later times, and save to `path`.

    `legend` (the snapshots' times) as in `plot_trajectory`: `"outside"` keeps it off a
    slender robot that `"best"` would cover, `None` leaves it out."""
    if plane not in _AXES:
        raise ValueError(f"plane must be one of {tuple(_AXES)}, got {plane!r}")
    _check_legend("plot_snapshots", legend)
    t, _ = _trajectory("plot_snapshots", traj)
    if times is None:
        times = np.linspace(t[0], t[-1], 6)
    times = np.atleast_1d(np.asarray(times, dtype=float))
    if times.ndim != 1 or times.size == 0 or not np.all(np.isfinite(times)):
        raise ValueError(f"plot_snapshots: times must be finite numbers, got {times}")
    # the samples nearest the times, each drawn once (times between two samples, or a
    # trajectory of one sample, snap to the same one)
    frames = list(dict.fromkeys(int(np.argmin(np.abs(t - time))) for time in times))
    plt = _pyplot()
    a, b = _AXES[plane]
    fig, ax = plt.subplots(figsize=(5, 5))
    try:
        cmap = plt.get_cmap("viridis")
        for k, (idx, label) in enumerate(zip(frames, _time_labels(t[frames]))):
            colour = cmap(k / max(1, len(frames) - 1))
            for j, line in enumerate(backbones(robot, traj.q[idx])):
                line = np.asarray(line)
                ax.plot(
                    line[:, a],
                    line[:, b],
                    color=colour,
                    lw=3 if j else 4,
                    label=label if j == 0 else None,
                )
        ax.set_aspect("equal")
        ax.set_xlabel(f"{plane[0]} [m]")
        ax.set_ylabel(f"{plane[1]} [m]")
        ax.grid(alpha=0.3)
        _draw_legend(ax, legend, fontsize="small")
        return _save(plt, fig, path)
    finally:  # also when drawing or saving fails: no figure left open
        plt.close(fig)
