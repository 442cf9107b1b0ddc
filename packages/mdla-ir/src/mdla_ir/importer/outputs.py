"""A model's outputs as graph outputs: tensors, or dicts / (nested) tuples / lists of them.

torchvision's segmentation models return `{"out": ..., "aux": ...}`, detectors and MTCNN return
tuples, a user's model may nest them. The graph outputs are the tensor leaves in order (a dict
in its key order, a sequence front to back, depth first), so a caller flattens the torch result
the same way (`flatten_outputs`) to compare it with `run_float`. A leaf reached through a dict
key names its graph tensor (`out`, `aux`, `boxes`; nested keys joined by "."), unless that name
is taken or the tensor is a graph input or already an output under another name. A tensor
returned twice (YOLO's segmenter returns its mask prototypes in both halves of its result) is
one output, at its first place: a manifest's outputs are distinct operands.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch import fx

from mdla_ir.errors import IRError
from mdla_ir.importer.context import Ctx


def leaves(out: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """(key path, leaf) for each leaf of a nest of dicts, tuples and lists, in output order."""
    if isinstance(out, dict):
        for k, v in out.items():
            yield from leaves(v, f"{key}.{k}" if key else str(k))
    elif isinstance(out, list | tuple):
        for v in out:
            yield from leaves(v, key)
    else:
        yield key, out


def flatten_outputs(out: Any) -> list[Any]:
    """The leaves of a model's (torch) result in graph output order (each object once)."""
    seen: set[int] = set()
    found = []
    for _, v in leaves(out):
        if id(v) not in seen:
            seen.add(id(v))
            found.append(v)
    return found


def graph_outputs(c: Ctx, out: Any, inputs: list[str]) -> list[str]:
    """The graph output names for the fx output node's argument `out` (renaming keyed leaves)."""
    found = list(leaves(out))
    bad = [f"{key or 'output'}: {value}" for key, value in found if not c.is_tensor(value)]
    if bad:
        raise IRError(
            f"model outputs {bad} are not tensors (only tensors, and dicts / tuples / lists of "
            "tensors, import as outputs)"
        )
    names: list[str] = []
    for key, node in found:
        name = c.refs[node]
        if name in names:  # returned twice: one output
            continue
        if key and key not in c.tensors and name not in inputs:
            name = _rename(c, node, key)
        names.append(name)
    return names


def _rename(c: Ctx, node: fx.Node, new: str) -> str:
    """Give the tensor `node` made the name `new` everywhere (tensors, ops, refs)."""
    old = c.refs[node]
    tensor = c.tensors.pop(old)
    c.tensors[new] = type(tensor)(new, tensor.shape, tensor.dtype, tensor.data, tensor.quant)
    swap = {old: new}
    c.ops[:] = [
        op.with_(
            inputs=tuple(swap.get(i, i) for i in op.inputs),
            outputs=tuple(swap.get(o, o) for o in op.outputs),
        )
        if old in op.inputs or old in op.outputs
        else op
        for op in c.ops
    ]
    for n, ref in list(c.refs.items()):
        if ref == old:
            c.refs[n] = new
    return new
