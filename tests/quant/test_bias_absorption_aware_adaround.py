"""High-bias absorption (exact in float where the module says, padded consumers left alone,
wired into `equalize=True`) and AdaRound with the output's int8 quantization in its loss (never
worse per layer, learned error on the output grid)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mdla_ir
from mdla_ir import Graph, OpKind
from mdla_ir.testing import GraphBuilder
from mdla_quant import QuantConfig, quantize, run_int8
from mdla_quant.adaround import _Layer, adaround
from mdla_quant.bias_absorption import absorb_high_biases
from mdla_quant.bias_correction import correct_biases
from mdla_quant.equalize import equalize
from mdla_quant.errors import QuantError

PAD = {"stride": (1, 1), "dilation": (1, 1), "padding": (1, 1, 1, 1), "groups": 1}
ONE = {"stride": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "groups": 1}


def samples(n: int, seed: int = 0) -> list[list[Any]]:
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((1, 8, 8, 3)).astype(np.float32)] for _ in range(n)]


def pair(fuse: str, second: dict[str, Any], seed: int = 0) -> Graph:
    """conv 3x3 (3->8, `fuse`, biases 2..9 so most channels never reach 0) -> conv (8->4)."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 8, 8, 3))
    w1 = (rng.standard_normal((8, 3, 3, 3)) * 0.1).astype(np.float32)
    c1 = b.op(
        OpKind.CONV_2D,
        [x, b.const("w1", w1), b.const("b1", np.arange(2, 10, dtype=np.float32))],
        name="c1",
        fuse=fuse,
        **PAD,
    )
    kh = 3 if any(second["padding"]) else 1
    w2 = rng.standard_normal((4, kh, kh, 8)).astype(np.float32)
    out = b.op(
        OpKind.CONV_2D,
        [c1, b.const("w2", w2), b.const("b2", np.zeros(4, np.float32))],
        name="c2",
        fuse="NONE",
        **second,
    )
    return b.build(out)


@pytest.mark.parametrize("fuse", ["RELU", "NONE"])
def test_absorption_is_exact_in_float_on_the_calibration_data(fuse: str) -> None:
    g, calib = pair(fuse, ONE), samples(6)
    a, report = absorb_high_biases(g, calib)
    assert [(p1, p2) for p1, p2, _ in report.pairs] == [("c1", "c2")]
    assert report.pairs[0][2] >= 6  # biases 2..9 against weights of 0.1: most channels move
    assert not np.allclose(a.const("b1"), g.const("b1"))
    assert not np.allclose(a.const("b2"), g.const("b2"))
    for (x,) in calib:
        (y0,), (y1,) = mdla_ir.run_float(g, [x]), mdla_ir.run_float(a, [x])
        assert np.abs(y0 - y1).max() <= 1e-5 * np.abs(y0).max()
    # the activation between the two convs spans less
    keep = [g.ops[0].outputs[0]]
    before = mdla_ir.evaluate(g, calib[0], keep)[keep[0]]
    after = mdla_ir.evaluate(a, calib[0], keep)[keep[0]]
    assert after.max() - min(after.min(), 0) < before.max() - min(before.min(), 0)


def test_absorption_without_relu_is_exact_on_any_input() -> None:
    g = pair("NONE", ONE)
    a, _ = absorb_high_biases(g, samples(2))
    for (x,) in samples(3, seed=7):
        x = x * 5  # far outside the calibration data
        (y0,), (y1,) = mdla_ir.run_float(g, [x]), mdla_ir.run_float(a, [x])
        assert np.abs(y0 - y1).max() <= 1e-5 * np.abs(y0).max()


def test_a_padded_consumer_is_left_alone_and_said_so() -> None:
    g = pair("RELU", PAD)
    a, report = absorb_high_biases(g, samples(2))
    assert report.pairs == []
    assert "padded CONV_2D" in report.skipped["c1"]
    assert np.array_equal(a.const("b1"), g.const("b1"))


