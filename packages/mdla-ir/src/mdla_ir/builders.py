"""Int8 qgraph builders: single-op graphs, and random valid ones with their input codes.

Used by the probe (one graph per op variant), the tests, the fuzzers and the benches; product
code, not a testing module.

    graph = single_op_qgraph(OpKind.MUL, [x, y], out_shape, out_q, attrs={"fuse": "RELU"})
    graph = random_qgraph(OpKind.CONV_2D, rng)          # a random, valid one-op case
    codes = random_codes(graph, rng)                    # int8 codes for the graph inputs
    floats = as_floats(graph, codes)                    # their real values (run_int8's input)

The qgraph convention (the quantizer's output): NHWC, int8 per-tensor activations, int8
symmetric weights per channel, int32 bias with scale s_in * s_w and zero point 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mdla_ir.affine import Array
from mdla_ir.attrs import Attrs
from mdla_ir.graph import Graph, Op, QuantParams, Tensor
from mdla_ir.ops import OpKind

Rng = np.random.Generator
FUSES = ("NONE", "RELU", "RELU1", "RELU6")


# Every op kind `random_qgraph` builds (the MDLA op set with int8 kernels).
INT8_KINDS = [
    OpKind.CONV_2D,
    OpKind.DEPTHWISE_CONV_2D,
    OpKind.FULLY_CONNECTED,
    OpKind.AVERAGE_POOL_2D,
    OpKind.MAX_POOL_2D,
    OpKind.ADD,
    OpKind.SUB,
    OpKind.MUL,
    OpKind.RELU,
    OpKind.RELU6,
    OpKind.LOGISTIC,
    OpKind.TANH,
    OpKind.HARD_SWISH,
    OpKind.SOFTMAX,
    OpKind.CONCATENATION,
    OpKind.PAD,
    OpKind.RESHAPE,
    OpKind.MEAN,
    OpKind.RESIZE_BILINEAR,
    OpKind.PRELU,
    OpKind.RESIZE_NEAREST_NEIGHBOR,
    OpKind.DEPTH_TO_SPACE,
    OpKind.TRANSPOSE_CONV_2D,
]


def qp(
    scale: float | Sequence[float] | Array,
    zp: int | Sequence[int] = 0,
    channel_dim: int | None = None,
) -> QuantParams:
    scales = tuple(float(np.float32(s)) for s in np.atleast_1d(scale))
    zps = tuple(int(z) for z in np.atleast_1d(zp))
    if len(zps) == 1 and len(scales) > 1:
        zps = zps * len(scales)
    return QuantParams(scales, zps, channel_dim)


def act(name: str, shape: Sequence[int], q: QuantParams) -> Tensor:
    return Tensor(name, tuple(int(d) for d in shape), "int8", None, q)


def const(name: str, data: Array, q: QuantParams | None) -> Tensor:
    return Tensor(name, tuple(data.shape), str(data.dtype), data, q)


def single_op_qgraph(
    kind: OpKind,
    inputs: Sequence[Tensor],
    out_shape: Sequence[int],
    out_q: QuantParams,
    attrs: Attrs | Mapping[str, Any] | None = None,
) -> Graph:
    """One op reading `inputs` (constants carry data) and writing int8 `out`; NHWC. `attrs`
    is the op family's record, or a mapping Op parses into it."""
    out = act("out", out_shape, out_q)
    tensors = {t.name: t for t in (*inputs, out)}
    op = Op(kind, f"{kind.name.lower()}0", tuple(t.name for t in inputs), ("out",), attrs)
    return Graph(
        f"single_{kind.name.lower()}",
        tensors,
        (op,),
        tuple(t.name for t in inputs if not t.is_const),
        ("out",),
        layout="NHWC",
    )


def random_act_q(rng: Rng, lo: float = 1e-3, hi: float = 0.5) -> QuantParams:
    return qp(float(np.exp(rng.uniform(np.log(lo), np.log(hi)))), int(rng.integers(-128, 128)))


def random_int8(rng: Rng, shape: Sequence[int], lo: int = -128) -> Array:
    return rng.integers(lo, 128, size=tuple(shape)).astype(np.int8)


def random_codes(graph: Graph, rng: Rng) -> list[Array]:
    """Uniformly random int8 codes for each graph input (graph layout)."""
    return [random_int8(rng, graph.tensors[name].shape) for name in graph.inputs]


