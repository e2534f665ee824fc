"""The README's Quick start runs as printed (its first code block), and its results are what
its comments say they are; the docstrings' examples give what they print."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


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
    # the segment is elastic (`+ s` in the comment): bent by q = 0.1 it pushes back (without a
    # material, as printed until session 73, s = 0 and the segment was a floppy mass)
    s = np.asarray(sr.elastic_force(robot, q))
    assert s[0] == 0.0 and s[1] * q[1] > 0.0
    batch = scope["batch"]
    assert batch.shape == (64, robot.n_q)
    expected = sr.inverse_dynamics(robot, np.zeros(2), np.zeros(2), np.ones(2))
    np.testing.assert_allclose(batch, np.broadcast_to(expected, batch.shape), rtol=1e-12)


def test_docstring_examples_print_what_they_show():
    # in a process of JAX's defaults (float32: a user's first session; the tests run in x64),
    # every module of the package with an example; SpatialPCS' printed 0.10000000149011612
    modules = sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / "softrigid").rglob("*.py")
        if ">>> " in path.read_text(encoding="utf-8")
    )
    script = (
        "import doctest, importlib, sys\n"
        "failed = sum(doctest.testmod(importlib.import_module(m)).failed for m in sys.argv[1:])\n"
        "sys.exit(1 if failed else 0)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    run = subprocess.run(
        [sys.executable, "-c", script, *modules], capture_output=True, text=True, env=env
    )
    assert len(modules) >= 4
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
