"""The per-weight, element-wise half of an AdaRound step (`adaround._fit`, and each layer of
`block_reconstruction.fit_block`): the soft weight from V, and V's update from the loss
gradient, in preallocated buffers, one cache-sized block of rows of the (K, O) weights at a
time, the blocks shared out over threads.

    sig = sigmoid(V)   h = clip(sig * (zeta - gamma) + gamma, 0, 1)   w~ = s * clip(b + h, +-127)
    dh  = dL/dw~ * s * [-127 < b + h < 127]
          (- lam * beta * |2h - 1|^(beta - 1) * sign(2h - 1) * 2 / |h|, once beta acts)
    g   = dh * (zeta - gamma) * sig * (1 - sig) * [0 < h < 1]
    Adam: m = 0.9 m + 0.1 g,  s2 = 0.999 s2 + 0.001 g g,  V -= 1e-2 m^ / (sqrt(s2^) + 1e-8)

Exactness: every line is the float32 operation the allocating form computed, with the same
operands in the same order (a commuted product or sum is the same IEEE result), written into a
buffer instead of a new array; every operation is per element, so how the rows are cut into
blocks and threads does not change a bit (`tests/quant/test_block_reconstruction.py` pins the chosen
roundings). The fast paths `x ** e` takes for e in {-1, 0, 0.5, 1, 2} are kept as they were.

C: with the library built (`native.library()`) and float32 operands, a block's soft weight is
np.exp between np.negative and one C pass, and its step one C pass, numpy's power of |2h - 1|
(once beta acts), then a second C pass (`csrc/soft_rounding.c`), instead of some 30 numpy
passes: the same float32 operations in the same order (that file says how numpy's clip, sign
and masks are kept), so the same bits; without the library, numpy as above.

Threads: numpy's element-wise loops release the GIL, so the blocks of a large layer run in
parallel (as do a depthwise layer's einsums cut by channels, `by_columns`, and the GEMMs cut
by columns, `matmul`, each on one BLAS thread: `blas.one_blas_thread`); the thread count is
the process's budget (`threads()`), never more than its cores. The calling thread takes the
first share of every cut itself and the pool the others (`spread`).
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from mdla_quant.native import library

Array = np.ndarray[Any, Any]
ZETA, GAMMA = 1.1, -0.1
# Adam's moments' decays (each with its complement written as the literal numpy rounded before),
# learning rate and epsilon: the numpy step and the C step's constants read these
B1, B1C, B2, B2C, LR, EPS = 0.9, 0.1, 0.999, 0.001, 1e-2, 1e-8
MIN_CHUNK = 1 << 16  # elements per thread below which one thread does the whole array
CHUNK = 1 << 15  # elements per block, its buffers in the core's L2 (best of 2^13..2^18 measured)
MIN_MACS = 1 << 21  # multiply-adds per thread below which one thread does the whole GEMM
COLUMNS = 16  # a GEMM's column cuts fall on multiples of this (whole register tiles)
PARTS = 4  # a large GEMM's column parts, whatever the thread count (`matmul` says why)
_FAST_POWERS = (-1.0, 0.0, 0.5, 1.0, 2.0)  # exponents ndarray.__pow__ computes without pow()
_POOLS: dict[int, ThreadPoolExecutor] = {}
POOL_NAME = "soft-rounding"  # the pool threads' name prefix
_ZG, _G = np.float32(ZETA - GAMMA), np.float32(GAMMA)  # as numpy rounds them against float32


def threads() -> int:
    """The threads this process may use: OMP_NUM_THREADS (or OPENBLAS_NUM_THREADS) when set,
    as a sweep's pool worker sets them to its share of the cores, else every core it may run
    on; never more than those cores."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        text = os.environ.get(var, "").strip()
        if text.isdigit() and int(text) > 0:
            return min(int(text), cores)
    return cores


def _pool(n: int) -> ThreadPoolExecutor:
    if n not in _POOLS:
        _POOLS[n] = ThreadPoolExecutor(n, thread_name_prefix=POOL_NAME)
    return _POOLS[n]


