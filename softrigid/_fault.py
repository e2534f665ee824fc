"""A run-time error raised from inside a compiled program, without a host callback.

`fault_if(value, bad, index, messages)` returns `value` unchanged and makes the program fail
with `messages[index]` when `bad` holds, also under `jit`, `vmap` and automatic differentiation:

    code   = max_batch(where(bad, index + 1, 0)),
    zero   = switch(code, [0, fail(messages[0]), fail(messages[1]), …]),
    value' = value − zero.

The outputs never enter the branch (XLA needs not materialize them for it: the code fuses with
the reduction that computes `bad`), and every leaf depends on the check, so no output can be
used unchecked; `x − 0` is `x` bit for bit (`−0.0` and NaN included).

On CPU each failing branch is an XLA FFI custom call (`softrigid_fault`) whose handler returns
an XLA error carrying the message, which JAX raises when the result is read (as
`jax.errors.JaxRuntimeError` on a program's first call, as `ValueError` on later ones). The
handler is a C-callable function made with `ctypes` from the XLA FFI C API
(`xla/ffi/api/c_api.h`, binary-stable by design); it reads only its string attribute, never a
buffer, and runs only when a check fires. Unlike `equinox.branched_error_if`, whose failing
branch holds a Python host callback, the program then has no host callback, so XLA:CPU runs it
asynchronously on its thread pool like any other program (successive calls overlap) and JAX's
persistent compilation cache can store it. On other platforms the check is
`equinox.branched_error_if` over all its messages (the platform chosen at lowering,
`lax.platform_dependent`).

Under `vmap` the code is reduced over the batch (`_batch_max`, as `equinox.internal.unvmap_max`
but 0 over an empty batch): the message is that of the largest index, as in Equinox. The code
carries no tangent; a derivative of `value` is `ẋ (1 − zero)` (`_checked`), equal to `ẋ` bit
for bit and dependent on the check, so that a derivative, which never reads the primal output,
keeps it (forward and reverse mode, inside `jit`).
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
from equinox.internal import unvmap_any
from jax import Array, lax
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

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


def ffi_failure(code: Array, message: str) -> Array:
    """CPU: fail with `message` through the `softrigid_fault` custom call (its int32 result is
    never written: the call fails; `code` is not read)."""
    return jax.ffi.ffi_call(TARGET, jax.ShapeDtypeStruct((), jnp.int32))(message=message)


def equinox_failure(code: Array, messages: tuple[str, ...]) -> Array:
    """Other platforms: fail with `messages[code − 1]` where `code > 0` through
    `equinox.branched_error_if` (one host callback for all of a check's messages; the predicate
    is traced, so tracing never raises)."""
    index = jnp.clip(code - 1, 0, len(messages) - 1)
    return eqx.branched_error_if(jnp.zeros((), jnp.int32), code > 0, index, messages)


def _zero_or_fail(code: Array, messages: tuple[str, ...]) -> Array:
    """`0` (int32) for `code = 0`, else fail with `messages[code − 1]`, by the platform's
    failure (chosen at lowering, `lax.platform_dependent`). On CPU one `switch` (whose index
    clamp fuses with the reduction that computes `code`), one FFI branch per message; on other
    platforms one Equinox check for all messages: tracing a host callback per message cost a
    check of 25 messages half a second of tracing (`links_world_points` under `vmap`: 2.3 s →
    1.1 s), in every program that holds it."""

    cpu, other = _branches(messages)
    return lax.platform_dependent(code, cpu=cpu, default=other)


def _passed(code: Array) -> Array:
    return jnp.zeros((), jnp.int32)


@functools.lru_cache(maxsize=4096)
def _branches(messages: tuple[str, ...]) -> tuple[Callable, Callable]:
    """The platforms' branches of a check with `messages`, one set of function objects per
    message tuple: JAX keys its traced branches by the functions' identity, so a check run
    eagerly under a transformation (an eager `jax.vmap` of `equilibrium`) reuses its compiled
    `switch` instead of compiling a new one at every call (20 ms a call)."""
    fail = [_passed, *(functools.partial(ffi_failure, message=m) for m in messages)]

    def cpu(code: Array) -> Array:
        return lax.switch(code, fail, code)

    return cpu, functools.partial(equinox_failure, messages=messages)


_batch_max_p = Primitive("softrigid_batch_max")


def _batch_max(x: Array) -> Array:
    """The largest entry of the codes `x` (`≥ 0`) over their axes and every `vmap` batch, `0`
    where there is none: `equinox.internal.unvmap_max` reduces with `jnp.max`, which has no
    identity, so a check under a `vmap` over no states failed to lower ("zero-size array to
    reduction operation max")."""
    return _batch_max_p.bind(x)


def _batch_max_impl(x: Array) -> Array:
    return jnp.max(x, initial=0)


_batch_max_p.def_impl(_batch_max_impl)
_batch_max_p.def_abstract_eval(lambda x: jax.core.ShapedArray((), x.dtype))
batching.primitive_batchers[_batch_max_p] = lambda args, axes: (_batch_max(args[0]), None)
mlir.register_lowering(_batch_max_p, mlir.lower_fun(_batch_max_impl, multiple_results=False))


@jax.custom_jvp
def _checked(leaf: Array, zero: Array) -> Array:
    """`leaf − zero` (`x − 0` keeps `−0.0` and NaN), its tangent `ẋ (1 − zero)`: a derivative
    depends on the check too, in forward and reverse mode. With the tangent `ẋ` alone, a
    derivative inside `jit` (`jit(grad(f))`, `jit(jacfwd(f))`) never reads the primal output,
    so XLA removed the check as dead code and a NaN derivative came back silently."""
    return leaf - zero.astype(leaf.dtype)


@_checked.defjvp
def _checked_jvp(primals: tuple[Array, Array], tangents: tuple[Array, Array]) -> tuple:
    leaf, zero = primals
    return _checked(leaf, zero), tangents[0] * (1 - zero).astype(leaf.dtype)


def _depends(leaf: Array, zero: Array) -> Array:
    """`leaf` unchanged, as a function of the check's `zero`, and so are its derivatives
    (`_checked`); a leaf that is neither a number nor a boolean (a PRNG key) passes as it is."""
    if leaf.dtype == jnp.bool_:
        return leaf & (zero == 0)
    if jnp.issubdtype(leaf.dtype, jnp.inexact):
        return _checked(leaf, zero)
    if not jnp.issubdtype(leaf.dtype, jnp.number):
        return leaf
    return leaf - zero.astype(leaf.dtype)


def fault_if(
    value: Any, bad: Any, index: Any | Callable[[Any], Any], messages: tuple[str, ...]
) -> Any:
    """`value` (an array or a pytree of them) unchanged; when `bad` holds, the program fails
    with `messages[index]` (raised when its result is read; see the module docstring).

    `bad` and `index` may be arrays (broadcast together): the message is that of the largest
    index among the entries where `bad` holds. `index` may also be a function of `value`
    (`index(value)`), evaluated only when the check fires (behind a `cond` that reads
    `value`); a given index costs no branch of its own: the code `max(where(bad, index + 1,
    0))` fuses with the reduction that computes `bad`.
    A concrete `bad` that holds, with an index that can be read without tracing, raises a
    `ValueError` at once."""
    arrays, rest = eqx.partition(value, eqx.is_array)
    leaves, tree = jax.tree_util.tree_flatten(arrays)
    last = len(messages) - 1
    if is_concrete(bad) and not bool(np.any(np.asarray(bad))):
        return value
    if is_concrete(bad, leaves if callable(index) else index):
        # the largest index among the entries where `bad` holds
        k = np.asarray(index(value)) if callable(index) else np.where(bad, index, -1)
        raise ValueError(messages[min(max(int(np.max(k)), 0), last)])
    bad = jnp.asarray(bad)

    def zero_or_fail(k: Array) -> Array:
        code = jnp.where(bad, jnp.clip(k, 0, last) + 1, 0).astype(jnp.int32)
        return _zero_or_fail(_batch_max(code), tuple(messages))

    if callable(index):
        pick = index

        def located(leaves: list[Array]) -> Array:
            return zero_or_fail(pick(eqx.combine(jax.tree_util.tree_unflatten(tree, leaves), rest)))

        def none(leaves: list[Array]) -> Array:
            return jnp.zeros((), jnp.int32)

        zero = lax.cond(unvmap_any(bad), located, none, leaves)
    else:
        zero = zero_or_fail(jnp.asarray(index))
    leaves = [_depends(leaf, zero) for leaf in leaves]
    return eqx.combine(jax.tree_util.tree_unflatten(tree, leaves), rest)
