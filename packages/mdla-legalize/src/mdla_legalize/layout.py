"""The layout pass: an NCHW graph (as imported from PyTorch) becomes the NHWC device graph.

Activations of rank 4 are held NHWC (perm (0, 2, 3, 1)), of rank 5 NDHWC (0, 2, 3, 4, 1);
filters take Neuron's layouts (CONV_2D (O, KH, KW, I), DEPTHWISE_CONV_2D (1, KH, KW, C*m));
axis attributes (MEAN, ARGMAX, CONCATENATION, SOFTMAX, PAD, TRANSPOSE) are renumbered; a
RESHAPE keeps its form when the device memory order is unchanged (checked index by index), else
it is wrapped in TRANSPOSEs back to the model order (which the MDLA does not map, so explain
reports them).
A channels-last region (a TRANSPOSE (0, 2, 3, 1) of an activation, ops over the last axis,
TRANSPOSEs back: `mdla_legalize.channels_last`) is held in its model order, the activation's
NHWC memory order, so its TRANSPOSEs become identities.
The graph's inputs and outputs keep the model's layout for callers through `Graph.boundary`,
which is also the record of the device's I/O layout for the manifest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mdla_ir import Graph, Op, OpKind, Tensor
from mdla_ir.attrs import (
    ArgmaxAttrs,
    AxisAttrs,
    GroupNormAttrs,
    MeanAttrs,
    PadAttrs,
    SliceAttrs,
    SoftmaxAttrs,
    StridedSliceAttrs,
    TransposeAttrs,
)
from mdla_ir.ops import ACTIVATIONS, BINARY, CONVS, POOLS
from mdla_ir.passes import PassResult, Rewriter
from mdla_legalize.channels_last import channels_last_tensors
from mdla_legalize.sequences import sequence_tensors

Perm = tuple[int, ...]
Array = np.ndarray[Any, Any]
PERMS: dict[int, Perm] = {4: (0, 2, 3, 1), 5: (0, 2, 3, 4, 1)}
# Kinds whose kernels read the channel axis from the graph layout, or that do not care.
AGNOSTIC = (
    CONVS
    | POOLS
    | ACTIVATIONS
    | frozenset(
        {
            OpKind.BATCH_NORM,
            OpKind.RESIZE_BILINEAR,
            OpKind.RESIZE_NEAREST_NEIGHBOR,
            OpKind.DEPTH_TO_SPACE,
            OpKind.ADAPTIVE_AVG_POOL_2D,
            OpKind.ADAPTIVE_MAX_POOL_2D,
            OpKind.CONV_3D,
            OpKind.MAX_POOL_3D,
            OpKind.AVERAGE_POOL_3D,
            OpKind.DROPOUT,
            OpKind.IDENTITY,
            OpKind.QUANTIZE,
            OpKind.DEQUANTIZE,
            OpKind.EXP,
            OpKind.LOG,
            OpKind.SQRT,
            OpKind.RSQRT,
            OpKind.RECIPROCAL,
            OpKind.WHERE,
            OpKind.SELECT,
        }
    )
)


def perm_of(shape: Sequence[int]) -> Perm:
    return PERMS.get(len(shape), tuple(range(len(shape))))


def _permute(shape: Sequence[int], perm: Perm) -> tuple[int, ...]:
    return tuple(shape[p] for p in perm)


class _Layout:
    def __init__(self, graph: Graph) -> None:
        self.g = graph
        self.rw = Rewriter(graph)
        self.perm = {n: perm_of(t.shape) for n, t in graph.tensors.items() if not t.is_const}
        self.perm |= sequence_tensors(graph)
        self.perm |= dict.fromkeys(channels_last_tensors(graph), (0, 1, 2, 3))
        for n, p in self.perm.items():
            self.rw.tensors[n] = Tensor(n, _permute(graph.tensors[n].shape, p))

    def const(self, name: str, fn: Callable[[Array], Array], tag: str) -> str:
        data = self.g.const(name)
        return self.rw.add_const(f"{name}.{tag}", np.ascontiguousarray(fn(data)))

    def convert(self, op: Op) -> list[Op]:
        handler = HANDLERS.get(op.kind)
        if handler is not None:
            return handler(self, op)
        if op.kind in AGNOSTIC or op.kind in BINARY:  # SELECT's constants follow too
            return [self.operands(op)]
        return self.wrapped(op)

    def operands(self, op: Op) -> Op:
        """Constants beside an activation of rank >= 4 follow it (broadcast aligned first)."""
        rank = max((len(self.g.tensors[n].shape) for n in op.inputs if n in self.perm), default=0)
        seq = [self.perm[n] for n in op.inputs if n in self.perm and len(self.perm[n]) == 3]
        perm = PERMS.get(rank) or (seq[0] if rank == 3 and seq else None)
        if perm is None or (op.kind not in BINARY and op.kind is not OpKind.SELECT):
            return op
        ins: list[str] = []
        for n in op.inputs:
            t = self.g.tensors[n]
            if t.data is not None and t.size > 1:
                full = (1,) * (rank - len(t.shape)) + t.shape
                n = self.rw.add_const(
                    f"{n}.nhwc", np.ascontiguousarray(t.data.reshape(full).transpose(perm))
                )
            ins.append(n)
        return op.with_(inputs=tuple(ins))

    def fresh(self, hint: str, shape: tuple[int, ...]) -> str:
        name, i = hint, 1
        while name in self.rw.tensors:
            name, i = f"{hint}.{i}", i + 1
        self.rw.tensors[name] = Tensor(name, shape)
        return name

    def axis(self, name: str, axis: int) -> int:
        rank = len(self.g.tensors[name].shape)
        return self.perm[name].index(axis % rank)

    def wrapped(self, op: Op) -> list[Op]:
        """An op with no NHWC form runs in the model layout between TRANSPOSEs."""
        before: list[Op] = []
        ins = []
        for n in op.inputs:
            p = self.perm.get(n)
            if p is not None and p != tuple(range(len(p))):
                model = self.fresh(f"{n}.model_layout", self.g.tensors[n].shape)
                before.append(
                    Op(
                        OpKind.TRANSPOSE,
                        f"{op.name}.to_model_{len(before)}",
                        (n,),
                        (model,),
                        {"perm": tuple(int(i) for i in np.argsort(p))},
                        op.source,
                    )
                )
                n = model
            ins.append(n)
        outs: list[str] = []
        after: list[Op] = []
        for n in op.outputs:
            p = self.perm[n]
            if p != tuple(range(len(p))):
                model = self.fresh(f"{n}.model_layout", self.g.tensors[n].shape)
                after.append(
                    Op(
                        OpKind.TRANSPOSE,
                        f"{op.name}.to_device_{len(after)}",
                        (model,),
                        (n,),
                        {"perm": p},
                        op.source,
                    )
                )
                n = model
            outs.append(n)
        return [*before, op.with_(inputs=tuple(ins), outputs=tuple(outs)), *after]


def _conv(lo: _Layout, op: Op) -> list[Op]:
    order = (1, 2, 3, 0) if op.kind is OpKind.DEPTHWISE_CONV_2D else (0, 2, 3, 1)
    w = lo.const(op.inputs[1], lambda d: d.transpose(order), "nhwc")
    return [op.with_(inputs=(op.inputs[0], w, *op.inputs[2:]))]


def _mean(lo: _Layout, op: Op) -> list[Op]:
    x, m = op.inputs[0], MeanAttrs.of(op)
    axes = sorted(lo.axis(x, a) for a in m.axes)
    if not m.keepdims:
        kept = [p for p in lo.perm[x] if p not in {a % len(lo.perm[x]) for a in m.axes}]
        if kept != sorted(kept) or lo.perm[op.outputs[0]] != tuple(range(len(kept))):
            return lo.wrapped(op)
    return [op.with_(attrs=dataclasses.replace(m, axes=tuple(axes)))]


def _argmax(lo: _Layout, op: Op) -> list[Op]:
    """ARGMAX's axis renumbered; without keepdims the dims left must keep their order (NCHW
    axis 1 -> NHWC 3: (N, H, W) either way), else the op is wrapped in TRANSPOSEs."""
    x, y, a = op.inputs[0], op.outputs[0], ArgmaxAttrs.of(op)
    axis = a.axis % len(lo.perm[x])
    kept = [p for p in lo.perm[x] if p != axis]
    same = lo.perm[y] == lo.perm[x] if a.keepdims else kept == sorted(kept)
    if not same or (not a.keepdims and lo.perm[y] != tuple(range(len(kept)))):
        return lo.wrapped(op)
    return [op.with_(attrs=dataclasses.replace(a, axis=lo.axis(x, axis)))]


def _axis_attr(lo: _Layout, op: Op) -> list[Op]:
    a = AxisAttrs.of(op) if op.kind is OpKind.CONCATENATION else SoftmaxAttrs.of(op)
    return [op.with_(attrs=dataclasses.replace(a, axis=lo.axis(op.outputs[0], a.axis)))]


def _concatenation(lo: _Layout, op: Op) -> list[Op]:
    """The axis renumbered, and a constant operand (CoordConv's coordinate channels, a class
    token) laid out as the activations beside it: the output's order."""
    perm = lo.perm[op.outputs[0]]
    ins = tuple(
        lo.const(n, lambda d: d.transpose(perm), "nhwc")
        if lo.g.tensors[n].data is not None and perm != tuple(range(len(perm)))
        else n
        for n in op.inputs
    )
    return _axis_attr(lo, op.with_(inputs=ins))