def spread(jobs: Sequence[Callable[[], Any]], n: int) -> list[Any]:
    """[job() for job in jobs], the jobs dealt out in turn to `n` lanes: the first lane runs on
    the calling thread, each other one as one task of the pool (n - 1 threads). So a cut into
    n parts costs n - 1 hand-offs, not n plus the caller's wake-up, and the caller works
    instead of waiting. Which thread runs a job cannot change what it computes. From a pool
    thread everything runs inline: a pool never waits for itself."""
    n = min(n, len(jobs))
    if n <= 1 or threading.current_thread().name.startswith(POOL_NAME):
        return [job() for job in jobs]
    lanes = [range(len(jobs))[i::n] for i in range(n)]

    def run(lane: range) -> list[Any]:
        return [jobs[k]() for k in lane]

    futures = [_pool(n - 1).submit(run, lane) for lane in lanes[1:]]
    try:
        mine = run(lanes[0])
    finally:  # the other lanes write into the caller's arrays: never leave them running
        wait(futures)
    out: list[Any] = [None] * len(jobs)
    for lane, done in zip(lanes, [mine, *(f.result() for f in futures)], strict=True):
        for k, value in zip(lane, done, strict=True):
            out[k] = value
    return out


def by_columns(spec: str, a: Array, b: Array) -> Array:
    """np.einsum(spec, a, b) for a spec whose operands and result all end in the same free
    axis (a depthwise layer's channels), cut along that axis over the threads: each output
    element is the same sum over the same terms in the same order however the axis is cut."""
    n = max(1, min(threads(), a.size // MIN_CHUNK, a.shape[-1]))
    if n == 1:
        out: Array = np.einsum(spec, a, b)
        return out
    cuts = [a.shape[-1] * i // n for i in range(n + 1)]
    jobs = [
        functools.partial(np.einsum, spec, a[..., i:j], b[..., i:j])
        for i, j in itertools.pairwise(cuts)
    ]
    return np.concatenate(spread(jobs, n), axis=-1)


def by_rows(work: Callable[[slice], None], rows: int, size: int) -> None:
    """`work(r)` for slices `r` that cut range(rows), over the threads when the `size`
    elements it touches are many: for per-element work whose parts write disjoint rows."""
    n = max(1, min(threads(), size // MIN_CHUNK, rows))
    if n == 1:
        work(slice(0, rows))
        return
    cuts = [rows * i // n for i in range(n + 1)]
    spread([functools.partial(work, slice(i, j)) for i, j in itertools.pairwise(cuts)], n)


def matmul(a: Array, b: Array) -> Array:
    """a @ b (both 2-D), b's columns cut into parts when the product is large enough, the
    parts run over the threads (each on one BLAS thread: `blas.one_blas_thread`), each
    writing its columns of the result in place.

    The cut depends on the shapes alone, never on the thread count: OpenBLAS's AVX-512
    kernels give every output column the same sum however the columns are cut, but its AVX2
    kernels sum a column by where it sits in the part, so a cut that followed the threads
    would make the chosen roundings depend on the machine's cores."""
    n = max(1, min(PARTS, a.shape[0] * b.size // MIN_MACS, b.shape[1] // COLUMNS))
    if n == 1:
        out: Array = a @ b
        return out
    cuts = [b.shape[1] * i // n // COLUMNS * COLUMNS for i in range(n)] + [b.shape[1]]
    out = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
    jobs = [  # each part's GEMM writes its columns of `out` in place (BLAS's ldc)
        functools.partial(np.matmul, a, b[:, i:j], out=out[:, i:j])
        for i, j in itertools.pairwise(cuts)
    ]
    spread(jobs, min(threads(), n))
    return out


def each_tensor(softs: list[SoftRounding], work: Callable[[int, SoftRounding], Any]) -> list[Any]:
    """[work(i, soft) for each soft], the tensors that run on one lane (too small to cut)
    side by side over the threads, the others one after the other on all of them: a block's
    three tensors are independent, so the order cannot change a bit, and on a 14x14 block
    each is one lane (75 K, 17 K, 75 K weights) that would leave the second core idle."""
    out: list[Any] = [None] * len(softs)
    small = [i for i, soft in enumerate(softs) if len(soft.lanes) == 1]
    n = min(threads(), len(small))
    for i, soft in enumerate(softs):
        if n < 2 or i not in small:
            out[i] = work(i, soft)
    if n >= 2:  # one-lane tensors submit nothing to the pool themselves: no nesting
        done = spread([functools.partial(work, i, softs[i]) for i in small], n)
        for i, value in zip(small, done, strict=True):
            out[i] = value
    return out


class _Consts(ctypes.Structure):
    """csrc/soft_rounding.c's mdla_sr_consts: a step's constants, each rounded to float32."""

    _fields_ = [
        *((name, ctypes.c_float) for name in ("lb", "n", "zg", "b1", "c1", "b2", "c2")),
        *((name, ctypes.c_float) for name in ("bc1", "bc2", "lr", "eps")),
        ("reg", ctypes.c_int),
        ("late_lr", ctypes.c_int),
    ]


def _power(u: Array, beta: float) -> None:
    """u **= beta - 1 in place, as numpy computes it (its fast paths for the exponents it has)."""
    if beta - 1.0 in _FAST_POWERS:
        np.copyto(u, u ** (beta - 1.0))
    else:
        np.power(u, beta - 1.0, out=u)


def _elements(a: Array) -> tuple[int, int] | None:
    """A float32 2-D array's strides in elements, or None when it is not one."""
    if a.dtype != np.float32 or a.ndim != 2 or any(s % 4 for s in a.strides):
        return None
    return a.strides[0] // 4, a.strides[1] // 4


class SoftRounding:
    """V, Adam's moments and the step's buffers for one weight tensor (K, O).

    `base` floor(w / s), `v` the initial V, `scale` s ((1, O) or a scalar), `lam` the
    regularizer's weight; `late_lr`: the Adam update written lr * (m^ / (sqrt(s2^) + eps))
    (block reconstruction's order) instead of (lr * m^) / (sqrt(s2^) + eps) (per layer)."""

    def __init__(
        self, base: Array, v: Array, scale: Array, lam: float, late_lr: bool = False
    ) -> None:
        # blocks of rows must be contiguous: an F-ordered (K, O) (a conv's w.T) is held as its
        # C-ordered transpose, the same memory, so every array keeps the layout it had
        self.flip = bool(v.flags.f_contiguous and not v.flags.c_contiguous)
        v, base = (v.T, base.T) if self.flip else (v, base)
        self.scale = scale.T if self.flip and np.ndim(scale) == 2 else scale
        self.base, self._v, self.lam, self.late_lr = base, v, lam, late_lr
        self.m, self.s2 = np.zeros_like(v), np.zeros_like(v)
        self.sig, self.h, self.bh, self.w = (np.empty_like(v) for _ in range(4))
        self.g, self.t1, self.t2 = (np.empty_like(v) for _ in range(3))
        self.k1, self.k2 = np.empty(v.shape, bool), np.empty(v.shape, bool)
        rows = v.shape[0]
        n = max(1, min(rows, -(-v.size // CHUNK)))  # blocks of about CHUNK elements
        cuts = [rows * i // n for i in range(n + 1)]
        blocks = [slice(a, b) for a, b in itertools.pairwise(cuts) if b > a]
        lanes = max(1, min(threads(), v.size // MIN_CHUNK, len(blocks)))
        self.lanes = [blocks[i::lanes] for i in range(lanes)]  # each thread's blocks
        self._native()

    def _native(self) -> None:
        """Use the C passes when the library is built and every operand is float32 (V, its
        base and buffers C-ordered), keeping the scale as a broadcast view for its strides."""
        self.lib = library()
        v, base = self._v, self.base
        scale = np.asarray(self.scale)
        ok = v.ndim == 2 and base.shape == v.shape and v.flags.c_contiguous
        ok = ok and base.flags.c_contiguous and v.dtype == base.dtype == scale.dtype == np.float32
        if self.lib is None or not ok or scale.ndim > 2:
            self.lib = None
            return
        try:
            self._sc = np.broadcast_to(scale, v.shape)
        except ValueError:
            self.lib = None
            return
        if self._sc.strides[1] not in (0, 4):  # the C rows take one scale or a contiguous run
            self._sc = np.ascontiguousarray(self._sc)
        self._sc_strides = (self._sc.strides[0] // 4, self._sc.strides[1] // 4)
        names = ("base", "sig", "h", "bh", "w", "g", "t1", "t2", "m", "s2", "_v")
        self._at: dict[str, int] = {name: getattr(self, name).ctypes.data for name in names}
        self._at["sc"] = self._sc.ctypes.data

    def _each(self, work: Callable[[slice], None]) -> None:
        def run(blocks: list[slice]) -> None:
            for r in blocks:
                work(r)

        spread([functools.partial(run, lane) for lane in self.lanes], len(self.lanes))

    def _scale(self, r: slice) -> Array:
        """The scales of the rows `r` (per row when flipped, per column or one otherwise)."""
        per_row = np.ndim(self.scale) == 2 and self.scale.shape[0] > 1
        return self.scale[r] if per_row else self.scale

    @property
    def v(self) -> Array:
        """V (K, O)."""
        return self._v.T if self.flip else self._v

    def soft(self) -> Array:
        """The soft weight w~ (K, O) of the current V (also keeps sigmoid(V), h and b + h)."""
        self._each(self._soft if self.lib is None else self._soft_c)
        return self.w.T if self.flip else self.w

    def _ptr(self, name: str, r: slice) -> int:
        """The address of row r.start of the buffer `name`."""
        return self._at[name] + int(r.start) * int(self._v.shape[1]) * 4

    def _rows(self, r: slice) -> tuple[int, int, int, int]:
        """The scale's address at row r.start and strides, and the block's row count."""
        srs, scs = self._sc_strides
        start, stop = int(r.start), int(r.stop)
        return self._at["sc"] + start * srs * 4, srs, scs, stop - start

    def _soft_c(self, r: slice) -> None:
        t = self.t1[r]
        np.negative(self._v[r], out=t)
        np.exp(t, out=t)
        sc, srs, scs, rows = self._rows(r)
        self.lib.mdla_sr_soft_f32(  # type: ignore[union-attr]
            self._ptr("t1", r), self._ptr("base", r), sc, srs, scs, rows, self._v.shape[1],
            _ZG, _G, *(self._ptr(name, r) for name in ("sig", "h", "bh", "w")),
        )  # fmt: skip

    def _soft(self, r: slice) -> None:
        v, sig, h, bh, w, t = self._v[r], self.sig[r], self.h[r], self.bh[r], self.w[r], self.t1[r]
        np.negative(v, out=t)
        np.exp(t, out=t)
        np.add(t, 1.0, out=t)
        np.divide(1.0, t, out=sig)
        np.multiply(sig, ZETA - GAMMA, out=h)
        np.add(h, GAMMA, out=h)
        np.clip(h, 0.0, 1.0, out=h)
        np.add(self.base[r], h, out=bh)
        np.clip(bh, -127, 127, out=w)
        np.multiply(w, self._scale(r), out=w)

    def step(self, grad: Array, t: int, beta: float | None) -> None:
        """One Adam step of V from d loss / d w~ `grad` (K, O), at step `t` (from 1), with the
        regularizer at `beta` (None: not yet acting)."""
        grad = grad.T if self.flip else grad
        strides = None if self.lib is None or grad.shape != self._v.shape else _elements(grad)
        if strides is None:
            self._each(lambda r: self._step(r, grad, t, beta))
            return
        c = self._consts(t, beta)
        self._each(lambda r: self._step_c(r, grad.ctypes.data, strides, c, beta))

    def _consts(self, t: int, beta: float | None) -> _Consts:
        """The constants of step `t`, each the float32 numpy rounds its Python scalar to."""
        f = np.float32
        lb = f(self.lam * beta) if beta is not None else f(0.0)
        return _Consts(
            lb, f(self.h.size), _ZG, f(B1), f(B1C), f(B2), f(B2C),
            f(1 - B1**t), f(1 - B2**t), f(LR), f(EPS), beta is not None, self.late_lr,
        )  # fmt: skip

    def _step_c(
        self, r: slice, grad: int, strides: tuple[int, int], c: _Consts, beta: float | None
    ) -> None:
        sc, srs, scs, rows = self._rows(r)
        lib, p = self.lib, self._ptr
        assert lib is not None
        lib.mdla_sr_front_f32(
            grad + r.start * strides[0] * 4, *strides, sc, srs, scs, p("bh", r), p("h", r),
            rows, self._v.shape[1], c.reg, p("g", r), p("t1", r), p("t2", r),
        )  # fmt: skip
        if beta is not None:
            _power(self.t1[r], beta)
        lib.mdla_sr_back_f32(
            ctypes.byref(c), p("t1", r), p("t2", r), p("sig", r), p("h", r),
            rows * self._v.shape[1], *(p(name, r) for name in ("g", "m", "s2", "_v")),
        )  # fmt: skip

    def _step(self, r: slice, dh: Array, t: int, beta: float | None) -> None:
        grad, dh, bh, k1, k2, t1 = dh[r], self.g[r], self.bh[r], self.k1[r], self.k2[r], self.t1[r]
        np.multiply(grad, self._scale(r), out=dh)
        np.greater(bh, -127, out=k1)
        np.less(bh, 127, out=k2)
        np.logical_and(k1, k2, out=k1)
        np.multiply(dh, k1, out=dh)
        if beta is not None:
            self._regularize(r, dh, beta)
        sig, h = self.sig[r], self.h[r]
        np.multiply(dh, ZETA - GAMMA, out=dh)
        np.multiply(dh, sig, out=dh)
        np.subtract(1.0, sig, out=t1)
        np.multiply(dh, t1, out=dh)
        np.greater(h, 0.0, out=k1)
        np.less(h, 1.0, out=k2)
        np.logical_and(k1, k2, out=k1)
        np.multiply(dh, k1, out=dh)
        self._adam(r, dh, t)

    def _regularize(self, r: slice, dh: Array, beta: float) -> None:
        """dh -= lam * beta * |u| ** (beta - 1) * sign(u) * 2 / |h|, u = 2h - 1."""
        u, s = self.t1[r], self.t2[r]
        np.multiply(self.h[r], 2.0, out=u)
        np.subtract(u, 1.0, out=u)
        np.sign(u, out=s)
        np.abs(u, out=u)
        _power(u, beta)
        np.multiply(u, self.lam * beta, out=u)
        np.multiply(u, s, out=u)
        np.multiply(u, 2.0, out=u)
        np.divide(u, self.h.size, out=u)
        np.subtract(dh, u, out=dh)

    def _adam(self, r: slice, g: Array, t: int) -> None:
        m, s2, a, b = self.m[r], self.s2[r], self.t1[r], self.t2[r]
        np.multiply(m, B1, out=m)
        np.multiply(g, B1C, out=a)
        np.add(m, a, out=m)
        np.multiply(g, B2C, out=a)
        np.multiply(a, g, out=a)
        np.multiply(s2, B2, out=s2)
        np.add(s2, a, out=s2)
        np.divide(m, 1 - B1**t, out=a)
        if not self.late_lr:
            np.multiply(a, LR, out=a)
        np.divide(s2, 1 - B2**t, out=b)
        np.sqrt(b, out=b)
        np.add(b, EPS, out=b)
        np.divide(a, b, out=a)
        if self.late_lr:
            np.multiply(a, LR, out=a)
        np.subtract(self._v[r], a, out=self._v[r])
