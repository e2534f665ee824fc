"""The garbage collector paused while softrigid's programs trace (`softrigid._gc`): off inside a
trace, on again after it, a user's setting kept, nesting and threads."""

import gc
import threading

import jax
import jax.numpy as jnp
import pytest

from softrigid import _cache, _gc


@pytest.fixture(autouse=True)
def collector_on():
    """Every test starts and ends with the collector enabled (as a process normally runs)."""
    gc.enable()
    yield
    assert gc.isenabled()


def test_paused_disables_and_restores_and_nests():
    with _gc.paused():
        assert not gc.isenabled()
        with _gc.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block is still open
    assert gc.isenabled()


def test_a_collector_the_user_disabled_stays_disabled():
    gc.disable()
    try:
        with _gc.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_paused_restores_after_an_error():
    with pytest.raises(ZeroDivisionError):
        with _gc.paused():
            raise ZeroDivisionError
    assert gc.isenabled()


def test_overlapping_blocks_in_two_threads_enable_it_after_the_last():
    inside, release = threading.Event(), threading.Event()

    def other():
        with _gc.paused():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    with _gc.paused():
        thread.start()
        assert inside.wait(10)
    assert not gc.isenabled()  # the other thread's block is still open
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_program_traces_with_the_collector_off_and_runs_with_it_on():
    seen = []

    def fun(x):
        seen.append(gc.isenabled())
        return jnp.sin(x) * 2.0

    program = _cache.jit(fun)
    x = jnp.arange(3.0)
    assert jnp.allclose(program(x), jnp.sin(x) * 2.0)  # top level
    y = jnp.arange(4.0)  # another shape: traced again, inside the user's `jit`
    assert jnp.allclose(jax.jit(lambda z: program(z) + 1.0)(y), jnp.sin(y) * 2.0 + 1.0)
    assert seen == [False, False]
    assert gc.isenabled()
    assert "module @jit_fun " in program.lower(x).as_text()  # named after the function, as before


def test_later_calls_run_without_the_pause(monkeypatch):
    """A top-level call that traces (the first, new shapes) pauses the collector once, from its
    trace until it returns (its lowering and compilation included); calls that run the compiled
    program do not pause."""
    gc_disable = gc.disable
    disabled = []
    monkeypatch.setattr(_gc.gc, "disable", lambda: disabled.append(True) or gc_disable())
    seen = []

    def fun(x):
        seen.append(gc.isenabled())
        return x * 3.0

    program = _cache.jit(fun)
    x = jnp.arange(3.0)
    for _ in range(3):
        assert jnp.allclose(program(x), 3.0 * x)
    assert len(disabled) == 1 and gc.isenabled() and not _gc._calls.held
    assert jnp.allclose(program(jnp.arange(5.0)), 3.0 * jnp.arange(5.0))  # traced again
    assert seen == [False, False]
    # the retrace paused the collector once, held until the call returned, and released it
    assert len(disabled) == 2 and gc.isenabled() and not _gc._calls.held
    assert jnp.allclose(program(x), 3.0 * x) and len(disabled) == 2  # compiled: no pause
