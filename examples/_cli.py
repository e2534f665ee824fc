"""Command-line argument types shared by the examples: a bad value is argparse's usage error
before any model is built (a negative `--t-final` or an `--out` that names a file used to fail
minutes later, deep in the library or after the simulation)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "folder_main",
    "nonnegative_float",
    "output_folder",
    "positive_float",
    "positive_int",
    "simulation_main",
]


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (a simulated time, a step)."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def nonnegative_float(text: str) -> float:
    """A finite number ≥ 0 (a time where 0 means none)."""
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be zero or positive, got {text}")
    return value


def positive_int(text: str) -> int:
    """An integer ≥ 1 (samples, a degree)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def output_folder(text: str) -> Path:
    """The output folder: an existing folder, or a path that can be created (tried, then
    removed again: the script creates it when it writes, and a usage error leaves no folder
    behind). A path naming a file or an unwritable place is refused before the run, not
    after it."""
    path = Path(text)
    missing, folder = [], path  # the folders to create, deepest first
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{str(folder)!r} exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise argparse.ArgumentTypeError(f"cannot create the folder {text!r}: {err}") from None
    finally:
        for created in (m for m in missing if m.exists()):
            created.rmdir()
    return path


def folder_main(main: Callable[[Path], None], description: str, default: str) -> None:
    """Run `main(out)` with `out` the script's one optional argument, its output folder
    (`output_folder`, default `default`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "out", nargs="?", type=output_folder, default=Path(default), help="output folder"
    )
    main(parser.parse_args().out)


def simulation_main(
    main: Callable[[float, Path], object], description: str, t_final: float, default: str
) -> None:
    """Run `main(t_final, out)` from the options `--t-final T` (`positive_float`, default
    `t_final`) and `--out DIR` (`output_folder`, default `default`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--t-final", type=positive_float, default=t_final, help="simulated time [s]"
    )
    parser.add_argument("--out", type=output_folder, default=Path(default), help="output folder")
    args = parser.parse_args()
    main(args.t_final, args.out)