def as_floats(graph: Graph, codes: Sequence[Array]) -> list[Array]:
    """The real values s * (q - z) of int8 input codes; they quantize back to exactly `codes`.

    Graph layout equals model layout here (graphs built by this module have no boundary perms).
    """
    arrays = []
    for name, q in zip(graph.inputs, codes, strict=True):
        quant = graph.tensors[name].quant
        if quant is None:
            raise ValueError(f"input `{name}` has no quantization parameters")
        s, z = np.float32(quant.scale[0]), np.float32(quant.zero_point[0])
        arrays.append((s * (q.astype(np.float32) - z)).astype(np.float32))
    return arrays


def out_size(n: int, k: int, s: int, d: int, before: int, after: int) -> int:
    return (n + before + after - (k - 1) * d - 1) // s + 1


def _conv_out_q(rng: Rng, s_in: float, w_scale: Array, taps: int) -> QuantParams:
    """An output scale that keeps most of the accumulator's spread inside int8."""
    real_std = float(np.sqrt(taps) * 80.0 * 73.0 * s_in * np.median(w_scale))
    return qp(real_std / 30.0 * float(rng.uniform(0.3, 3.0)), int(rng.integers(-100, 100)))


def _weights(
    rng: Rng, shape: Sequence[int], channels: int, dim: int, per_channel: bool
) -> tuple[Array, Array, QuantParams]:
    w = random_int8(rng, shape, lo=-127)
    scales = np.exp(rng.uniform(np.log(1e-3), np.log(0.1), size=channels if per_channel else 1))
    scales = scales.astype(np.float32)
    return w, scales, qp(scales, 0, dim if per_channel else None)


def _bias(rng: Rng, s_in: float, w_scales: Array, channels: int) -> Tensor:
    b = rng.integers(-20000, 20000, size=channels).astype(np.int32)
    scales = np.float32(s_in) * np.broadcast_to(w_scales, (channels,))
    return const("bias", b, qp(scales, 0, 0))


def _window(rng: Rng, h: int, w: int, k: int, dil: int, allow_pad: bool) -> tuple[int, ...]:
    """Random explicit (t, b, l, r) padding that leaves at least one output row and column."""
    span = (k - 1) * dil + 1
    pads = [int(rng.integers(0, span)) if allow_pad else 0 for _ in range(4)]
    t, b, left, r = pads
    t, b = (t, b) if h + t + b >= span else (t, b + span - (h + t + b))
    left, r = (left, r) if w + left + r >= span else (left, r + span - (w + left + r))
    return t, b, left, r


