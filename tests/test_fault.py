"""The run-time check without a host callback (`softrigid._fault.fault_if`): it raises its message
under `jit`, `vmap` and inside loops, passes derivatives through unchanged, and leaves no host
callback in a public function's program on CPU (other platforms fail through equinox's)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import softrigid as sr
from softrigid import _fault, joints
from softrigid._fault import TARGET, fault_if

# JAX raises an execution error as JaxRuntimeError on a program's first call and as ValueError on
# the later ones (its C++ dispatch path)
RUNTIME_ERRORS = (jax.errors.JaxRuntimeError, ValueError)
MESSAGES = ("softrigid: something is not finite", "softrigid: the first entry is negative")


def checked(x):
    """sin(x)/x, failing with the first message where it is not finite and with the second
    where x[0] < 0 (the larger index wins)."""
    y = jnp.sin(x) / x
    return fault_if(y, ~jnp.isfinite(y) | (x[0] < 0), jnp.where(x[0] < 0, 1, 0), MESSAGES)


def plain(x):
    return jnp.sin(x) / x


@pytest.mark.parametrize(
    "x, message",
    [([0.0, 1.0], "something is not finite"), ([-1.0, 2.0], "the first entry is negative")],
)
def test_raises_its_message_under_jit(x, message):
    with pytest.raises(RUNTIME_ERRORS, match=message):
        jax.block_until_ready(jax.jit(checked)(jnp.array(x)))


def test_passes_values_and_derivatives_through():
    x = jnp.array([0.3, 1.7, -2.0])
    x = x.at[0].set(0.4)
    np.testing.assert_array_equal(jax.jit(checked)(x), plain(x))
    np.testing.assert_array_equal(jax.jit(jax.jacfwd(checked))(x), jax.jacfwd(plain)(x))
    grad = jax.jit(jax.grad(lambda x: checked(x).sum()))(x)
    np.testing.assert_array_equal(grad, jax.grad(lambda x: plain(x).sum())(x))


def test_vmap_raises_for_one_bad_member_and_passes_good_batches():
    good = jnp.arange(1.0, 7.0).reshape(3, 2)
    np.testing.assert_array_equal(jax.jit(jax.vmap(checked))(good), jax.vmap(plain)(good))
    bad = good.at[1, 0].set(-1.0).at[2, 1].set(0.0)
    # the member with the larger index names the error
    with pytest.raises(RUNTIME_ERRORS, match="the first entry is negative"):
        jax.block_until_ready(jax.jit(jax.vmap(checked))(bad))


def test_raises_inside_a_loop():
    def loop(x):
        return jax.lax.fori_loop(0, 3, lambda k, acc: acc + checked(x - k), jnp.zeros_like(x))

    assert np.all(np.isfinite(jax.jit(loop)(jnp.array([5.0, 6.0]))))
    with pytest.raises(RUNTIME_ERRORS, match="something is not finite"):
        jax.block_until_ready(jax.jit(loop)(jnp.array([5.0, 2.0])))


def test_concrete_inputs_raise_at_once_and_pytrees_keep_their_static_parts():
    with pytest.raises(ValueError, match="the first entry is negative"):
        fault_if(1.0, np.array([True, False]), 1, MESSAGES)
    # per-entry indices: the largest where `bad` holds, also when not traced
    with pytest.raises(ValueError, match="something is not finite"):
        fault_if(1.0, np.array([True, False]), np.array([0, 1]), MESSAGES)
    per_entry = jax.jit(lambda x: fault_if(x, x < 0, jnp.array([0, 1]), MESSAGES))
    np.testing.assert_array_equal(per_entry(jnp.ones(2)), jnp.ones(2))
    with pytest.raises(RUNTIME_ERRORS, match="something is not finite"):
        jax.block_until_ready(per_entry(jnp.array([-1.0, 1.0])))
    with pytest.raises(RUNTIME_ERRORS, match="the first entry is negative"):
        jax.block_until_ready(per_entry(jnp.array([-1.0, -1.0])))
    value = {"x": jnp.ones(2), "name": "kept", "count": 3}
    assert fault_if(value, False, 0, MESSAGES) is value

    def keeps(x):
        value = {"x": x, "name": "kept", "count": jnp.arange(2), "positive": x > 0}
        value["key"] = jax.random.key(0)
        out = fault_if(value, x[0] < 0, 0, MESSAGES)
        assert out["name"] == "kept"
        return out["x"], out["count"], out["positive"], jax.random.key_data(out["key"])

    x, count, positive, key = jax.jit(keeps)(value["x"])
    np.testing.assert_array_equal(x, value["x"])
    np.testing.assert_array_equal(count, [0, 1])
    np.testing.assert_array_equal(positive, [True, True])
    np.testing.assert_array_equal(key, jax.random.key_data(jax.random.key(0)))


def test_a_public_program_holds_the_fault_call_and_no_host_callback():
    body = sr.RigidBody(1.0, (0.0, 0.0, -0.2), 1e-3 * jnp.eye(3))
    robot = sr.Robot([sr.Link(joints.Revolute((0, 1, 0)), body)], gravity=(0, 0, -9.81))
    program = jax.jit(lambda q, qd: sr.forward_dynamics(robot, q, qd, jnp.zeros(1)))
    if jax.default_backend() == "cpu":  # other platforms fail through equinox's host callback
        text = program.lower(jnp.zeros(1), jnp.zeros(1)).as_text()
        assert TARGET in text and "callback" not in text
    with pytest.raises(RUNTIME_ERRORS, match="non-finite value"):
        jax.block_until_ready(program(jnp.zeros(1), jnp.array([jnp.inf])))


@pytest.mark.parametrize("platform", ["cpu", "other"])
def test_each_platform_failure_raises_the_chosen_message(platform):
    # the CPU failure (one FFI branch per message) runs on CPU only (its handler is registered
    # there); the other platforms' one (one Equinox check for all messages) runs anywhere
    if platform == "cpu" and jax.default_backend() != "cpu":
        pytest.skip("the FFI failure is registered for CPU only")

    def failure(code):
        if platform == "cpu":
            return _fault.ffi_failure(code, MESSAGES[1])
        return _fault.equinox_failure(code, MESSAGES)

    def program(x):
        code = jnp.where(x[0] < 0, 2, 0).astype(jnp.int32)
        fail = jax.lax.cond(code > 0, failure, lambda c: c, code)
        return x - fail.astype(x.dtype)

    np.testing.assert_array_equal(jax.jit(program)(jnp.ones(2)), jnp.ones(2))
    with pytest.raises(RUNTIME_ERRORS, match="the first entry is negative"):
        jax.block_until_ready(jax.jit(program)(-jnp.ones(2)))


def test_a_lazy_index_names_the_message_and_values_keep_their_signed_zeros():
    def program(x):
        return fault_if(x, jnp.any(x < 0), lambda x: jnp.argmax(x < 0), MESSAGES)

    out = jax.jit(program)(jnp.array([-0.0, 2.0]))
    np.testing.assert_array_equal(np.signbit(out), [True, False])
    with pytest.raises(RUNTIME_ERRORS, match="the first entry is negative"):
        jax.block_until_ready(jax.jit(program)(jnp.array([1.0, -2.0])))
    with pytest.raises(RUNTIME_ERRORS, match="something is not finite"):
        jax.block_until_ready(jax.jit(program)(jnp.array([-1.0, 2.0])))
