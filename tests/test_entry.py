"""The eager fast path (`softrigid._fastpath`): a robot checked and flattened once, its programs
cached, the checked path's results and errors, and the checked path under transformations."""

import gc
import os
import weakref
from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import _cache, _checks, _entry, _fastpath, joints, kinematics, quadrature

LENGTH = 0.3
VOLUME = quadrature.cylinder(0.03, LENGTH, 2, 1, 3)
Q, QD, QDD = jnp.array([0.3, -0.4]), jnp.array([0.5, 0.2]), jnp.array([-1.0, 2.0])


_CC = kinematics.PlanarConstantCurvature(LENGTH)


def _robot(kinematics_map=None, mass=1.0):
    """Two revolute rigid links (cheap to compile: most tests here are about the entry, not the
    bodies); with `kinematics_map`, a revolute rigid link and a constant-curvature segment
    through it (the map is part of the tree definition: robots with the same map share a
    structure)."""
    rigid = sr.RigidBody(mass, (0.0, 0.0, -0.1), 1e-3 * jnp.eye(3))
    if kinematics_map is None:
        second = sr.Link(
            joints.Revolute((1, 0, 0)), sr.RigidBody(0.5, (0.1, 0.0, -0.1), 1e-3 * jnp.eye(3))
        )
    else:
        body = sr.SoftBody(kinematics_map, VOLUME, density=1000.0, n_q=1)
        second = sr.Link(joints.Fixed(), body)
    return sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), rigid), second])


@pytest.fixture(scope="module")
def robot():
    return _robot()


@pytest.fixture
def checked_calls(monkeypatch):
    """How often the checked path ran (it checks the states; the fast path never calls it)."""
    calls = []

    def counting(*args, **kwargs):
        calls.append(1)
        return check_states(*args, **kwargs)

    check_states = _entry.check_states
    monkeypatch.setattr(_entry, "check_states", counting)
    return calls


def _assert_same(a, b, rtol=1e-13):
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-14)


def _error(fn):
    try:
        fn()
    except Exception as err:
        return type(err), str(err)
    return None


def test_repeated_eager_calls_trace_once_and_specialize(monkeypatch, checked_calls):
    monkeypatch.setattr(_fastpath, "SPECIALIZE_AFTER", 3)
    monkeypatch.setattr(_fastpath, "AMORTIZE", 0.0)
    traces = []

    def counted(x, q):
        traces.append(1)
        return _CC(x, q)

    robot = _robot(counted)
    built = len(traces)
    first = sr.inverse_dynamics(robot, Q, QD, QDD)
    traced = len(traces)
    assert traced > built
    for _ in range(2):  # calls 2 and 3 run the shared program: no tracing
        sr.inverse_dynamics(robot, Q, QD, 2.0 * QDD)
    assert len(traces) == traced
    (entry,) = _fastpath.handle(robot).entries.values()
    assert entry.specialized  # after its third call
    special = sr.inverse_dynamics(robot, Q, QD, QDD)  # traced once more: the robot's own program
    retraced = len(traces)
    assert retraced > traced
    for _ in range(5):
        sr.inverse_dynamics(robot, 2.0 * Q, QD, QDD)
    assert len(traces) == retraced
    assert not checked_calls
    _assert_same(special, first)
    with _fastpath.disabled():
        _assert_same(sr.inverse_dynamics(robot, Q, QD, QDD), first)
    assert checked_calls


