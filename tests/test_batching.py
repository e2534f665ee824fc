"""Chunked batching (`softrigid._batching`): a `vmap` of a public algorithm over more than
`WHOLE_UP_TO` states runs as a scan over chunks of `CHUNK`; values, derivatives and errors are
those of the per-state calls. `CHUNK` is set to 3 and `WHOLE_UP_TO` to 0 here so that a batch
of 8 (two full chunks and a padded one) takes the chunked path. The robot is this file's own
(its batched programs are traced with this chunk size, not taken from JAX's caches of other
tests) and rigid: the chunking does not look inside the robot, and rigid links compile in a
fraction of a soft body's time."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import robots

import softrigid as sr
from softrigid import _batching

BATCH = 8
STRUCTURE = (("revolute", "rigid"), ("prismatic", "rigid"), ("revolute", "rigid"))


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(_batching, "CHUNK", 3)
    monkeypatch.setattr(_batching, "WHOLE_UP_TO", 0)


@pytest.fixture(scope="module")
def robot():
    return robots.random_robot(7, gravity=(0.2, -0.4, -9.81), springs=True, structure=STRUCTURE)


@pytest.fixture(scope="module")
def states(robot):
    rows = [robots.random_state(robot, 40 + k, scale=0.5) for k in range(BATCH)]
    return tuple(jnp.stack(col) for col in zip(*rows))


def _rel(got, ref) -> float:
    got, ref = np.asarray(got), np.asarray(ref)
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def _while_loops(fn, *args) -> int:
    return jax.jit(fn).lower(*args).as_text().count("stablehlo.while")


# batches are chunked on XLA:CPU only (a GPU runs the whole batch as one vectorized call)
CHUNK_LOOPS = 1 if jax.default_backend() == "cpu" else 0


def test_chunked_vmap_equals_single_calls(robot, states):
    q, qd, x = states

    def inverse(q, qd, x):
        return sr.inverse_dynamics(robot, q, qd, x)

    nu = jax.jit(jax.vmap(inverse))(q, qd, x)
    for k in range(BATCH):
        assert _rel(nu[k], sr.inverse_dynamics(robot, q[k], qd[k], x[k])) < 1e-14
    # the chunked program has one loop more (the scan over the chunks) than the batch of 3
    loops = _while_loops(jax.vmap(inverse), q, qd, x)
    assert loops == _while_loops(jax.vmap(inverse), q[:3], qd[:3], x[:3]) + CHUNK_LOOPS


def test_reverse_mode_through_a_chunked_vmap(robot, states):
    """`jacrev` of a chunked `vmap` (the vmap innermost, so it is the chunked path): the
    `custom_jvp` is linearized and transposed; rows equal single gradients."""
    q = states[0]
    w = jnp.asarray(np.random.default_rng(1).normal(size=robot.n_q))

    def power(q):
        return sr.gravity_force(robot, q) @ w

    jac = jax.jit(jax.jacrev(lambda q: jax.vmap(power)(q)))(q)
    grad = jax.jit(jax.grad(power))
    for k in range(BATCH):
        assert _rel(jac[k, k], grad(q[k])) < 1e-13
    assert np.all(np.asarray(jac[0, 1:]) == 0.0)


def test_batched_model_parameters_are_chunked_too(robot, states):
    """A `vmap` over a leaf of the robot (the gravity) as well as the states."""
    q = states[0]
    gravities = jnp.asarray(np.random.default_rng(2).normal(size=(BATCH, 3)))
    leaves, treedef = jax.tree_util.tree_flatten_with_path(robot)
    (index,) = [k for k, (path, _) in enumerate(leaves) if jax.tree_util.keystr(path) == ".gravity"]

    def with_gravity(g):
        values = [leaf for _, leaf in leaves]
        values[index] = g
        return jax.tree_util.tree_unflatten(treedef, values)

    got = jax.jit(jax.vmap(lambda g, q: sr.gravity_force(with_gravity(g), q)))(gravities, q)
    for k in range(BATCH):
        assert _rel(got[k], sr.gravity_force(with_gravity(gravities[k]), q[k])) < 1e-14


def test_errors_fire_from_inside_a_chunk(robot, states):
    q, qd, x = states
    bad = q.at[BATCH - 1, 0].set(jnp.nan)  # in the last, padded chunk
    batched = jax.jit(jax.vmap(lambda q: sr.inverse_dynamics(robot, q, qd[0], x[0])))
    assert np.all(np.isfinite(batched(q)))
    with pytest.raises(Exception, match="inverse_dynamics: the argument q contains non-finite"):
        jax.block_until_ready(batched(bad))


def test_chunked_vmap_of_simulate(robot, states):
    """`simulate` over a batch of initial states runs whole trajectories chunk by chunk."""
    q, qd, _ = states

    def run(q0, qd0):
        return sr.simulate(robot, q0, qd0, t_final=0.004, dt=1e-3, method="semi_implicit_euler").q

    batched = jax.jit(jax.vmap(run))(q, qd)
    assert batched.shape == (BATCH, 5, robot.n_q)
    for k in range(BATCH):
        assert _rel(batched[k], run(q[k], qd[k])) < 1e-13
    loops = _while_loops(jax.vmap(run), q, qd)
    assert loops == _while_loops(jax.vmap(run), q[:3], qd[:3]) + CHUNK_LOOPS


def test_an_empty_batch_gives_empty_results(robot, states):
    """`jax.vmap` over zero states failed in every public function ("zero-size array to
    reduction operation max": the run-time checks' reduction over the batch), `simulate` too;
    the results are empty arrays of the right shapes, eagerly and under `jit`."""
    q, qd, x = (s[:0] for s in states)
    n = robot.n_q
    calls = {
        "mass_matrix": (lambda q, qd, x: sr.mass_matrix(robot, q), (0, n, n)),
        "inverse_dynamics": (lambda q, qd, x: sr.inverse_dynamics(robot, q, qd, x), (0, n)),
        "forward_dynamics": (lambda q, qd, x: sr.forward_dynamics(robot, q, qd, x), (0, n)),
        "potential_energy": (lambda q, qd, x: sr.potential_energy(robot, q), (0,)),
        "simulate": (lambda q, qd, x: sr.simulate(robot, q, qd, 0.02, 0.01).q, (0, 3, n)),
    }
    for name, (fn, shape) in calls.items():
        for wrap in (jax.vmap(fn), jax.jit(jax.vmap(fn))):
            assert wrap(q, qd, x).shape == shape, name
