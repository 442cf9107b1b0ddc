"""`prefix(graph, n)`: the first n ops, with the tensors still live at the cut as outputs.

This is the op-prefix bisection primitive: on a device that reports all-or-nothing support,
the first n that does not map names the culprit (the seed's "K=82 ops map, K=83 -> 0/83").
"""

from __future__ import annotations

from mdla_ir import Graph
from mdla_legalize.errors import LegalizeError


def prefix(graph: Graph, n: int) -> Graph:
    """Ops [0, n); outputs: tensors produced there and read later or graph outputs, in the
    order they are produced. Inputs stay the graph's inputs (the signature does not change)."""
    if not 1 <= n <= len(graph.ops):
        raise LegalizeError(
            f"prefix of `{graph.name}`: n must be in 1..{len(graph.ops)}, got {n}", [str(n)]
        )
    head, tail = graph.ops[:n], graph.ops[n:]
    later = {name for op in tail for name in op.inputs} | set(graph.outputs)
    outputs = tuple(name for op in head for name in op.outputs if name in later)
    used = {name for op in head for name in (*op.inputs, *op.outputs)} | set(graph.inputs)
    tensors = {k: v for k, v in graph.tensors.items() if k in used}
    boundary = {k: v for k, v in graph.boundary.items() if k in graph.inputs or k in outputs}
    return graph.with_(
        name=f"{graph.name}[:{n}]", ops=head, tensors=tensors, outputs=outputs, boundary=boundary
    )
