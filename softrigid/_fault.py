"""A run-time error raised from inside a compiled program, without a host callback.

`fault_if(value, bad, index, messages)` returns `value` unchanged and makes the program fail
with `messages[index]` when `bad` holds, also under `jit`, `vmap` and automatic differentiation:

    value' = cond(any_batch(bad), fail(messages[max_batch(index)]), identity)(value)

On CPU the failing branch is an XLA FFI custom call (`softrigid_fault`) whose handler returns
an XLA error carrying the message, which JAX raises when the result is read (as
`jax.errors.JaxRuntimeError` on a program's first call, as `ValueError` on later ones). The
handler is a C-callable function made with `ctypes` from the XLA FFI C API
(`xla/ffi/api/c_api.h`, binary-stable by design); it reads only its string attribute, never a
buffer, and runs only when a check fires. Unlike `equinox.branched_error_if`, whose failing
branch holds a Python host callback, the program then has no host callback, so XLA:CPU runs it
asynchronously on its thread pool like any other program (successive calls overlap) and JAX's
persistent compilation cache can store it. On other platforms the failing branch is
`equinox.branched_error_if`'s (chosen at lowering, `lax.platform_dependent`).

Under `vmap` the fault flag is reduced over the batch (`equinox.internal.unvmap_any`) and the
message is that of the largest index (`unvmap_max`), as in Equinox; under `jvp` the tangent of
`value` passes through unchanged.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from equinox.internal import unvmap_any, unvmap_max
from jax import Array, lax

from ._module import is_concrete

__all__ = ["TARGET", "fault_if"]

TARGET = "softrigid_fault"

_METADATA = 1  # XLA_FFI_Extension_Metadata
_STRING = 4  # XLA_FFI_AttrType_STRING
_FAILED_PRECONDITION = 9  # XLA_FFI_Error_Code_FAILED_PRECONDITION


class _Extension(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("type", ctypes.c_int), ("next", ctypes.c_void_p)]


class _Version(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("extension_start", ctypes.c_void_p),
        ("major", ctypes.c_int),
        ("minor", ctypes.c_int),
    ]


class _Metadata(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("api_version", _Version),
        ("traits", ctypes.c_uint32),
    ]


class _MetadataExtension(ctypes.Structure):
    _fields_ = [("base", _Extension), ("metadata", ctypes.POINTER(_Metadata))]


class _ByteSpan(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _List(ctypes.Structure):  # XLA_FFI_Args and XLA_FFI_Rets
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("extension_start", ctypes.c_void_p),
        ("size", ctypes.c_int64),
        ("types", ctypes.c_void_p),
        ("items", ctypes.c_void_p),
    ]


class _Attrs(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("extension_start", ctypes.c_void_p),
        ("size", ctypes.c_int64),
        ("types", ctypes.POINTER(ctypes.c_int)),
        ("names", ctypes.c_void_p),
        ("attrs", ctypes.POINTER(ctypes.POINTER(_ByteSpan))),
    ]


class _ErrorArgs(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("extension_start", ctypes.c_void_p),
        ("message", ctypes.c_char_p),
        ("errc", ctypes.c_int),
    ]


class _Api(ctypes.Structure):  # the leading fields of XLA_FFI_Api
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("extension_start", ctypes.c_void_p),
        ("api_version", _Version),
        ("internal_api", ctypes.c_void_p),
        ("error_create", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_ErrorArgs))),
    ]


class _CallFrame(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("extension_start", ctypes.POINTER(_Extension)),
        ("api", ctypes.POINTER(_Api)),
        ("ctx", ctypes.c_void_p),
        ("stage", ctypes.c_int),
        ("args", _List),
        ("rets", _List),
        ("attrs", _Attrs),
        ("future", ctypes.c_void_p),
    ]


def _message(frame: _CallFrame) -> bytes:
    """The `message` string attribute of the call (its only attribute)."""
    attrs = frame.attrs
    if attrs.size < 1 or attrs.types[0] != _STRING:
        return b"softrigid: a run-time check fired (its message could not be read)"
    span = attrs.attrs[0].contents
    return ctypes.string_at(span.ptr, span.len)


def _handle(address: int) -> int | None:
    """XLA_FFI_Handler: answer XLA's metadata query (the API version this handler speaks is the
    runtime's own, no traits), or fail the execution with the call's message."""
    frame = ctypes.cast(address, ctypes.POINTER(_CallFrame)).contents
    api = frame.api.contents
    extension = frame.extension_start
    if extension and extension.contents.type == _METADATA:
        metadata = ctypes.cast(extension, ctypes.POINTER(_MetadataExtension)).contents
        metadata.metadata.contents.api_version.major = api.api_version.major
        metadata.metadata.contents.api_version.minor = api.api_version.minor
        metadata.metadata.contents.traits = 0
        return None
    args = _ErrorArgs(ctypes.sizeof(_ErrorArgs), None, _message(frame), _FAILED_PRECONDITION)
    return api.error_create(ctypes.byref(args))


# kept referenced for the life of the process: XLA holds the bare function pointer
_HANDLER = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(_handle)
jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(_HANDLER), platform="cpu")


def _raising(message: str) -> Callable[[list[Array]], list[Array]]:
    """`leaves ↦ leaves` through the custom call that fails with `message`."""

    def call(leaves: list[Array]) -> list[Array]:
        shapes = [jax.ShapeDtypeStruct(leaf.shape, leaf.dtype) for leaf in leaves]
        aliases = {i: i for i in range(len(leaves))}
        fault = jax.ffi.ffi_call(
            TARGET, shapes, input_output_aliases=aliases, vmap_method="broadcast_all"
        )
        return fault(*leaves, message=message)

    return call


def ffi_failure(leaves: list[Array], k: Array, messages: tuple[str, ...]) -> list[Array]:
    """CPU: fail with `messages[k]` through the `softrigid_fault` custom call."""
    return lax.switch(k, [_raising(m) for m in messages], leaves)


def equinox_failure(leaves: list[Array], k: Array, messages: tuple[str, ...]) -> list[Array]:
    """Other platforms: fail with `messages[k]` through `equinox.branched_error_if`."""
    return eqx.branched_error_if(leaves, True, k, messages)


def _fail(
    leaves: list[Array], index: Array, locate: Callable, messages: tuple[str, ...]
) -> list[Array]:
    """The failing branch: `messages[k]`, `k` the largest over a batch of
    `locate(leaves, index)`, by the platform's failure (chosen at lowering)."""
    k = jnp.clip(unvmap_max(locate(leaves, index)), 0, len(messages) - 1)
    cpu = functools.partial(ffi_failure, k=k, messages=messages)
    other = functools.partial(equinox_failure, k=k, messages=messages)
    return lax.platform_dependent(leaves, cpu=cpu, default=other)