CASES = {
    "inverse_dynamics": lambda r: sr.inverse_dynamics(r, Q, QD, QDD),
    "keywords and numpy": lambda r: sr.inverse_dynamics(r, qdd=QDD, q=Q, qd=np.asarray(QD)),
    "loads": lambda r: sr.inverse_dynamics(r, Q, QD, QDD, loads=sr.Wrench(1, (1.0, 0.0, 2.0))),
    "forward dynamics": lambda r: sr.forward_dynamics(r, Q, QD, QDD),
    "static option, named tuple": lambda r: sr.dynamics_terms(r, Q, QD, parts=True),
    "lists and integers": lambda r: sr.mass_matrix(r, [0, 1]),
    "float32 and float64": lambda r: sr.mass_matrix(r, Q.astype(jnp.float32)),
    "inputs u": lambda r: sr.actuation_force(r, Q, QDD),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fast_path_returns_the_checked_paths_results(robot, checked_calls, case):
    fast = CASES[case](robot)
    assert not checked_calls, "the call took the checked path"
    with _fastpath.disabled():
        _assert_same(fast, CASES[case](robot))


def test_specialized_programs_return_the_checked_paths_results(robot, monkeypatch):
    monkeypatch.setattr(_fastpath, "SPECIALIZE_AFTER", 1)
    monkeypatch.setattr(_fastpath, "AMORTIZE", 0.0)
    case = CASES["static option, named tuple"]
    shared = case(robot)
    special = case(robot)
    with _fastpath.disabled():
        _assert_same(special, case(robot), rtol=1e-12)
    _assert_same(special, shared, rtol=1e-12)


BAD = {
    "NaN state": lambda r: sr.inverse_dynamics(r, Q, QD.at[1].set(jnp.nan), QDD),
    "inf input": lambda r: sr.forward_dynamics(r, Q, QD, QDD.at[0].set(jnp.inf)),
    "shape": lambda r: sr.inverse_dynamics(r, jnp.zeros(3), QD, QDD),
    "batch": lambda r: sr.mass_matrix(r, jnp.zeros((4, 2))),
    "complex": lambda r: sr.mass_matrix(r, jnp.array([0.1j, 0.0])),
    "string": lambda r: sr.kinetic_energy(r, "q", QD),
    "missing argument": lambda r: sr.inverse_dynamics(r, Q, QD),
    "unknown keyword": lambda r: sr.inverse_dynamics(r, Q, QD, QDD, qddd=QDD),
    "inputs shape": lambda r: sr.forward_dynamics(r, Q, QD, jnp.zeros(3)),
    "load link": lambda r: sr.inverse_dynamics(r, Q, QD, QDD, loads=sr.Wrench(3, (1.0, 0, 0))),
    "unhashable option": lambda r: sr.dynamics_terms(r, Q, QD, parts=[True]),
    "flag as text": lambda r: sr.dynamics_terms(r, Q, QD, parts="no"),
    "integer past float64": lambda r: sr.mass_matrix(r, [2**70, 0]),
    "inputs of None": lambda r: sr.forward_dynamics(r, Q, QD, [None, None]),
    "inputs as a dict": lambda r: sr.forward_dynamics(r, Q, QD, {"a": 1}),
    "flag as array": lambda r: sr.dalembert_wrenches(r, Q, QD, QDD, gravity=jnp.array(True)),
    "overflow": lambda r: sr.inverse_dynamics(r, Q, jnp.array([1e200, 0.0]), QDD),
    "not a robot": lambda r: sr.mass_matrix("robot", Q),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_errors_are_the_checked_paths(robot, monkeypatch, case):
    monkeypatch.setattr(_fastpath, "SPECIALIZE_AFTER", 1)
    monkeypatch.setattr(_fastpath, "AMORTIZE", 0.0)
    sr.inverse_dynamics(robot, Q, QD, QDD)
    sr.forward_dynamics(robot, Q, QD, QDD)  # both specialized from here on
    fast = _error(lambda: BAD[case](robot))
    with _fastpath.disabled():
        checked = _error(lambda: BAD[case](robot))
    assert fast is not None
    assert fast == checked


def test_flags_are_booleans(robot):
    # a string "False" was read by its truth value (gravity included)
    with pytest.raises(TypeError, match="dalembert_wrenches: gravity must be True or False"):
        sr.dalembert_wrenches(robot, Q, QD, QDD, gravity="False")
    with pytest.raises(TypeError, match="dynamics_terms: parts must be True or False, got 'no'"):
        sr.dynamics_terms(robot, Q, QD, parts="no")
    with pytest.raises(TypeError, match="gravity must be True or False, got JitTracer"):
        jax.jit(lambda g: sr.dalembert_wrenches(robot, Q, QD, QDD, gravity=g))(True)
    np.testing.assert_array_equal(
        sr.dalembert_wrenches(robot, Q, QD, QDD, gravity=np.bool_(True))[0],
        sr.dalembert_wrenches(robot, Q, QD, QDD, gravity=True)[0],
    )


def test_a_bad_state_raises_before_anything_runs(robot, capfd):
    sr.inverse_dynamics(robot, Q, QD, QDD)
    capfd.readouterr()
    with pytest.raises(ValueError, match=r"qdd contains non-finite values \(NaN or inf\) at index"):
        sr.inverse_dynamics(robot, Q, QD, jnp.array([0.0, jnp.nan]))
    # the fast program's fault branch raises nothing: no callback traceback on stderr
    assert capfd.readouterr().err == ""


def test_transformations_take_the_checked_path(robot, checked_calls):
    eager = sr.inverse_dynamics(robot, Q, QD, QDD)
    mass = sr.mass_matrix(robot, Q)
    assert not checked_calls
    jitted = jax.jit(lambda q: sr.inverse_dynamics(robot, q, QD, QDD))(Q)
    batched = jax.vmap(lambda q: sr.inverse_dynamics(robot, q, QD, QDD))(jnp.stack([Q, Q]))
    # M = ∂ID/∂q̈
    jacobian = jax.jacfwd(lambda qdd: sr.inverse_dynamics(robot, Q, QD, qdd))(QDD)
    assert checked_calls
    _assert_same(jitted, eager, rtol=1e-12)
    _assert_same(batched[1], eager, rtol=1e-12)
    np.testing.assert_allclose(jacobian, mass, rtol=1e-12, atol=1e-14)


def test_a_first_call_under_jit_takes_only_the_checked_path(monkeypatch):
    # the process's first handle made while a `jit` traces (a fresh robot, called first inside
    # `jax.jit`): the states there are tracers and must not pass for concrete arrays, else the
    # model is traced twice, once for the fast path's program and once for the checked one
    monkeypatch.setattr(_fastpath, "_FAST_TYPES", (np.ndarray,))
    attempts = []
    real = _fastpath._attempt

    def counting(*args, **kwargs):
        attempts.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_fastpath, "_attempt", counting)
    fresh = _robot(mass=1.5)
    jitted = jax.jit(lambda q: sr.inverse_dynamics(fresh, q, QD, QDD))(Q)
    assert not attempts, "the fast path ran its program under jit"
    assert not any(issubclass(t, jax.core.Tracer) for t in _fastpath._FAST_TYPES)
    eager = sr.inverse_dynamics(fresh, Q, QD, QDD)  # and eager calls still take the fast path
    assert attempts
    _assert_same(jitted, eager, rtol=1e-12)


def test_a_robot_built_inside_jit_has_no_handle(robot):
    def run(mass):
        traced = _robot(mass=mass)
        assert _fastpath.handle(traced) is None
        return sr.inverse_dynamics(traced, Q, QD, QDD)

    _assert_same(jax.jit(run)(1.0), sr.inverse_dynamics(_robot(), Q, QD, QDD), rtol=1e-12)


def test_a_robot_of_a_known_structure_compiles_nothing():
    def pendulum(mass):
        body = sr.RigidBody(mass, (0.0, 0.0, -0.2), 1e-3 * jnp.eye(3))
        return sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), body)])

    robots = [pendulum(1.0), pendulum(2.0)]
    one = jnp.ones(1)
    results = [sr.inverse_dynamics(r, one, one, one) for r in robots]
    (entry_a,) = _fastpath.handle(robots[0]).entries.values()
    (entry_b,) = _fastpath.handle(robots[1]).entries.values()
    assert entry_a.program is entry_b.program
    assert entry_a.program._cache_size() == 1
    assert not np.allclose(results[0], results[1])


