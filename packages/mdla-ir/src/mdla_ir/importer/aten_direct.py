"""Mapping an exported program as torch.export gives it, without `run_decompositions`.

`torch.export.export` returns a graph of the ATen ops the model called (`aten.conv2d`,
`aten.batch_norm`, `aten.relu_`, `aten.flatten.using_ints`), not yet functionalized nor
decomposed. `run_decompositions` re-traces the whole program, which costs more than the export
itself; when every op of the program is one the importer maps (`aten.ATEN`, or `DIRECT` here)
and every in-place op is safe to read as its out-of-place form, the program is mapped as it is.
Otherwise it is decomposed as before (`exported.decompose`).

An in-place op `y = relu_(x)` reads as `y = relu(x)` when nothing else can see `x` change: `x`
is the result of an op that returns a fresh tensor (not a view, not a graph input) and this op
is its only reader (or, for `dropout_` in eval, when it changes nothing). A program that
mutates its inputs or buffers is always decomposed.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import fx
from torch.export import ExportedProgram
from torch.export.graph_signature import OutputKind

from mdla_ir.importer.aten import ATEN, _batch_norm, _pad, _split, pieces
from mdla_ir.importer.context import Converter, Ctx, Unsupported
from mdla_ir.importer.tables import _flatten_call, _transpose, identity
from mdla_ir.ops import OpKind

aten = torch.ops.aten


def _eval_batch_norm(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """batch_norm(x, w, b, mean, var, training, momentum, eps, cudnn): BATCH_NORM in eval."""
    names = ("input", "weight", "bias", "running_mean", "running_var", "training", "momentum")
    a = dict(zip((*names, "eps"), args, strict=False)) | kw
    if c.value(a.get("training", False)):
        raise Unsupported("batch_norm in training mode (call .eval() on the model)")
    node = c.node
    assert node is not None
    stats = (a.get(k) for k in names[:5])
    _batch_norm(c, m, (*stats, a.get("momentum", 0.1), a.get("eps", 1e-5)), {})
    (y,) = pieces(c).pop(node)
    c.refs[node] = y


def _dropout(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """dropout(x, p, train) with train=False: the identity (DROPOUT, as the fx path has it)."""
    if c.value(args[2] if len(args) > 2 else kw.get("train", False)):
        raise Unsupported("dropout in training mode (call .eval() on the model)")
    identity(OpKind.DROPOUT)(c, m, args[:1], {})


def _pad_call(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """pad(x, pad, mode="constant", value=None): constant padding only (else decomposed)."""
    a = dict(zip(("input", "pad", "mode", "value"), args, strict=False)) | kw
    if c.value(a.get("mode", "constant")) != "constant":
        raise Unsupported(f"pad mode {c.value(a['mode'])!r}")
    _pad(c, m, (a["input"], a["pad"], c.value(a.get("value")) or 0.0), {})


DIRECT: dict[Any, Converter] = {
    aten.batch_norm.default: _eval_batch_norm,
    aten.dropout.default: _dropout,
    aten.dropout_.default: _dropout,
    aten.feature_dropout.default: _dropout,
    aten.feature_dropout_.default: _dropout,
    aten.flatten.using_ints: lambda c, m, a, k: _flatten_call(c, a, k),
    aten.pad.default: _pad_call,
    aten.chunk.default: _split,
    aten.transpose.int: _transpose,
    aten.contiguous.default: identity(OpKind.IDENTITY),
}


def _out_of_place(op: Any) -> Any:
    """`aten.relu.default` for `aten.relu_.default` (None when `op` is not in place or has no
    such form)."""
    if not isinstance(op, torch._ops.OpOverload) or not op._schema.is_mutable:
        return None
    name = op._schema.name.split("::")[-1]
    if not name.endswith("_") or name.startswith("_"):
        return None
    packet = getattr(aten, name[:-1], None)
    return getattr(packet, op._overloadname, None) if packet is not None else None


def converter(op: Any) -> Converter | None:
    """How the direct mapping converts `op` (None: not without decomposing)."""
    found = ATEN.get(op) or DIRECT.get(op)
    if found is not None:
        return found
    functional = _out_of_place(op)
    return None if functional is None else ATEN.get(functional) or DIRECT.get(functional)


def _fresh(node: Any) -> bool:
    """`node` is a tensor no one else holds: an op's new result, or an in-place op's on one."""
    if not isinstance(node, fx.Node) or node.op != "call_function":
        return False
    if not isinstance(node.target, torch._ops.OpOverload):
        return False
    if _out_of_place(node.target) is not None:
        return _safe_in_place(node)
    return all(r.alias_info is None for r in node.target._schema.returns)


def _safe_in_place(node: fx.Node) -> bool:
    target = node.args[0] if node.args else None
    return isinstance(target, fx.Node) and len(target.users) == 1 and _fresh(target)


def mappable(program: ExportedProgram) -> bool:
    """Every op maps as exported (see the module docstring): no decomposition needed."""
    specs = program.graph_signature.output_specs
    if any(s.kind is not OutputKind.USER_OUTPUT for s in specs):
        return False  # it mutates an input or a buffer
    for node in program.graph_module.graph.nodes:
        if node.op != "call_function" or node.target.__name__ == "getitem":
            continue
        if str(node.target).startswith(("aten._assert", "aten.sym_constrain_range")):
            continue
        if converter(node.target) is None or _decomposes(node):
            return False
        if _out_of_place(node.target) is not None and not _harmless(node):
            return False
    return True


def _decomposes(node: fx.Node) -> bool:
    """A `pad` other than constant: its decomposition (reflection_pad2d, ...) is what maps."""
    if node.target is not aten.pad.default:
        return False
    mode = node.args[2] if len(node.args) > 2 else node.kwargs.get("mode", "constant")
    return bool(mode != "constant")


def _harmless(node: fx.Node) -> bool:
    """An in-place op that mutates nothing (dropout_ in eval) or that nothing sees."""
    if node.target in (aten.dropout_.default, aten.feature_dropout_.default):
        train = node.args[2] if len(node.args) > 2 else node.kwargs.get("train", False)
        if train is False:
            return True
    return _safe_in_place(node)
