"""The data-aware weight roundings: calibration's channel moments, `kernel`, `weighted`, `mean`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_ir import OpKind
from mdla_quant.config import QuantConfig
from mdla_quant.observers import ChannelMoments
from mdla_quant.quantize import calibrate, quantize
from mdla_quant.sequential import dequantize
from mdla_quant.weight_fit import balanced, fit_weights, units
from mdla_quant.weight_stats import watched
from mdla_quant.weights import quantize_weights

from .test_quantize import net, samples

Array = np.ndarray[Any, Any]


def test_channel_moments_stream_the_mean_map_and_channel_variance() -> None:
    rng = np.random.default_rng(0)
    batches = [rng.normal(2.0, 3.0, (2, 5, 4, 3)).astype(np.float32) for _ in range(3)]
    m = ChannelMoments()
    for b in batches:
        m.update(b)
    every = np.concatenate(batches).astype(np.float64)
    assert m.samples == 6
    assert np.allclose(m.mean_map, every.mean(0))
    assert np.allclose(m.mean, every.reshape(-1, 3).mean(0))
    assert np.allclose(m.variance, every.reshape(-1, 3).var(0))


def test_calibrate_fills_the_watched_moments_in_its_one_pass() -> None:
    g, data = net(), samples(5)
    moments = watched(g, QuantConfig(weight_rounding="weighted"))
    assert set(moments) == {"x", "c"}  # the two convs' inputs
    assert watched(g, QuantConfig(weight_rounding="kernel")) == {}
    calibrate(g, data, moments=moments)
    x = np.concatenate([s[0] for s in data]).astype(np.float64)
    assert moments["x"].samples == 5
    assert np.allclose(moments["x"].mean, x.reshape(-1, x.shape[-1]).mean(0))
    assert np.allclose(moments["x"].variance, x.reshape(-1, x.shape[-1]).var(0))
    maps = watched(g, QuantConfig(weight_rounding="mean"))
    calibrate(g, data, moments=maps)
    assert np.allclose(maps["x"].mean_map, x.mean(0))


def test_moments_keep_a_map_only_for_a_reader_that_needs_one() -> None:
    """`weighted` reads channel means and variances only, `mean`'s 1x1 convs the channel means:
    their inputs keep per-channel sums (no float64 map per sample); a k x k conv's input keeps
    its map (its tap means)."""
    from mdla_ir.testing import GraphBuilder

    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 6, 6, 4))
    b.const("w1", (5, 1, 1, 4))
    one = {"stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1)}
    p = b.op(OpKind.CONV_2D, [x, "w1", b.const("b1", (5,))], name="p", **one)
    b.const("w3", (3, 3, 3, 5))
    k = b.op(OpKind.CONV_2D, [p, "w3", b.const("b3", (3,))], name="k", **one)
    b.const("w4", (2, 1, 1, 5))
    q = b.op(OpKind.CONV_2D, [p, "w4", b.const("b4", (2,))], name="q", **one)
    g = b.build(k, q)
    mean = watched(g, QuantConfig(weight_rounding="mean"))
    assert not mean["x"].maps  # a 1x1 conv's only
    assert mean["p"].maps  # a 3x3 conv reads it too
    assert not any(m.maps for m in watched(g, QuantConfig(weight_rounding="weighted")).values())


def test_channel_sums_are_each_channels_values_added_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without a map, the C pass adds every value to its channel's float64 sum, row by row:
    the Python loop's additions bit for bit, and the mean and variance of the map form."""
    from mdla_quant import native

    assert native.library() is not None
    rng = np.random.default_rng(3)
    batches = [rng.normal(2.0, 3.0, (1, 7, 9, 5)).astype(np.float32) for _ in range(4)]
    c, full = ChannelMoments(maps=False), ChannelMoments()
    for x in batches:
        c.update(x)
        full.update(x)
    monkeypatch.setattr("mdla_quant.observers.library", lambda: None)
    loop = ChannelMoments(maps=False)
    for x in batches:
        loop.update(x)
    assert c.sums.shape == (5,)
    assert c.rows == 4 * 63
    assert np.array_equal(c.sums, loop.sums)
    assert np.allclose(c.mean, full.mean, rtol=1e-13, atol=0)
    assert np.allclose(c.variance, full.variance, rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="without their map"):
        _ = c.mean_map


def _model_j(x: Array, q: Array, mu: Array, var: Array) -> Array:
    """The module docstring's J per output channel: (sum mu E)^2 + sum var E^2."""
    kern = (q - x).sum(2)
    return (kern @ mu) ** 2 + (kern**2) @ var  # type: ignore[no-any-return]