def test_handles_do_not_keep_their_robot_alive(monkeypatch):
    monkeypatch.setattr(_fastpath, "SPECIALIZE_AFTER", 1)
    monkeypatch.setattr(_fastpath, "AMORTIZE", 0.0)
    robot = _robot()
    for _ in range(3):
        sr.mass_matrix(robot, Q)
    assert next(iter(_fastpath.handle(robot).entries.values())).specialized
    alive = weakref.ref(robot)
    del robot
    gc.collect()
    assert alive() is None


def test_checks_inside_flagging_become_flags_on_their_own_trace_only():
    """`raise_if` under `flagging` records the flag of a check on the anchor's trace (no host
    callback); a check on a nested transformation's values (here `vmap`) keeps raising."""
    msg = ("x is negative",)

    def program(x):
        with _checks.flagging(x) as flags:
            y = _checks.raise_if(x, jnp.any(x < 0), jnp.zeros((), int), msg)
            z = jax.vmap(lambda v: _checks.raise_if(v, v < -5, 0, msg))(x)
        return y, z, flags[0] if flags else None, len(flags)

    y, z, flag, count = jax.jit(program)(jnp.array([1.0, -2.0]))
    assert count == 1 and bool(flag)
    np.testing.assert_array_equal(y, [1.0, -2.0])
    np.testing.assert_array_equal(z, y)
    with pytest.raises(Exception, match="x is negative"):
        jax.block_until_ready(jax.jit(program)(jnp.array([1.0, -6.0])))


def test_flagging_scopes_are_per_thread():
    """A `flagging` scope open in one thread (an eager call tracing its program) is not seen by
    another tracing at the same time: there a check records no flag of the first's and raises
    as it should (two threads may trace, as `examples/helicoid_tracking.py` does)."""
    msg = ("x is negative",)

    def other_thread():
        check = jax.jit(lambda x: _checks.raise_if(x, jnp.any(x < 0), 0, msg))
        with pytest.raises(Exception, match="x is negative"):
            jax.block_until_ready(check(jnp.array([-1.0])))
        return list(_checks._scopes())

    seen = {}

    def program(x):
        with _checks.flagging(x) as flags:
            with ThreadPoolExecutor(max_workers=1) as pool:
                seen["other"] = pool.submit(other_thread).result()
            y = _checks.raise_if(x, jnp.any(x < 0), 0, msg)
            seen["flags"] = len(flags)
        return y

    jax.jit(program)(jnp.array([1.0]))
    assert seen == {"other": [], "flags": 1}


def test_fast_programs_have_no_host_callback():
    """The shared programs (a robot's first calls) carry their checks as a flag: no host
    callback, so JAX's persistent compilation cache stores them (`enable_compilation_cache`)."""
    robot = _robot()  # a robot of its own: its first call, not specialized yet
    sr.forward_dynamics(robot, Q, QD, QDD)  # its Cholesky factor is checked inside the core
    h = _fastpath.handle(robot)
    entry = next(e for (sig, _), e in h.entries.items() if sig.name == "forward_dynamics")
    assert not entry.specialized
    text = entry.program.lower(h.leaves, (Q, QD, QDD), ()).as_text()
    assert "callback" not in text
    # the test sees a host callback where there is one
    host = jax.jit(
        lambda q: jax.pure_callback(np.asarray, jax.ShapeDtypeStruct(Q.shape, Q.dtype), q)
    )
    assert "callback" in host.lower(Q).as_text()


