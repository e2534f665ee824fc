"""`benchmarks/hlo_sources.py` attributes a compiled program's kernels to the source lines that
made them (the HLO module's stack-frame tables)."""

import importlib.util
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

_PATH = Path(__file__).parents[1] / "benchmarks" / "hlo_sources.py"
_SPEC = importlib.util.spec_from_file_location("hlo_sources", _PATH)
hlo_sources = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(hlo_sources)


def _sine_part(x):
    return jnp.sin(x) * jnp.cos(x[::-1])


def _matrix_part(a):
    return a @ a.T


@pytest.fixture(autouse=True)
def _source_locations():
    """JAX's default source locations (the tests' configuration leaves them out)."""
    names = ("jax_include_full_tracebacks_in_locations", "jax_traceback_in_locations_limit")
    before = [getattr(jax.config, name) for name in names]
    jax.config.update(names[0], True)
    jax.config.update(names[1], 100)
    yield
    for name, value in zip(names, before):
        jax.config.update(name, value)


def test_kernels_are_attributed_to_their_source_lines():
    def program(x, a):
        return _sine_part(x), _matrix_part(a)

    text = jax.jit(program).lower(jnp.ones(7), jnp.ones((5, 6))).compile().as_text()
    kernels, lines = hlo_sources.attribute(text, depth=1)
    outside = [
        line
        for comp in re.split(r"\n(?=\S.*\{\s*$)", text, flags=re.M)
        if comp and "fused" not in comp.splitlines()[0].split("(")[0]
        for line in comp.splitlines()[1:]
        if hlo_sources._KERNEL.search(line)
    ]
    assert sum(kernels.values()) == len(outside) > 0
    names = " ".join(kernels)
    assert "test_hlo_sources.py:_matrix_part" in names
    assert "test_hlo_sources.py:_sine_part" in names
    only = hlo_sources.attribute(text, depth=1, only="_matrix_part")[0]
    assert set(only) <= {k for k in kernels if "_matrix_part" in k} and only
    assert all(lines[k] >= kernels[k] for k in kernels)