def test_relu6_is_not_absorbed() -> None:
    _, report = absorb_high_biases(pair("RELU6", ONE), samples(2))
    assert report.pairs == []
    assert "RELU6" in report.skipped["c1"]


def test_equalize_config_absorbs_and_needs_a_reiterable_set() -> None:
    g, calib = pair("RELU", ONE), samples(6)
    config = QuantConfig(equalize=True, weight_rounding="nearest")  # biases not shifted
    q = quantize(g, calib, config)
    e, _ = equalize(g)
    a, _ = absorb_high_biases(e, calib)
    bias = q.tensors["b1"]
    assert bias.quant is not None
    real = np.asarray(bias.data, np.float64) * np.asarray(bias.quant.scale)
    step = np.asarray(bias.quant.scale)
    assert np.all(np.abs(real - a.const("b1")) <= step)  # CLE then absorption
    assert np.any(np.abs(real - e.const("b1")) > 10 * step)  # not CLE alone
    with pytest.raises(QuantError, match="re-iterable"):
        quantize(g, iter(calib), QuantConfig(equalize=True))


def test_output_quantization_in_the_loss_lands_on_the_grid() -> None:
    layer = _Layer.__new__(_Layer)
    layer.fuse = "RELU6"
    layer.out_scale, layer.out_zero = 0.02, -128  # range [0, 5.1]: tighter than RELU6
    y = np.array([-1.0, 0.011, 0.5, 5.0, 5.2, 7.0])
    q, d = layer.act(y)
    assert np.allclose(q, [0.0, 0.02, 0.5, 5.0, 5.1, 5.1])
    assert np.allclose(np.round(q / 0.02), q / 0.02)
    assert list(d) == [0, 1, 1, 1, 0, 0]  # straight through inside the range only


def chain(seed: int) -> Graph:
    rng = np.random.default_rng(seed)
    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 8, 8, 3))
    c1 = b.op(
        OpKind.CONV_2D,
        [x, b.const("w1", rng.standard_normal((8, 3, 3, 3)).astype(np.float32)),
         b.const("b1", rng.standard_normal(8).astype(np.float32))],
        name="c1", fuse="RELU6", **PAD,
    )  # fmt: skip
    out = b.op(
        OpKind.CONV_2D,
        [c1, b.const("w2", rng.standard_normal((4, 1, 1, 8)).astype(np.float32)),
         b.const("b2", np.zeros(4, np.float32))],
        name="c2", fuse="NONE", **ONE,
    )  # fmt: skip
    return b.build(out)


def test_activation_aware_adaround_never_worse_per_layer_and_helps_the_model() -> None:
    g, calib = chain(3), samples(8)
    q = quantize(g, calib, QuantConfig(weight_rounding="nearest"))  # AdaRound's own baseline
    qa, report = adaround(g, q, calib, iters=300, rows=512, batch=128, quantized_output=True)
    for _name, nearest, learned, kept in report.layers:
        assert learned <= nearest
        assert kept == (learned < nearest)
    assert any(kept for *_, kept in report.layers)
    for name in ("w1", "w2"):
        assert q.tensors[name].quant == qa.tensors[name].quant
    held = samples(6, seed=9)
    err = {
        k: sum(float(((run_int8(m, x)[0] - mdla_ir.run_float(g, x)[0]) ** 2).sum()) for x in held)
        for k, m in (("nearest", q), ("adaround", qa))
    }
    assert err["adaround"] < err["nearest"]


def test_empty_calibration_is_refused_by_each_sequential_pass() -> None:
    g = pair("RELU", ONE)
    with pytest.raises(QuantError, match=r"high-bias absorption .* got no calibration samples"):
        absorb_high_biases(g, [])
    q = quantize(g, samples(2), QuantConfig())
    with pytest.raises(QuantError, match=r"^adaround got no calibration samples"):
        adaround(g, q, [])
    with pytest.raises(QuantError, match=r"^bias correction got no calibration samples"):
        correct_biases(g, q, [])
