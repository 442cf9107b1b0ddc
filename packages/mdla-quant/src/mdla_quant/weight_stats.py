"""The calibration statistics the data-aware weight roundings read, and `mean`'s bias shift.

    moments = watched(graph, config)         {input name: ChannelMoments}, empty when unneeded
    calibrate(graph, data, ..., moments)     fills them in the calibration pass itself
    with_mean_biases(graph, qgraph, m)       each bias carries its final weights' mean error

The statistics are of the op's float input, as bias correction's are, but gathered while the
histograms are (one pass, no second float or int8 run).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir import Graph, Op, OpKind, Tensor
from mdla_ir.attrs import ConvAttrs, with_fuse
from mdla_ir.interp.registry import KERNELS
from mdla_quant.bias_correction import corrected_bias
from mdla_quant.config import QuantConfig
from mdla_quant.observers import ChannelMoments
from mdla_quant.sequential import dequantize

Array = np.ndarray[Any, Any]
READ = frozenset({OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.FULLY_CONNECTED})


def shifts_biases(config: QuantConfig) -> bool:
    """Whether `mean` moves the weights' mean error into the biases: not after AdaRound, whose
    fit to the calibration outputs already takes their mean in (shifting again lost 0.4 dB
    plain and 1.1 dB with block reconstruction on efficientnet_lite0)."""
    return config.weight_rounding == "mean" and not config.adaround


def watched(graph: Graph, config: QuantConfig) -> dict[str, ChannelMoments]:
    """An empty `ChannelMoments` per input of a conv / FC op when the config reads them
    (`weighted`'s flips, `mean`'s bias shift), else none."""
    if config.weight_rounding != "weighted" and not shifts_biases(config):
        return {}
    squares = config.weight_rounding == "weighted"  # only its flips read the variance
    readers: dict[str, list[Op]] = {}
    for op in graph.ops:
        if op.kind in READ:
            readers.setdefault(op.inputs[0], []).append(op)
    return {
        name: ChannelMoments(
            squares, maps=not squares and not all(_per_channel(graph, op) for op in ops)
        )
        for name, ops in readers.items()
    }


def _per_channel(graph: Graph, op: Op) -> bool:
    """Whether `mean_shift` reads only the per-channel mean of `op`'s input (a 1x1 conv), not
    its map."""
    return _pointwise(op, graph.tensors[op.inputs[1]].shape, graph.layout)


def stats_of(moments: dict[str, ChannelMoments], op: Op) -> tuple[Array, Array] | None:
    """The (mean, variance) per channel of `op`'s input, if it was watched (with squares)
    and seen."""
    m = moments.get(op.inputs[0]) if op.kind in READ else None
    if m is None or not m.samples or m.squares is None:
        return None
    return m.mean, m.variance


def mean_shift(graph: Graph, op: Op, w_int8: Tensor, moments: dict[str, ChannelMoments]) -> Array:
    """Per output channel, the mean over positions of `op` (no bias, no fused activation) on
    the calibration's mean input with weights w_int8 - w: what the int8 weights add to the
    output's mean on that data; zeros when the input was not watched."""
    out_channels = graph.tensors[op.outputs[0]].shape[-1]
    m = moments.get(op.inputs[0]) if op.kind in READ else None
    if m is None or not m.samples:
        return np.zeros(out_channels)
    w = graph.const(op.inputs[1])
    assert w_int8.data is not None  # a quantized constant
    codes = np.asarray(w_int8.data)
    pointwise = _pointwise(op, w.shape, graph.layout)  # every position sums alike
    taps = None if pointwise else _tap_means(op, w, m.mean_map, graph.layout)
    v = m.mean if pointwise else None if taps is None else taps.reshape(-1)
    by_rows = w_int8.quant is not None and w_int8.quant.channel_dim in (None, 0)
    if v is not None and op.kind == OpKind.CONV_2D and by_rows:
        return _rows_times(w_int8, codes, w, v)
    delta = dequantize(w_int8, codes).astype(np.float64) - w
    if v is not None and op.kind == OpKind.CONV_2D:
        return delta.reshape(out_channels, -1) @ v  # type: ignore[no-any-return]
    if taps is not None:  # a depthwise conv: output channel o reads input o // multiplier
        per_tap = delta[0] * np.repeat(taps, out_channels // taps.shape[-1], axis=-1)
        return per_tap.reshape(-1, out_channels).sum(0)  # type: ignore[no-any-return]
    plain = op.with_(attrs=with_fuse(op.attrs, "NONE"))
    x = m.mean_map[None]
    (y,) = KERNELS[op.kind](plain, [x, delta, np.zeros(out_channels)], graph.layout)
    shift: Array = np.asarray(y, np.float64).reshape(-1, out_channels).mean(0)
    return shift


def _rows_times(w_int8: Tensor, codes: Array, w: Array, v: Array) -> Array:
    """(w_int8 - w) @ v per output channel (axis 0) of a conv's filter, a block of channels
    at a time: each block's float64 error is a cache-sized temporary instead of a fresh copy
    of the whole filter (resnet18's 3x3x512x512 layers: 19 MB each, page faults every time).
    Each weight's error is `dequantize`'s value (the same float32 operations) minus w."""
    p = w_int8.quant
    assert p is not None  # a quantized constant
    o = w.shape[0]
    rows, codes = w.reshape(o, -1), codes.reshape(o, -1)
    scale, zp = np.asarray(p.scale, np.float32), np.asarray(p.zero_point, np.float32)
    if p.channel_dim is not None:  # per output channel (a conv filter's axis 0)
        scale, zp = scale.reshape(-1, 1), zp.reshape(-1, 1)
    out = np.empty(o)
    step = max(1, (1 << 16) // max(1, rows.shape[1]))
    for c in range(0, o, step):
        s, z = (scale[c : c + step], zp[c : c + step]) if p.channel_dim is not None else (scale, zp)
        # float32(code) - z, times s, in float32; widened to float64 minus w: the casts are
        # exact, so each ufunc's own cast gives the same values with fewer passes
        real = np.subtract(codes[c : c + step], z, dtype=np.float32)
        np.multiply(s, real, out=real)
        out[c : c + step] = np.subtract(real, rows[c : c + step], dtype=np.float64) @ v
    return out


def _pointwise(op: Op, w: tuple[int, ...], layout: str) -> bool:
    """A 1x1 CONV_2D (weight shape `w`) of stride 1, no padding, one group, on NHWC: its mean
    over positions is the weights times the input's per-channel mean (the op is linear and
    reads every position once), without running it on the whole mean map."""
    if op.kind != OpKind.CONV_2D or layout != "NHWC" or w[1:3] != (1, 1):
        return False
    a = ConvAttrs.of(op)
    return a.groups == 1 and tuple(a.stride) == (1, 1) and not any(a.padding)


def _tap_means(op: Op, w: Array, x: Array, layout: str) -> Array | None:
    """(KH, KW, C) float64: per filter tap, the mean over the output positions of the input
    value that tap reads (zero in the padding), for an ungrouped CONV_2D or a
    DEPTHWISE_CONV_2D on NHWC; else None. The op is linear, so its mean output is its weights
    times these: the same shift as the op run on the whole mean map (to float64 rounding,
    where the interpreter's run rounds each output value to float32), for a few strided sums
    of the map instead of a float64 GEMM over every position."""
    if op.kind not in (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D) or layout != "NHWC":
        return None
    a = ConvAttrs.of(op)
    if (op.kind == OpKind.CONV_2D and a.groups != 1) or x.ndim != 3:
        return None
    (sh, sw), (dh, dw), (kh, kw) = a.stride, a.dilation, w.shape[1:3]
    t, b, left, r = a.padding
    xp = np.zeros((t + x.shape[0] + b, left + x.shape[1] + r, x.shape[2]))
    xp[t : t + x.shape[0], left : left + x.shape[1]] = x
    oh = (xp.shape[0] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[1] - dw * (kw - 1) - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        return None
    out = np.empty((kh, kw, x.shape[2]))
    for i in range(kh):
        for j in range(kw):
            tap = xp[
                i * dh : i * dh + sh * (oh - 1) + 1 : sh, j * dw : j * dw + sw * (ow - 1) + 1 : sw
            ]
            out[i, j] = tap.sum((0, 1)) / (oh * ow)
    return out


def with_mean_biases(graph: Graph, qgraph: Graph, moments: dict[str, ChannelMoments]) -> Graph:
    """`qgraph` with each watched conv / FC op's bias b - `mean_shift` of its int8 weights (in
    the bias's own dtype and scale), to the int8 weights the graph keeps; quantize calls it
    only when `shifts_biases` (never after AdaRound)."""
    tensors = dict(qgraph.tensors)
    for op in graph.ops:
        if op.kind not in READ or op.inputs[0] not in moments or len(op.inputs) < 3:
            continue
        w = qgraph.tensors[op.inputs[1]]
        if w.dtype != "int8":
            continue  # a float region's op keeps its float32 weights: nothing to shift
        shift = mean_shift(graph, op, w, moments)
        tensors[op.inputs[2]] = corrected_bias(graph, qgraph, op.inputs[2], shift)
    return qgraph.with_(tensors=tensors)
