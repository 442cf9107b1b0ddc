"""Flatten/view/reshape all become RESHAPE with a static shape; no-ops and chains collapse.

FLATTEN(start, end)              -> RESHAPE(shape of the output)
RESHAPE(x) with shape == x.shape -> x
RESHAPE(RESHAPE(x))              -> RESHAPE(x)   when the inner one feeds nothing else
"""

from __future__ import annotations

from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_ir.passes.rewrite import PassResult, Rewriter


def canonicalize_reshapes(graph: Graph) -> PassResult:
    rw = Rewriter(graph)
    for op in rw:
        if op.kind not in (OpKind.FLATTEN, OpKind.RESHAPE):
            rw.emit(op)
            continue
        out_shape = graph.tensors[op.outputs[0]].shape
        src = op.inputs[0]
        inner = rw.producer(src)
        if inner is not None and inner.kind is OpKind.RESHAPE and rw.sole_use(src):
            rw.remove_producer(src)
            src = inner.inputs[0]
        if rw.tensors[src].shape == out_shape and op.outputs[0] not in graph.outputs:
            rw.alias[op.outputs[0]] = src
            continue
        rw.emit(op.with_(kind=OpKind.RESHAPE, inputs=(src,), attrs={"shape": out_shape}))
    return rw.finish()
