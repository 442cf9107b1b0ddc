"""Shared helpers of the emulator tests: drive libneuron_emu.so through ctypes (no engine).

`Emu` wraps the library; `NeuronModelBuilder` adds operands and operations; `lower_single_op`
turns a single-op mdla_quant qgraph into Neuron operands in NNAPI order (explicit padding forms,
per-channel weights with channelDim 0 for CONV_2D/FULLY_CONNECTED and 3 for DEPTHWISE_CONV_2D).
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mdla_emu import load_emulator
from mdla_ir.graph import Graph, Op, Tensor
from mdla_ir.ops import OpKind

Array = np.ndarray[Any, Any]

NO_ERROR, UNEXPECTED_NULL, BAD_DATA, UNMAPPABLE, BAD_STATE, BAD_VERSION = 0, 3, 4, 6, 7, 8
OUTPUT_INSUFFICIENT_SIZE = 9
INT32, FLOAT32, BOOL = 1, 0, 6
TENSOR_INT32, PER_CHANNEL, QUANT8_SYMM, QUANT8_SIGNED = 4, 11, 13, 14
FUSE = {"NONE": 0, "RELU": 1, "RELU1": 2, "RELU6": 3}
DEVICES = ("mtk-mdla", "mtk-gpu", "mtk-dsp")


class OperandType(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int32),
        ("dimensionCount", ctypes.c_uint32),
        ("dimensions", ctypes.POINTER(ctypes.c_uint32)),
        ("scale", ctypes.c_float),
        ("zeroPoint", ctypes.c_int32),
    ]


class PerChannel(ctypes.Structure):
    _fields_ = [
        ("channelDim", ctypes.c_uint32),
        ("scaleCount", ctypes.c_uint32),
        ("scales", ctypes.POINTER(ctypes.c_float)),
    ]


@functools.cache
def emu() -> ctypes.CDLL:
    return load_emulator()


def u32s(values: Sequence[int]) -> Any:
    return (ctypes.c_uint32 * max(len(values), 1))(*values)


def device(name: str) -> ctypes.c_void_p:
    lib = emu()
    count = ctypes.c_uint32()
    assert lib.Neuron_getDeviceCount(ctypes.byref(count)) == NO_ERROR
    for i in range(count.value):
        handle, text = ctypes.c_void_p(), ctypes.c_char_p()
        assert lib.Neuron_getDevice(i, ctypes.byref(handle)) == NO_ERROR
        assert lib.NeuronDevice_getName(handle, ctypes.byref(text)) == NO_ERROR
        if text.value == name.encode():
            return handle
    raise LookupError(name)


def device_array(names: Sequence[str]) -> Any:
    return (ctypes.c_void_p * len(names))(*[device(n).value for n in names])


@dataclass
class NeuronModelBuilder:
    """One NeuronModel under construction; keeps every buffer it hands over alive."""

    handle: ctypes.c_void_p = field(default_factory=ctypes.c_void_p)
    count: int = 0
    keep: list[Any] = field(default_factory=list)
    n_ops: int = 0

    def __post_init__(self) -> None:
        assert emu().NeuronModel_create(ctypes.byref(self.handle)) == NO_ERROR

    def operand(self, code: int, dims: Sequence[int] = (), scale: float = 0.0, zp: int = 0) -> int:
        arr = u32s(dims)
        t = OperandType(code, len(dims), arr if dims else None, scale, zp)
        rc = emu().NeuronModel_addOperand(self.handle, ctypes.byref(t))
        if rc != NO_ERROR:
            raise ValueError(f"addOperand -> {rc}")
        self.count += 1
        return self.count - 1

    def value(self, index: int, data: Array) -> int:
        buf = np.ascontiguousarray(data)
        self.keep.append(buf)
        return int(
            emu().NeuronModel_setOperandValue(self.handle, index, buf.ctypes.data, buf.nbytes)
        )

    def const(self, code: int, data: Array, scale: float = 0.0, zp: int = 0) -> int:
        index = self.operand(code, data.shape, scale, zp)
        assert self.value(index, data) == NO_ERROR
        return index

    def i32(self, v: int) -> int:
        return self.const(INT32, np.array(v, dtype=np.int32).reshape(()))

    def f32(self, v: float) -> int:
        return self.const(FLOAT32, np.array(v, dtype=np.float32).reshape(()))

    def boolean(self, v: bool) -> int:
        return self.const(BOOL, np.array(v, dtype=np.uint8).reshape(()))

    def per_channel(self, index: int, dim: int, scales: Sequence[float]) -> int:
        arr = (ctypes.c_float * len(scales))(*scales)
        q = PerChannel(dim, len(scales), arr)
        return int(
            emu().NeuronModel_setOperandSymmPerChannelQuantParams(
                self.handle, index, ctypes.byref(q)
            )
        )

    def operation(self, code: int, ins: Sequence[int], outs: Sequence[int]) -> int:
        rc = int(
            emu().NeuronModel_addOperation(
                self.handle, code, len(ins), u32s(ins), len(outs), u32s(outs)
            )
        )
        self.n_ops += rc == NO_ERROR
        return rc

    def identify(self, ins: Sequence[int], outs: Sequence[int]) -> int:
        return int(
            emu().NeuronModel_identifyInputsAndOutputs(
                self.handle, len(ins), u32s(ins), len(outs), u32s(outs)
            )
        )

    def finish(self) -> int:
        return int(emu().NeuronModel_finish(self.handle))

    def supported(self, devices: Sequence[str]) -> list[bool]:
        flags = (ctypes.c_bool * max(self.n_ops, 1))()
        rc = emu().NeuronModel_getSupportedOperationsForDevices(
            self.handle, device_array(devices), len(devices), flags
        )
        assert rc == NO_ERROR
        return [bool(f) for f in flags[: self.n_ops]]

    def free(self) -> None:
        emu().NeuronModel_free(self.handle)


@dataclass
class Compiled:
    handle: ctypes.c_void_p
    out_shapes: list[tuple[int, ...]]

    def run(self, inputs: Sequence[Array]) -> list[Array]:
        lib = emu()
        ex = ctypes.c_void_p()
        assert lib.NeuronExecution_create(self.handle, ctypes.byref(ex)) == NO_ERROR
        outs = [np.zeros(s, dtype=np.int8) for s in self.out_shapes]
        try:
            for i, x in enumerate(inputs):
                buf = np.ascontiguousarray(x, dtype=np.int8)
                rc = lib.NeuronExecution_setInput(ex, i, None, buf.ctypes.data, buf.nbytes)
                assert rc == NO_ERROR
            for i, y in enumerate(outs):
                rc = lib.NeuronExecution_setOutput(ex, i, None, y.ctypes.data, y.nbytes)
                assert rc == NO_ERROR
            assert lib.NeuronExecution_compute(ex) == NO_ERROR
        finally:
            lib.NeuronExecution_free(ex)
        return outs

    def free(self) -> None:
        emu().NeuronCompilation_free(self.handle)


def compile_model(
    b: NeuronModelBuilder, devices: Sequence[str], out_shapes: list[tuple[int, ...]]
) -> tuple[int, Compiled]:
    lib = emu()
    c = ctypes.c_void_p()
    rc = lib.NeuronCompilation_createForDevices(
        b.handle, device_array(devices), len(devices), ctypes.byref(c)
    )
    if rc != NO_ERROR:
        return int(rc), Compiled(c, out_shapes)
    rc = lib.NeuronCompilation_finish(c)
    return int(rc), Compiled(c, out_shapes)


def _tensor(b: NeuronModelBuilder, t: Tensor) -> int:
    q = t.quant
    if t.data is None:
        assert q is not None
        return b.operand(QUANT8_SIGNED, t.shape, q.scale[0], q.zero_point[0])
    data = np.asarray(t.data)
    if data.dtype == np.int32:
        return b.const(TENSOR_INT32, data)
    assert q is not None
    if q.channel_dim is not None:
        index = b.operand(PER_CHANNEL, data.shape)
        assert b.per_channel(index, q.channel_dim, q.scale) == NO_ERROR
        assert b.value(index, data) == NO_ERROR
        return index
    if t.name in ("w",):
        return b.const(QUANT8_SYMM, data, q.scale[0], 0)
    return b.const(QUANT8_SIGNED, data, q.scale[0], q.zero_point[0])


def lower_single_op(g: Graph) -> tuple[NeuronModelBuilder, list[str]]:
    """A NeuronModel (not finished) for the one op of `g`; returns it and its input names."""
    (op,) = g.ops
    b = NeuronModelBuilder()
    idx = {name: _tensor(b, g.tensors[name]) for name in op.inputs}
    idx[op.outputs[0]] = _tensor(b, g.tensors[op.outputs[0]])
    add_operation(b, g, op, idx)
    inputs = [n for n in op.inputs if g.tensors[n].data is None]
    assert b.identify([idx[n] for n in inputs], [idx[op.outputs[0]]]) == NO_ERROR
    return b, inputs


def lower_graph(g: Graph) -> NeuronModelBuilder:
    """A NeuronModel (not finished) of every op of `g` in order, its inputs and outputs g's."""
    b = NeuronModelBuilder()
    idx = {name: _tensor(b, t) for name, t in g.tensors.items()}
    for op in g.ops:
        add_operation(b, g, op, idx)
    assert b.identify([idx[n] for n in g.inputs], [idx[n] for n in g.outputs]) == NO_ERROR
    return b


