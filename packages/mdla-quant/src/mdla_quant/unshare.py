"""Each weighted op reads its own weight and bias.

A module called on several inputs (MTCNN's P-Net on each pyramid level) is one set of
parameters that several convolutions read: torch.export lifts each parameter once, so the
imported graph shares the constant (torch.fx gives each call a copy). In int8 such a constant
is not one value: a bias is stored at the scale `input scale * weight scale` of the op that
reads it, and a weight's scale is raised where that bias would not fit in int32, both of which
depend on the reading op's input. So the reads after the first get copies, named as torch.fx
names them (`net.conv1.bias.1`), and every op's weight and bias is quantized for that op.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Collection, Mapping

from mdla_ir import Graph, Op, OpKind

READS = (1, 2)  # a weighted op's weight and bias inputs


def own_weights(graph: Graph, weighted: Collection[OpKind]) -> Graph:
    """`graph` with a private copy of each weight or bias of a `weighted` op that an earlier
    op already reads (`graph` itself when no constant is shared)."""
    return _copied(
        graph, lambda op, i, name, read: op.kind in weighted and i in READS and name in read
    )


def own_operands(graph: Graph, select: Callable[[Op], bool]) -> Graph:
    """`graph` with a private copy, for each `select`ed op, of every constant operand another
    read also takes (any op, before or after; `graph` itself when there is none): a constant
    that must be quantized at its op's output params (a CONCATENATION's) is then quantized for
    that op alone."""
    reads = Counter(n for op in graph.ops for n in op.inputs if graph.tensors[n].data is not None)
    return _copied(graph, lambda op, i, name, read: select(op) and reads[name] > 1)


def _copied(graph: Graph, copy: Callable[[Op, int, str, set[str]], bool]) -> Graph:
    """`graph` with input `i` of each op, a constant `name`, replaced by a fresh copy of it where
    `copy(op, i, name, read)` says so (`read`: the inputs of the ops before, copies included);
    `graph` itself when nothing is copied."""
    tensors = dict(graph.tensors)
    read: set[str] = set()
    ops = []
    for op in graph.ops:
        inputs = list(op.inputs)
        for i, name in enumerate(inputs):
            if graph.tensors[name].data is not None and copy(op, i, name, read):
                inputs[i] = _fresh(name, tensors)
                tensors[inputs[i]] = dataclasses.replace(graph.tensors[name], name=inputs[i])
        read.update(inputs)
        ops.append(op.with_(inputs=tuple(inputs)) if inputs != list(op.inputs) else op)
    if len(tensors) == len(graph.tensors):
        return graph
    return graph.with_(tensors=tensors, ops=tuple(ops))


def _fresh(name: str, taken: Mapping[str, object]) -> str:
    k = 1
    while f"{name}.{k}" in taken:
        k += 1
    return f"{name}.{k}"
