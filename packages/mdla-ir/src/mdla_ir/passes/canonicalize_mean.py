"""Adaptive average pool to 1×1 is a MEAN over the spatial axes (keepdims)."""

from __future__ import annotations

from mdla_ir.attrs import AdaptivePoolAttrs, MeanAttrs
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_ir.passes.rewrite import PassResult, Rewriter


def canonicalize_mean(graph: Graph) -> PassResult:
    axes = (2, 3) if graph.layout == "NCHW" else (1, 2)
    rw = Rewriter(graph)
    for op in rw:
        pool = op.kind is OpKind.ADAPTIVE_AVG_POOL_2D
        if pool and AdaptivePoolAttrs.of(op).output_size == (1, 1):
            rw.emit(op.with_(kind=OpKind.MEAN, attrs=MeanAttrs(axes=axes, keepdims=True)))
        else:
            rw.emit(op)
    return rw.finish()
