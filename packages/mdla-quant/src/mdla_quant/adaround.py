"""AdaRound (Nagel et al. 2020, "Up or Down? Adaptive Rounding for Post-Training Quantization"):
learn, per weight, whether its int8 value rounds up or down, so that the layer's output on
calibration data is reconstructed best, instead of rounding each weight to nearest on its own.

Per weighted op (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED), in graph order, with the weight
scales s the quantizer already chose (unchanged: only the integers move):

    w~(V)   = s * clip(floor(w / s) + h(V), -127, 127)
    h(V)    = clip(sigmoid(V) * (zeta - gamma) + gamma, 0, 1)        zeta = 1.1, gamma = -0.1
    loss(V) = mean |Q(f(X~ w~(V) + b)) - f(X w + b)|^2 / E0  +  lam * mean(1 - |2 h(V) - 1|^beta)

X~ is the op's dequantized int8 input from the int8 network with every earlier layer already
rounded this way (`sequential.lockstep`), X its float input in the float network: the rounding
is fit asymmetrically, to the float network's output from the int8 network's input, so it can
undo part of the error upstream layers left. f is the op's fused activation and Q the output's
own int8 quantization (clip to its range, round to its grid; gradient straight through inside
the range), so the fit sees the error the int8 kernel will actually make (Nagel et al. 2020
sec. 4, "asymmetric reconstruction" with the activation function and its quantization in the
loss) when `quantized_output` is set; by default Q is left out, since on efficientnet_lite0
it measured 0.3 dB worse on the logits (bench/README.md). E0 is the loss of round-to-nearest
(so `lam` does not depend on the layer's units). V starts where h(V) equals the fractional
part of w / s (the soft weight is the float weight); for the first 20 % of the iterations only
the reconstruction term acts, then beta anneals from 20 to 2, pushing every h(V) to 0 or 1.
The result rounds h >= 0.5 up. Adam (lr 1e-2) on mini-batches of `batch` output positions, drawn
from up to `rows` positions per layer.

A layer keeps round-to-nearest when the learned rounding does not reconstruct its output
better on the positions it was fit on, so the per-layer error never gets worse. The weights stay
ordinary symmetric int8 with the same scales: every int8 kernel and the emulator run them as
before, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mdla_ir import Graph, Op, OpKind, Tensor
from mdla_ir.attrs import ConvAttrs
from mdla_quant.blas import one_blas_thread
from mdla_quant.block_reconstruction import (
    Block,
    BlockPatches,
    find_blocks,
    fit_block,
    grids_of,
    replace_weights,
)
from mdla_quant.native import library
from mdla_quant.patch_rows import TapMap, maps_are_smaller, patches, reals
from mdla_quant.reference import graph_accumulator, graph_numerics, run_op
from mdla_quant.sequential import WEIGHTED_KINDS, Env, calibration_batch, dequantize, lockstep
from mdla_quant.soft_rounding import SoftRounding, by_columns, by_rows, matmul

Array = np.ndarray[Any, Any]
ZETA, GAMMA = 1.1, -0.1
CHUNK = 256  # rows per gather of a depthwise layer's forward on every row
LayerProgress = Callable[[int, int, str], None]  # (layer index, layer count, op name)


@dataclass
class AdaRoundReport:
    layers: list[tuple[str, float, float, bool]] = field(default_factory=list)
    # (op, nearest error, learned error, learned kept), errors relative to the output's energy

    def summary(self) -> str:
        kept = [r for r in self.layers if r[3]]
        if not self.layers:
            return "adaround: no weighted layers"
        gain = [10 * np.log10(r[1] / r[2]) for r in kept if r[2] > 0 and r[1] > 0]
        return (
            f"adaround: {len(kept)}/{len(self.layers)} layers improved, reconstruction error "
            f"{np.mean(gain) if gain else 0.0:.1f} dB lower on average"
        )


class _Layer:
    """One weighted op as rows of patches: y[m, o] = sum_k cols[m, k(, o)] * w[k, o]."""

    def __init__(
        self,
        op: Op,
        w: Array,
        rows: Array,
        xs: list[Array],
        value: Callable[[Array], Array] = lambda x: x,
    ) -> None:
        """`xs` the op's input per sample, whose gathered taps `value` maps to real values."""
        self.kind = op.kind
        self._taken: list[Array] = []
        self.taps: TapMap | None = None
        self.fuse = op.fuse
        if op.kind is OpKind.FULLY_CONNECTED:
            self.cols = [patches(rows, xs, None, value)]
            self.w = w.T  # (K, O)
            self.groups = 1
            return
        kh, kw = w.shape[1:3]
        a = ConvAttrs.of(op)
        if op.kind is OpKind.DEPTHWISE_CONV_2D:
            self.w, self.groups, mult = w.reshape(kh * kw, -1), 0, w.shape[3] // xs[0].shape[3]
            if maps_are_smaller(rows, xs, (a, kh, kw)):  # gathered per step from the maps
                self.taps, self.cols = TapMap(rows, xs, (a, kh, kw), value, mult), []
                return
            flat = patches(rows, xs, (a, kh, kw), value)  # (M, KH, KW, C)
            flat = np.repeat(flat, mult, axis=3) if mult > 1 else flat
            self.cols = [flat.reshape(len(rows), kh * kw, -1)]
            return
        flat = patches(rows, xs, (a, kh, kw), value)  # (M, KH, KW, C), only the chosen rows
        self.groups = a.groups
        cg = w.shape[3]
        self.cols = [
            flat[..., g * cg : (g + 1) * cg].reshape(len(rows), -1) for g in range(self.groups)
        ]  # each (M, KH*KW*Cg), ordered as w (O, KH, KW, Cg)
        self.w = w.reshape(w.shape[0], -1).T  # (K, O)

    def take(self, idx: Array) -> list[Array]:
        """The patch rows `idx`, gathered once for a step's forward and its gradient, into
        arrays reused from step to step (a fresh one of tens of MB each step costs more in
        page faults than the copy)."""
        if self.taps is not None:
            if self.taps.direct(self.w):  # forward and grad read the maps: the rows alone
                return [idx]
            self._taken = [self.taps.take(idx, self._taken[0] if self._taken else None)]
            return self._taken
        shapes = [(len(idx), *c.shape[1:]) for c in self.cols]
        if [t.shape for t in self._taken] != shapes:
            self._taken = [np.empty(s, c.dtype) for s, c in zip(shapes, self.cols, strict=True)]
        return [
            np.take(c, idx, axis=0, out=t, mode="clip")
            for c, t in zip(self.cols, self._taken, strict=True)
        ]

    def output(self, w: Array) -> Array:
        """The forward on every row (a depthwise layer's gathered in chunks of CHUNK rows:
        each output element is the same sum over its taps, whichever chunk holds it)."""
        if self.taps is None:
            return self.forward(w, self.cols)
        every = np.arange(self.taps.rows)
        return np.concatenate(
            [self.forward(w, self.take(every[i : i + CHUNK])) for i in range(0, len(every), CHUNK)]
        )

    def forward(self, w: Array, cols: list[Array]) -> Array:
        # two operands and a batch axis (o): no BLAS path, so `optimize` would only spend a
        # path search per call on the same c_einsum
        if self.taps is not None and cols[0].ndim == 1:  # the rows of `take`: from the maps
            if self.taps.direct(w):
                return self.taps.forward(w, cols[0])
            return by_columns("mko,ko->mo", self.taps.take(cols[0]), w)
        if self.groups == 0:
            return by_columns("mko,ko->mo", cols[0], w)
        if self.groups == 1:
            return matmul(cols[0], w)
        og = w.shape[1] // self.groups
        return np.concatenate([c @ w[:, g * og : (g + 1) * og] for g, c in enumerate(cols)], axis=1)

    def grad(self, dy: Array, cols: list[Array]) -> Array:
        if self.taps is not None and cols[0].ndim == 1:
            if self.taps.direct(dy):
                return self.taps.grad(dy, cols[0])
            return by_columns("mko,mo->ko", self.taps.take(cols[0]), dy)
        if self.groups == 0:
            return by_columns("mko,mo->ko", cols[0], dy)
        if self.groups == 1:
            return matmul(cols[0].T, dy)
        og = dy.shape[1] // self.groups
        return np.concatenate(
            [c.T @ dy[:, g * og : (g + 1) * og] for g, c in enumerate(cols)], axis=1
        )

    out_scale: float = 0.0  # the output's int8 grid when Q is in the loss (0: no Q)
    out_zero = 0

    def _range(self) -> tuple[float, float]:
        """The range f (and Q, when in the loss) clip to."""
        lo, hi = {"RELU": (0.0, np.inf), "RELU6": (0.0, 6.0), "RELU1": (-1.0, 1.0)}.get(
            self.fuse, (-np.inf, np.inf)
        )
        if self.out_scale > 0:
            s, z = self.out_scale, self.out_zero
            lo, hi = max(lo, s * (-128 - z)), min(hi, s * (127 - z))
        return lo, hi

    def act(self, y: Array) -> tuple[Array, Array]:
        """Q(f(y)) and its straight-through derivative (f'(y) inside Q's range)."""
        lo, hi = self._range()
        pass_through = ((y > lo) & (y < hi)).astype(y.dtype)
        y = np.clip(y, lo, hi)
        if self.out_scale > 0:
            y = (np.round(y / self.out_scale + self.out_zero) - self.out_zero) * self.out_scale
        return y, pass_through

    def loss_grad(self, a: Array, bias: Array, target: Array, idx: Array, e0: float) -> Array:
        """The step's d loss / d (layer output), 2 (Q(f(a + bias)) - target[idx]) f'(a + bias)
        / (a.size * e0), from `a` the GEMM's rows `idx` (before the bias). Without Q in the
        loss and on float32, one pass of C (`csrc/fit_grad.c`: numpy's operations in its
        order, so the same bits) writes it over `a`, the rows cut over the threads; numpy's
        passes otherwise (a dozen, each into a new array)."""
        operands = (a, bias, target)
        lib = library() if self.out_scale == 0 else None
        shapes = a.ndim == 2 and bias.shape == (a.shape[1],) and target.shape[1:] == bias.shape
        f32 = all(x.dtype == np.float32 and x.flags.c_contiguous for x in operands)
        if lib is None or not (shapes and f32):
            y, dact = self.act(a + bias)
            out: Array = 2.0 * (y - target[idx]) * dact / (y.size * e0)
            return out
        lo, hi = self._range()
        rows, c = np.ascontiguousarray(idx, np.int64), float(np.float32(a.size * e0))
        at = (a.ctypes.data, bias.ctypes.data, target.ctypes.data, rows.ctypes.data)

        def part(r: slice) -> None:
            lib.mdla_fit_dy_f32(*at, a.shape[1], lo, hi, c, r.start, r.stop, a.ctypes.data)

        by_rows(part, a.shape[0], a.size)
        return a