def test_weighted_lowers_the_modelled_error_of_every_channel() -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(-30, 30, (40, 24, 9))
    near = np.clip(np.round(x), -127, 127).astype(np.int16)
    mu, var = rng.uniform(0.0, 2.0, 24), rng.uniform(0.0, 0.3, 24)
    kernel = balanced(x, near, "kernel")
    weighted = balanced(x, near, "weighted", (mu, var))
    j_k, j_w = _model_j(x, kernel, mu, var), _model_j(x, weighted, mu, var)
    assert np.all(j_w <= j_k + 1e-9)
    assert j_w.sum() < 0.5 * j_k.sum()  # the mean term dominates here, and it cancels
    assert np.abs(weighted.astype(np.int16) - near).max() == 1
    flipped = (weighted.astype(np.int16) != kernel).sum(2)
    assert flipped.max() == 1  # one element per kernel at most
    assert np.abs((kernel - x).sum(2)).max() <= 0.5 + 1e-9  # `kernel`: step 1's bound


def test_weighted_with_zero_means_and_a_single_kernel_keeps_step_one() -> None:
    rng = np.random.default_rng(2)
    x = rng.uniform(-30, 30, (8, 6, 9))
    near = np.clip(np.round(x), -127, 127).astype(np.int16)
    kernel = balanced(x, near, "kernel")
    zeros = balanced(x, near, "weighted", (np.zeros(6), np.ones(6)))
    assert np.array_equal(zeros, kernel)  # nothing to cancel: any flip only adds variance
    one = x[:, :1]
    assert np.array_equal(
        balanced(one, near[:, :1], "weighted", (np.ones(1), np.zeros(1))),
        balanced(one, near[:, :1], "kernel"),
    )


def test_kernel_on_a_fully_connected_weight_is_round_to_nearest() -> None:
    w = np.random.default_rng(3).standard_normal((6, 10)).astype(np.float32)
    q, _ = fit_weights(OpKind.FULLY_CONNECTED, w, 0, None, rounding="kernel")
    assert np.array_equal(q, quantize_weights(w, 0)[0])


def _offset_samples() -> list[list[Any]]:
    """Inputs with a mean far from 0 (the weights' mean error scales with it)."""
    return [[x + np.float32(2.0)] for (x,) in samples(6)]


def _first_conv_mean_error(rounding: str, adaround: int = 0) -> Array:
    """Per output channel of conv `c` (float input, its int8 weights and bias dequantized,
    no activation), the mean error against float over the calibration samples."""
    from mdla_ir.attrs import with_fuse
    from mdla_ir.interp.registry import KERNELS

    g, data = net(), _offset_samples()
    config = QuantConfig(method="minmax", weight_rounding=rounding, adaround=adaround)
    q = quantize(g, data, config)
    op = next(o for o in g.ops if o.name == "c")
    plain = op.with_(attrs=with_fuse(op.attrs, "NONE"))
    wq = dequantize(q.tensors["w"], q.const("w"))
    bq = dequantize(q.tensors["b"], q.const("b"))
    total = np.zeros(4)
    for (x,) in data:
        (y_f,) = KERNELS[op.kind](plain, [x, g.const("w"), g.const("b")], g.layout)
        (y_q,) = KERNELS[op.kind](plain, [x, wq, bq], g.layout)
        total += (y_q.astype(np.float64) - y_f).reshape(-1, 4).mean(0)
    return total / len(data)


def test_mean_moves_the_weights_mean_error_into_the_bias() -> None:
    kernel, mean = _first_conv_mean_error("kernel"), _first_conv_mean_error("mean")
    config = QuantConfig(method="minmax", weight_rounding="mean")
    q = quantize(net(), _offset_samples(), config)
    bias_step = np.asarray(q.tensors["b"].quant.scale)  # type: ignore[union-attr]
    assert np.abs(kernel).max() > 4 * bias_step.max()
    assert np.all(np.abs(mean) <= bias_step * 0.5 + 1e-5)  # left: the bias's own rounding


@pytest.mark.parametrize("rounding", ["kernel", "weighted", "mean"])
def test_each_data_rounding_quantizes_and_records(rounding: str) -> None:
    data = samples(4)
    q = quantize(net(), data, QuantConfig(weight_rounding=rounding))
    near = quantize(net(), data, QuantConfig(weight_rounding="nearest"))
    assert q.provenance.quant is not None
    assert q.provenance.quant.weight_rounding == rounding
    for name in ("w", "w2"):
        assert np.abs(q.const(name).astype(np.int16) - near.const(name)).max() <= 1
        x, _ = units(OpKind.CONV_2D, np.asarray(q.const(name)))
        assert x.shape[1] in (3, 4)


