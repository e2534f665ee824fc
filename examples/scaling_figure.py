"""Seed 003, Simulation 3: the paper's Figure 11 (cost against the number of bodies).

Run:  python examples/scaling_figure.py [--out DIR] [--sizes 1 2 5 10 20 50]
                                        [--el-max-build 120] [--from results.jsonl]

Planar constant-curvature chains of N bodies (radius 0.03 m, length 0.3 m, density
1000 kg/m³, fixed joints, a 4 × 2 × 3 cylinder rule by default), float64, measured by
`benchmarks/scaling.py` (its `sweep` and `cold_build` run here; every option of that benchmark
is accepted): (a) model build time (robot construction + first call, i.e. trace and compile),
(b) time per call of `M q̈` (IID at q̇ = 0) and (c) of `c` (IID at q̈ = 0) at `q = q̇ = q̈ = 1`,
for the recursion and for the Euler–Lagrange baseline (`softrigid.lagrangian`, automatic
differentiation of the Lagrangian), and (d) the relative difference
`‖ID_EL − ID‖ / ‖ID_EL‖` of the two on random states (`q ∈ [−π, π]`, `q̇ ∈ [−10, 10]`,
`q̈ ∈ [−100, 100]`). The baseline is measured up to the first N whose build took longer than
`--el-max-build` seconds and skipped after it: its blow-up is the point of the figure. Per-call
times are medians with their spread (min–max over repetitions) as bars. The builds inside the
loop profit from what earlier sizes left in JAX's caches, so (a) also shows the build of
`--cold` bodies (default 20; `--cold` alone for none) in a fresh interpreter.

With `--from FILE` nothing is measured: the figure is drawn from JSON lines that
`benchmarks/scaling.py` printed (or that an earlier run of this script wrote to
`results.jsonl`); the date shown is then the file's modification time.

Writes `scaling.png`, `results.jsonl` (the benchmark's records, when measured) and
`summary.json` (`wall_s`, the machine, the date, the load average and every measured number)
to `out/scaling_figure/` by default. Needs matplotlib (the `plot` extra).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # _cli, beside this script

import scaling
from _cli import output_folder

US = 1e6  # seconds to microseconds


def cpu_model() -> str:
    """The processor's model name (from /proc/cpuinfo where there is one)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def read_records(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a file of the benchmark's output, one per line; other lines (a log
    captured with it) are skipped."""
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]


def tabulate(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The figure's numbers from the benchmark's records: per series (`recursion`,
    `euler_lagrange`) the sizes, build seconds and per-call microseconds (median, min, max) of
    `M q̈` and `c`; the relative differences; the cold builds; where the baseline stopped."""

    def series(name: str) -> dict[str, list[float]]:
        rows = [r for r in records if r["name"] == name]
        table: dict[str, list[float]] = {
            "n_bodies": [r["n_bodies"] for r in rows],
            "build_s": [r["build_s"] for r in rows],
        }
        for term in ("mqdd", "c"):
            for stat in ("median", "min", "max"):
                table[f"{term}_{stat}_us"] = [r[term][f"{stat}_s"] * US for r in rows]
        return table

    el_rows = [r for r in records if r["name"] == "scaling.euler_lagrange"]
    stopped = [r for r in records if r["name"] == "scaling.euler_lagrange_stopped"]
    return {
        "recursion": series("scaling.recursion"),
        "euler_lagrange": series("scaling.euler_lagrange"),
        "rel_diff": {stat: [r[f"rel_diff_{stat}"] for r in el_rows] for stat in ("median", "max")},
        "states": el_rows[0]["states"] if el_rows else 0,
        "miid_speedup": [r["speedup"] for r in records if r["name"] == "scaling.miid_vs_n_iid"],
        "cold_build": {
            str(r["n_bodies"]): r["build_s"] for r in records if r["name"] == "scaling.cold_build"
        },
        "el_stopped_after": stopped[0]["after_n_bodies"] if stopped else None,
    }