def add_operation(b: NeuronModelBuilder, g: Graph, op: Op, idx: dict[str, int]) -> None:
    """`op` of `g` as a Neuron operation of `b`; `idx` holds its tensors' operand indices."""
    out = idx[op.outputs[0]]
    a = dataclasses.asdict(op.attrs)
    x = idx[op.inputs[0]]
    k = op.kind
    if k in (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.FULLY_CONNECTED):
        w = idx[op.inputs[1]]
        o = g.tensors[op.inputs[1]].shape[0 if k is not OpKind.DEPTHWISE_CONV_2D else 3]
        bias = (
            idx[op.inputs[2]]
            if len(op.inputs) > 2
            else b.const(TENSOR_INT32, np.zeros(o, np.int32))
        )
        fuse = b.i32(FUSE[a.get("fuse", "NONE")])
        if k is OpKind.FULLY_CONNECTED:
            ins = [x, w, bias, fuse]
        else:
            t, bo, le, r = a["padding"]
            (sh, sw), (dh, dw) = a["stride"], a.get("dilation", (1, 1))
            pads = [b.i32(v) for v in (le, r, t, bo, sw, sh)]
            mult = [b.i32(a["multiplier"] or 1)] if k is OpKind.DEPTHWISE_CONV_2D else []
            ins = [x, w, bias, *pads, *mult, fuse, b.boolean(False), b.i32(dw), b.i32(dh)]
    elif k in (OpKind.AVERAGE_POOL_2D, OpKind.MAX_POOL_2D):
        t, bo, le, r = a["padding"]
        (sh, sw), (kh, kw) = a["stride"], a["kernel"]
        ins = [x, *[b.i32(v) for v in (le, r, t, bo, sw, sh, kw, kh)], b.i32(FUSE[a["fuse"]])]
    elif k in (OpKind.ADD, OpKind.SUB, OpKind.MUL):
        ins = [x, idx[op.inputs[1]], b.i32(FUSE[a.get("fuse", "NONE")])]
    elif k is OpKind.SOFTMAX:
        ins = [x, b.f32(float(a.get("beta", 1.0))), b.i32(int(a.get("axis", -1)))]
    elif k is OpKind.CONCATENATION:
        ins = [idx[n] for n in op.inputs] + [b.i32(int(a["axis"]))]
    elif k is OpKind.PAD:
        ins = [x, b.const(TENSOR_INT32, np.array(a["pads"], np.int32).reshape(-1, 2))]
    elif k is OpKind.RESHAPE:
        ins = [x, b.const(TENSOR_INT32, np.array(a["shape"], np.int32))]
    elif k is OpKind.MEAN:
        axes = b.const(TENSOR_INT32, np.array(a["axes"], np.int32))
        ins = [x, axes, b.i32(1 if a.get("keepdims") else 0)]
    elif k in (OpKind.RESIZE_BILINEAR, OpKind.RESIZE_NEAREST_NEIGHBOR):
        oh, ow = a["size"]
        flags = [b.boolean(bool(a.get(f))) for f in ("align_corners", "half_pixel_centers")]
        ins = [x, b.i32(ow), b.i32(oh), b.boolean(False), *flags]
    elif k is OpKind.PRELU:
        ins = [x, idx[op.inputs[1]]]
    elif k is OpKind.TRANSPOSE_CONV_2D:
        o = g.tensors[op.inputs[1]].shape[0]
        bias = (
            idx[op.inputs[2]]
            if len(op.inputs) > 2
            else b.const(TENSOR_INT32, np.zeros(o, np.int32))
        )
        t, bo, le, r = a["padding"]
        sh, sw = a["stride"]
        pads = [b.i32(v) for v in (le, r, t, bo, sw, sh, FUSE[a.get("fuse", "NONE")])]
        ins = [x, idx[op.inputs[1]], bias, *pads, b.boolean(False)]
    elif k is OpKind.DEPTH_TO_SPACE:
        ins = [x, b.i32(int(a["block_size"])), b.boolean(False)]
    else:
        ins = [x]
    rc = b.operation(k.value, ins, [out])
    assert rc == NO_ERROR, f"addOperation({k.name}) -> {rc}"


def run_single_op(g: Graph, codes: Sequence[Array], what: str = "") -> Array:
    """The emulator's int8 output of single-op `g` for int8 `codes` (in `g.inputs` order),
    compiled for all three DEVICES; `what` names the case in a failed compile's message."""
    b, names = lower_single_op(g)
    try:
        assert b.finish() == NO_ERROR
        out_shape = tuple(g.tensors[g.outputs[0]].shape)
        rc, comp = compile_model(b, DEVICES, [out_shape])
        assert rc == NO_ERROR, f"{what or g.ops[0].kind.name}: compile -> {rc}"
        try:
            by_name = dict(zip(g.inputs, codes, strict=True))
            (got,) = comp.run([by_name[n] for n in names])
        finally:
            comp.free()
    finally:
        b.free()
    return got
