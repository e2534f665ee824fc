"""Test configuration: float64 everywhere (the reference precision of every check), JAX's
compilation caches cleared after each test module, XLA:CPU's fastest compilation (LLVM at
-O0, one LLVM module per program, `softrigid.fast_compilation`) and no tracebacks as source
locations.

The suite is dominated by compilation, not by running the programs: LLVM at -O0 compiles
about 20 % faster, XLA:CPU's elemental fusion emitters 25–35 % faster again (the nine-link
families robot's inverse dynamics 24 → 18 s; the full run 22 m 49 s → 13 m 55 s on one
host), and both compute the same IEEE operations (no fast-math either way).

Every compiled XLA:CPU program keeps its code mapped in memory; the whole suite compiles
thousands of them, and a process that reaches the kernel's limit on memory maps
(`vm.max_map_count`, 65,530 by default) dies inside the compiler (SIGSEGV or SIGABRT). Module
fixtures share compiled robots within a module; nothing is shared across modules, so clearing
the caches between modules costs no recompilation and bounds the number of live programs.

`pytest-xdist` hands whole modules to its three workers (`--dist loadfile`, in collection
order: `--no-loadscope-reorder`; three on the two-core machine: two workers kept 1.76 of the
cores busy on average, three 1.88). The modules that take longest run first, so that the last
ones to start are short and no worker idles at the end (longest processing time first).
"""

import gc
import os
from typing import Any

# XLA's flags for the tests' compilation (each unless the environment sets it): LLVM at -O0,
# and each program's code generated as one LLVM module: XLA:CPU splits it into modules compiled
# on its thread pool, which the three workers on two cores leave no core for (three modules:
# 152 and 134 s → 121 and 123 s, two runs each, 2026-12-02)
os.environ["XLA_FLAGS"] = " ".join(
    [os.environ.get("XLA_FLAGS", "")]
    + [
        f"--{flag}"
        for flag in ("xla_backend_optimization_level=0", "xla_cpu_parallel_codegen_split_count=1")
        if flag.split("=")[0] not in os.environ.get("XLA_FLAGS", "")
    ]
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


# the longest modules, longest first (seconds of test time in a full three-worker run,
# 2026-12-02, after that day's cuts)
LONGEST_FIRST = (
    "test_integrators.py",  # 478
    "test_statics.py",  # 413
    "test_architecture.py",  # 212
    "test_entry.py",  # 155
    "test_articulated.py",  # 139
    "test_actuators.py",  # 108
    "test_control.py",  # 104
    "test_identities.py",  # 102
    "test_hybrid_arm.py",  # 95
    "test_kinematics_rods.py",  # 85
    "test_linearize.py",  # 75 (session 79, one worker alone)
    "test_empirical.py",  # 85
    "test_kinematics_lvp.py",  # 85
    "test_materials.py",  # 64
    "test_families_robot.py",  # 62
    "test_helicoid_tracking.py",  # 61
    "test_body_terms.py",  # 59
    "test_batching.py",  # 54
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