def _strided_slice(lo: _Layout, op: Op) -> list[Op]:
    a, perm = StridedSliceAttrs.of(op), lo.perm[op.inputs[0]]
    if lo.perm[op.outputs[0]] != perm:
        return lo.wrapped(op)
    moved = {k: tuple(getattr(a, k)[p] for p in perm) for k in ("begin", "size", "strides")}
    return [op.with_(attrs=StridedSliceAttrs(**moved))]


def _slice(lo: _Layout, op: Op) -> list[Op]:
    """SLICE's begin/size follow a held 1-D activation's (N, L, C) when its output is held too
    (a reflect pad's slices over time); any other SLICE runs in the model layout."""
    a, perm = SliceAttrs.of(op), lo.perm[op.inputs[0]]
    if lo.perm[op.outputs[0]] != perm or len(perm) != 3 or perm == (0, 1, 2):
        return lo.wrapped(op)
    return [op.with_(attrs=SliceAttrs(begin=tuple(a.begin[p] for p in perm),
                                      size=tuple(a.size[p] for p in perm)))]  # fmt: skip


def _group_norm(lo: _Layout, op: Op) -> list[Op]:
    a = GroupNormAttrs.of(op)
    return [op.with_(attrs=dataclasses.replace(a, axis=lo.axis(op.outputs[0], a.axis)))]