@functools.partial(jax.custom_jvp, nondiff_argnums=(3, 4))
def _guard(
    leaves: list[Array], bad: Array, index: Array, locate: Callable, messages: tuple[str, ...]
) -> Any:
    return lax.cond(bad, lambda x: _fail(x, index, locate, messages), lambda x: x, leaves)


@_guard.defjvp
def _guard_jvp(
    locate: Callable, messages: tuple[str, ...], primals: tuple, tangents: tuple
) -> tuple:
    leaves, bad, index = primals
    return _guard(leaves, bad, index, locate, messages), tangents[0]


def _given(leaves: list[Array], index: Array) -> Array:
    return index


def fault_if(
    value: Any, bad: Any, index: Any | Callable[[Any], Any], messages: tuple[str, ...]
) -> Any:
    """`value` (an array or a pytree of them) unchanged; when `bad` holds, the program fails
    with `messages[index]` (raised when its result is read; see the module docstring).

    `index` may be a function of `value` (`index(value)`), evaluated only when the check
    fires: the program's normal path then computes `bad` alone. A concrete `bad` that holds,
    with an index that can be read without tracing, raises a `ValueError` at once."""
    arrays, rest = eqx.partition(value, eqx.is_array)
    leaves, tree = jax.tree_util.tree_flatten(arrays)
    if callable(index):
        pick = index

        def locate(leaves: list[Array], _: Array) -> Array:
            return pick(eqx.combine(jax.tree_util.tree_unflatten(tree, leaves), rest))

        index = np.zeros((), int)
    else:
        locate = _given
    if is_concrete(bad) and not bool(np.any(np.asarray(bad))):
        return value
    if is_concrete(bad, index, leaves if locate is not _given else ()):
        k = int(np.max(np.asarray(locate(leaves, index))))
        raise ValueError(messages[min(max(k, 0), len(messages) - 1)])
    bad = unvmap_any(jnp.asarray(bad))
    leaves = _guard(leaves, bad, jnp.asarray(index), locate, tuple(messages))
    return eqx.combine(jax.tree_util.tree_unflatten(tree, leaves), rest)
