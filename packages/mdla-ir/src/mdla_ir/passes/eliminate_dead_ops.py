"""Drop ops none of whose outputs is used (by a kept op or as a graph output), and the tensors
only they referred to: a model's forward may compute a value it never returns."""

from __future__ import annotations

from mdla_ir.graph import Graph, same_graph
from mdla_ir.passes.rewrite import PassResult


def eliminate_dead_ops(graph: Graph) -> PassResult:
    """Walk the ops backwards from the graph outputs; keep those that feed what is kept."""
    live = set(graph.outputs)
    kept = []
    for op in reversed(graph.ops):
        if any(n in live for n in op.outputs):
            kept.append(op)
            live.update(op.inputs)
    ops = tuple(reversed(kept))
    used = {n for op in ops for n in (*op.inputs, *op.outputs)}
    used |= set(graph.inputs) | set(graph.outputs)
    tensors = {n: t for n, t in graph.tensors.items() if n in used}
    new = graph.with_(ops=ops, tensors=tensors)
    return PassResult(new, not same_graph(new, graph))