def _pad(lo: _Layout, op: Op) -> list[Op]:
    a = PadAttrs.of(op)
    pads = tuple(a.pads[p] for p in lo.perm[op.inputs[0]])
    return [op.with_(attrs=dataclasses.replace(a, pads=pads))]


def _transpose(lo: _Layout, op: Op) -> list[Op]:
    p_in, p_out, p = lo.perm[op.inputs[0]], lo.perm[op.outputs[0]], TransposeAttrs.of(op).perm
    return [op.with_(attrs=TransposeAttrs(perm=tuple(p_in.index(p[q]) for q in p_out)))]


def _reshape(lo: _Layout, op: Op) -> list[Op]:
    x, (y,) = op.inputs[0], op.outputs
    p_in, p_out = lo.perm.get(x, tuple(range(len(lo.g.tensors[x].shape)))), lo.perm[y]  # a
    # constant (a layer-scale parameter reshaped in forward) is held in the model's order
    shape_in, shape_out = lo.g.tensors[x].shape, lo.g.tensors[y].shape
    idx = np.arange(int(np.prod(shape_in))).reshape(shape_in)
    if np.array_equal(idx.transpose(p_in).ravel(), idx.reshape(shape_out).transpose(p_out).ravel()):
        return [op.with_(kind=OpKind.RESHAPE, attrs={"shape": lo.rw.tensors[y].shape})]
    return lo.wrapped(op.with_(kind=OpKind.RESHAPE, attrs={"shape": shape_out}))


def _transpose_conv(lo: _Layout, op: Op) -> list[Op]:
    w = lo.const(op.inputs[1], lambda d: d.transpose(1, 2, 3, 0), "nhwc")
    return [op.with_(inputs=(op.inputs[0], w, *op.inputs[2:]))]


HANDLERS: dict[OpKind, Callable[[_Layout, Op], list[Op]]] = {
    OpKind.CONV_2D: _conv,  # filter (O, I, KH, KW) -> (O, KH, KW, I)
    OpKind.DEPTHWISE_CONV_2D: _conv,  # filter (O, 1, KH, KW) -> (1, KH, KW, O)
    OpKind.TRANSPOSE_CONV_2D: _transpose_conv,  # filter (I, O, KH, KW) -> (O, KH, KW, I)
    OpKind.MEAN: _mean,  # axes (2, 3) -> (1, 2)
    OpKind.REDUCE_SUM: _mean,  # axes as MEAN's
    OpKind.REDUCE_MAX: _mean,
    OpKind.REDUCE_MIN: _mean,
    OpKind.ARGMAX: _argmax,  # axis 1 -> 3
    OpKind.CONCATENATION: _concatenation,  # axis 1 -> 3, constants NHWC
    OpKind.SOFTMAX: _axis_attr,  # axis 1 -> 3
    OpKind.PAD: _pad,  # pads (N, C, H, W) -> (N, H, W, C)
    OpKind.GROUP_NORM: _group_norm,  # axis 1 -> 3
    OpKind.STRIDED_SLICE: _strided_slice,  # begin/size/strides (N, C, H, W) -> (N, H, W, C)
    OpKind.SLICE: _slice,  # begin/size of a held 1-D activation: (N, C, L) -> (N, L, C)
    OpKind.TRANSPOSE: _transpose,  # perm composed with the layouts
    OpKind.RESHAPE: _reshape,  # same memory order -> RESHAPE, else TRANSPOSEs
    OpKind.FLATTEN: _reshape,
}


def to_nhwc(graph: Graph) -> PassResult:
    """NCHW -> NHWC (see the module docstring); an NHWC graph is returned unchanged."""
    if graph.layout == "NHWC":
        return PassResult(graph, False)
    lo = _Layout(graph)
    for op in lo.rw:
        for new in lo.convert(op):
            lo.rw.emit(new)
    boundary: dict[str, Perm] = {}
    for name in (*graph.inputs, *graph.outputs):
        old = tuple(graph.boundary.get(name, range(len(graph.tensors[name].shape))))
        p = lo.perm[name]
        combined = tuple(old[i] for i in p) if len(old) == len(p) else old
        if combined != tuple(range(len(combined))):
            boundary[name] = combined
    result = lo.rw.finish()
    return PassResult(result.graph.with_(layout="NHWC", boundary=boundary), True)