def _h(v: Array) -> Array:
    return np.clip(1.0 / (1.0 + np.exp(-v)) * (ZETA - GAMMA) + GAMMA, 0.0, 1.0)


def _fit(
    layer: _Layer,
    target: Array,
    bias: Array,
    w: Array,
    nearest: Array,
    scale: Array,
    iters: int,
    batch: int,
    lam: float,
    rng: np.random.Generator,
) -> tuple[Array, float, float]:
    """The learned int8 weights (K, O) and the relative errors of nearest and learned rounding."""
    base = np.floor(w / scale)
    rest = w / scale - base

    def error(q: Array) -> float:
        y, _ = layer.act(layer.output(q * scale) + bias)
        return float(np.mean((y - target) ** 2))

    energy = float(np.mean(target**2)) or 1.0
    e_nearest = error(nearest)
    if e_nearest == 0.0 or iters <= 0:
        return nearest, e_nearest / energy, e_nearest / energy
    p = np.clip((rest - GAMMA) / (ZETA - GAMMA), 1e-4, 1 - 1e-4)
    soft = SoftRounding(base, np.log(p / (1 - p)), scale, lam)
    warm = iters // 5
    for t in range(1, iters + 1):
        idx = rng.integers(0, target.shape[0], min(batch, target.shape[0]))
        cols = layer.take(idx)
        dy = layer.loss_grad(layer.forward(soft.soft(), cols), bias, target, idx, e_nearest)
        beta = 20.0 + (2.0 - 20.0) * (t - warm) / max(iters - warm, 1) if t > warm else None
        soft.step(layer.grad(dy, cols), t, beta)
    v = soft.v
    learned = np.clip(base + (_h(v) >= 0.5), -127, 127)
    e_learned = error(learned)
    if e_learned >= e_nearest:
        return nearest, e_nearest / energy, e_nearest / energy
    return learned, e_nearest / energy, e_learned / energy