def test_after_adaround_mean_leaves_the_bias_as_kernel_does() -> None:
    """AdaRound fits the rounding to the calibration outputs, their mean included: `mean`
    adds no shift after it, so it equals `kernel` (the same first step) bit for bit."""
    data = _offset_samples()
    mean = quantize(net(), data, QuantConfig(method="minmax", weight_rounding="mean", adaround=40))
    kernel = quantize(
        net(), data, QuantConfig(method="minmax", weight_rounding="kernel", adaround=40)
    )
    plain = quantize(net(), data, QuantConfig(method="minmax", weight_rounding="mean"))
    for name in ("w", "b", "w2", "b2"):
        assert np.array_equal(mean.const(name), kernel.const(name)), name
    assert not np.array_equal(plain.const("b"), mean.const("b"))  # without AdaRound: shifted


def test_mean_leaves_a_float_regions_weights_and_bias_alone() -> None:
    from .test_float_region import calibration, float_graph

    graph = float_graph()
    q = quantize(graph, calibration(), QuantConfig(weight_rounding="mean"))
    for name in ("fw", "fb"):  # the FULLY_CONNECTED after the GRU stays float32
        assert q.tensors[name].dtype == "float32"
        assert np.array_equal(q.const(name), graph.const(name))


def test_only_weighted_keeps_the_squares_its_flips_read() -> None:
    g = net()
    for rounding, squares in (("weighted", True), ("mean", False)):
        moments = watched(g, QuantConfig(weight_rounding=rounding))
        assert moments
        assert all((m.squares is not None) == squares for m in moments.values())
    assert watched(g, QuantConfig(weight_rounding="mean", adaround=5)) == {}  # nothing reads them
    plain = ChannelMoments(squares=False)
    plain.update(np.ones((1, 2, 2, 3), np.float32))
    assert np.array_equal(plain.mean, np.ones(3))
    with pytest.raises(ValueError, match="without squares"):
        _ = plain.variance


def test_one_sample_batches_sum_as_the_batched_update() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 3, 5)).astype(np.float32)
    one, batched = ChannelMoments(), ChannelMoments()
    for i in range(4):
        one.update(x[i : i + 1])
    batched.update(x)
    assert one.samples == batched.samples == 4
    assert np.allclose(one.mean_map, batched.mean_map, rtol=0, atol=1e-12)
    assert np.allclose(one.variance, batched.variance, rtol=1e-12)


