"""Lowering an int8 qgraph to Neuron operands and operations (NNAPI operand orders, §4).

Each graph tensor becomes one operand: activations TENSOR_QUANT8_ASYMM_SIGNED (scale, zero
point), per-channel weights TENSOR_QUANT8_SYMM_PER_CHANNEL (channelDim 0 for CONV_2D and
FULLY_CONNECTED, 3 for DEPTHWISE_CONV_2D, scale 0 with the scales beside), per-tensor int8
constants TENSOR_QUANT8_ASYMM_SIGNED, bias TENSOR_INT32 (scale s_in·s_w, or 0 when per-channel).
Op attributes become scalar operands in NNAPI order, always in the explicit-padding form with
the NCHW flag false and the dilation pair present:

    CONV_2D            x w b  pad_l pad_r pad_t pad_b  stride_w stride_h  fuse  nchw  dil_w dil_h
    DEPTHWISE_CONV_2D  x w b  pad_l pad_r pad_t pad_b  stride_w stride_h  mult fuse nchw dil_w dil_h
    *_POOL_2D          x  pad_l pad_r pad_t pad_b  stride_w stride_h  filter_w filter_h  fuse nchw
    RESIZE_BILINEAR    x  out_w out_h  nchw align_corners half_pixel_centers
    MEAN               x  axes[]  keep_dims(i32)       PAD  x  paddings[rank,2]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mdla_ir.graph import Graph, Op, Tensor
from mdla_ir.ops import FUSE_CODES, OpKind
from mdla_runtime import container as fmt
from mdla_runtime.errors import LoweringError

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
    if t.dtype == "int32":
        entry |= {"type": fmt.TENSOR_INT32, "scale": 0.0, "zero_point": 0}
        return entry, None if data is None else data.astype("<i4").tobytes()
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


def _bias(low: Lowered, graph: Graph, op: Op, channels: int) -> int:
    """The op's int32 bias operand, or a zero bias (NNAPI requires one), with NNAPI's scale."""
    x, w = (graph.tensors[n].quant for n in op.inputs[:2])
    per_channel = w is not None and len(w.scale) > 1
    scale = 0.0 if per_channel or x is None or w is None else x.scale[0] * w.scale[0]
    if len(op.inputs) > 2:
        idx = _operand(low, graph, op.inputs[2])
        low.operands[idx]["scale"] = float(np.float32(scale))
        return idx
    entry = {"name": f"{op.name}.bias", "type": fmt.TENSOR_INT32, "dims": [channels]}
    entry |= {"scale": float(np.float32(scale)), "zero_point": 0}
    return low.add(entry, np.zeros(channels, "<i4").tobytes())


def _fuse(low: Lowered, op: Op) -> int:
    fuse = op.attrs.get("fuse", "NONE")
    if fuse not in FUSE_CODES:
        raise _fail(op, f"fuse {fuse!r} is not one of {sorted(FUSE_CODES)}")
    return low.i32(FUSE_CODES[fuse])


def _window(low: Lowered, op: Op) -> list[int]:
    t, b, left, r = (int(p) for p in op.attrs.get("padding", (0, 0, 0, 0)))
    sh, sw = (int(s) for s in op.attrs.get("stride", (1, 1)))
    return [low.i32(v) for v in (left, r, t, b, sw, sh)]


def _conv(low: Lowered, graph: Graph, op: Op) -> list[int]:
    depthwise = op.kind is OpKind.DEPTHWISE_CONV_2D
    if op.attrs.get("groups", 1) != 1:
        raise _fail(op, f"groups={op.attrs['groups']}: legalize grouped convolutions first")
    x = _operand(low, graph, op.inputs[0])
    w_shape = graph.tensors[op.inputs[1]].shape
    w = _operand(low, graph, op.inputs[1], 3 if depthwise else 0)
    channels = w_shape[3] if depthwise else w_shape[0]
    ins = [x, w, _bias(low, graph, op, channels), *_window(low, op)]
    if depthwise:
        c_in = graph.tensors[op.inputs[0]].shape[-1]
        ins.append(low.i32(int(op.attrs.get("multiplier", channels // max(c_in, 1)))))
    dh, dw = (int(d) for d in op.attrs.get("dilation", (1, 1)))
    return [*ins, _fuse(low, op), low.boolean(False), low.i32(dw), low.i32(dh)]


def _pool(low: Lowered, graph: Graph, op: Op) -> list[int]:
    kh, kw = (int(k) for k in op.attrs["kernel"])
    x = _operand(low, graph, op.inputs[0])
    return [x, *_window(low, op), low.i32(kw), low.i32(kh), _fuse(low, op), low.boolean(False)]


def _fc(low: Lowered, graph: Graph, op: Op) -> list[int]:
    x, w = _operand(low, graph, op.inputs[0]), _operand(low, graph, op.inputs[1], 0)
    units = graph.tensors[op.inputs[1]].shape[0]
    return [x, w, _bias(low, graph, op, units), _fuse(low, op)]


def _rank(graph: Graph, op: Op) -> int:
    return len(graph.tensors[op.inputs[0]].shape)


def _inputs(low: Lowered, graph: Graph, op: Op) -> list[int]:
    return [_operand(low, graph, n) for n in op.inputs]


Lower = Callable[[Lowered, Graph, Op], list[int]]
_RULES: dict[OpKind, Lower] = {
    OpKind.CONV_2D: _conv,
    OpKind.DEPTHWISE_CONV_2D: _conv,
    OpKind.AVERAGE_POOL_2D: _pool,
    OpKind.MAX_POOL_2D: _pool,
    OpKind.FULLY_CONNECTED: _fc,
    OpKind.ADD: lambda low, g, op: [*_inputs(low, g, op), _fuse(low, op)],
    OpKind.SUB: lambda low, g, op: [*_inputs(low, g, op), _fuse(low, op)],
    OpKind.MUL: lambda low, g, op: [*_inputs(low, g, op), _fuse(low, op)],
    OpKind.DIV: lambda low, g, op: [*_inputs(low, g, op), _fuse(low, op)],
    OpKind.CONCATENATION: lambda low, g, op: [
        *_inputs(low, g, op),
        low.i32(int(op.attrs.get("axis", 0)) % _rank(g, op)),
    ],
    OpKind.SOFTMAX: lambda low, g, op: [
        *_inputs(low, g, op),
        low.f32(float(op.attrs.get("beta", 1.0))),
        low.i32(int(op.attrs.get("axis", -1))),
    ],
    OpKind.PAD: lambda low, g, op: [
        *_inputs(low, g, op),
        low.i32_tensor([int(v) for p in op.attrs["pads"] for v in p], (_rank(g, op), 2)),
    ],
    OpKind.RESHAPE: lambda low, g, op: [
        _operand(low, g, op.inputs[0]),
        low.i32_tensor([int(d) for d in op.attrs["shape"]]),
    ],
    OpKind.TRANSPOSE: lambda low, g, op: [
        _operand(low, g, op.inputs[0]),
        low.i32_tensor([int(d) for d in op.attrs["perm"]]),
    ],
    OpKind.MEAN: lambda low, g, op: [
        _operand(low, g, op.inputs[0]),
        low.i32_tensor([int(a) % _rank(g, op) for a in op.attrs["axes"]]),
        low.i32(1 if op.attrs.get("keepdims", False) else 0),
    ],
    OpKind.RESIZE_BILINEAR: lambda low, g, op: [
        _operand(low, g, op.inputs[0]),
        low.i32(int(op.attrs["size"][1])),
        low.i32(int(op.attrs["size"][0])),
        low.boolean(False),
        low.boolean(bool(op.attrs.get("align_corners", False))),
        low.boolean(bool(op.attrs.get("half_pixel_centers", False))),
    ],
    OpKind.BATCH_MATMUL: lambda low, g, op: [
        *_inputs(low, g, op),
        low.boolean(bool(op.attrs.get("adj_x", False))),
        low.boolean(bool(op.attrs.get("adj_y", False))),
    ],
}
_PLAIN: tuple[OpKind, ...] = (
    OpKind.RELU,
    OpKind.RELU6,
    OpKind.LOGISTIC,
    OpKind.TANH,
    OpKind.HARD_SWISH,
)
_PLAIN += (OpKind.QUANTIZE, OpKind.DEQUANTIZE, OpKind.EXP, OpKind.LOG, OpKind.SQRT, OpKind.RSQRT)


def lower(graph: Graph) -> Lowered:
    """Operands and operations of `graph` (an int8 NHWC qgraph) in Neuron terms."""
    if graph.layout != "NHWC":
        raise LoweringError(graph.name, None, f"layout {graph.layout}: int8 graphs are NHWC")
    low = Lowered()
    for name in graph.inputs:
        _operand(low, graph, name)
    for op in graph.ops:
        if not op.kind.is_neuron:
            raise _fail(op, "not a Neuron operation: legalize the graph before saving it")
        rule = _RULES.get(op.kind)
        if rule is None and op.kind not in _PLAIN:
            raise _fail(op, "no lowering to Neuron operands")
        try:
            ins = rule(low, graph, op) if rule is not None else _inputs(low, graph, op)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            if isinstance(exc, LoweringError):
                raise
            raise _fail(op, f"bad attributes {dict(op.attrs)}: {exc!r}") from exc
        outs = [_operand(low, graph, n) for n in op.outputs]
        low.operations.append(
            {"code": op.kind.value, "inputs": ins, "outputs": outs, "name": op.name}
        )
    return low