def _weight_layout(op: Op, w: Array) -> tuple[Array, Callable[[Array], Array]]:
    """w as (K, O) and the map from (K, O) back to the op's weight layout."""
    if op.kind is OpKind.FULLY_CONNECTED:
        return w.T, lambda k_o: k_o.T
    if op.kind is OpKind.DEPTHWISE_CONV_2D:
        return w.reshape(-1, w.shape[3]), lambda k_o: k_o.reshape(w.shape)
    o = w.shape[0]
    return w.reshape(o, -1).T, lambda k_o: k_o.T.reshape(w.shape)


def adaround(
    graph: Graph,
    qgraph: Graph,
    calibration: Iterable[Any],
    iters: int = 1000,
    samples: int = 16,
    rows: int = 4096,
    batch: int = 256,
    lam: float = 0.01,
    progress: LayerProgress | None = None,
    seed: int = 0,
    quantized_output: bool = False,
    blocks: bool = False,
) -> tuple[Graph, AdaRoundReport]:
    """`qgraph` with every weighted op's int8 weights rounded adaptively (module docstring).

    `blocks`: after its last layer's fit, each inverted-residual block's roundings are refined
    together, to the block's output, and kept when that output is reconstructed better than
    the per-layer roundings leave it (`block_reconstruction.py`)."""
    data = calibration_batch(calibration, samples, "adaround")
    weighted = [op.name for op in graph.ops if op.kind.name in WEIGHTED_KINDS]
    report = AdaRoundReport()
    rng = np.random.default_rng(seed)
    found = find_blocks(graph) if blocks else []
    starts = {b.ops[0].name: b for b in found}
    ends = {b.ops[-1].name: b for b in found}
    stash: dict[str, tuple[list[Array], list[Array]]] = {}

    def visit(i: int, op: Op, floats: list[Env], ints: list[Env], q: Graph) -> Graph:
        if op.name in starts:  # the block's input, int8 and float, for its refinement
            x = starts[op.name].input
            stash[starts[op.name].name] = ([e[x] for e in ints], [e[x] for e in floats])
        q = layer(op, floats, ints, q)
        if op.name in ends:
            block = ends[op.name]
            if progress is not None:
                progress(weighted.index(op.name), len(weighted), block.name)
            q, row = _refine(block, graph, q, stash.pop(block.name), ints, budget, rng)
            report.layers.append(row)
        return q

    budget = (iters, rows, batch, lam)

    def layer(op: Op, floats: list[Env], ints: list[Env], q: Graph) -> Graph:
        if op.name not in weighted:
            return q
        x, w_name, b_name = op.inputs[:3]
        wt = q.tensors[w_name]
        if wt.quant is None or wt.data is None:
            return q
        if progress is not None:
            progress(weighted.index(op.name), len(weighted), op.name)
        w = graph.const(w_name).astype(np.float32)
        bias = graph.const(b_name).astype(np.float32)
        x_q, real = reals(q.tensors[x], [e[x] for e in ints])
        x_f = [e[x] for e in floats]
        total = len(data) * int(np.prod(graph.tensors[op.outputs[0]].shape[:-1]))
        pick = np.sort(rng.choice(total, min(rows, total), replace=False))
        layer_q = _Layer(op, w, pick, x_q, real)
        layer_f = _Layer(op, w, pick, x_f)
        w_ko, back = _weight_layout(op, w)
        out = q.tensors[op.outputs[0]].quant
        if quantized_output and out is not None and len(out.scale) == 1:
            layer_q.out_scale, layer_q.out_zero = float(out.scale[0]), int(out.zero_point[0])
        target, _ = layer_f.act(layer_f.output(w_ko) + bias)
        scale = np.asarray(wt.quant.scale, np.float32)
        scale_ko = scale[None, :] if scale.size > 1 else scale
        nearest, _ = _weight_layout(op, np.asarray(wt.data, np.float32))
        learned, e0, e1 = _fit(
            layer_q, target, bias, w_ko, nearest, scale_ko, iters, batch, lam, rng
        )
        report.layers.append((op.name, e0, e1, e1 < e0))
        q_new = back(learned).astype(np.int8)
        new = Tensor(w_name, wt.shape, "int8", data=q_new, quant=wt.quant)
        return q.with_(tensors={**q.tensors, w_name: new})

    with one_blas_thread():  # the second core goes to soft_rounding's pool, which sleeps idle
        out = lockstep(graph, qgraph, data, visit)
    if progress is not None:
        progress(len(weighted), len(weighted), "done")
    return out, report


