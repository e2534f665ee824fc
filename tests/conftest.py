"""Test configuration: float64 everywhere (the reference precision of every check), JAX's
compilation caches cleared after each test module, and XLA:CPU's code generation without LLVM
optimization.

The suite is dominated by compilation, not by running the programs: LLVM at -O0 compiles
about 20 % faster and computes the same IEEE operations (no fast-math either way).

Every compiled XLA:CPU program keeps its code mapped in memory; the whole suite compiles
thousands of them, and a process that reaches the kernel's limit on memory maps
(`vm.max_map_count`, 65,530 by default) dies inside the compiler (SIGSEGV or SIGABRT). Module
fixtures share compiled robots within a module; nothing is shared across modules, so clearing
the caches between modules costs no recompilation and bounds the number of live programs.
"""

import gc
import os

if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0"
    ).strip()

import jax
import pytest

jax.config.update("jax_enable_x64", True)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    yield
    jax.clear_caches()
    gc.collect()
