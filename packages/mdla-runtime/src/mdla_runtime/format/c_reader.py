"""The engine's C manifest reader (`csrc/format`, fuzz-tested against this package's own) on
bytes in memory, through ctypes: the check a compile makes of the file it is about to write.

    check(blob, Budget.UNLIMITED)   # True; or raises the ManifestError the Python reader would;
                                    # False when the library cannot be built (no C compiler)

The two readers make the same checks in the same order (tests/runtime/test_fuzz.py holds their
verdicts equal); the C one takes milliseconds where the pure-Python decoder takes 0.1-0.5 s on
a classifier's header.
"""

from __future__ import annotations

import ctypes
from functools import cache

from mdla_runtime import errors
from mdla_runtime.errors import BuildError, ManifestError
from mdla_runtime.format.budget import Budget

U64 = (1 << 64) - 1
U32 = (1 << 32) - 1


class _Budget(ctypes.Structure):  # csrc/format/manifest.h: mdla_budget
    _fields_ = (
        ("max_tensor_bytes", ctypes.c_uint64),
        ("max_total_bytes", ctypes.c_uint64),
        ("max_header_values", ctypes.c_uint32),
        ("max_op_ops", ctypes.c_uint64),
        ("max_total_ops", ctypes.c_uint64),
    )


class _Error(ctypes.Structure):  # csrc/format/mdla_msgpack.h: mdla_error
    _fields_ = (
        ("kind", ctypes.c_char_p),
        ("field", ctypes.c_char * 256),
        ("offset", ctypes.c_uint64),
        ("why", ctypes.c_char * 256),
    )


@cache
def library() -> ctypes.CDLL | None:
    """The reader as a shared library (built once, cached by content), or None without a C
    compiler."""
    from mdla_runtime.build import READER_SOURCES, compile_c

    try:
        path = compile_c(READER_SOURCES, "libmdla_reader.so", shared=True, flags=("-O2",))
    except BuildError:
        return None
    lib = ctypes.CDLL(str(path))
    lib.mdla_manifest_verdict.argtypes = (
        ctypes.c_char_p,
        ctypes.c_size_t,
        ctypes.POINTER(_Budget),
        ctypes.POINTER(_Error),
    )
    lib.mdla_manifest_verdict.restype = ctypes.c_bool
    return lib


def check(blob: bytes, budget: Budget) -> bool:
    """True when the C reader accepts `blob` within `budget`; its error as the `ManifestError`
    subclass of its kind when it refuses; False when there is no C library to ask."""
    lib = library()
    if lib is None:
        return False
    limits = _Budget(
        min(budget.max_tensor_bytes, U64),
        min(budget.max_total_bytes, U64),
        min(budget.max_header_values, U32),
        min(budget.max_op_ops, U64),
        min(budget.max_total_ops, U64),
    )
    err = _Error()
    if lib.mdla_manifest_verdict(blob, len(blob), ctypes.byref(limits), ctypes.byref(err)):
        return True
    kind = (err.kind or b"BadHeader").decode()
    cls = getattr(errors, f"{kind}Error", ManifestError)
    raise cls(err.field.decode(errors="replace"), err.offset, err.why.decode(errors="replace"))
