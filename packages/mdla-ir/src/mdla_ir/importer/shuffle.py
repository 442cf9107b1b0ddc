"""`nn.PixelShuffle` / `F.pixel_shuffle` -> DEPTH_TO_SPACE, with torch's channel order fixed.

torch:        out[n, c, h*r + i, w*r + j] = in[n, c*r*r + i*r + j, h, w]
DEPTH_TO_SPACE (NNAPI, TFLite): takes channel (i*r + j)*C + c for the same output element.
The orders differ, so the input's channels are permuted first: channel k = (i*r + j)*C + c of the
permuted tensor is channel P[k] = c*r*r + i*r + j of torch's.

Where the input comes from a CONV_2D (through channel-wise activations only, with no other
consumer), the permutation is folded into that conv: its filter rows and bias entries are
reordered (out'[k] = out[P[k]]), which changes no value, only where it is stored: exact, in
float and in int8 (per-channel weight scales move with their rows). Otherwise a selection conv
(`mdla_ir.selection`: a 1x1 CONV_2D whose 0/1 filter has one 1 per output channel) is
inserted: the quantizer gives it weight scale 1 and its input's scale and zero point, so its
requantization multiplier is exactly 1 and its int8 output is the permuted int8 input, bit for
bit, at the cost of one 1x1 conv.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from torch import fx

from mdla_ir.attrs import ConvAttrs
from mdla_ir.graph import Op, Source, Tensor
from mdla_ir.importer.context import Ctx, Unsupported, source_line, target_name
from mdla_ir.ops import OpKind
from mdla_ir.selection import selection_filter

# Ops that act on each channel alike: a channel permutation commutes with them.
_CHANNELWISE = frozenset(
    {OpKind.RELU, OpKind.RELU6, OpKind.TANH, OpKind.LOGISTIC, OpKind.HARD_SWISH}
)


def torch_order(channels: int, r: int) -> np.ndarray[Any, Any]:
    """P with P[(i*r + j)*C + c] = c*r*r + i*r + j (C = channels // r^2)."""
    c_out = channels // (r * r)
    i, j, c = np.meshgrid(np.arange(r), np.arange(r), np.arange(c_out), indexing="ij")
    return (c * r * r + i * r + j).reshape(-1)


def _fold(c: Ctx, node: fx.Node, perm: np.ndarray[Any, Any]) -> bool:
    """Reorder the output channels of the CONV_2D producing `node` (see the module docstring);
    False when there is none to fold into."""
    producers = {o: i for i, op in enumerate(c.ops) for o in op.outputs}
    current: Any = node
    while True:
        if not isinstance(current, fx.Node) or current not in c.refs or len(current.users) != 1:
            return False
        idx = producers.get(c.refs[current])
        if idx is None:
            return False
        op = c.ops[idx]
        if op.kind in _CHANNELWISE:
            current = next(a for a in current.all_input_nodes if c.refs.get(a) == op.inputs[0])
            continue
        if op.kind is not OpKind.CONV_2D or ConvAttrs.of(op).groups != 1:
            return False
        w, b = (c.tensors[n].data for n in op.inputs[1:3])
        if w is None or b is None:
            return False
        names = [_reordered(c, idx, n, perm) for n in op.inputs[1:3]]
        c.ops[idx] = op.with_(inputs=(op.inputs[0], *names, *op.inputs[3:]))
        return True


def _reordered(c: Ctx, idx: int, name: str, perm: np.ndarray[Any, Any]) -> str:
    """The constant `name` of op #idx with its rows in `perm` order: in place when no other op
    reads it, else as a new constant."""
    t = c.tensors[name]
    assert t.data is not None  # checked by the caller
    data = np.ascontiguousarray(t.data[perm])
    if any(name in op.inputs for i, op in enumerate(c.ops) if i != idx):
        return c.const(f"{name}.d2s_order", data)
    c.tensors[name] = Tensor(name, t.shape, t.dtype, data=data)
    return name


def _permute_conv(c: Ctx, x: str, perm: np.ndarray[Any, Any]) -> str:
    """A 1x1 CONV_2D reordering the channels of `x` (see the module docstring)."""
    node = c.node
    assert node is not None
    n = perm.size
    w = selection_filter([int(p) for p in perm], n)
    out = c.fresh(f"{node.name}.torch_order", c.tensors)
    c.tensors[out] = Tensor(out, c.tensors[x].shape)
    ins = (x, c.const(f"{out}.weight", w), c.const(f"{out}.bias", np.zeros(n, np.float32)))
    attrs = {"stride": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "groups": 1}
    name = c.fresh(f"{c.op_name(node)}.torch_order", {o.name: 0 for o in c.ops})
    source = Source(node.name, target_name(node), source_line(node))
    c.ops.append(Op(OpKind.CONV_2D, name, ins, (out,), attrs | {"fuse": "NONE"}, source))
    return out


def _pixel_shuffle(c: Ctx, x: Any, r: int) -> None:
    shape = c.tensors[c.ref(x)].shape
    if len(shape) != 4:
        raise Unsupported(f"pixel_shuffle of a rank-{len(shape)} input (only 4-D NCHW imports)")
    perm = torch_order(shape[1], r)
    src = c.ref(x)
    if r > 1 and not _fold(c, x, perm):
        src = _permute_conv(c, src, perm)
    c.emit(OpKind.DEPTH_TO_SPACE, [src], block_size=r)


def m_pixel_shuffle(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    _pixel_shuffle(c, args[0] if args else kw["input"], int(m.upscale_factor))


def f_pixel_shuffle(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = dict(zip(("input", "upscale_factor"), args, strict=False)) | kw
    _pixel_shuffle(c, a["input"], int(c.value(a["upscale_factor"])))
