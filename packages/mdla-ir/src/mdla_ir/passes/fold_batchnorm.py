"""Fold BATCH_NORM into the convolution (transposed, or 3-D: BatchNorm3d) that feeds it.

conv(x; w, b) -> BN(mean, var, gamma, beta, eps)  ==  conv(x; w * s, (b - mean) * s + beta)
with s = gamma / sqrt(var + eps) per output channel. Only when the conv output feeds nothing
but the BN (otherwise the un-normalized value is still needed).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from mdla_ir.attrs import ConvAttrs, NormAttrs
from mdla_ir.graph import Graph, Op
from mdla_ir.ops import CONVS, OpKind
from mdla_ir.passes.rewrite import PassResult, Rewriter


def _out_channel_axis(kind: OpKind, layout: str) -> int:
    if layout == "NHWC" and kind is OpKind.DEPTHWISE_CONV_2D:
        return 3  # Neuron depthwise filter (1, KH, KW, O)
    if layout == "NCHW" and kind is OpKind.TRANSPOSE_CONV_2D:
        return 1  # torch ConvTranspose2d filter (I, O, KH, KW)
    return 0  # torch (O, I, KH, KW), (O, I, KT, KH, KW) and Neuron CONV_2D (O, KH, KW, I)


def fold_batchnorm(graph: Graph) -> PassResult:
    rw = Rewriter(graph)
    for op in rw:
        conv = rw.producer(op.inputs[0]) if op.kind is OpKind.BATCH_NORM else None
        if (
            conv is None
            or conv.kind not in CONVS | {OpKind.TRANSPOSE_CONV_2D, OpKind.CONV_3D}
            or conv.fuse != "NONE"
            or not rw.sole_use(op.inputs[0])
        ):
            rw.emit(op)
            continue
        rw.replace_producer(op.inputs[0], _folded(rw, conv, op, graph))
    return rw.finish()


def _folded(rw: Rewriter, conv: Op, bn: Op, graph: Graph) -> Op:
    mean, var, gamma, beta = (graph.const(n).astype(np.float64) for n in bn.inputs[1:5])
    scale = gamma / np.sqrt(var + NormAttrs.of(bn).eps)
    w_new = _scaled(graph.const(conv.inputs[1]), scale, _out_channel_axis(conv.kind, graph.layout))
    b = graph.const(conv.inputs[2]).astype(np.float64) if len(conv.inputs) > 2 else 0.0
    b_new: np.ndarray[Any, Any] = ((b - mean) * scale + beta).astype(np.float32)
    w_name = rw.add_const(f"{conv.name}.weight_bn", w_new)
    b_name = rw.add_const(f"{conv.name}.bias_bn", b_new)
    return conv.with_(
        inputs=(conv.inputs[0], w_name, b_name),
        outputs=bn.outputs,
        attrs=dataclasses.replace(ConvAttrs.of(conv), folded_bn=bn.name),
    )


CHUNK = 1 << 16  # filter values widened to float64 at a time


def _scaled(
    w: np.ndarray[Any, Any], scale: np.ndarray[Any, Any], axis: int
) -> np.ndarray[Any, Any]:
    """float32(float64(w) * scale), `scale` (float64) along w's `axis`, computed on chunks of
    w's leading axis: each value gets the same product and rounding, without the whole
    filter's float64 copies (resnet18's would be 2 x 90 MB, whose page faults cost more than
    the arithmetic)."""
    shape = [1] * w.ndim
    shape[axis] = -1
    s = scale.reshape(shape)
    if w.ndim == 0 or w.size == 0:
        return (w.astype(np.float64) * s).astype(np.float32)  # type: ignore[no-any-return]
    out = np.empty(w.shape, dtype=np.float32)
    rows = max(1, CHUNK // max(1, w[0].size))
    for r0 in range(0, w.shape[0], rows):
        out[r0 : r0 + rows] = w[r0 : r0 + rows].astype(np.float64) * (
            s[r0 : r0 + rows] if axis == 0 else s
        )
    return out
