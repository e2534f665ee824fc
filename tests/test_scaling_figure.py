"""Seed 003's Simulation 3 (`examples/scaling_figure.py`, imported by path) at tiny sizes: one
and two bodies on a 2 × 2 × 3 rule, the Euler–Lagrange baseline stopped after the first size by
a limit every build exceeds."""

from __future__ import annotations

import json

import pytest
from scripts import load_example

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def example():
    return load_example("scaling_figure")


@pytest.fixture(scope="module")
def measured(example, tmp_path_factory):
    out = tmp_path_factory.mktemp("scaling_figure")
    argv = ["--sizes", "1", "2", "--el-max-build", "0.01", "--cold", "--n-axial", "2"]
    return example.run([*argv, "--states", "20", "--out", str(out)]), out


def test_scaling_figure_measures_both_methods_and_they_agree(measured):
    summary, out = measured
    rec, el = summary["recursion"], summary["euler_lagrange"]
    assert rec["n_bodies"] == [1, 2]
    for series in (rec, el):
        for key in ("build_s", "mqdd_median_us", "c_median_us"):
            assert all(v > 0.0 for v in series[key])
        assert all(
            lo <= m <= hi
            for lo, m, hi in zip(
                series["mqdd_min_us"], series["mqdd_median_us"], series["mqdd_max_us"]
            )
        )
    # the baseline's first build exceeds the limit: measured at N = 1, skipped at N = 2
    assert el["n_bodies"] == [1]
    assert summary["el_stopped_after"] == 1
    assert summary["el_max_build_s"] == 0.01
    # the recursion and the Euler–Lagrange baseline agree on the random states
    assert summary["states"] == 20
    assert 0.0 <= summary["rel_diff"]["median"][0] <= summary["rel_diff"]["max"][0] <= 1e-10
    assert summary["miid_speedup"] and all(s > 0.0 for s in summary["miid_speedup"])
    assert summary["wall_s"] > 0.0 and summary["load_average_1min"] is not None
    assert (out / "scaling.png").read_bytes()[:8] == PNG
    assert json.loads((out / "summary.json").read_text())["recursion"] == rec


def test_scaling_figure_redraws_from_the_records(example, measured, tmp_path):
    # `--from` reads the JSON lines the measuring run wrote and measures nothing
    summary, out = measured
    again = example.run(["--from", str(out / "results.jsonl"), "--out", str(tmp_path)])
    for key in ("recursion", "euler_lagrange", "rel_diff", "el_stopped_after"):
        assert again[key] == summary[key]
    assert again["source"] == str(out / "results.jsonl")
    assert again["load_average_1min"] is None
    assert again["wall_s"] < summary["wall_s"]
    assert (tmp_path / "scaling.png").read_bytes()[:8] == PNG
    assert again["el_max_build_s"] == 0.01  # the measuring run's limit, from its records
    # records whose baseline never stopped do not know their limit: the option's value was
    # written as if it had been used
    lines = (out / "results.jsonl").read_text().splitlines()
    kept = tmp_path / "unstopped.jsonl"
    kept.write_text("".join(f"{x}\n" for x in lines if "euler_lagrange_stopped" not in x))
    unstopped = example.run(["--from", str(kept), "--out", str(tmp_path), "--el-max-build", "5"])
    assert unstopped["el_max_build_s"] is None
