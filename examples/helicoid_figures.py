"""Figures of seed 003's Simulation 1 (`examples/helicoid_tracking.py`): the statics of the
sampled task, and the closed loop as the seed's Figures 5–7 (the coordinates, the outputs with
their reference and the tensions, snapshots with the reference circles and the tip paths).

Every function takes arrays (and the robot, for its backbones) and writes one PNG to `out`;
the arm is drawn with `z` up (it hangs from the base, whose `z` axis points along gravity).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from softrigid.plotting import backbones

__all__ = ["coordinates", "outputs", "snapshots", "statics"]

DPI = 80


_backbones = jax.jit(backbones)  # one program, not one dispatch per operation and snapshot


def _arm(ax: Any, robot: Any, q: np.ndarray, color: str = "tab:blue") -> None:
    """The three backbones at `q`, drawn with `z` up."""
    for line in _backbones(robot, jnp.asarray(q)):
        x = np.asarray(line)
        ax.plot(x[:, 0], x[:, 1], -x[:, 2], color=color, lw=3)


def _frame(ax: Any, title: str) -> None:
    ax.set(title=title, xlim=(-0.04, 0.04), ylim=(-0.04, 0.04))
    ax.set_zlim(-0.32, 0.0)
    ax.tick_params(labelsize=5)


def _save(fig: Any, path: Path, tight: bool = True) -> Path:
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def statics(
    robot: Any,
    eq: Any,
    y_d: Callable[[float], np.ndarray],
    targets: Callable[[Any], np.ndarray],
    period: float,
    out: Path,
) -> Path:
    """`statics.png`: the equilibrium tensions and `y_d(t)` over a period, and the equilibria
    at eight instants with the tip circles."""
    fine = np.linspace(0.0, period, 201)
    yd = np.stack([y_d(s) for s in fine])
    fig = plt.figure(figsize=(13, 8))
    ax = fig.add_subplot(3, 4, (1, 2))
    for i in range(eq.u.shape[1]):
        ax.plot(eq.times, eq.u[:, i], "o-", ms=2, lw=1, label=f"u{i + 1}")
    ax.axhline(0.0, color="grey", lw=0.5)
    ax.set(title="equilibrium tensions [N]", xlabel="t [s]")
    ax.legend(fontsize="xx-small", ncol=3)
    ax = fig.add_subplot(3, 4, (3, 4))
    for i in range(yd.shape[1]):
        line = ax.plot(fine, 1e3 * (yd[:, i] - yd[0, i]), lw=1)[0]
        ax.plot(eq.times, 1e3 * (eq.y[:, i] - yd[0, i]), "o", ms=2, c=line.get_color())
    ax.set(title="y_d(t) − y_d(0) [mm] (spline through the samples)", xlabel="t [s]")
    circle = targets(np.linspace(0.0, period, 73)).reshape(-1, 3, 3)
    for n, k in enumerate(np.linspace(0, len(eq.times), 9, endpoint=False).astype(int)[:8]):
        ax = fig.add_subplot(3, 4, 5 + n, projection="3d")
        _arm(ax, robot, eq.q[k])
        target = targets(eq.times[k]).reshape(3, 3)
        ax.scatter(target[:, 0], target[:, 1], -target[:, 2], c="k", s=6)
        for j in range(3):
            ax.plot(circle[:, j, 0], circle[:, j, 1], -circle[:, j, 2], "k--", lw=0.6)
        _frame(ax, f"t = {eq.times[k]:.2f} s")
    return _save(fig, out / "statics.png")


def coordinates(t: np.ndarray, q: np.ndarray, out: Path) -> Path:
    """`coordinates.png` (the seed's Fig. 5): the 24 coordinates against time, one panel per
    segment (stretch, the two bends' constant and linear parts, twist, the two shears)."""
    names = ("stretch", "κ1 const", "κ1 lin", "κ2 const", "κ2 lin", "twist", "shear 1", "shear 2")
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), sharex=True)
    for b, ax in enumerate(axes):
        for i in range(8):
            ax.plot(t, q[:, 8 * b + i], lw=1, label=f"q{8 * b + i + 1} {names[i]}")
        ax.set(title=f"segment {b + 1}", xlabel="t [s]")
        ax.legend(fontsize="xx-small", ncol=2)
    return _save(fig, out / "coordinates.png")


