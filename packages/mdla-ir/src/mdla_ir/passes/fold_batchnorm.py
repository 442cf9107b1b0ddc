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
    w = graph.const(conv.inputs[1]).astype(np.float64)
    shape = [1] * w.ndim
    shape[_out_channel_axis(conv.kind, graph.layout)] = -1
    w_new: np.ndarray[Any, Any] = (w * scale.reshape(shape)).astype(np.float32)
    b = graph.const(conv.inputs[2]).astype(np.float64) if len(conv.inputs) > 2 else 0.0
    b_new: np.ndarray[Any, Any] = ((b - mean) * scale + beta).astype(np.float32)
    w_name = rw.add_const(f"{conv.name}.weight_bn", w_new)
    b_name = rw.add_const(f"{conv.name}.bias_bn", b_new)
    return conv.with_(
        inputs=(conv.inputs[0], w_name, b_name),
        outputs=bn.outputs,
        attrs=dataclasses.replace(ConvAttrs.of(conv), folded_bn=bn.name),
    )