def _random_conv(kind: OpKind, rng: Rng, large: bool) -> Graph:
    hw, ch = (40, 48) if large else (11, 7)
    n, h, w = int(rng.integers(1, 3)), int(rng.integers(1, hw)), int(rng.integers(1, hw))
    c, k = int(rng.integers(1, ch)), int(rng.choice([1, 2, 3, 5]))
    stride, dil = (
        tuple(int(v) for v in rng.choice([1, 2], 2)),
        tuple(int(v) for v in rng.choice([1, 1, 2], 2)),
    )
    padding = _window(rng, h, w, k, max(dil), allow_pad=True)
    in_q = random_act_q(rng)
    per_channel = bool(rng.random() < 0.85)
    if kind is OpKind.CONV_2D:
        o = int(rng.integers(1, 4 * ch // 3))
        wt, ws, wq = _weights(rng, (o, k, k, c), o, 0, per_channel)
        taps, attrs = k * k * c, dict[str, Any](groups=1)
    else:
        mult = int(rng.choice([1, 1, 2, 3]))
        o = c * mult
        wt, ws, wq = _weights(rng, (1, k, k, o), o, 3, per_channel)
        taps, attrs = k * k, dict[str, Any](multiplier=mult)
    oh = out_size(h, k, stride[0], max(dil), padding[0], padding[1])
    ow = out_size(w, k, stride[1], max(dil), padding[2], padding[3])
    if max(dil) != min(dil):  # keep `out_size` honest: one dilation for both axes here
        dil = (max(dil), max(dil))
    attrs |= {"stride": stride, "dilation": dil, "padding": padding, "fuse": str(rng.choice(FUSES))}
    ins = [act("x", (n, h, w, c), in_q), const("w", wt, wq)]
    if rng.random() < 0.9:
        ins.append(_bias(rng, in_q.scale[0], ws, o))
    return single_op_qgraph(
        kind, ins, (n, oh, ow, o), _conv_out_q(rng, in_q.scale[0], ws, taps), attrs
    )


def _random_fc(rng: Rng, large: bool) -> Graph:
    lead = [int(rng.integers(1, 5))] + ([int(rng.integers(1, 4))] if rng.random() < 0.2 else [])
    i, o = int(rng.integers(1, 2049 if large else 65)), int(rng.integers(1, 129 if large else 17))
    in_q = random_act_q(rng)
    wt, ws, wq = _weights(rng, (o, i), o, 0, bool(rng.random() < 0.5))
    ins = [act("x", (*lead, i), in_q), const("w", wt, wq)]
    if rng.random() < 0.9:
        ins.append(_bias(rng, in_q.scale[0], ws, o))
    return single_op_qgraph(
        OpKind.FULLY_CONNECTED,
        ins,
        (*lead, o),
        _conv_out_q(rng, in_q.scale[0], ws, i),
        {"fuse": str(rng.choice(FUSES))},
    )


def _random_pool(kind: OpKind, rng: Rng) -> Graph:
    n, h, w, c = (
        int(rng.integers(1, 3)),
        int(rng.integers(1, 10)),
        int(rng.integers(1, 10)),
        int(rng.integers(1, 6)),
    )
    kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    sh, sw = (int(v) for v in rng.choice([1, 2], 2))
    if kind is OpKind.MAX_POOL_2D and rng.random() < 0.4:  # arbitrary explicit padding
        t, b = (int(v) for v in rng.integers(0, kh, 2))
        left, r = (int(v) for v in rng.integers(0, kw, 2))
        h, w = max(h, kh), max(w, kw)
    elif rng.random() < 0.5:  # TF SAME: pad_before = total // 2
        th = max((-(-h // sh) - 1) * sh + kh - h, 0)
        tw = max((-(-w // sw) - 1) * sw + kw - w, 0)
        t, b, left, r = th // 2, th - th // 2, tw // 2, tw - tw // 2
    else:  # VALID
        h, w = max(h, kh), max(w, kw)
        t = b = left = r = 0
    q = random_act_q(rng)
    oh, ow = out_size(h, kh, sh, 1, t, b), out_size(w, kw, sw, 1, left, r)
    attrs = {
        "kernel": (kh, kw),
        "stride": (sh, sw),
        "padding": (t, b, left, r),
        "fuse": str(rng.choice(FUSES)),
    }
    return single_op_qgraph(kind, [act("x", (n, h, w, c), q)], (n, oh, ow, c), q, attrs)


def _random_shape(rng: Rng, lo_rank: int = 1, hi_rank: int = 4, hi_dim: int = 6) -> list[int]:
    return [
        int(v) for v in rng.integers(1, hi_dim + 1, size=int(rng.integers(lo_rank, hi_rank + 1)))
    ]


def _random_binary(kind: OpKind, rng: Rng) -> Graph:
    a = _random_shape(rng)
    b = [d if rng.random() < 0.6 else 1 for d in a][int(rng.integers(0, len(a))) :]
    if rng.random() < 0.3:  # broadcasting both ways
        a = [1 if rng.random() < 0.3 else d for d in a]
    if rng.random() < 0.5:
        a, b = b, a
    out = list(np.broadcast_shapes(tuple(a), tuple(b)))
    q1, q2 = random_act_q(rng), random_act_q(rng)
    if kind is OpKind.MUL:
        out_scale = q1.scale[0] * q2.scale[0] * 128 * 128 / 100 * rng.uniform(0.3, 3.0)
    else:
        out_scale = (q1.scale[0] + q2.scale[0]) * 1.5 * rng.uniform(0.5, 2.0)
    second = const("y", random_int8(rng, b), q2) if rng.random() < 0.3 and b else act("y", b, q2)
    return single_op_qgraph(
        kind,
        [act("x", a, q1), second],
        out,
        qp(out_scale, int(rng.integers(-128, 128))),
        {"fuse": str(rng.choice(FUSES))},
    )


def _random_unary(kind: OpKind, rng: Rng) -> Graph:
    shape, in_q = _random_shape(rng), random_act_q(rng, 1e-3, 0.2)
    fixed = {
        OpKind.LOGISTIC: qp(1 / 256, -128),
        OpKind.TANH: qp(1 / 128, 0),
        OpKind.SOFTMAX: qp(1 / 256, -128),
    }
    attrs: dict[str, Any] = {}
    if kind in fixed:
        out_q = fixed[kind]
        if kind is OpKind.SOFTMAX:
            attrs = {"axis": -1, "beta": float(rng.choice([1.0, rng.uniform(0.2, 3.0)]))}
    elif kind is OpKind.HARD_SWISH:
        hi = max(in_q.scale[0] * (127 - in_q.zero_point[0]), 0.5)
        # s_out >= s_in / 128 is required; the spread covers coarse and fine outputs
        out_q = qp(
            max(hi / 200 * rng.uniform(0.5, 2.0), in_q.scale[0] / 100), int(rng.integers(-128, 0))
        )
    else:
        out_q = random_act_q(rng)
    return single_op_qgraph(kind, [act("x", shape, in_q)], shape, out_q, attrs)


def _random_movement(kind: OpKind, rng: Rng) -> Graph:
    q = random_act_q(rng)
    shape = _random_shape(rng)
    if kind is OpKind.CONCATENATION:
        axis = int(rng.integers(-len(shape), len(shape)))
        parts = [
            [*shape[: axis % len(shape)], int(rng.integers(1, 5)), *shape[axis % len(shape) + 1 :]]
            for _ in range(int(rng.integers(1, 4)))
        ]
        out = list(parts[0])
        out[axis] = sum(p[axis] for p in parts)
        ins = [act(f"x{i}", p, q) for i, p in enumerate(parts)]
        return single_op_qgraph(kind, ins, out, q, {"axis": axis})
    if kind is OpKind.PAD:
        pads = [(int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in shape]
        out = [d + p + r for d, (p, r) in zip(shape, pads, strict=True)]
        return single_op_qgraph(kind, [act("x", shape, q)], out, q, {"pads": tuple(pads)})
    flat = int(np.prod(shape))
    out = [int(v) for v in rng.permutation(shape)] if rng.random() < 0.5 else [flat]
    return single_op_qgraph(kind, [act("x", shape, q)], out, q, {"shape": tuple(out)})


def _random_mean(rng: Rng) -> Graph:
    shape = _random_shape(rng, 2, 4, 7)
    axes = sorted(
        int(a) for a in rng.choice(len(shape), int(rng.integers(1, len(shape))), replace=False)
    )
    keep = bool(rng.random() < 0.5)
    out = (
        [1 if i in axes else d for i, d in enumerate(shape)]
        if keep
        else [d for i, d in enumerate(shape) if i not in axes]
    )
    in_q = random_act_q(rng)
    out_q = qp(in_q.scale[0] * rng.uniform(0.2, 2.0), int(rng.integers(-128, 128)))
    return single_op_qgraph(
        OpKind.MEAN, [act("x", shape, in_q)], out, out_q, {"axes": tuple(axes), "keepdims": keep}
    )


def _random_resize(rng: Rng, kind: OpKind = OpKind.RESIZE_BILINEAR) -> Graph:
    n, h, w, c = (
        int(rng.integers(1, 3)),
        int(rng.integers(1, 9)),
        int(rng.integers(1, 9)),
        int(rng.integers(1, 5)),
    )
    oh, ow = int(rng.integers(1, 17)), int(rng.integers(1, 17))
    flag = int(rng.integers(0, 3))
    q = random_act_q(rng)
    return single_op_qgraph(
        kind,
        [act("x", (n, h, w, c), q)],
        (n, oh, ow, c),
        q,
        {"size": (oh, ow), "align_corners": flag == 1, "half_pixel_centers": flag == 2},
    )


def _random_prelu(rng: Rng) -> Graph:
    """x of rank 1-4; alpha one value, one per channel (last axis) or x's own shape."""
    shape = _random_shape(rng)
    pick = int(rng.integers(0, 3))
    a_shape = [(1,), (shape[-1],), tuple(shape)][pick]
    in_q, a_q = random_act_q(rng), qp(rng.uniform(1e-3, 0.02), int(rng.integers(-128, 128)))
    out_q = qp(in_q.scale[0] * rng.uniform(0.5, 2.0), int(rng.integers(-128, 128)))
    alpha = const("alpha", random_int8(rng, a_shape), a_q)
    return single_op_qgraph(OpKind.PRELU, [act("x", shape, in_q), alpha], shape, out_q)


def _random_depth_to_space(rng: Rng) -> Graph:
    r, c = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    n, h, w = (int(v) for v in rng.integers(1, 5, size=3))
    q = random_act_q(rng)
    x = act("x", (n, h, w, c * r * r), q)
    return single_op_qgraph(OpKind.DEPTH_TO_SPACE, [x], (n, h * r, w * r, c), q, {"block_size": r})


def _random_transpose_conv(rng: Rng) -> Graph:
    """Strides 1-3, kernels 1-4, crops (t, b, l, r) each below the kernel, per-channel or
    per-tensor weights; some without a bias."""
    n, h, w = (int(v) for v in rng.integers(1, 6, size=3))
    ci, co = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    kh, kw, sh, sw = (int(v) for v in (*rng.integers(1, 5, size=2), *rng.integers(1, 4, size=2)))
    full_h, full_w = (h - 1) * sh + kh, (w - 1) * sw + kw
    t, b = (int(v) for v in rng.integers(0, kh, size=2))
    left, r = (int(v) for v in rng.integers(0, kw, size=2))
    t, b = (t, b) if full_h - t - b >= 1 else (0, 0)
    left, r = (left, r) if full_w - left - r >= 1 else (0, 0)
    in_q = random_act_q(rng)
    per_channel = bool(rng.random() < 0.7)
    wq, w_scales, w_q = _weights(rng, (co, kh, kw, ci), co, 0, per_channel)
    ins = [act("x", (n, h, w, ci), in_q), const("w", wq, w_q)]
    if rng.random() < 0.8:
        ins.append(_bias(rng, in_q.scale[0], w_scales, co))
    out = (n, full_h - t - b, full_w - left - r, co)
    out_q = _conv_out_q(rng, in_q.scale[0], w_scales, kh * kw * ci)
    attrs = {"stride": (sh, sw), "padding": (t, b, left, r), "fuse": str(rng.choice(FUSES))}
    return single_op_qgraph(OpKind.TRANSPOSE_CONV_2D, ins, out, out_q, attrs)


def random_qgraph(kind: OpKind, rng: Rng, large: bool = False) -> Graph:
    """A random valid single-op qgraph of `kind` (for the oracle and the emulator's tests).

    `large` makes CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED model-sized (up to 40x40
    inputs, 48 channels, 2048 features), where int32 accumulators grow large.
    """
    if kind in (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D):
        return _random_conv(kind, rng, large)
    if kind is OpKind.FULLY_CONNECTED:
        return _random_fc(rng, large)
    if kind in (OpKind.AVERAGE_POOL_2D, OpKind.MAX_POOL_2D):
        return _random_pool(kind, rng)
    if kind in (OpKind.ADD, OpKind.SUB, OpKind.MUL):
        return _random_binary(kind, rng)
    if kind in (
        OpKind.RELU,
        OpKind.RELU6,
        OpKind.LOGISTIC,
        OpKind.TANH,
        OpKind.HARD_SWISH,
        OpKind.SOFTMAX,
    ):
        return _random_unary(kind, rng)
    if kind in (OpKind.CONCATENATION, OpKind.PAD, OpKind.RESHAPE):
        return _random_movement(kind, rng)
    if kind is OpKind.MEAN:
        return _random_mean(rng)
    if kind in (OpKind.RESIZE_BILINEAR, OpKind.RESIZE_NEAREST_NEIGHBOR):
        return _random_resize(rng, kind)
    if kind is OpKind.PRELU:
        return _random_prelu(rng)
    if kind is OpKind.DEPTH_TO_SPACE:
        return _random_depth_to_space(rng)
    if kind is OpKind.TRANSPOSE_CONV_2D:
        return _random_transpose_conv(rng)
    raise ValueError(f"no random single-op builder for {kind.name}")
