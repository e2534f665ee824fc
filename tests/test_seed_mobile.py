"""Seed 002's nonholonomic mobile manipulator (`examples/mobile_manipulator.py`) on a short
horizon: the rolling constraint holds to the integrator's accuracy (RK4: fourth order in the
step), the arm converges to its target while the base drives off, and the figures exist."""

from __future__ import annotations

import numpy as np
import pytest
from scripts import load_example

T_FINAL = 1.0


@pytest.fixture(scope="module")
def example():
    return load_example("mobile_manipulator")


@pytest.fixture(scope="module")
def summary(example, tmp_path_factory):
    return example.run(T_FINAL, tmp_path_factory.mktemp("mobile_manipulator"))


def test_rolling_constraint_holds_to_integration_accuracy(example, summary):
    # no drift control (the seed's b = −ȧ q̇): a q̇ is RK4's error alone, set during the
    # fast start (the arm's step to its target yaws the base) and constant after it.
    # Measured 4.6e-10 m/s at 1 ms against speeds of 0.2 m/s.
    assert summary["max_residual"] < 1e-9
    assert summary["residual"][0] == 0.0
    # fourth order: the same run at 2 ms leaves 16x the residual (measured 8.2e-9, x17.8)
    coarse = example.rollout(example.build(), 0.5, 2e-3)
    ratio = np.max(np.abs(coarse.residual)) / np.max(np.abs(summary["residual"]))
    assert 12.0 < ratio < 24.0


def test_arm_converges_while_the_base_drives_off(summary):
    t, error = summary["t"], summary["arm_error"]
    at = [error[np.searchsorted(t, s - 1e-9)] for s in (0.0, 0.25, 0.5, 1.0)]
    # |θ − θ_target|_∞: 0.8 → 0.24 → 0.05 → 1.0e-3 rad (measured)
    assert at[0] == pytest.approx(0.8)
    assert at[1] < at[0] / 2 and at[2] < at[1] / 2 and at[3] < at[2] / 10
    assert at[3] < 2e-3
    # the base accelerates along its heading (+x) on the speed ramp: 0.22 m/s at 1 s
    assert 0.15 < summary["speed"] < 0.3
    assert summary["distance"] > 0.05


def test_figures_are_written(summary):
    names = sorted(p.name for p in summary["figures"])
    assert names == ["arm_angles.png", "base_path.png", "constraint_residual.png"]
    for path in summary["figures"]:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
