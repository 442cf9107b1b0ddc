"""Stand-ins for the convolutions of the fx importer's shape propagation.

The fx path runs the module's forward once on the example inputs (ShapeProp) for the shapes of
its tensors and the Python values its forward computes (sizes, shape arithmetic). Nothing it
imports reads an activation's values, but the convolutions computed them: a ResNet-18's 20
convs were 0.08 of the 0.10 CPU s of that forward (oneDNN reorders each filter on every call).
So a plain `nn.Conv2d` of a float32 activation gives, instead, zeros of the shape, dtype and
strides its convolution has on meta tensors (`conv_stand_in`).

That is exact for all the importer reads unless a Python value is computed from the values of a
tensor a stand-in fed (`x.sum().item()`, a split's pieces): `reads_only_shapes` finds any, and
the importer then propagates again with the real convolutions (`STAND_INS = False`: always).
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Mapping
from typing import Any

import torch
from torch import fx, nn

from mdla_ir.importer.aliasing import hazard

STAND_INS = True

# Calls whose result is a function of their tensor operand's shape (or dtype) alone.
_SHAPE_METHODS = frozenset({"size", "dim", "numel", "nelement"})
_SHAPE_ATTRS = frozenset({"shape", "ndim", "dtype"})


def conv_stand_in(module: nn.Module, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """Zeros shaped as `module(*args)` when `module` is a plain float32 `nn.Conv2d` (its own
    forward) called on one CPU float32 tensor; else None (run the module)."""
    if type(module) is not nn.Conv2d or kwargs or len(args) != 1:
        return None
    x = args[0]
    w, b = module.weight, module.bias
    if not (
        isinstance(x, torch.Tensor)
        and x.layout == torch.strided
        and x.device.type == "cpu"
        and x.dtype == w.dtype == torch.float32
        and (b is None or b.dtype == torch.float32)
    ):
        return None
    try:
        meta = module._conv_forward(x.to("meta"), w.to("meta"), None if b is None else b.to("meta"))
    except Exception:  # whatever meta cannot run: the convolution itself is run
        return None
    return torch.empty_strided(meta.size(), meta.stride(), dtype=meta.dtype).zero_()


def may_stand_in(gm: fx.GraphModule, unaliased: bool) -> bool:
    """Whether `gm`'s forward may be run twice (a stand-in found to be read is run again for
    real) to the same effect: it writes into no parameter or buffer (`aliasing.hazard`; done
    already when `unaliased`), every module it calls is torch.nn's own and none has a hook
    (no user code runs): it calls only torch's, operator's and builtins' functions."""
    glob = nn.modules.module
    if glob._global_forward_hooks or glob._global_forward_pre_hooks:
        return False
    for n in gm.graph.nodes:
        if n.op == "call_function" and not _library(n.target):
            return False
        if n.op == "call_module":
            m = gm.get_submodule(str(n.target))
            if (
                not type(m).__module__.startswith("torch.nn.")
                or m._forward_hooks
                or m._forward_pre_hooks
            ):
                return False
    return unaliased or hazard(gm) is None


def _library(fn: Any) -> bool:
    where = getattr(fn, "__module__", None) or ""
    return where in ("torch", "_operator", "operator", "builtins") or where.startswith("torch.")


def reads_only_shapes(
    gm: fx.GraphModule, stand_ins: Collection[fx.Node], values: Mapping[fx.Node, Any]
) -> bool:
    """Whether every Python value (`values`: the non-tensor results) computed after a stand-in
    depends on the stand-ins' shapes only: it reads a tensor's shape, or only such values."""
    fed = set(stand_ins)  # nodes whose result depends on a stand-in's values
    for n in gm.graph.nodes:
        if n.op == "output" or not any(a in fed for a in n.all_input_nodes):
            continue  # (the output's value is its nodes', not read as one)
        if n not in values:  # a tensor computed from one: its values are a stand-in's too
            fed.add(n)
        elif not _reads_shape(n):
            return False
    return True


def _reads_shape(n: fx.Node) -> bool:
    if n.op == "call_method":
        return n.target in _SHAPE_METHODS
    return (
        n.op == "call_function"
        and n.target is builtins.getattr
        and len(n.args) == 2
        and n.args[1] in _SHAPE_ATTRS
    )
