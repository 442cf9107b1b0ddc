"""The quantizer: observers, parameter rules, target scale constraints, streaming calibration."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import mdla_ir
from mdla_ir import Graph, OpKind
from mdla_ir.testing import GraphBuilder
from mdla_quant import run_int8
from mdla_quant.config import QuantConfig
from mdla_quant.errors import QuantError
from mdla_quant.observers import Histogram, clip_range
from mdla_quant.quantize import activation_params, quantize, quantize_bias
from mdla_quant.weights import quantize_weights

CONV = {"stride": (1, 1), "dilation": (1, 1), "padding": (1, 1, 1, 1), "groups": 1}
POOL = {"kernel": (2, 2), "stride": (2, 2), "padding": (0, 0, 0, 0), "fuse": "NONE"}


def samples(n: int, shape: tuple[int, ...] = (1, 8, 8, 3), seed: int = 0) -> list[list[Any]]:
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(shape).astype(np.float32)] for _ in range(n)]


def net() -> Graph:
    """conv+relu6 -> {logistic -> maxpool -> mul, conv -> avgpool} -> concat, and a tanh."""
    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 8, 8, 3))
    c = b.op(
        OpKind.CONV_2D,
        [x, b.const("w", (4, 3, 3, 3)), b.const("b", (4,))],
        name="c",
        fuse="RELU6",
        **CONV,
    )
    m = b.op(OpKind.MAX_POOL_2D, [b.op(OpKind.LOGISTIC, [c], name="sig")], name="mp", **POOL)
    c2 = b.op(
        OpKind.CONV_2D,
        [c, b.const("w2", (4, 3, 3, 4)), b.const("b2", (4,))],
        name="c2",
        fuse="NONE",
        **CONV,
    )
    a = b.op(OpKind.AVERAGE_POOL_2D, [c2], name="ap", **POOL)
    k = b.const("k", np.array([0.5], np.float32))
    gate = b.op(OpKind.MUL, [m, k], name="gate", fuse="NONE")
    cat = b.op(OpKind.CONCATENATION, [a, gate], name="cat", axis=3)
    return b.build(cat, b.op(OpKind.TANH, [c2], name="th"))


def test_histogram_streams_and_keeps_exact_extremes() -> None:
    h = Histogram(256)
    h.update(np.array([0.1, -0.2], np.float32))
    before = h.counts.sum()
    h.update(np.array([37.0, 1.0], np.float32))  # forces the range to double several times
    assert (h.lo, h.hi) == (np.float32(-0.2), np.float32(37.0))
    assert h.counts.sum() == before + 2
    assert h.radius == 64.0
    edges = h.edges
    for v in (0.1, -0.2, 37.0, 1.0):  # every value still lands in the bin holding it
        assert h.counts[np.searchsorted(edges, np.float32(v), side="right") - 1] >= 1


def test_clip_methods_on_known_distributions() -> None:
    rng = np.random.default_rng(1)
    h = Histogram()
    for _ in range(20):
        h.update(rng.uniform(0.0, 1.0, 50_000))
    lo, hi = clip_range(h, "percentile", 99.0)
    assert hi == pytest.approx(0.99, abs=2e-3)
    assert lo == pytest.approx(0.01, abs=2e-3)
    assert clip_range(h, "minmax", 99.0) == (h.lo, h.hi)
    heavy = Histogram()
    heavy.update(np.concatenate([rng.standard_normal(200_000), [60.0, -60.0]]))
    for method in ("entropy", "percentile"):
        mlo, mhi = clip_range(heavy, method, 99.99)
        assert 2.0 < mhi < 20.0, method  # two outliers must not stretch the range to 60
        assert -20.0 < mlo < -2.0, method
    # MSE clips where that lowers the expected error: a Laplace tail, yes; that is its optimum.
    laplace = Histogram()
    laplace.update(rng.laplace(0.0, 1.0, 400_000))
    lo, hi = clip_range(laplace, "mse", 99.99)
    assert 0.2 * laplace.hi < hi < 0.9 * laplace.hi
    assert 0.9 * laplace.lo < lo < 0.2 * laplace.lo


def test_activation_params() -> None:
    q = activation_params(-1.0, 3.0)
    assert q.scale[0] == pytest.approx(4.0 / 255.0)
    assert q.zero_point == (-128 + round(1.0 / (4.0 / 255.0)),)
    assert activation_params(0.5, 2.0).zero_point == (-128,)  # range widened to contain 0
    assert activation_params(-2.0, -0.5).zero_point == (127,)
    assert activation_params(0.0, 0.0).scale[0] > 0


def test_weight_and_bias_quantization() -> None:
    w = np.zeros((3, 2, 2, 2), np.float32)
    w[0] = 0.5
    w[1, 0, 0, 0] = -2.0
    q, params = quantize_weights(w, 0)
    assert q.dtype == np.int8
    assert params.channel_dim == 0
    assert params.scale == pytest.approx((0.5 / 127, 2.0 / 127, 1.0))
    assert q[0].min() == 127
    assert q[1, 0, 0, 0] == -127
    assert not q[2].any()
    dw, dq = quantize_weights(np.ones((1, 3, 3, 5), np.float32), 3)
    assert len(dq.scale) == 5
    assert dw.max() == 127
    b, bq = quantize_bias(np.array([1.0, -1.0, 0.25]), 0.1, params)
    assert b.dtype == np.int32
    assert bq.scale[1] == pytest.approx(0.1 * 2.0 / 127, rel=1e-6)
    assert b[1] == round(-1.0 / (np.float32(0.1) * np.float32(2.0 / 127)))


def test_target_constraints_are_enforced() -> None:
    q = quantize(net(), samples(6), QuantConfig(method="minmax"))
    t = q.tensors
    assert t["sig"].quant == mdla_ir.QuantParams((1 / 256,), (-128,))
    assert t["th"].quant == mdla_ir.QuantParams((1 / 128,), (0,))
    assert t["mp"].quant == t["sig"].quant  # pools keep their input's params
    assert t["ap"].quant == t["c2"].quant == t["gate"].quant == t["cat"].quant  # shared scale
    assert t["w"].dtype == "int8"
    assert t["w"].quant is not None
    assert t["w"].quant.channel_dim == 0
    assert t["b"].dtype == "int32"
    assert t["k"].dtype == "int8"
    assert q.provenance.rounding == "double"
    assert q.provenance.quant == mdla_ir.QuantRecord(method="minmax")
    assert q.provenance.calibration_samples == 6


def test_the_provenance_records_the_whole_config() -> None:
    config = QuantConfig(method="mse", rounding="single", bins=1024, percentile=99.0)
    q = quantize(net(), samples(3), config)
    assert q.provenance.quant is not None
    assert dataclasses.asdict(q.provenance.quant) == config.as_dict()
    assert q.provenance.rounding == "single"
    assert q.provenance.calibration_samples == 3


def test_quant_record_mirrors_every_config_field() -> None:
    """mdla_ir's QuantRecord is QuantConfig's twin: a field added to one must reach the other."""
    names = [f.name for f in dataclasses.fields(mdla_ir.QuantRecord)]
    assert names == [f.name for f in dataclasses.fields(QuantConfig)]
    assert mdla_ir.QuantRecord() == QuantConfig().record()


def test_int8_tracks_float_within_a_few_steps_on_calibrated_data() -> None:
    g, calib = net(), samples(8)
    nearest = QuantConfig(method="minmax", weight_rounding="nearest")  # each weight within s/2
    q = quantize(g, calib, nearest)  # no clipping on these samples
    cat_q, c2_q = q.tensors["cat"].quant, q.tensors["c2"].quant
    assert cat_q is not None
    assert c2_q is not None
    for xs in calib[:3]:
        (cat_f, th_f), (cat_i, th_i) = mdla_ir.run_float(g, xs), run_int8(q, xs)
        assert np.abs(cat_f - cat_i).max() <= 3 * cat_q.scale[0]
        assert np.abs(th_f - th_i).max() <= c2_q.scale[0]  # tanh' <= 1: the input's step bounds it


@pytest.mark.parametrize("method", ["percentile", "mse", "entropy"])
def test_int8_tracks_float_on_held_out_data(method: str) -> None:
    g = net()
    q = quantize(g, samples(8), QuantConfig(method=method))
    for xs in samples(3, seed=9):
        for f, i8 in zip(mdla_ir.run_float(g, xs), run_int8(q, xs), strict=True):
            cosine = float((f * i8).sum() / np.sqrt((f * f).sum() * (i8 * i8).sum()))
            assert cosine > 0.99, method


def _conv_chain() -> Graph:
    """conv -> conv, the second conv's output the graph's only output."""
    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 8, 8, 3))
    c = b.op(
        OpKind.CONV_2D,
        [x, b.const("w", (4, 3, 3, 3)), b.const("b", (4,))],
        name="c",
        fuse="NONE",
        **CONV,
    )
    out = b.op(
        OpKind.CONV_2D,
        [c, b.const("w2", (4, 3, 3, 4)), b.const("b2", (4,))],
        name="out",
        fuse="NONE",
        **CONV,
    )
    return b.build(out)


@pytest.mark.parametrize("method", ["percentile", "mse", "entropy"])
def test_graph_outputs_keep_their_observed_range(method: str) -> None:
    g = _conv_chain()
    calib = samples(8)
    calib[3][0][0, 4, 4, :] = 40.0  # one outlier pixel: a tail every clipping method cuts
    seen: dict[str, list[float]] = {}

    def observe(name: str, value: Any) -> None:
        lo, hi = seen.get(name, [np.inf, -np.inf])
        seen[name] = [min(lo, float(value.min())), max(hi, float(value.max()))]

    for xs in calib:
        mdla_ir.evaluate(g, xs, keep=(), observe=observe)
    q = quantize(g, calib, QuantConfig(method=method, percentile=99.0))
    assert q.tensors["out"].quant == activation_params(*seen["out"])
    clipped = q.tensors["c"].quant  # an inner tensor is still clipped by the method
    assert clipped is not None
    assert clipped.scale[0] < activation_params(*seen["c"]).scale[0]


def test_calibration_streams_from_a_generator_with_progress() -> None:
    seen: list[int] = []

    def stream() -> Iterator[list[Any]]:
        yield from samples(5)

    quantize(net(), stream(), progress=lambda n, _t: seen.append(n))
    assert seen == [1, 2, 3, 4, 5]


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(QuantError, match="got no samples"):
        quantize(net(), [])
    b = GraphBuilder()
    nchw = b.build(b.op(OpKind.RELU, [b.input("x", (1, 3))]))
    with pytest.raises(QuantError, match="quantize the legalized"):
        quantize(nchw, samples(1))
    with pytest.raises(QuantError, match="unknown calibration method `kl`"):
        QuantConfig(method="kl")
    with pytest.raises(QuantError, match="unknown rounding"):
        QuantConfig(rounding="nearest")
    with pytest.raises(QuantError, match="percentile 30"):
        QuantConfig(percentile=30)


def test_a_fixed_scale_that_cannot_hold_a_tied_tensor_is_an_error() -> None:
    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 4, 4, 2))
    big = b.op(OpKind.MUL, [x, b.const("k", np.array([9.0], np.float32))], name="big", fuse="NONE")
    cat = b.op(OpKind.CONCATENATION, [b.op(OpKind.LOGISTIC, [x], name="sig"), big], axis=3)
    with pytest.raises(QuantError, match=r"`big` .* shares a scale with `sig`"):
        quantize(b.build(cat), samples(2, (1, 4, 4, 2)))


def test_bias_correction_needs_a_reiterable_calibration_set() -> None:
    def stream() -> Iterator[list[Any]]:
        yield from samples(3)

    with pytest.raises(QuantError, match="not a generator"):
        quantize(net(), stream(), QuantConfig(bias_correction=True))
    corrected = quantize(net(), samples(3), QuantConfig(bias_correction=True))
    plain = quantize(net(), samples(3), QuantConfig())
    assert not np.array_equal(corrected.const("b"), plain.const("b"))  # the biases moved


def _two_convs(shared: bool) -> Graph:
    """The same 3x3 conv on two inputs of ranges 1 and 50; `shared`: one weight and bias
    constant read by both (as torch.export lifts a module called twice), else a copy each."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    bias = np.array([0.5, -0.25, 1.0, 2.0], np.float32)
    b = GraphBuilder(layout="NHWC")
    x, y = b.input("x", (1, 8, 8, 3)), b.input("y", (1, 8, 8, 3))
    outs = []
    for k, inp in enumerate((x, y)):
        if shared and k:
            consts = ["w", "b"]
        else:
            suffix = ".1" if k else ""
            consts = [b.const(f"w{suffix}", w), b.const(f"b{suffix}", bias)]
        outs.append(b.op(OpKind.CONV_2D, [inp, *consts], name=f"c{k}", fuse="NONE", **CONV))
    return b.build(*outs)


def test_a_weight_and_bias_two_convs_share_are_quantized_for_each_conv() -> None:
    """A bias is stored at its conv's input scale times the weight's: a constant two convs
    read (of inputs of different ranges) is quantized once per conv, as if each had a copy."""
    rng = np.random.default_rng(4)
    calib = [
        [
            rng.uniform(-1, 1, (1, 8, 8, 3)).astype(np.float32),
            rng.uniform(-50, 50, (1, 8, 8, 3)).astype(np.float32),
        ]
        for _ in range(4)
    ]
    shared = quantize(_two_convs(shared=True), calib, QuantConfig(method="minmax"))
    copies = quantize(_two_convs(shared=False), calib, QuantConfig(method="minmax"))
    assert shared.ops[1].inputs[1:] == ("w.1", "b.1")
    assert shared.tensors["b.1"].quant == copies.tensors["b.1"].quant
    assert shared.tensors["b.1"].quant != shared.tensors["b"].quant
    for a, b in zip(run_int8(shared, calib[0]), run_int8(copies, calib[0]), strict=True):
        np.testing.assert_array_equal(a, b)