def test_a_pointwise_conv_shifts_as_the_op_on_the_mean_map_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The 1x1 shortcut (weights times the channel means) against the op run on the map."""
    import mdla_quant.weight_stats as ws
    from mdla_ir.graph import QuantParams, Tensor
    from mdla_ir.testing import GraphBuilder

    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 5, 5, 4))
    b.const("w", (6, 1, 1, 4))
    pointwise = {"stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1)}
    y = b.op(OpKind.CONV_2D, [x, "w", b.const("b", (6,))], name="p", fuse="RELU", **pointwise)
    g = b.build(y)
    op, w = g.ops[0], g.const("w")
    wq = np.clip(np.round(w / 0.01), -127, 127).astype(np.int8)
    wt = Tensor("w", w.shape, "int8", data=wq, quant=QuantParams((0.01,), (0,), 0))
    m = ChannelMoments(squares=False)
    m.update(np.random.default_rng(5).standard_normal((3, 5, 5, 4)).astype(np.float32))
    assert ws._pointwise(op, w.shape, g.layout)
    shortcut = ws.mean_shift(g, op, wt, {"x": m})
    monkeypatch.setattr(ws, "_pointwise", lambda *_: False)
    whole = ws.mean_shift(g, op, wt, {"x": m})
    assert np.abs(shortcut).max() > 1e-4  # a real shift, not zeros on both sides
    # the interpreter's GEMM sums in float32, the shortcut in float64
    assert np.allclose(shortcut, whole, rtol=1e-5, atol=0)


@pytest.mark.parametrize(
    ("kind", "w_shape", "attrs"),
    [
        (OpKind.CONV_2D, (6, 3, 3, 4), {"stride": (1, 1), "padding": (1, 1, 1, 1)}),
        (OpKind.CONV_2D, (6, 3, 3, 4), {"stride": (2, 2), "padding": (0, 1, 0, 1)}),
        (OpKind.CONV_2D, (5, 7, 7, 4), {"stride": (2, 2), "padding": (3, 3, 3, 3)}),
        (OpKind.CONV_2D, (6, 3, 2, 4), {"padding": (2, 0, 1, 1), "dilation": (2, 1)}),
        (OpKind.DEPTHWISE_CONV_2D, (1, 3, 3, 4), {"stride": (2, 2), "padding": (1, 1, 1, 1)}),
        (OpKind.DEPTHWISE_CONV_2D, (1, 5, 5, 8), {"padding": (2, 2, 2, 2)}),  # multiplier 2
    ],
)
def test_a_convs_shift_from_its_tap_means_is_the_op_on_the_mean_map(
    kind: OpKind, w_shape: tuple[int, ...], attrs: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Strides, asymmetric and dilated windows, a depthwise multiplier: the weights times each
    tap's mean input against the op run on the whole mean map (which rounds each output to
    float32)."""
    import mdla_quant.weight_stats as ws
    from mdla_ir.graph import QuantParams, Tensor
    from mdla_ir.testing import GraphBuilder

    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 9, 8, 4))
    b.const("w", w_shape)
    full = {"stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), **attrs}
    if kind == OpKind.DEPTHWISE_CONV_2D:
        full["multiplier"] = w_shape[-1] // 4
    y = b.op(kind, [x, "w", b.const("b", (w_shape[-1 if w_shape[0] == 1 else 0],))], **full)
    g = b.build(y)
    op, w = g.ops[0], g.const("w")
    wq = np.clip(np.round(w / 0.01), -127, 127).astype(np.int8)
    wt = Tensor("w", w.shape, "int8", data=wq, quant=QuantParams((0.01,), (0,), None))
    m = ChannelMoments(squares=False)
    m.update(np.random.default_rng(7).normal(0.5, 1.0, (3, 9, 8, 4)).astype(np.float32))
    assert ws._tap_means(op, w, m.mean_map, g.layout) is not None
    taps = ws.mean_shift(g, op, wt, {"x": m})
    monkeypatch.setattr(ws, "_tap_means", lambda *_: None)
    whole = ws.mean_shift(g, op, wt, {"x": m})
    assert taps.shape == whole.shape == (w_shape[-1 if w_shape[0] == 1 else 0],)
    assert np.abs(whole).max() > 1e-4  # a real shift, not zeros on both sides
    assert np.allclose(taps, whole, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("per_channel", [True, False])
def test_the_weight_error_product_by_blocks_of_channels_is_the_whole_ones(
    per_channel: bool,
) -> None:
    """(w_int8 - w) @ v a few output channels at a time (here 3 per block, 14 blocks, a
    short last one): each channel's dequantized error is the whole tensor's, per-channel
    scales sliced with their rows."""
    import mdla_quant.weight_stats as ws
    from mdla_ir.graph import QuantParams, Tensor

    rng = np.random.default_rng(9)
    w = rng.standard_normal((40, 3, 3, 2000)).astype(np.float32)
    scale = rng.uniform(0.01, 0.03, 40) if per_channel else np.array([0.02])
    q = np.clip(np.round(w / scale.reshape(-1, 1, 1, 1)), -127, 127).astype(np.int8)
    p = QuantParams(tuple(scale), (0,) * scale.size, 0 if per_channel else None)
    t = Tensor("w", w.shape, "int8", data=q, quant=p)
    v = rng.standard_normal(3 * 3 * 2000)
    whole = (dequantize(t, q).astype(np.float64) - w).reshape(40, -1) @ v
    got = ws._rows_times(t, q, w, v)
    assert np.abs(whole).max() > 1e-3
    assert np.allclose(got, whole, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("per_channel", [True, False])
def test_one_block_of_weight_errors_is_dequantizes_bit_for_bit(per_channel: bool) -> None:
    """Channels that fit one block: (w_int8 - w) @ v equals dequantize's float32 values
    widened, minus w, times v, bit for bit (the same matrix product), zero points included."""
    import mdla_quant.weight_stats as ws
    from mdla_ir.graph import QuantParams, Tensor

    rng = np.random.default_rng(4)
    w = rng.standard_normal((40, 3, 3, 64)).astype(np.float32)
    scale = rng.uniform(0.01, 0.03, 40) if per_channel else np.array([0.02])
    zp = rng.integers(-5, 6, scale.size)
    q = np.clip(np.round(w / scale.reshape(-1, 1, 1, 1)) + zp.reshape(-1, 1, 1, 1), -127, 127)
    q = q.astype(np.int8)
    p = QuantParams(tuple(scale), tuple(int(z) for z in zp), 0 if per_channel else None)
    t = Tensor("w", w.shape, "int8", data=q, quant=p)
    v = rng.standard_normal(3 * 3 * 64)
    whole = (dequantize(t, q).astype(np.float64) - w).reshape(40, -1) @ v
    assert ws._rows_times(t, q, w, v).tobytes() == whole.tobytes()