def plot(table: dict[str, Any], meta: dict[str, Any], path: Path) -> Path:
    """The four panels of Figure 11, the machine and date in the title; returns `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rec, el = table["recursion"], table["euler_lagrange"]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.6))
    (ax_b, ax_m), (ax_c, ax_d) = axes
    style = {"recursion": ("o-", "C0"), "Euler–Lagrange": ("s--", "C3")}

    for label, data in (("recursion", rec), ("Euler–Lagrange", el)):
        marker, color = style[label]
        ax_b.plot(data["n_bodies"], data["build_s"], marker, color=color, label=label)
        for ax, term in ((ax_m, "mqdd"), (ax_c, "c")):
            median = data[f"{term}_median_us"]
            lower = [m - lo for m, lo in zip(median, data[f"{term}_min_us"])]
            upper = [hi - m for m, hi in zip(median, data[f"{term}_max_us"])]
            ax.errorbar(
                data["n_bodies"],
                median,
                yerr=[lower, upper],
                fmt=marker,
                color=color,
                capsize=3,
                label=label,
            )
    if table["cold_build"]:
        cold = {int(n): s for n, s in table["cold_build"].items()}
        ax_b.plot(
            list(cold), list(cold.values()), "D", color="C2", label="recursion, fresh process"
        )
    if meta["el_max_build_s"] is not None:
        ax_b.axhline(meta["el_max_build_s"], color="gray", lw=0.8, ls=":")
        ax_b.text(
            rec["n_bodies"][0],
            meta["el_max_build_s"] * 1.15,
            f"baseline limit {meta['el_max_build_s']:g} s",
            color="gray",
            fontsize=8,
        )
    ax_b.set(ylabel="build + first call [s]", title="(a) model build")
    ax_m.set(ylabel="time per call [µs]", title="(b) M q̈ (IID at q̇ = 0)")
    ax_c.set(ylabel="time per call [µs]", title="(c) c (IID at q̈ = 0)")

    for stat, marker in (("max", "v"), ("median", "o")):
        ax_d.plot(
            el["n_bodies"],
            table["rel_diff"][stat],
            marker,
            color="k",
            fillstyle="none",
            label=f"{stat} over {table['states']} states",
        )
    ax_d.set(ylabel="‖ID_EL − ID‖ / ‖ID_EL‖", title="(d) relative difference")
    for ax in axes.flat:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(rec["n_bodies"], [str(n) for n in rec["n_bodies"]])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlim(min(rec["n_bodies"]) / 1.3, max(rec["n_bodies"]) * 1.3)
        ax.set_xlabel("N bodies")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8)
    stopped = table["el_stopped_after"]
    note = f"; baseline stopped after N = {stopped}" if stopped is not None else ""
    fig.suptitle(
        f"Planar constant-curvature chains, float64{note}\n{meta['machine']}, {meta['date']}"
        f"{meta['load']}",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def describe(records: Sequence[dict[str, Any]], source: Path | None) -> dict[str, Any]:
    """Machine and date of the measurement: this machine now, or the records' machine and the
    modification time of the file they came from."""
    first = next(r for r in records if r["name"] == "scaling.recursion")
    if source is None:
        when = datetime.datetime.now(datetime.timezone.utc)
        cpu = f"{cpu_model()}, {os.cpu_count()} CPUs"
    else:
        when = datetime.datetime.fromtimestamp(source.stat().st_mtime, datetime.timezone.utc)
        cpu = f"{first['processor']}, {first['cpus']} CPUs"
    return {
        "machine": f"{cpu}, JAX {first['jax']} on {first['backend']}",
        "date": when.strftime("%Y-%m-%d %H:%M UTC"),
    }


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Measure (or read) the records, draw the figure, write and return the summary."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], parents=[scaling.options()]
    )
    parser.add_argument(
        "--out", type=output_folder, default=Path("out/scaling_figure"), help="output folder"
    )
    parser.add_argument(
        "--from", dest="source", type=Path, help="draw from the benchmark's JSON lines"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    load_before = os.getloadavg()[0]
    args.out.mkdir(parents=True, exist_ok=True)
    if args.source is None:
        print(
            f"measuring N = {args.sizes}, Euler–Lagrange until a build exceeds "
            f"{args.el_max_build:g} s (one JSON line per record)",
            flush=True,
        )
        records = [scaling.cold_build(n, args) for n in args.cold] + scaling.sweep(args)
        lines = "".join(json.dumps(r) + "\n" for r in records)
        (args.out / "results.jsonl").write_text(lines)
    else:
        records = read_records(args.source)
    table = tabulate(records)
    limits = [r["limit_s"] for r in records if r["name"] == "scaling.euler_lagrange_stopped"]
    meta = describe(records, args.source)
    # redrawn from records whose baseline never stopped: their limit is not known (not ours)
    meta["el_max_build_s"] = limits[0] if limits else None if args.source else args.el_max_build
    # the load while measuring: on a shared machine other jobs slow every number down
    load = None if args.source else [load_before, os.getloadavg()[0]]
    meta["load"] = f", 1-min load {load[0]:.1f} → {load[1]:.1f}" if load else ""
    figure = plot(table, meta, args.out / "scaling.png")
    summary = {
        **meta,
        "source": str(args.source) if args.source is not None else "measured",
        "load_average_1min": load,
        **table,
        "figure": str(figure),
        "wall_s": time.perf_counter() - start,
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    for k, n in enumerate(table["recursion"]["n_bodies"]):
        rec = table["recursion"]
        print(
            f"N = {n:3d}: recursion build {rec['build_s'][k]:7.2f} s, "
            f"M q̈ {rec['mqdd_median_us'][k]:7.1f} µs, c {rec['c_median_us'][k]:7.1f} µs"
        )
    for k, n in enumerate(table["euler_lagrange"]["n_bodies"]):
        el = table["euler_lagrange"]
        print(
            f"N = {n:3d}: Euler–Lagrange build {el['build_s'][k]:7.2f} s, "
            f"M q̈ {el['mqdd_median_us'][k]:7.1f} µs, c {el['c_median_us'][k]:7.1f} µs, "
            f"max rel. diff. {table['rel_diff']['max'][k]:.1e}"
        )
    print(f"figure and summary written to {args.out.resolve()} ({summary['wall_s']:.1f} s)")
    return summary


if __name__ == "__main__":
    run()
