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

Threads: numpy's element-wise loops release the GIL, so the blocks of a large layer run in
parallel (as do a depthwise layer's einsums cut by channels, `by_columns`, and the GEMMs cut
by columns, `matmul`, each on one BLAS thread: `blas.one_blas_thread`); the thread count is
the process's budget (`threads()`), never more than its cores.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]
ZETA, GAMMA = 1.1, -0.1
MIN_CHUNK = 1 << 16  # elements per thread below which one thread does the whole array
CHUNK = 1 << 15  # elements per block, its buffers in the core's L2 (best of 2^13..2^18 measured)
MIN_MACS = 1 << 21  # multiply-adds per thread below which one thread does the whole GEMM
COLUMNS = 16  # a GEMM's column cuts fall on multiples of this (whole register tiles)
_FAST_POWERS = (-1.0, 0.0, 0.5, 1.0, 2.0)  # exponents ndarray.__pow__ computes without pow()
_POOLS: dict[int, ThreadPoolExecutor] = {}


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
        _POOLS[n] = ThreadPoolExecutor(n, thread_name_prefix="soft-rounding")
    return _POOLS[n]


def by_columns(spec: str, a: Array, b: Array) -> Array:
    """np.einsum(spec, a, b) for a spec whose operands and result all end in the same free
    axis (a depthwise layer's channels), cut along that axis over the threads: each output
    element is the same sum over the same terms in the same order however the axis is cut."""
    n = max(1, min(threads(), a.size // MIN_CHUNK, a.shape[-1]))
    if n == 1:
        out: Array = np.einsum(spec, a, b)
        return out
    cuts = [a.shape[-1] * i // n for i in range(n + 1)]
    parts = [
        _pool(n).submit(np.einsum, spec, a[..., i:j], b[..., i:j])
        for i, j in itertools.pairwise(cuts)
    ]
    return np.concatenate([p.result() for p in parts], axis=-1)


def by_rows(work: Callable[[slice], None], rows: int, size: int) -> None:
    """`work(r)` for slices `r` that cut range(rows), over the threads when the `size`
    elements it touches are many: for per-element work whose parts write disjoint rows."""
    n = max(1, min(threads(), size // MIN_CHUNK, rows))
    if n == 1:
        work(slice(0, rows))
        return
    cuts = [rows * i // n for i in range(n + 1)]
    for done in [_pool(n).submit(work, slice(i, j)) for i, j in itertools.pairwise(cuts)]:
        done.result()


def matmul(a: Array, b: Array) -> Array:
    """a @ b (both 2-D), b's columns cut over the threads when the product is large enough
    (each on one BLAS thread: `blas.one_blas_thread`): every output column is the same sum of
    the same products, whichever part holds it, as when OpenBLAS's own threads split it."""
    n = max(1, min(threads(), a.shape[0] * b.size // MIN_MACS, b.shape[1] // COLUMNS))
    if n == 1:
        out: Array = a @ b
        return out
    cuts = [b.shape[1] * i // n // COLUMNS * COLUMNS for i in range(n)] + [b.shape[1]]
    parts = [_pool(n).submit(np.matmul, a, b[:, i:j]) for i, j in itertools.pairwise(cuts)]
    return np.concatenate([p.result() for p in parts], axis=1)


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

    def _each(self, work: Callable[[slice], None]) -> None:
        def run(blocks: list[slice]) -> None:
            for r in blocks:
                work(r)

        if len(self.lanes) == 1:
            run(self.lanes[0])
            return
        for done in [_pool(len(self.lanes)).submit(run, lane) for lane in self.lanes]:
            done.result()

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
        self._each(self._soft)
        return self.w.T if self.flip else self.w

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
        self._each(lambda r: self._step(r, grad, t, beta))

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
        if beta - 1.0 in _FAST_POWERS:
            np.copyto(u, u ** (beta - 1.0))
        else:
            np.power(u, beta - 1.0, out=u)
        np.multiply(u, self.lam * beta, out=u)
        np.multiply(u, s, out=u)
        np.multiply(u, 2.0, out=u)
        np.divide(u, self.h.size, out=u)
        np.subtract(dh, u, out=dh)

    def _adam(self, r: slice, g: Array, t: int) -> None:
        m, s2, a, b = self.m[r], self.s2[r], self.t1[r], self.t2[r]
        np.multiply(m, 0.9, out=m)
        np.multiply(g, 0.1, out=a)
        np.add(m, a, out=m)
        np.multiply(g, 0.001, out=a)
        np.multiply(a, g, out=a)
        np.multiply(s2, 0.999, out=s2)
        np.add(s2, a, out=s2)
        np.divide(m, 1 - 0.9**t, out=a)
        if not self.late_lr:
            np.multiply(a, 1e-2, out=a)
        np.divide(s2, 1 - 0.999**t, out=b)
        np.sqrt(b, out=b)
        np.add(b, 1e-8, out=b)
        np.divide(a, b, out=a)
        if self.late_lr:
            np.multiply(a, 1e-2, out=a)
        np.subtract(self._v[r], a, out=self._v[r])