_CACHED = """
import json, sys
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import softrigid as sr
from softrigid import joints, quadrature
from softrigid.quadrature import _compress

events = []
jax.monitoring.register_event_listener(lambda name, **kw: events.append(name))
sr.enable_compilation_cache(sys.argv[1])
# a compressed rule: solved by the first process, read back by the second
solves, fit = [], _compress._fit
_compress._fit = lambda *a: solves.append(1) or fit(*a)
small = quadrature.compress(quadrature.cylinder(0.03, 0.3, n_axial=5, n_radial=3, n_angular=7), 3)
body = sr.RigidBody(1.5, (0.0, 0.0, -0.2), 1e-3 * jnp.eye(3))
robot = sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), body), sr.Link(joints.Revolute((1, 0, 0)), body)])
events.clear()
qdd = sr.forward_dynamics(robot, jnp.array([0.3, -0.2]), jnp.array([0.1, 0.4]), jnp.zeros(2))
# a jit of the user's around a public function: its checks are fault calls, no host callback
nu = jax.jit(lambda q: sr.inverse_dynamics(robot, q, q, q))(jnp.array([0.3, -0.2]))
print(json.dumps({"qdd": qdd.tolist(), "nu": nu.tolist(), "solves": len(solves),
                  "weights": small.weights.tolist(),
                  "hits": events.count("/jax/compilation_cache/cache_hits"),
                  "misses": events.count("/jax/compilation_cache/cache_misses")}))
"""


def _python(code, *args, env=None):
    """Run `code` in a fresh interpreter; its last line of output, read as JSON."""
    import json
    import subprocess
    import sys

    argv = [sys.executable, "-c", code, *args]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=300, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_first_call_and_the_rule_from_the_cache(tmp_path):
    first, second = _python(_CACHED, str(tmp_path)), _python(_CACHED, str(tmp_path))
    assert first["misses"] >= 1 and any(tmp_path.iterdir())
    assert second["misses"] == 0 and second["hits"] == first["misses"] >= 2
    np.testing.assert_array_equal(second["qdd"], first["qdd"])
    np.testing.assert_array_equal(second["nu"], first["nu"])
    # the compressed rule kept in the folder `quadrature` and read back, not solved again
    assert (first["solves"], second["solves"]) == (1, 0)
    assert len(list((tmp_path / "quadrature").glob("*.npz"))) == 1
    np.testing.assert_array_equal(second["weights"], first["weights"])


def test_enable_compilation_cache_refuses_bad_arguments(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(ValueError, match="directory: cannot create"):
        sr.enable_compilation_cache(blocked / "cache")
    with pytest.raises(ValueError, match="min_compile_time_s must be non-negative"):
        sr.enable_compilation_cache(tmp_path, min_compile_time_s=-1.0)
    with pytest.raises(TypeError, match="min_compile_time_s must be a number"):
        sr.enable_compilation_cache(tmp_path, min_compile_time_s="1")
    # '' was the current folder, silently; 3 a bare pathlib error
    with pytest.raises(ValueError, match="directory must not be empty"):
        sr.enable_compilation_cache("")
    with pytest.raises(TypeError, match="directory must be a path, got int"):
        sr.enable_compilation_cache(3)


def test_a_relative_cache_folder_is_taken_where_it_was_given(tmp_path, monkeypatch):
    # it followed the working directory of each later write (programs and rules went to
    # another folder after a chdir)
    from jax.experimental.compilation_cache import compilation_cache

    from softrigid import _persistent_cache

    options = (
        "jax_compilation_cache_dir",
        "jax_persistent_cache_min_compile_time_secs",
        "jax_persistent_cache_min_entry_size_bytes",
    )
    before = [getattr(jax.config, k) for k in options], _persistent_cache._rules
    monkeypatch.chdir(tmp_path)
    try:
        path = sr.enable_compilation_cache("relative")
        assert path == tmp_path / "relative" and path.is_absolute()
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "relative")
        assert _persistent_cache._rules == tmp_path / "relative" / "quadrature"
    finally:
        for k, v in zip(options, before[0]):
            jax.config.update(k, v)
        _persistent_cache._rules = before[1]
        compilation_cache.reset_cache()


_FAST = """
import json, os, sys
import jax
jax.config.update("jax_enable_x64", True)
import softrigid as sr
from softrigid import joints

on = sr.fast_compilation()
flags = os.environ.get("XLA_FLAGS", "")
body = sr.RigidBody(1.5, (0.0, 0.0, -0.2), 1e-3 * jax.numpy.eye(3))
robot = sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), body), sr.Link(joints.Revolute((1, 0, 0)), body)])
qdd = sr.forward_dynamics(robot, jax.numpy.array([0.3, -0.2]), jax.numpy.array([0.1, 0.4]), jax.numpy.zeros(2))
os.environ["XLA_FLAGS"] = ""
try:
    sr.fast_compilation()
    late = ""
except RuntimeError as err:
    late = str(err)
print(json.dumps({"on": on, "flags": flags, "qdd": qdd.tolist(), "late": late}))
"""


