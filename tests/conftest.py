"""Test configuration: float64 everywhere (the reference precision of every check), JAX's
compilation caches cleared after each test module, XLA:CPU's fastest compilation
(LLVM at -O0 and `softrigid.fast_compilation`) and no tracebacks as source locations.

The suite is dominated by compilation, not by running the programs: LLVM at -O0 compiles
about 20 % faster, XLA:CPU's elemental fusion emitters 25–35 % faster again (the nine-link
families robot's inverse dynamics 24 → 18 s; the full run 22 m 49 s → 13 m 55 s on one
host), and both compute the same IEEE operations (no fast-math either way).

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
from typing import Any

if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0"
    ).strip()

import jax
import pytest

import softrigid

# before any array (XLA reads its flags when its backend starts)
softrigid.fast_compilation()

jax.config.update("jax_enable_x64", True)
# no Python tracebacks as the lowered programs' source locations (JAX builds one per
# operation): 8 % less test time on the statics module.
# `test_hlo_sources` turns them back on for the program whose kernels it attributes.
jax.config.update("jax_include_full_tracebacks_in_locations", False)
jax.config.update("jax_traceback_in_locations_limit", 0)


# the longest modules, longest first (seconds of test time, full run after the 2026-11-25 cuts)
LONGEST_FIRST = (
    "test_helicoid_tracking.py",  # 160 (the closed loop's compilation)
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


@pytest.fixture
def custom_root_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one at every `jax.lax.custom_root` call (traced calls: a solve
    whose program is traced while the fixture is active; JAX's caches are cleared first, so
    that a program an earlier test traced is traced again)."""
    jax.clear_caches()
    calls: list[int] = []
    custom_root = jax.lax.custom_root

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return custom_root(*args, **kwargs)

    monkeypatch.setattr(jax.lax, "custom_root", counted)
    return calls