def outputs(
    t: np.ndarray,
    y: np.ndarray,
    y_d: np.ndarray,
    e_linear: np.ndarray,
    u: np.ndarray,
    tip_error: np.ndarray,
    out: Path,
) -> Path:
    """`outputs.png` (the seed's Fig. 6): `y` against `y_d`, the output error with the PFBL's
    prediction `ë + K_D ė + K_P e = 0`, the tensions `u(t)` and the tips' distances to their
    moving targets."""
    fig, axes = plt.subplots(2, 2, figsize=(13, 7), sharex=True)
    ax = axes[0, 0]
    for i in range(y.shape[1]):
        line = ax.plot(t, 1e3 * (y[:, i] - y[0, i]), lw=1, label=f"y{i + 1}")[0]
        ax.plot(t, 1e3 * (y_d[:, i] - y[0, i]), "--", lw=0.8, c=line.get_color())
    ax.set(title="y − y(0) (solid) and y_d − y(0) (dashed) [mm]")
    ax.legend(fontsize="xx-small", ncol=3)
    ax = axes[0, 1]
    ax.semilogy(t, np.abs(y_d - y).max(axis=1), lw=1.2, label="max |y_d − y|, simulated")
    ax.semilogy(t, np.abs(e_linear).max(axis=1), "k--", lw=0.8, label="ë + K_D ė + K_P e = 0")
    ax.set(title="output error [m]")
    ax.legend(fontsize="x-small")
    ax = axes[1, 0]
    for i in range(u.shape[1]):
        ax.plot(t, u[:, i], lw=1, label=f"u{i + 1}")
    ax.axhline(0.0, color="grey", lw=0.5)
    ax.set(title="tensions u [N] (negative: a push)", xlabel="t [s]")
    ax.legend(fontsize="xx-small", ncol=3)
    ax = axes[1, 1]
    for j in range(tip_error.shape[1]):
        ax.plot(t, 1e3 * tip_error[:, j], lw=1, label=f"tip {j + 1}")
    ax.set(title="|tip − t_d(t)| [mm]", xlabel="t [s]")
    ax.legend(fontsize="x-small")
    return _save(fig, out / "outputs.png")


def snapshots(
    robot: Any,
    t: np.ndarray,
    q: np.ndarray,
    tips: np.ndarray,
    targets: Callable[[Any], np.ndarray],
    period: float,
    times: np.ndarray,
    out: Path,
) -> Path:
    """`snapshots.png` (the seed's Fig. 7): the arm at `times` (up to twelve) with the
    reference circles, the targets at that time and the tips' paths so far."""
    circle = targets(np.linspace(0.0, period, 73)).reshape(-1, 3, 3)
    path = tips.reshape(len(t), 3, 3)
    fig = plt.figure(figsize=(13, 9))
    for n, s in enumerate(times[:12]):
        k = int(np.argmin(np.abs(t - s)))
        ax = fig.add_subplot(3, 4, n + 1, projection="3d")
        _arm(ax, robot, q[k])
        for j in range(3):
            ax.plot(circle[:, j, 0], circle[:, j, 1], -circle[:, j, 2], "k--", lw=0.6)
            ax.plot(path[: k + 1, j, 0], path[: k + 1, j, 1], -path[: k + 1, j, 2], "r", lw=0.6)
        target = targets(t[k]).reshape(3, 3)
        ax.scatter(target[:, 0], target[:, 1], -target[:, 2], c="k", s=6)
        _frame(ax, f"t = {t[k]:.2f} s")
    # fixed margins: `tight_layout` draws the twelve 3D axes once more to measure them
    # (0.4-0.6 s of the figure's 1.1-1.5 s, measured)
    fig.subplots_adjust(left=0.0, right=0.98, bottom=0.02, top=0.95, wspace=0.05, hspace=0.2)
    return _save(fig, out / "snapshots.png", tight=False)
