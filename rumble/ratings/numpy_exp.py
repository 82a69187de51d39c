"""numpy's own float64 ``exp`` loop, callable from compiled (numba) code.

The rating step takes its exponentials from numpy's vectorised exp, which on a CPU with AVX-512
is numpy's own SIMD code, not the C library's ``exp`` that numba compiles ``math.exp`` to; the two
differ in the last bit for some inputs. To take the step's exponentials inside compiled code and
still get numpy's values bit for bit, the compiled code calls numpy's inner loop itself: the
function ``np.exp`` runs for float64 arrays, found in the ufunc's loop table (``functions`` and
``types`` of ``PyUFuncObject``, numpy's public C API, ``numpy/ufuncobject.h``).

``LOOP`` is that function's address in this process, found at import and checked against
``np.exp`` on awkward inputs. If numpy's layout ever differs (a future release), or the check
fails, ``LOOP`` is None and a warning is logged: the upload path then takes its exponentials with
``np.exp`` between two compiled calls, and a rebuild replays battle by battle, as before this
module existed; the values are the same, only slower. It is passed to compiled code as an argument,
never baked in, so numba's cache stays valid across processes.
"""

from __future__ import annotations

import ctypes
import logging
import sys
from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

BUFFER = 5  # the loop's arguments: input and output pointers, the count, the input and output strides


class _UFuncHead(ctypes.Structure):
    """The start of ``PyUFuncObject`` (numpy/ufuncobject.h), up to its loop table."""

    _fields_ = [
        ("ob_refcnt", ctypes.c_ssize_t),
        ("ob_type", ctypes.c_void_p),
        ("nin", ctypes.c_int),
        ("nout", ctypes.c_int),
        ("nargs", ctypes.c_int),
        ("identity", ctypes.c_int),
        ("functions", ctypes.POINTER(ctypes.c_void_p)),
        ("data", ctypes.POINTER(ctypes.c_void_p)),
        ("ntypes", ctypes.c_int),
        ("reserved1", ctypes.c_int),
        ("name", ctypes.c_char_p),
        ("types", ctypes.POINTER(ctypes.c_char)),
    ]


def loop_address() -> int:
    """The address of ``np.exp``'s float64 → float64 inner loop (the first one its type table lists,
    the one numpy's type resolution picks)."""
    # _UFuncHead assumes the usual object header (a reference count and a type pointer, 16 bytes);
    # a free-threaded or debug build lays objects out otherwise: refuse before reading anything.
    if object.__basicsize__ != 16 or not getattr(sys, "_is_gil_enabled", lambda: True)():
        raise ImportError("this Python's objects are not laid out as _UFuncHead assumes")
    head = _UFuncHead.from_address(id(np.exp))
    if head.name != b"exp" or (head.nin, head.nout) != (1, 1):
        raise ImportError("numpy's exp ufunc is not laid out as numpy/ufuncobject.h says")
    double = np.dtype(np.float64).num
    for k in range(head.ntypes):
        if ord(head.types[2 * k]) == double and ord(head.types[2 * k + 1]) == double:
            if head.data[k]:  # _call_loop passes NULL as the loop's data: only a loop that needs none will do
                raise ImportError("numpy's float64 exp loop needs its data pointer")
            return int(head.functions[k])
    raise ImportError("numpy's exp has no float64 loop")


@intrinsic
def _call_loop(typingctx: Any, address: Any, args: Any, dims: Any, steps: Any) -> Any:
    """Call the ufunc loop at ``address`` (every argument an integer address)."""
    signature = types.void(types.intp, types.intp, types.intp, types.intp)

    def codegen(context: Any, builder: Any, sig: Any, llargs: Any) -> Any:
        byte_pointer = ir.IntType(8).as_pointer()
        function_type = ir.FunctionType(ir.VoidType(), [byte_pointer] * 4)
        function = builder.inttoptr(llargs[0], function_type.as_pointer())
        pointers = [builder.inttoptr(value, byte_pointer) for value in llargs[1:]]
        builder.call(function, [*pointers, ir.Constant(byte_pointer, None)])
        return context.get_dummy_value()

    return signature, codegen


@njit(cache=True)
def exp_in_place(loop: int, buffer: np.ndarray, values: np.ndarray, row: int, count: int) -> None:
    """``values[row, :count] = np.exp(values[row, :count])`` through numpy's loop at ``loop``
    (``values`` C-contiguous float64; ``buffer``: BUFFER intp of scratch space)."""
    start = values.ctypes.data + row * values.shape[1] * 8
    buffer[0] = start
    buffer[1] = start
    buffer[2] = count
    buffer[3] = 8
    buffer[4] = 8
    base = buffer.ctypes.data
    _call_loop(loop, base, base + 2 * 8, base + 3 * 8)  # type: ignore[call-arg]


def _check(loop: int) -> None:
    """Raise ImportError unless the loop at ``loop`` gives ``np.exp``'s values bit for bit."""
    values = np.concatenate(
        [np.linspace(-750.0, 750.0, 30_011), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, 709.78, -745.2]]
    )
    work = values.reshape(1, -1).copy()
    exp_in_place(loop, np.zeros(BUFFER, dtype=np.intp), work, 0, work.shape[1])
    with np.errstate(over="ignore", under="ignore"):
        expected = np.exp(values)
    if not np.array_equal(work[0].view(np.int64), expected.view(np.int64)):
        raise ImportError("numpy's exp loop, called directly, does not reproduce np.exp")


def _found() -> int | None:
    """``loop_address()`` if it reproduces ``np.exp``, else None (with a warning)."""
    try:
        loop = loop_address()
        _check(loop)
    except ImportError as error:
        logging.getLogger(__name__).warning(
            "numpy's exp loop cannot be called from compiled code (%s): slower path", error
        )
        return None
    return loop


LOOP: int | None = _found()