def test_fast_compilation_sets_the_flag_before_the_backend_starts():
    """In a fresh process (no XLA_FLAGS): the flag is set where jaxlib has it (else nothing
    changes), the dynamics are those of the default emitters to rounding, and a call after
    JAX's backend has started is refused."""
    from importlib.metadata import version

    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    fast = _python(_FAST, env=env)
    default = _python(_FAST.replace("on = sr.fast_compilation()", "on = None"), env=env)
    checked = version("jaxlib").startswith("0.10.")
    assert fast["on"] is checked
    assert ("--xla_cpu_use_fusion_emitters=false" in fast["flags"]) is checked
    assert default["flags"] == ""
    np.testing.assert_allclose(fast["qdd"], default["qdd"], rtol=1e-13, atol=1e-13)
    if checked:
        assert "backend has already started" in fast["late"]


_SYNC = """
import json
import jax
jax.config.update("jax_enable_x64", True)
import softrigid as sr
from softrigid import joints

on = sr.synchronous_dispatch() if SYNC else None
again = sr.synchronous_dispatch() if SYNC else None
body = sr.RigidBody(1.5, (0.0, 0.0, -0.2), 1e-3 * jax.numpy.eye(3))
robot = sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), body), sr.Link(joints.Revolute((1, 0, 0)), body)])
qdd = sr.forward_dynamics(robot, jax.numpy.array([0.3, -0.2]), jax.numpy.array([0.1, 0.4]), jax.numpy.zeros(2))
try:
    late = str(sr.synchronous_dispatch())
except RuntimeError as err:
    late = str(err)
asynchronous = jax.config.values["jax_cpu_enable_async_dispatch"]
print(json.dumps({"on": on, "again": again, "async": asynchronous, "qdd": qdd.tolist(), "late": late}))
"""


def test_synchronous_dispatch_before_the_backend_starts():
    """In a fresh process: JAX's CPU dispatch becomes synchronous (a second call agrees), the
    dynamics are unchanged, and a call after the backend has started with asynchronous
    dispatch is refused (it would be ignored)."""
    sync = _python(_SYNC.replace("SYNC", "True"))
    default = _python(_SYNC.replace("SYNC", "False"))
    assert sync["on"] is True and sync["again"] is True and sync["async"] is False
    assert sync["late"] == "True"
    assert default["async"] is True
    assert "backend has already started" in default["late"]
    np.testing.assert_array_equal(sync["qdd"], default["qdd"])


_FUSED = """
import json, os
import jax
jax.config.update("jax_enable_x64", True)
import softrigid as sr
from softrigid import joints

on = sr.fused_loops() if FUSED else None
flags = os.environ.get("XLA_FLAGS", "")
body = sr.RigidBody(1.5, (0.0, 0.0, -0.2), 1e-3 * jax.numpy.eye(3))
robot = sr.Robot([sr.Link(joints.Revolute(a), body) for a in [(0, 1, 0), (1, 0, 0)] * 3])
fd = jax.jit(
    lambda q, qd: sr.forward_dynamics(robot, q, qd, 0.1 * q, solver="articulated"),
    compiler_options=sr.compiler_options(),
)
q = jax.numpy.linspace(-0.5, 0.5, 6)
text = fd.lower(q, q[::-1]).compile().as_text()
qdd = fd(q, q[::-1])
try:
    late = str(sr.fused_loops())
except RuntimeError as err:
    late = str(err)
print(json.dumps({
    "on": on, "flags": flags, "qdd": qdd.tolist(), "late": late,
    "loops": text.count(" while("), "kernels": text.count('xla_cpu_small_call="true"'),
}))
"""


def test_fused_loops_compiles_the_passes_as_kernels():
    """In a fresh process: the option reaches `XLA_FLAGS` (merged into a user's own list of
    backend options), every loop of the articulated forward dynamics of a 6-joint chain is
    compiled as one kernel (XLA's default leaves the inward pass out), the accelerations are
    unchanged to rounding, and a call after JAX's backend has started is refused."""
    from importlib.metadata import version

    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    fused = _python(_FUSED.replace("FUSED", "True"), env=env)
    default = _python(_FUSED.replace("FUSED", "False"), env=env)
    user = "--xla_backend_extra_options=xla_cpu_disable_loop_unrolling"
    merged = _python(_FUSED.replace("FUSED", "True"), env={**env, "XLA_FLAGS": user})
    assert default["flags"] == "" and "backend has already started" in default["late"]
    assert 0 < default["kernels"] < default["loops"]
    np.testing.assert_allclose(fused["qdd"], default["qdd"], rtol=1e-13, atol=1e-13)
    if version("jaxlib").startswith("0.10."):
        option = "xla_cpu_small_while_loop_byte_threshold=65536"
        assert fused["on"] is True and fused["late"] == "True"
        assert fused["flags"] == f"--xla_backend_extra_options={option}"
        assert merged["flags"] == f"{user},{option}"
        assert fused["kernels"] == fused["loops"] == merged["kernels"] == default["loops"]
    else:
        assert fused["on"] is False and fused["flags"] == ""