def _refine(
    block: Block,
    graph: Graph,
    q: Graph,
    inputs: tuple[list[Array], list[Array]],
    ints: list[Env],
    budget: tuple[int, int, int, float],
    rng: np.random.Generator,
) -> tuple[Graph, tuple[str, float, float, bool]]:
    """`q` with `block`'s per-layer roundings refined on the block's output (when better), the
    int8 envs' values inside the block recomputed with them, and the report row."""
    iters, rows, batch, lam = budget
    (x_raw, x_f), x, dw = inputs, block.input, block.ops[-2]
    total = len(x_f) * int(np.prod(graph.tensors[dw.outputs[0]].shape[:-1]))
    pick = np.sort(rng.choice(total, min(rows, total), replace=False))
    patches_q = BlockPatches(block, graph, [dequantize(q.tensors[x], r) for r in x_raw], pick)
    patches_f = BlockPatches(block, graph, x_f, pick)
    floats_ko, layouts, start, scales, bs = [], [], [], [], []
    for op in block.ops:
        t = q.tensors[op.inputs[1]]
        w_ko, back = _weight_layout(op, graph.const(op.inputs[1]).astype(np.float32))
        floats_ko.append(w_ko)
        layouts.append(back)
        start.append(_weight_layout(op, np.asarray(t.data, np.float32))[0])
        scale = np.asarray(t.quant.scale, np.float32)  # type: ignore[union-attr]
        scales.append(scale[None, :] if scale.size > 1 else scale)
        bs.append(graph.const(op.inputs[2]).astype(np.float32))
    target = patches_f.output(floats_ko, bs, [None] * len(block.ops))
    grids = grids_of(block, q)
    learned, e0, e1 = fit_block(
        patches_q, target, floats_ko, start, scales, bs, grids, iters, batch, lam, rng
    )
    if e1 < e0:
        q = replace_weights(q, block, learned, layouts)
        index = {op.name: i for i, op in enumerate(graph.ops)}
        mode, acc = graph_numerics(q).rounding, graph_accumulator(q)
        for env, raw in zip(ints, x_raw, strict=True):
            inner = {x: raw}
            for op in block.ops[:-1]:
                inner[op.outputs[0]] = run_op(q, index[op.name], inner, mode, acc)
            env[dw.outputs[0]] = inner[dw.outputs[0]]
    return q, (block.name, e0, e1, e1 < e0)
