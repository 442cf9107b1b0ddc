"""Why one op does or does not map on a device: kind, rank, dims, dtypes, per-channel, padding.

A float graph (before quantization) is judged on kinds, attributes and shapes only; its weights
are taken to be quantized per channel, as the quantizer does for every weighted op.
"""

from __future__ import annotations

import dataclasses

from mdla_ir import Graph, Op, OpKind
from mdla_ir.attrs import ConvAttrs, PoolAttrs
from mdla_ir.lowerable import form_problems
from mdla_legalize.rules.base import Ctx
from mdla_legalize.rules.padding import device_same_pads, padding_ok
from mdla_target.target import ATTRIBUTE_SOURCES, OpSpec, Target

WEIGHTED = frozenset(
    {OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.FULLY_CONNECTED, OpKind.TRANSPOSE_CONV_2D}
)


def op_problems(graph: Graph, op: Op, target: Target, device: str, ctx: Ctx) -> list[str]:
    """Every reason `op` does not map on `device` (empty when it maps)."""
    spec = target.op(device, op.kind)
    acts = [n for n in (*op.inputs, *op.outputs) if not graph.tensors[n].is_const]
    wide = any(graph.tensors[n].dtype == "int16" for n in acts)  # its 16x8 form
    if not spec.maps(wide):
        no16 = f"no int16 (16x8) form of {op.kind.name} on {device} (no `int16 = true`)"
        return [no16 if wide else spec.reason or f"no {op.kind.name} on {device}"]
    dev = target.device(device)
    found: list[str] = form_problems(op)  # what lowering to .mdla refuses (mdla_ir.lowerable)
    for n in acts:
        shape = graph.tensors[n].shape
        if len(shape) > dev.max_rank:
            found.append(f"`{n}` has rank {len(shape)} > {dev.max_rank}")
        elif any(d > dev.max_dim for d in shape):
            found.append(f"`{n}` {shape} has a dim > {dev.max_dim}")
        dtype = graph.tensors[n].dtype
        if dtype != "float32" and dtype not in spec.dtypes:
            found.append(
                f"`{n}` is {dtype}; {op.kind.name} on {device} takes {', '.join(spec.dtypes)}"
            )
    found += _weights(graph, op, target, device)
    found += _attributes(op, spec)
    a = op.attrs
    if isinstance(a, ConvAttrs | PoolAttrs) and not padding_ok(op, ctx):
        found.append(
            f"pads {a.padding} (stride {a.stride}) "
            f"are neither VALID nor the device's TF-SAME {device_same_pads(op, ctx)}"
        )
    if isinstance(a, PoolAttrs) and op.kind is OpKind.AVERAGE_POOL_2D and a.count_include_pad:
        found.append("counts padding in the average; Neuron's AVERAGE_POOL_2D excludes it")
    if op.kind in (OpKind.MUL, OpKind.ADD) and not spec.broadcast:
        shapes = {graph.tensors[n].shape for n in op.inputs}
        if len(shapes) > 1:
            found.append(
                f"operands {sorted(shapes)} broadcast; {op.kind.name} on {device} does not"
            )
    return found


def non_default(op: Op, attr: str) -> object | None:
    """The default of attribute `attr` of `op`'s kind when `op` sets another value, else None.
    A uniform tuple default holds at any rank: dilation (1, 1, 1) of a CONV_3D is (1, 1)'s."""
    defaults = {f.name: f.default for f in dataclasses.fields(op.attrs)}  # type: ignore[arg-type]
    if attr not in defaults:
        return None
    value, default = getattr(op.attrs, attr), defaults[attr]
    if isinstance(value, tuple) and isinstance(default, tuple) and len(set(default)) == 1:
        return None if set(value) <= set(default) else default
    return None if value == default else default


def _attributes(op: Op, spec: OpSpec) -> list[str]:
    """An attribute value the entry refuses (`dilation = false`: only dilation 1 maps)."""
    found = []
    for attr in ATTRIBUTE_SOURCES:
        default = non_default(op, attr)
        if default is not None and not getattr(spec, attr):
            value = tuple(getattr(op.attrs, attr))
            found.append(
                f"{attr} {value}: {op.kind.name} on {spec.device} maps only "
                f"{attr} {default} ({spec.attribute_source(attr) or spec.source})"
            )
    return found


def _weights(graph: Graph, op: Op, target: Target, device: str) -> list[str]:
    if op.kind not in WEIGHTED or len(op.inputs) < 2:
        return []
    spec = target.op(device, op.kind)
    w = graph.tensors[op.inputs[1]]
    if spec.per_channel:
        return []
    if w.quant is not None:  # quantized: the fact that applies is the per-channel rejection
        if w.quant.per_channel:
            return [f"{op.kind.name} on {device} rejects per-channel weights: {spec.source}"]
        return []
    rank = len(graph.tensors[op.inputs[0]].shape)
    what = f"a Linear over the last axis of a rank-{rank} tensor: " if rank > 2 else ""
    return [
        f"{what}{op.kind.name} on {device} is measured only rejecting per-channel weights "
        "(silicon fact 3); its per-tensor form is unmeasured (a 1x1 CONV_2D maps)"
    ]


def graph_problems(graph: Graph) -> list[str]:
    if graph.layout != "NHWC":
        return [f"graph layout is {graph.layout}; the device graph is NHWC (pass to_nhwc)"]
    return []
