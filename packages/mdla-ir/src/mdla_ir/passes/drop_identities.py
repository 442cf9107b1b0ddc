"""Drop ops that are identities in eval mode: DROPOUT (dropout, stochastic depth) and IDENTITY."""

from __future__ import annotations

from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_ir.passes.rewrite import PassResult, Rewriter

IDENTITIES = frozenset({OpKind.DROPOUT, OpKind.IDENTITY})


def drop_identities(graph: Graph) -> PassResult:
    rw = Rewriter(graph)
    for op in rw:
        if op.kind in IDENTITIES:  # y = x  ->  uses of y read x
            rw.alias[op.outputs[0]] = op.inputs[0]
        else:
            rw.emit(op)
    return rw.finish()
