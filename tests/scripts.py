"""The repository's scripts (`examples/*.py`, `meshes/generate.py`) imported by path, for the
tests that check them (they are not part of the package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(path: str, name: str) -> ModuleType:
    """Import the script at `path` (relative to the repository root) as the module `name`."""
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_example(name: str) -> ModuleType:
    """Import `examples/<name>.py` as the module `example_<name>`."""
    return load_script(f"examples/{name}.py", f"example_{name}")
