"""Lowering an int8 qgraph to Neuron operands and operations.

Each graph tensor becomes one operand: activations TENSOR_QUANT8_ASYMM_SIGNED (scale, zero
point; the int16 ones of QuantConfig.a16 TENSOR_QUANT16_SYMM, their int64 biases TENSOR_INT32,
as LiteRT casts them), per-channel weights TENSOR_QUANT8_SYMM_PER_CHANNEL (channelDim 0 for
CONV_2D and FULLY_CONNECTED, 3 for DEPTHWISE_CONV_2D, scale 0 with the scales beside), per-tensor
int8 constants TENSOR_QUANT8_ASYMM_SIGNED, bias TENSOR_INT32 (scale s_in·s_w, or 0 when
per-channel); float32 tensors (a host op's constants, and the activations of a cpu partition's
float region: `mdla_quant.float_region`) TENSOR_FLOAT32 with scale 0.

Op attributes become operands in NNAPI order: each rule below gives the value of every slot of
the op's first schema form (`mdla_ir.schema.SCHEMA[kind].forms[0]`: the explicit-padding form,
with the NCHW flag false and every optional slot present), and `lower` lays them out in the
form's order, typed by the slot's letter (a tensor name for `a`/`w`/`*`, a list of ints for `t`,
a number for `i`/`f`/`B`, or a callable returning an operand index).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mdla_ir.attrs import (
    COMPARES,
    AdaptivePoolAttrs,
    ArgmaxAttrs,
    AttrError,
    AxisAttrs,
    BlockAttrs,
    ConvAttrs,
    FuseAttrs,
    GroupNormAttrs,
    GruAttrs,
    MatmulAttrs,
    MeanAttrs,
    NormAttrs,
    PadAttrs,
    PoolAttrs,
    ReshapeAttrs,
    ResizeAttrs,
    SelectAttrs,
    SoftmaxAttrs,
    StridedSliceAttrs,
    TransposeAttrs,
)
from mdla_ir.graph import Graph, Op, Tensor
from mdla_ir.lowerable import form_problems
from mdla_ir.ops import FUSE_CODES, OpKind
from mdla_ir.schema import HOST_BY_CODE, HOST_CODES, SCHEMA, Form, group
from mdla_ir.shapes import strided_slice_ends
from mdla_runtime.errors import LoweringError
from mdla_runtime.format import container as fmt

Array = np.ndarray[Any, Any]


@dataclass
class Lowered:
    """Header entries (msgpack-ready) and the constant arrays, in operand order."""

    operands: list[dict[str, Any]] = field(default_factory=list)
    operations: list[dict[str, Any]] = field(default_factory=list)
    blobs: list[tuple[int, bytes]] = field(default_factory=list)  # (operand index, bytes)
    index: dict[str, int] = field(default_factory=dict)

    def add(self, entry: dict[str, Any], data: bytes | None = None) -> int:
        self.operands.append(entry)
        if data is not None:
            self.blobs.append((len(self.operands) - 1, data))
        return len(self.operands) - 1

    def i32(self, v: int) -> int:
        return self.add({"type": fmt.INT32, "dims": [], "value": int(v)})

    def f32(self, v: float) -> int:
        return self.add({"type": fmt.FLOAT32, "dims": [], "value": float(np.float32(v))})

    def boolean(self, v: bool) -> int:
        return self.add({"type": fmt.BOOL, "dims": [], "value": bool(v)})

    def i32_tensor(self, values: Array | list[int], shape: tuple[int, ...] | None = None) -> int:
        arr = np.asarray(values, dtype="<i4")
        arr = arr.reshape(shape) if shape is not None else arr
        entry = {"type": fmt.TENSOR_INT32, "dims": list(arr.shape), "scale": 0.0, "zero_point": 0}
        return self.add(entry, arr.tobytes())


def _fail(op: Op, why: str) -> LoweringError:
    return LoweringError(op.name, None, f"op {op.kind.name}: {why}")


def _tensor_entry(t: Tensor, channel_dim: int | None) -> tuple[dict[str, Any], bytes | None]:
    q = t.quant
    entry: dict[str, Any] = {"name": t.name, "dims": [int(d) for d in t.shape]}
    data = None if t.data is None else np.ascontiguousarray(t.data)
    if t.dtype in ("int32", "int64"):  # a 16x8 op's int64 bias: TENSOR_INT32, as LiteRT casts it
        if data is not None and data.size and int(np.abs(data.astype(np.int64)).max()) >= 2**31:
            raise LoweringError(
                t.name, None, "an int64 bias beyond int32: TENSOR_INT32 cannot hold it"
            )
        entry |= {"type": fmt.TENSOR_INT32, "scale": 0.0, "zero_point": 0}
        return entry, None if data is None else data.astype("<i4").tobytes()
    if t.dtype == "int16":  # QuantConfig.a16: TFLite's 16x8, symmetric
        if q is None or len(q.scale) != 1 or q.zero_point != (0,):
            raise LoweringError(t.name, None, f"int16 tensor quant {q}: need one scale, zp 0")
        entry |= {"type": fmt.TENSOR_QUANT16_SYMM, "scale": float(q.scale[0]), "zero_point": 0}
        return entry, None if data is None else data.astype("<i2").tobytes()
    if t.dtype == "float32" and (data is not None or q is None):  # a host op's constant, or
        entry |= {"type": fmt.TENSOR_FLOAT32, "scale": 0.0, "zero_point": 0}  # a float region's
        return entry, None if data is None else data.astype("<f4").tobytes()
    if t.dtype != "int8" or q is None:
        raise LoweringError(t.name, None, f"tensor dtype {t.dtype} quant {q}: need int8 with quant")
    if len(q.scale) > 1 or (q.per_channel and data is not None):
        dim = q.channel_dim if channel_dim is None else channel_dim
        if any(z != 0 for z in q.zero_point):
            raise LoweringError(t.name, None, "per-channel weights must be symmetric (zp 0)")
        entry |= {"type": fmt.TENSOR_QUANT8_SYMM_PER_CHANNEL, "scale": 0.0, "zero_point": 0}
        entry |= {"channel_dim": int(dim or 0), "scales": [float(s) for s in q.scale]}
    else:
        entry |= {"type": fmt.TENSOR_QUANT8_ASYMM_SIGNED, "scale": float(q.scale[0])}
        entry["zero_point"] = int(q.zero_point[0])
    return entry, None if data is None else data.astype(np.int8).tobytes()


def _operand(low: Lowered, graph: Graph, name: str, channel_dim: int | None = None) -> int:
    if name not in low.index:
        entry, data = _tensor_entry(graph.tensors[name], channel_dim)
        low.index[name] = low.add(entry, data)
    return low.index[name]


def _bias_scale(graph: Graph, op: Op) -> float:
    """NNAPI's bias scale: 0 beside per-channel weights (the channels' scales apply), else the
    scale the quantizer recorded on the bias (s_in * s_w as it computed it), or for a zero bias
    that lowering adds, s_in * s_w."""
    x, w = (graph.tensors[n].quant for n in op.inputs[:2])
    if x is None or w is None or len(w.scale) > 1:
        return 0.0
    bias = graph.tensors[op.inputs[2]].quant if len(op.inputs) > 2 else None
    if bias is None:
        return x.scale[0] * w.scale[0]
    if len(set(bias.scale)) != 1:
        raise _fail(op, f"bias `{op.inputs[2]}` has per-channel scales beside per-tensor weights")
    return bias.scale[0]


def _bias(low: Lowered, graph: Graph, op: Op, channels: int) -> int:
    """The op's int32 bias operand, or a zero bias (NNAPI requires one), with NNAPI's scale."""
    scale = _bias_scale(graph, op)
    if len(op.inputs) > 2:
        idx = _operand(low, graph, op.inputs[2])
        low.operands[idx]["scale"] = float(np.float32(scale))
        return idx
    entry = {"name": f"{op.name}.bias", "type": fmt.TENSOR_INT32, "dims": [channels]}
    entry |= {"scale": float(np.float32(scale)), "zero_point": 0}
    return low.add(entry, np.zeros(channels, "<i4").tobytes())


def _fuse(op: Op, fuse: str) -> int:
    if fuse not in FUSE_CODES:
        raise _fail(op, f"fuse {fuse!r} is not one of {sorted(FUSE_CODES)}")
    return FUSE_CODES[fuse]


Slots = dict[str, Any]


def _window(padding: tuple[int, ...], stride: tuple[int, ...]) -> Slots:
    t, b, left, r = padding
    sh, sw = stride
    names = ("pad_left", "pad_right", "pad_top", "pad_bottom", "stride_w", "stride_h")
    return dict(zip(names, (left, r, t, b, sw, sh), strict=True))


def _conv(low: Lowered, g: Graph, op: Op) -> Slots:
    a = ConvAttrs.of(op)
    problems = form_problems(op)  # the predicate explain reports with (mdla_ir.lowerable)
    if problems:
        raise _fail(op, f"{problems[0]}: legalize it first (rule grouped_conv_to_dense)")
    depthwise = op.kind is OpKind.DEPTHWISE_CONV_2D
    w_shape = g.tensors[op.inputs[1]].shape
    channels = w_shape[3] if depthwise else w_shape[0]
    slots: Slots = {"x": op.inputs[0], "filter": (op.inputs[1], 3 if depthwise else 0)}
    slots |= {"bias": lambda: _bias(low, g, op, channels)} | _window(a.padding, a.stride)
    if depthwise:
        c_in = g.tensors[op.inputs[0]].shape[-1]
        slots["multiplier"] = channels // max(c_in, 1) if a.multiplier is None else a.multiplier
    dh, dw = a.dilation
    return slots | {"fuse": _fuse(op, a.fuse), "nchw": False, "dilation_w": dw, "dilation_h": dh}


def _transpose_conv(low: Lowered, g: Graph, op: Op) -> Slots:
    """The explicit-pads form: x filter bias pads strides fuse nchw (the crops of the full
    (in-1)*s + k output are the pads)."""
    a = ConvAttrs.of(op)
    channels = g.tensors[op.inputs[1]].shape[0]
    slots: Slots = {"x": op.inputs[0], "filter": (op.inputs[1], 0)}
    slots |= {"bias": lambda: _bias(low, g, op, channels)} | _window(a.padding, a.stride)
    return slots | {"fuse": _fuse(op, a.fuse), "nchw": False}


def _pool(low: Lowered, g: Graph, op: Op) -> Slots:
    a = PoolAttrs.of(op)
    kh, kw = a.kernel
    slots = {"x": op.inputs[0], **_window(a.padding, a.stride), "filter_w": kw, "filter_h": kh}
    return slots | {"fuse": _fuse(op, a.fuse), "nchw": False}


def _fc(low: Lowered, g: Graph, op: Op) -> Slots:
    shape = g.tensors[op.inputs[0]].shape
    if len(shape) < 2:  # NNAPI: "a tensor of at least rank 2"; the emulator refuses it too
        raise _fail(
            op,
            f"input `{op.inputs[0]}` has rank {len(shape)} {tuple(shape)}; the Neuron ABI's "
            "FULLY_CONNECTED takes rank >= 2, so the adapter would refuse it (BAD_DATA): "
            f"give the input a batch dimension, e.g. reshape it to (1, {shape[0] if shape else 1})",
        )
    units = g.tensors[op.inputs[1]].shape[0]
    bias = lambda: _bias(low, g, op, units)  # noqa: E731
    fuse = _fuse(op, FuseAttrs.of(op).fuse)
    return {"x": op.inputs[0], "weights": (op.inputs[1], 0), "bias": bias, "fuse": fuse}


def _binary(low: Lowered, g: Graph, op: Op) -> Slots:
    return {"a": op.inputs[0], "b": op.inputs[1], "fuse": _fuse(op, FuseAttrs.of(op).fuse)}


def _rank(graph: Graph, op: Op) -> int:
    return len(graph.tensors[op.inputs[0]].shape)


def _concat(low: Lowered, g: Graph, op: Op) -> Slots:
    return {"inputs": list(op.inputs), "axis": AxisAttrs.of(op).axis % _rank(g, op)}


def _softmax(low: Lowered, g: Graph, op: Op) -> Slots:
    a = SoftmaxAttrs.of(op)
    return {"x": op.inputs[0], "beta": a.beta, "axis": a.axis}


def _pad(low: Lowered, g: Graph, op: Op) -> Slots:
    pads = np.asarray([v for p in PadAttrs.of(op).pads for v in p], "<i4")
    return {"x": op.inputs[0], "paddings": pads.reshape(_rank(g, op), 2)}


def _mean(low: Lowered, g: Graph, op: Op) -> Slots:
    a = MeanAttrs.of(op)
    axes = [ax % _rank(g, op) for ax in a.axes]
    return {"x": op.inputs[0], "axes": axes, "keep_dims": 1 if a.keepdims else 0}


def _resize(low: Lowered, g: Graph, op: Op) -> Slots:
    a = ResizeAttrs.of(op)
    h, w = a.size
    slots = {"x": op.inputs[0], "out_w": w, "out_h": h, "nchw": False}
    return slots | {"align_corners": a.align_corners, "half_pixel_centers": a.half_pixel_centers}


def _matmul(low: Lowered, g: Graph, op: Op) -> Slots:
    a = MatmulAttrs.of(op)
    return {"lhs": op.inputs[0], "rhs": op.inputs[1], "adj_x": a.adj_x, "adj_y": a.adj_y}


def _unary(low: Lowered, g: Graph, op: Op) -> Slots:
    """Ops whose form is the single input `x` (activations, QUANTIZE, ...): no table line."""
    return {"x": op.inputs[0]}


Rule = Callable[[Lowered, Graph, Op], Slots]


def _strided_slice(low: Lowered, g: Graph, op: Op) -> Slots:
    """x begin end strides begin_mask(0) end_mask shrink_axis_mask(0) (TFLite's semantics)."""
    a = StridedSliceAttrs.of(op)
    end, mask = strided_slice_ends(a, g.tensors[op.inputs[0]].shape)
    return {"x": op.inputs[0], "begin": a.begin, "end": end, "strides": a.strides,
            "begin_mask": 0, "end_mask": mask, "shrink_axis_mask": 0}  # fmt: skip


_RULES: dict[OpKind, Rule] = {
    OpKind.CONV_2D: _conv,  # x filter bias pads strides fuse nchw dilations
    OpKind.DEPTHWISE_CONV_2D: _conv,  # ... strides multiplier fuse nchw dilations
    OpKind.AVERAGE_POOL_2D: _pool,  # x pads strides filter_w filter_h fuse nchw
    OpKind.MAX_POOL_2D: _pool,
    OpKind.FULLY_CONNECTED: _fc,  # x weights bias fuse
    OpKind.ADD: _binary,  # a b fuse
    OpKind.SUB: _binary,
    OpKind.MUL: _binary,
    OpKind.DIV: _binary,
    OpKind.CONCATENATION: _concat,  # inputs... axis
    OpKind.SOFTMAX: _softmax,  # x beta axis
    OpKind.PAD: _pad,  # x paddings[rank, 2]
    OpKind.RESHAPE: lambda low, g, op: {"x": op.inputs[0], "shape": ReshapeAttrs.of(op).shape},
    OpKind.TRANSPOSE: lambda low, g, op: {"x": op.inputs[0], "perm": TransposeAttrs.of(op).perm},
    OpKind.STRIDED_SLICE: _strided_slice,  # x begin end strides masks
    OpKind.MEAN: _mean,  # x axes keep_dims(i32)
    OpKind.RESIZE_BILINEAR: _resize,  # x out_w out_h nchw align_corners half_pixel_centers
    OpKind.RESIZE_NEAREST_NEIGHBOR: _resize,
    OpKind.BATCH_MATMUL: _matmul,  # lhs rhs adj_x adj_y
    OpKind.DEPTH_TO_SPACE: lambda low, g, op: {
        "x": op.inputs[0],
        "block_size": BlockAttrs.of(op).block_size,
        "nchw": False,
    },
    OpKind.TRANSPOSE_CONV_2D: _transpose_conv,  # x filter bias pads strides fuse nchw
    OpKind.PRELU: lambda low, g, op: {"x": op.inputs[0], "alpha": op.inputs[1]},
}  # every op whose schema form is the one slot `x` lowers with `_unary`


def _layer_norm(low: Lowered, g: Graph, op: Op) -> Slots:
    """Host op (a CPU partition's): x weight bias eps; an absent weight is 1, bias 0."""
    n = g.tensors[op.inputs[0]].shape[-1]
    norm = NormAttrs.of(op)
    if tuple(norm.normalized_shape or ()) != (n,):
        raise _fail(op, f"normalized shape {norm.normalized_shape}: the engine normalizes the last "
                    f"axis ({n} values) only")  # fmt: skip

    def const(k: int, fill: float) -> Any:
        if len(op.inputs) > k:
            return op.inputs[k]
        data = np.full(n, fill, "<f4").tobytes()
        entry = {"name": f"{op.name}.{k}", "type": fmt.TENSOR_FLOAT32, "dims": [n]}
        return lambda: low.add(entry | {"scale": 0.0, "zero_point": 0}, data)

    return {"x": op.inputs[0], "weight": const(1, 1.0), "bias": const(2, 0.0), "eps": norm.eps}


def _table(low: Lowered, g: Graph, op: Op) -> Slots:
    """Host op of the table group: x table (the int8 table mdla_quant's `with_tables`
    attached)."""
    if len(op.inputs) != 2:
        raise _fail(op, "no table input: quantize the graph with mdla_quant (it attaches one)")
    return {"x": op.inputs[0], "table": op.inputs[1]}


def _argmax(low: Lowered, g: Graph, op: Op) -> Slots:
    """Host op: x axis (non-negative; keepdims is the output operand's rank)."""
    return {"x": op.inputs[0], "axis": ArgmaxAttrs.of(op).axis % len(g.tensors[op.inputs[0]].shape)}


def _gru(low: Lowered, g: Graph, op: Op) -> Slots:
    """Host op: x w_ih w_hh b_ih b_hh bidirectional (weights stacked per direction)."""
    names = ("x", "w_ih", "w_hh", "b_ih", "b_hh")
    if len(op.inputs) != len(names):
        raise _fail(op, f"takes {len(names)} inputs ({', '.join(names)}), got {len(op.inputs)}")
    slots: Slots = dict(zip(names, op.inputs, strict=True))
    return slots | {"bidirectional": GruAttrs.of(op).bidirectional}


def _fc_f32(low: Lowered, g: Graph, op: Op) -> Slots:
    """Host op: x weights bias, all float32 (no fused activation)."""
    if len(op.inputs) != 3:
        raise _fail(op, f"takes x, weights and bias, got {len(op.inputs)} inputs")
    return {"x": op.inputs[0], "weights": op.inputs[1], "bias": op.inputs[2]}


def _group_norm(low: Lowered, g: Graph, op: Op) -> Slots:
    """Host op: x weight bias groups axis eps (weight and bias float32 [C]; axis non-negative)."""
    if len(op.inputs) != 3:
        raise _fail(op, f"takes x, weight and bias, got {len(op.inputs)} inputs")
    a = GroupNormAttrs.of(op)
    axis = a.axis % len(g.tensors[op.inputs[0]].shape)
    return {"x": op.inputs[0], "weight": op.inputs[1], "bias": op.inputs[2], "groups": a.groups,
            "axis": axis, "eps": a.eps}  # fmt: skip


TABLES = group("table")


def _adaptive_avg_pool(low: Lowered, g: Graph, op: Op) -> Slots:
    """Host op of either adaptive pool: x out_h out_w (NHWC; torch's bins, csrc/cpu/
    adaptive_pool.c)."""
    out_h, out_w = AdaptivePoolAttrs.of(op).output_size
    return {"x": op.inputs[0], "out_h": out_h, "out_w": out_w}


def _max_pool_3d(low: Lowered, g: Graph, op: Op) -> Slots:
    """Host op: x kernel (t h w) stride (t h w) padding (t h w), NDHWC."""
    a = PoolAttrs.of(op)
    names = ("kernel_t", "kernel_h", "kernel_w", "stride_t", "stride_h", "stride_w")
    slots: Slots = dict(zip(names, (*a.kernel, *a.stride), strict=True))
    return {"x": op.inputs[0], **slots, "pad_t": a.padding[0], "pad_h": a.padding[1],
            "pad_w": a.padding[2]}  # fmt: skip


def _select(low: Lowered, g: Graph, op: Op) -> Slots:
    """Host op: x y a b compare (the index of its comparison in COMPARES; csrc/cpu/select.c)."""
    x, y, a, b = op.inputs
    return {"x": x, "y": y, "a": a, "b": b, "compare": COMPARES.index(SelectAttrs.of(op).compare)}


_HOST_RULES: dict[OpKind, Rule] = {
    OpKind.LAYER_NORM: _layer_norm,
    **dict.fromkeys(TABLES, _table),  # GELU, ELU, EXP, ...: x table (int8)
    OpKind.ARGMAX: _argmax,
    OpKind.GRU: _gru,  # x w_ih w_hh b_ih b_hh bidirectional (float32)
    OpKind.FULLY_CONNECTED_F32: _fc_f32,  # x weights bias (float32)
    OpKind.CONCATENATION_F32: _concat,  # inputs... axis (float32)
    OpKind.GROUP_NORM: _group_norm,  # x weight bias groups axis eps
    OpKind.ADAPTIVE_AVG_POOL_2D: _adaptive_avg_pool,  # x out_h out_w
    OpKind.ADAPTIVE_MAX_POOL_2D: _adaptive_avg_pool,  # x out_h out_w
    OpKind.MAX_POOL_3D: _max_pool_3d,  # x kernel stride padding (t, h, w each)
    OpKind.SELECT: _select,  # x y a b compare
}


def _host_code(op: Op) -> int | None:
    """The host operation code `op` lowers to, or None for its Neuron operation. A Neuron op of
    the table group (EXP, SQRT, ...) is the host op only with the table mdla_quant attached (a
    CPU partition's); bare, it is the Neuron op a device is asked about (`workbench probe`)."""
    code = HOST_CODES.get(op.kind)
    if code is not None and op.kind.is_neuron and op.kind in TABLES and len(op.inputs) == 1:
        return None
    return code


def _form(op: Op) -> Form:
    """The schema form an op lowers to: a Neuron op's first, or a host op's (HOST_BY_CODE)."""
    code = _host_code(op)
    return SCHEMA[op.kind].forms[0] if code is None else HOST_BY_CODE[code].forms[0]


def lowering(kind: OpKind, host: bool = True) -> Rule | None:
    """The rule lowering a `kind` op to its schema form's slots (None: the op has none); `host`
    False asks for the Neuron operation's rule of a kind that is also a host op."""
    if host and kind in _HOST_RULES:
        return _HOST_RULES[kind]
    rule = _RULES.get(kind)
    if rule is None and SCHEMA[kind].forms and SCHEMA[kind].forms[0].slots == ("x",):
        return _unary
    return rule


def _slot(low: Lowered, graph: Graph, letter: str, value: Any) -> list[int]:
    """The operand(s) of one slot, typed by the slot's letter in the schema form."""
    if callable(value):
        return [value()]
    if letter == "i":
        return [low.i32(int(value))]
    if letter == "f":
        return [low.f32(float(value))]
    if letter == "B":
        return [low.boolean(bool(value))]
    if letter == "t" and not isinstance(value, str):
        return [
            low.i32_tensor([int(v) for v in value] if isinstance(value, list | tuple) else value)
        ]
    if letter.endswith("+"):
        return [_operand(low, graph, name) for name in value]
    name, channel_dim = value if isinstance(value, tuple) else (value, None)
    return [_operand(low, graph, name, channel_dim)]


def _lay_out(low: Lowered, graph: Graph, op: Op, slots: Slots) -> list[int]:
    form = _form(op)
    if set(slots) != set(form.slots):
        raise _fail(op, f"lowering gives slots {sorted(slots)}, the schema form {form.text!r}")
    return [
        i
        for s, t in zip(form.slots, form.letters, strict=True)
        for i in _slot(low, graph, t, slots[s])
    ]


def lower(graph: Graph) -> Lowered:
    """Operands and operations of `graph` (an int8 NHWC qgraph) in Neuron terms."""
    if graph.layout != "NHWC":
        raise LoweringError(graph.name, None, f"layout {graph.layout}: int8 graphs are NHWC")
    low = Lowered()
    for name in graph.inputs:
        _operand(low, graph, name)
    for op in graph.ops:
        if not op.kind.is_neuron and op.kind not in HOST_CODES:
            raise _fail(op, "not a Neuron operation: legalize the graph before saving it")
        code = _host_code(op)
        rule = lowering(op.kind, host=code is not None)
        if rule is None:
            raise _fail(op, "no lowering to Neuron operands")
        try:
            ins = _lay_out(low, graph, op, rule(low, graph, op))
        except AttrError as exc:
            raise _fail(op, str(exc)) from exc
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            if isinstance(exc, LoweringError):
                raise
            raise _fail(op, f"bad attributes {op.attrs}: {exc!r}") from exc
        outs = [_operand(low, graph, n) for n in op.outputs]
        code = op.kind.value if code is None else code
        low.operations.append({"code": code, "inputs": ins, "outputs": outs, "name": op.name})
    return low
