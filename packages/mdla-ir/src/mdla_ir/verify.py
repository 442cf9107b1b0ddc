"""The structural verifier: SSA, topological order, attributes (each op's record in the op
schema), shapes, and no dangling tensors.

Every message names the op (or tensor) at fault; `verify` raises `VerifyError` listing all of
the problems it found, not only the first.
"""

from __future__ import annotations

from mdla_ir.attrs import AttrError
from mdla_ir.errors import IRError, VerifyError
from mdla_ir.graph import Graph, Op
from mdla_ir.schema import record_for
from mdla_ir.shapes import infer

LAYOUTS = ("NCHW", "NHWC")


def _op_problems(graph: Graph, index: int, op: Op, defined: set[str]) -> list[str]:
    where = f"op #{index} `{op.name}` ({op.kind.name})"
    problems: list[str] = []
    for name in op.inputs:
        if name not in graph.tensors:
            problems.append(f"{where}: input `{name}` is not a tensor of the graph")
        elif name not in defined:
            problems.append(f"{where}: input `{name}` is used before it is produced")
    for name in op.outputs:
        if name not in graph.tensors:
            problems.append(f"{where}: output `{name}` is not a tensor of the graph")
        elif name in defined:
            problems.append(f"{where}: output `{name}` is already defined (not SSA)")
        elif graph.tensors[name].is_const:
            problems.append(f"{where}: output `{name}` is a constant")
    try:
        record_for(op.kind, op.name, op.attrs)  # the op family's attribute record
    except AttrError as exc:
        problems.append(str(exc))
    if problems:
        return problems
    try:
        shapes = infer(op.kind, op.attrs, [graph.tensors[n].shape for n in op.inputs], graph.layout)
    except (IRError, KeyError, IndexError, TypeError, ValueError) as exc:
        return [f"{where}: cannot infer output shape: {exc}"]
    if shapes is not None:
        got = [graph.tensors[n].shape for n in op.outputs]
        if got != shapes:
            problems.append(f"{where}: output shape {got} but its inputs give {shapes}")
    return problems


def problems(graph: Graph) -> list[str]:
    """Every structural problem of `graph`, as readable messages (empty when it is sound)."""
    found: list[str] = []
    if graph.layout not in LAYOUTS:
        found.append(f"graph `{graph.name}`: layout {graph.layout!r} is not one of {LAYOUTS}")
    defined = {n for n, t in graph.tensors.items() if t.is_const}
    for name in graph.inputs:
        if name not in graph.tensors:
            found.append(f"graph input `{name}` is not a tensor of the graph")
        elif graph.tensors[name].is_const:
            found.append(f"graph input `{name}` is a constant")
        defined.add(name)
    for name, tensor in graph.tensors.items():
        if tensor.name != name:
            found.append(f"tensor table key `{name}` holds a tensor named `{tensor.name}`")
    names: set[str] = set()
    for i, op in enumerate(graph.ops):
        if op.name in names:
            found.append(f"op #{i} `{op.name}`: op name used twice")
        names.add(op.name)
        found += _op_problems(graph, i, op, defined)
        defined.update(op.outputs)
    for name in graph.outputs:
        if name not in defined:
            found.append(f"graph output `{name}` is never produced")
    used = {n for op in graph.ops for n in op.inputs} | set(graph.outputs)
    for i, op in enumerate(graph.ops):
        dead = [n for n in op.outputs if n not in used]
        if dead and len(dead) == len(op.outputs):
            found.append(f"op #{i} `{op.name}` ({op.kind.name}): output(s) {dead} are never used")
    referenced = used | {n for op in graph.ops for n in op.outputs} | set(graph.inputs)
    found += [
        f"tensor `{n}` is dangling: no op or graph boundary refers to it"
        for n in graph.tensors
        if n not in referenced
    ]
    for name, perm in graph.boundary.items():
        if name not in graph.inputs and name not in graph.outputs:
            found.append(f"boundary entry `{name}` is not a graph input or output")
        elif sorted(perm) != list(range(len(perm))) or len(perm) < len(graph.tensors[name].shape):
            found.append(
                f"boundary permutation {perm} of `{name}` is not a permutation of its "
                f"rank-{len(graph.tensors[name].shape)} shape (or of a longer rank "
                "whose leading unit dims are squeezed)"
            )
    return found


def verify(graph: Graph) -> Graph:
    """Raise `VerifyError` listing every structural problem; return the graph when sound."""
    found = problems(graph)
    if found:
        first_op = next((m.split("`")[1] for m in found if m.startswith("op #")), None)
        detail = "\n  ".join(found)
        raise VerifyError(
            f"graph `{graph.name}` is malformed ({len(found)} problem(s)):\n  {detail}", op=first_op
        )
    return graph
