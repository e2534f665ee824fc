"""The README's Quick start runs as printed (its first code block), and its results are what
its comments say they are."""

from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def _quick_start() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1]
    return section.split("```python", 1)[1].split("```", 1)[0]


def test_quick_start_runs():
    scope: dict = {}
    exec(compile(_quick_start(), "README.md (Quick start)", "exec"), scope)
    sr, robot, q = scope["sr"], scope["robot"], scope["q"]
    # ν = M q̈ + bias from the same state, and q̈ = M⁻¹ (ν − bias) inverts it
    np.testing.assert_allclose(scope["M"], sr.mass_matrix(robot, q), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(scope["qdd"], np.ones(2), rtol=1e-9, atol=1e-9)
    assert scope["traj"].q.shape[1] == robot.n_q and np.all(np.isfinite(scope["traj"].q))
    batch = scope["batch"]
    assert batch.shape == (64, robot.n_q)
    expected = sr.inverse_dynamics(robot, np.zeros(2), np.zeros(2), np.ones(2))
    np.testing.assert_allclose(batch, np.broadcast_to(expected, batch.shape), rtol=1e-12)