def test_fused_loops_keeps_a_users_choice_and_refuses_bad_sizes(monkeypatch):
    option = "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=0"
    monkeypatch.setenv("XLA_FLAGS", option)
    assert sr.fused_loops(1 << 20) is True
    assert os.environ["XLA_FLAGS"] == option
    with pytest.raises(TypeError, match="max_bytes must be an integer"):
        sr.fused_loops(1e5)
    with pytest.raises(ValueError, match=r"max_bytes must be in \[0, 2\*\*63\)"):
        sr.fused_loops(-1)
    # XLA parses the option as an int64: a larger value broke every later program
    with pytest.raises(ValueError, match=r"max_bytes must be in \[0, 2\*\*63\), got 9223"):
        sr.fused_loops(2**63)


def test_compiler_options_follow_xla_flags_and_the_release(monkeypatch):
    """softrigid's programs take the elemental emitters and no library (YNNPACK) fusions where
    jaxlib is a checked release, the backend is the CPU and `XLA_FLAGS` does not set them
    itself (then the user's or `fast_compilation`'s choice holds)."""
    from importlib.metadata import version

    checked = version("jaxlib").startswith("0.10.")
    monkeypatch.setattr(_cache, "_one_core", lambda: False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    threads = {"xla_cpu_multi_thread_eigen": False}
    library = {"xla_cpu_experimental_ynn_fusion_type": "", **threads}
    emitters = {"xla_cpu_use_fusion_emitters": False, **library}
    assert sr.compiler_options() == (emitters if checked else {})
    loops = {"xla_disable_hlo_passes": "while-loop-invariant-code-motion,simplify-while-loops"}
    assert sr.compiler_options(loops=True) == ({**emitters, **loops} if checked else {})
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true")
    assert sr.compiler_options() == (library if checked else {})
    assert sr.compiler_options(loops=True) == ({**library, **loops} if checked else {})
    flag = "--xla_cpu_experimental_ynn_fusion_type=LIBRARY_FUSION_TYPE_DOT"  # the user's holds
    monkeypatch.setenv("XLA_FLAGS", flag)
    assert "xla_cpu_experimental_ynn_fusion_type" not in sr.compiler_options()
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true")  # the user's holds
    assert "xla_cpu_multi_thread_eigen" not in sr.compiler_options()
    monkeypatch.setenv("XLA_FLAGS", "--xla_disable_hlo_passes=algsimp")  # the user's list holds
    assert "xla_disable_hlo_passes" not in sr.compiler_options(loops=True)
    # confined to one core: XLA's memory-optimized schedule and its code generated as one
    # module, unless XLA_FLAGS picks them
    monkeypatch.setattr(_cache, "_one_core", lambda: True)
    monkeypatch.setenv("XLA_FLAGS", "")
    schedule = {
        "xla_cpu_scheduler_type": "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED",
        "xla_cpu_parallel_codegen_split_count": 1,
    }
    assert sr.compiler_options() == ({**emitters, **schedule} if checked else {})
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_parallel_codegen_split_count=8")  # the user's
    assert "xla_cpu_parallel_codegen_split_count" not in sr.compiler_options()
    for flag in (
        "--xla_cpu_enable_concurrency_optimized_scheduler=true",
        "--xla_cpu_scheduler_type=CPU_SCHEDULER_TYPE_DEFAULT",
    ):
        monkeypatch.setenv("XLA_FLAGS", flag)
        assert "xla_cpu_scheduler_type" not in sr.compiler_options()
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")  # the options are XLA:CPU's
    assert sr.compiler_options() == {}


@pytest.mark.skipif(
    not _cache._checked_release(), reason="the option is checked on jaxlib 0.10 only"
)
def test_one_core_schedule_is_accepted_and_changes_nothing_computed():
    """XLA takes the one-core schedule as a program's option (an unknown value is refused), the
    compiled program differs, and the dynamics are the same to rounding (the same fused
    computations, run in another order: bit for bit until the articulated check read `q`'s
    finiteness, since then one entry 1 ulp apart under the suite's LLVM -O0, bit for bit at
    XLA's default optimization level)."""
    link = sr.Link(
        sr.joints.Revolute((0.0, 1.0, 0.0)), sr.RigidBody(1.0, (0.0, 0.0, 0.3), 0.01 * jnp.eye(3))
    )
    robot = sr.Robot([link] * 6, gravity=(0.0, 0.0, -9.81))
    q = jnp.linspace(-0.5, 0.5, 6)

    def fd(q):
        return sr.forward_dynamics(robot, q, -q, q)

    base = {k: v for k, v in sr.compiler_options().items() if k != "xla_cpu_scheduler_type"}
    one = {**base, "xla_cpu_scheduler_type": "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED"}
    plain, scheduled = (jax.jit(fd, compiler_options=o).lower(q).compile() for o in (base, one))
    assert plain.as_text() != scheduled.as_text()
    np.testing.assert_allclose(plain(q), scheduled(q), rtol=1e-15, atol=0)
    wrong = {**base, "xla_cpu_scheduler_type": "NO_SUCH_SCHEDULE"}
    with pytest.raises(Exception, match="xla_cpu_scheduler_type"):
        jax.jit(fd, compiler_options=wrong).lower(q).compile()


@pytest.mark.skipif(
    not _cache._checked_release(), reason="the option is checked on jaxlib 0.10 only"
)
def test_no_library_fusions_and_the_same_numbers():
    """`compiler_options()` leaves XLA:CPU's YNNPACK fusions out of softrigid's programs (their
    dots run in XLA's own kernels): the compiled program has none where XLA's default makes
    them, and the dynamics are equal to rounding."""
    rng = np.random.default_rng(4)
    body = sr.RigidBody(1.0, (0.0, 0.0, 0.3), 0.01 * jnp.eye(3))
    robot = sr.Robot([sr.Link(sr.joints.Spherical(), body)] * 4, gravity=(0.0, 0.0, -9.81))
    q, qd, qdd = (jnp.asarray(rng.normal(size=robot.n_q)) for _ in range(3))

    def terms(q, qd, qdd):
        return sr.mass_matrix(robot, q), sr.inverse_dynamics(robot, q, qd, qdd)

    options = sr.compiler_options()
    default = {k: v for k, v in options.items() if k != "xla_cpu_experimental_ynn_fusion_type"}
    ours, xla = (
        jax.jit(terms, compiler_options=o).lower(q, qd, qdd).compile() for o in (options, default)
    )
    assert "ynn" in xla.as_text().lower() and "ynn" not in ours.as_text().lower()
    for a, b in zip(ours(q, qd, qdd), xla(q, qd, qdd)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(
    not _cache._checked_release(), reason="the option is checked on jaxlib 0.10 only"
)
def test_single_threaded_dots_are_accepted_and_change_nothing_computed():
    """XLA takes `xla_cpu_multi_thread_eigen = False` as a program's option (a value of the
    wrong type is refused, so the option is read), and a batched forward dynamics with dots
    (planar PCS segments under `vmap`) is the same to rounding with and without it."""
    body = sr.SoftBody(
        sr.kinematics.PlanarPCS(0.2, strains=("bend", "axial", "shear")),
        sr.quadrature.cylinder(0.02, 0.2, n_axial=4, n_radial=2),
        1000.0,
        material=sr.materials.CosseratRod(1e6, 4e5),
    )
    robot = sr.Robot([sr.Link(sr.joints.Fixed(), body)] * 2, gravity=(0.0, 0.0, -9.81))
    rng = np.random.default_rng(7)
    q, qd, u = (jnp.asarray(rng.normal(size=(8, robot.n_q))) * s for s in (0.5, 1.0, 0.1))
    q = q.at[:, 1::3].set(0.0)

    def fd(q, qd, u):
        return jax.vmap(lambda *x: sr.forward_dynamics(robot, *x))(q, qd, u)

    options = sr.compiler_options()
    assert options["xla_cpu_multi_thread_eigen"] is False
    threaded = {**options, "xla_cpu_multi_thread_eigen": True}
    ours, pooled = (jax.jit(fd, compiler_options=o)(q, qd, u) for o in (options, threaded))
    np.testing.assert_allclose(ours, pooled, rtol=1e-12, atol=1e-12 * float(jnp.abs(ours).max()))
    with pytest.raises(Exception, match="xla_cpu_multi_thread_eigen"):
        jax.jit(fd, compiler_options={**options, "xla_cpu_multi_thread_eigen": "maybe"})(q, qd, u)


def test_programs_take_their_options_at_the_top_level_only(monkeypatch):
    """A softrigid program is compiled with `compiler_options()` when called outside any
    transformation (an option XLA does not know shows that they reach it) and without them
    inside a user's `jit`, `vmap` or `grad`, where JAX refuses options on a nested program."""
    monkeypatch.setattr(
        _cache, "compiler_options", lambda loops=False: {"xla_no_such_option": True}
    )
    double = _cache.jit(lambda x: 2.0 * x**2)
    x = jnp.array([1.0, -3.0])
    with pytest.raises(Exception, match="No such compile option"):
        double(x)
    with pytest.raises(Exception, match="No such compile option"):
        double.lower(x).compile()
    np.testing.assert_array_equal(jax.jit(lambda y: double(y) + 1.0)(x), [3.0, 19.0])
    np.testing.assert_array_equal(jax.jit(lambda: double(x))(), [2.0, 18.0])
    np.testing.assert_array_equal(jax.grad(lambda y: double(y).sum())(x), [4.0, -12.0])
    np.testing.assert_array_equal(jax.vmap(double)(x[:, None]), [[2.0], [18.0]])


def test_trial_evaluations_leave_out_the_output_checks(robot):
    # a solver's trial point may lie outside a body's range: traced inside
    # `trial_evaluations()` a public algorithm returns the non-finite value to the solver
    # (which rejects the trial), elsewhere its run-time check raises
    bad = jnp.array([jnp.nan, 0.0])

    def trial(q):
        with _entry.trial_evaluations():
            return sr.gravity_force(robot, q)

    assert np.isnan(np.asarray(jax.jit(trial)(bad))).all()
    with pytest.raises(Exception, match=r"gravity_force: the argument q contains non-finite"):
        jax.block_until_ready(jax.jit(lambda q: sr.gravity_force(robot, q))(bad))
    # the switch is a trace-time one and does not leak out of its block
    assert not _entry._TRIAL.get()


def test_inside_jit_and_vmap_a_non_finite_argument_is_named(robot):
    """Inside `jit`/`vmap` the public function cannot check its arguments before the call: the
    output check names the first non-finite one (in the order q, qd, qdd, u, loads) before a
    coordinate of the output."""
    q = jnp.zeros(robot.n_q)
    nan = q.at[-1].set(jnp.nan)
    for args, bad in (((nan, q, q), "q"), ((q, q, nan), "qdd"), ((nan, nan, q), "q")):
        with pytest.raises(Exception, match=f"inverse_dynamics: the argument {bad} contains"):
            jax.block_until_ready(jax.jit(lambda *a: sr.inverse_dynamics(robot, *a))(*args))
    states = jnp.zeros((3, robot.n_q)).at[1, 0].set(jnp.inf)
    with pytest.raises(Exception, match="inverse_dynamics: the argument qd contains"):
        jax.block_until_ready(jax.vmap(lambda qd: sr.inverse_dynamics(robot, q, qd, q))(states))
    # finite arguments: the values of the eager call
    np.testing.assert_array_equal(
        jax.jit(lambda *a: sr.inverse_dynamics(robot, *a))(q, q, q),
        sr.inverse_dynamics(robot, q, q, q),
    )


def test_inside_jit_forward_dynamics_names_a_non_finite_state_not_its_factorization(robot):
    # a NaN q made M non-finite and that check fired first: "the mass matrix is not finite in
    # row 0" (the articulated path still names its D_i: test_architecture)
    q = jnp.zeros(robot.n_q)
    nan = q.at[-1].set(jnp.nan)
    fd = jax.jit(lambda a, b: sr.forward_dynamics(robot, a, b, q, solver="cholesky"))
    with pytest.raises(Exception, match="forward_dynamics: the argument q contains"):
        jax.block_until_ready(fd(nan, q))
    with pytest.raises(Exception, match="forward_dynamics: the argument qd contains"):
        jax.block_until_ready(fd(q, nan))
    loop = sr.constraints.Holonomic(lambda x: x[:1], alpha=1.0, beta=1.0)
    cfd = jax.jit(lambda a: sr.constrained_forward_dynamics(robot, a, q, q, loop).qdd)
    with pytest.raises(Exception, match="constrained_forward_dynamics: the argument q contains"):
        jax.block_until_ready(cfd(nan))
    f = jax.jit(sr.vector_field(robot))
    with pytest.raises(Exception, match="vector_field: the argument q contains"):
        jax.block_until_ready(f(0.0, (nan, q)))


def test_jit_compiles_with_softrigids_options_at_top_level():
    """`sr.jit` is `jax.jit` with `sr.compiler_options()` where it is outermost (the options a
    traced program carries: JAX's private `Traced._params`), a plain `jax.jit` inside another
    transformation (JAX refuses options there), and gives the same values either way."""
    body = sr.RigidBody(1.5, (0.0, 0.0, -0.2), 1e-3 * jnp.eye(3))
    robot = sr.Robot([sr.Link(joints.Revolute(a), body) for a in [(0, 1, 0), (1, 0, 0)] * 2])

    def fd(q):
        return sr.forward_dynamics(robot, q, -q, 0.1 * q)

    q = jnp.linspace(-0.5, 0.5, robot.n_q)
    jitted = sr.jit(fd)
    options = tuple(sr.compiler_options().items())
    assert jitted.trace(q)._params["compiler_options_kvs"] == options
    np.testing.assert_array_equal(jitted(q), jax.jit(fd)(q))
    # inside a vmap: the plain program (a nested jit has no options), batched values equal
    batch = jnp.stack([q, 0.5 * q, -q])
    np.testing.assert_allclose(jax.vmap(jitted)(batch), jnp.stack([fd(x) for x in batch]), 1e-12)
    outer = sr.jit(jax.vmap(fd))
    assert outer.trace(batch)._params["compiler_options_kvs"] == options
    np.testing.assert_allclose(outer(batch), jax.vmap(jitted)(batch), rtol=1e-12, atol=1e-14)
    decorated = sr.jit(static_argnames="scale")(lambda x, scale: scale * x)
    assert float(decorated(jnp.ones(()), scale=3.0)) == 3.0
    with pytest.raises(TypeError, match=r"softrigid.jit: fun must be callable, got ndarray"):
        sr.jit(np.ones(3))
    # the caller's own options join softrigid's (theirs win) on the top-level program only
    own = {"xla_cpu_enable_fast_math": False}
    mine = sr.jit(fd, compiler_options=own)
    assert dict(mine.trace(q)._params["compiler_options_kvs"]) == {**dict(options), **own}
    np.testing.assert_allclose(mine(q), jitted(q), rtol=1e-12)
    np.testing.assert_allclose(jax.vmap(mine)(batch), jax.vmap(jitted)(batch), rtol=1e-12)
    with pytest.raises(TypeError, match="compiler_options must be a dict of XLA options, got int"):
        sr.jit(fd, compiler_options=5)
