"""The thread count of the OpenBLAS numpy runs its matmuls on, set from inside the process.

AdaRound's GEMMs are small (a few hundred rows a step) and alternate with per-weight
element-wise work: OpenBLAS's own threads, idle between two GEMMs, spin on a core while
the element-wise work waits for it, so two BLAS threads cost about three times one's CPU and
gain no wall time. `one_blas_thread()` runs a block of code on one BLAS thread; the second core
is then given work by `soft_rounding`'s own pool (columns of a GEMM, blocks of the element-wise
step), whose idle threads sleep. OpenBLAS's threads split a GEMM's output, never a sum: on
its AVX-512 kernels the results are bit for bit those of its default thread count; its AVX2
kernels sum a row by its position within a 12-row tile, so there they can move in the last
float32 bits with the split.

The library is found among the process's mapped shared objects (numpy's wheels bundle it as
`libscipy_openblas64_*.so`, a system numpy links `libopenblas*.so`); with another BLAS, or off
Linux, nothing is changed.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# (get, set) symbol pairs: numpy's bundled scipy-openblas (64-bit ints, then 32), plain OpenBLAS
_SYMBOLS = (
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
)


def _mapped_openblas() -> list[str]:
    """The paths of the OpenBLAS libraries mapped into this process (numpy's first)."""
    import numpy  # noqa: F401  (maps numpy's BLAS before the lookup)

    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            lines = maps.read().splitlines()
    except OSError:  # pragma: no cover - not on Linux
        return []
    paths = {line.split(maxsplit=5)[-1] for line in lines if line.count(" ") >= 5}
    return sorted(p for p in paths if "openblas" in p.rsplit("/", 1)[-1].lower() and ".so" in p)


@functools.cache
def openblas() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """OpenBLAS's (get_num_threads, set_num_threads), None when numpy's BLAS is not found."""
    for path in _mapped_openblas():
        lib = ctypes.CDLL(path)
        for get_name, set_name in _SYMBOLS:
            get, put = getattr(lib, get_name, None), getattr(lib, set_name, None)
            if get is not None and put is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                put.restype, put.argtypes = None, [ctypes.c_int]
                return get, put
    return None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with OpenBLAS on one thread, then restore its thread count."""
    api = openblas()
    if api is None:  # pragma: no cover - another BLAS: left as it is
        yield
        return
    get, put = api
    before = get()
    put(1)
    try:
        yield
    finally:
        put(before)
