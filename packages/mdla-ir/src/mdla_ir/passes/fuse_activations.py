"""Fuse RELU / RELU6 into the op that produces their input (a Neuron fuse code).

producer(x) -> RELU  ==  producer(x; fuse=RELU), when the producer's output feeds only the RELU.
"""

from __future__ import annotations

from mdla_ir.attrs import with_fuse
from mdla_ir.graph import Graph
from mdla_ir.ops import FUSABLE, OpKind
from mdla_ir.passes.rewrite import PassResult, Rewriter

FUSED = {OpKind.RELU: "RELU", OpKind.RELU6: "RELU6"}


def fuse_activations(graph: Graph) -> PassResult:
    rw = Rewriter(graph)
    for op in rw:
        producer = rw.producer(op.inputs[0]) if op.kind in FUSED else None
        if (
            producer is None
            or producer.kind not in FUSABLE
            or producer.fuse != "NONE"
            or not rw.sole_use(op.inputs[0])
        ):
            rw.emit(op)
            continue
        rw.replace_producer(
            op.inputs[0],
            producer.with_(outputs=op.outputs, attrs=with_fuse(producer.attrs, FUSED[op.kind])),
        )
    return rw.finish()
