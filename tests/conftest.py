"""Test configuration: float64 everywhere (the reference precision of every check), JAX's
compilation caches cleared after each test module, and XLA:CPU's fastest compilation
(`_test_xla_flags`).

The suite is dominated by compilation, not by running the programs: LLVM at -O0 and the
elemental fusion emitters compile faster and compute the same IEEE operations (no fast-math
either way).

Every compiled XLA:CPU program keeps its code mapped in memory; the whole suite compiles
thousands of them, and a process that reaches the kernel's limit on memory maps
(`vm.max_map_count`, 65,530 by default) dies inside the compiler (SIGSEGV or SIGABRT). Module
fixtures share compiled robots within a module; nothing is shared across modules, so clearing
the caches between modules costs no recompilation and bounds the number of live programs.

`pytest-xdist` hands whole modules to its two workers (`--dist loadfile`, in collection order:
`--no-loadscope-reorder`). The modules that take longest run first, so that the last ones to
start are short and neither worker idles at the end (longest processing time first).
"""

import gc
import os
from importlib.metadata import version

import pytest


def _test_xla_flags() -> list[str]:
    """LLVM at -O0 (about 20 % less compilation), and XLA:CPU's elemental fusion emitters
    instead of its MLIR ones (25–35 % less again on this suite's programs, e.g. the nine-link
    families robot's inverse dynamics 24 → 18 s; the same results). XLA aborts the process on
    a flag it does not know: the second only for the jaxlib releases checked to have it."""
    flags = ["--xla_backend_optimization_level=0"]
    if version("jaxlib").split(".")[:2] == ["0", "10"]:
        flags.append("--xla_cpu_use_fusion_emitters=false")
    return flags


_user_flags = os.environ.get("XLA_FLAGS", "")
os.environ["XLA_FLAGS"] = " ".join(
    [_user_flags, *(f for f in _test_xla_flags() if f.split("=")[0] not in _user_flags)]
).strip()

import jax  # noqa: E402  (after XLA_FLAGS: XLA reads them when its backend starts)

jax.config.update("jax_enable_x64", True)


# the longest modules, longest first (seconds of test time, full run after the 2026-11-25 cuts)
LONGEST_FIRST = (
    "test_statics.py",  # 149
    "test_architecture.py",  # 144
    "test_articulated.py",  # 117
    "test_identities.py",  # 110
    "test_families_robot.py",  # 105
    "test_integrators.py",  # 98
    "test_kinematics_rods.py",  # 80
    "test_kinematics_lvp.py",  # 73
    "test_examples.py",  # 64
    "test_entry.py",  # 59
    "test_compress.py",  # 55
    "test_actuators.py",  # 47
    "test_control.py",  # 46
    "test_body_terms.py",  # 45
    "test_euler_lagrange.py",  # 38
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules first, the others after them in their collected order."""
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    yield
    jax.clear_caches()
    gc.collect()
