"""High-bias absorption's minima observed in quantize's own calibration pass: the int8 graph
is the one the separate float pass gave (absorbed or not, with more calibration samples than
the 32 the minima read), with one calibration pass and no float pass when no channel moves."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from mdla_ir import Graph, OpKind, evaluate
from mdla_ir.testing import GraphBuilder
from mdla_quant import QuantConfig, bias_absorption, float_rewrites, quantize
from mdla_quant.bias_absorption import Minima, absorb_high_biases, absorption, channel_minima

quantize_module = sys.modules["mdla_quant.quantize"]  # the module (its name is the function's)
ONE = {"stride": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "groups": 1}


def samples(n: int, seed: int = 0) -> list[list[Any]]:
    """n inputs, those after the 32nd ten times larger (minima the first 32 never reach)."""
    rng = np.random.default_rng(seed)
    return [
        [(rng.standard_normal((1, 6, 6, 3)) * (10 if i >= 32 else 1)).astype(np.float32)]
        for i in range(n)
    ]


def pair(low: int) -> Graph:
    """conv 1x1 (3->8, RELU, biases low..low+7) -> conv 1x1 (8->4): an absorbable pair whose
    channels move when their biases keep them above 0 (low 2), none when they do not (-9)."""
    rng = np.random.default_rng(1)
    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 6, 6, 3))
    w1 = (rng.standard_normal((8, 1, 1, 3)) * 0.1).astype(np.float32)
    b1 = np.arange(low, low + 8, dtype=np.float32)
    c1 = b.op(
        OpKind.CONV_2D, [x, b.const("w1", w1), b.const("b1", b1)], name="c1", fuse="RELU", **ONE
    )
    w2 = rng.standard_normal((4, 1, 1, 8)).astype(np.float32)
    b2 = b.const("b2", np.zeros(4, np.float32))
    return b.build(b.op(OpKind.CONV_2D, [c1, b.const("w2", w2), b2], name="c2", fuse="NONE", **ONE))


def _same(a: Graph, b: Graph) -> bool:
    for name, t in a.tensors.items():
        u = b.tensors[name]
        if t.quant != u.quant or (t.data is None) != (u.data is None):
            return False
        if t.data is not None and not np.array_equal(t.data, u.data):
            return False
    return a.tensors.keys() == b.tensors.keys()


@pytest.mark.parametrize(("low", "moved", "passes"), [(2, True, 2), (-9, False, 1)])
def test_the_minima_come_from_the_calibration_pass(
    low: int, moved: bool, passes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    g, calib, config = pair(low), samples(40), QuantConfig(equalize=True)
    _, report = absorb_high_biases(g, calib)
    assert bool(report.pairs) == moved  # the pair is absorbable either way
    assert absorption(g).pairs
    # the flow before: the absorbed graph from its own float pass, calibrated once
    monkeypatch.setattr(
        quantize_module,
        "equalized",
        lambda graph, config: (float_rewrites(graph, calib, config), None),
    )
    before = quantize(g, calib, config)
    monkeypatch.undo()
    calls = {"calibrate": 0, "float": 0}
    calibrate, evaluate = quantize_module.calibrate, bias_absorption.evaluate

    def counted_calibrate(*args: Any, **kwargs: Any) -> Any:
        calls["calibrate"] += 1
        return calibrate(*args, **kwargs)

    def counted_evaluate(*args: Any, **kwargs: Any) -> Any:
        calls["float"] += 1
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(quantize_module, "calibrate", counted_calibrate)
    monkeypatch.setattr(bias_absorption, "evaluate", counted_evaluate)
    after = quantize(g, calib, config)
    assert _same(after, before)
    assert calls == {"calibrate": passes, "float": 0}


def test_the_observer_keeps_the_first_samples_minima_per_channel() -> None:
    g, calib = pair(2), samples(40)
    names = {"c1"} | {op.outputs[0] for op in g.ops}
    minima = Minima(names, samples=32)
    for x in calib:
        evaluate(g, x, (), minima)
    expected = channel_minima(g, names, calib[:32])
    assert minima.lows.keys() == expected.keys()
    assert all(np.array_equal(minima.lows[n], expected[n]) for n in expected)
    assert not all(
        np.array_equal(minima.lows[n], channel_minima(g, names, calib)[n]) for n in names
    )


def test_minima_the_pass_did_not_see_come_from_a_float_pass() -> None:
    """A graph calibrated under other names: `apply` runs the float pass for what is missing."""
    g, calib = pair(2), samples(8)
    a, _ = absorb_high_biases(g, calib)
    got, report = absorption(g).apply(calib)  # its observer saw nothing
    assert report.pairs
    assert _same(got, a)


@pytest.mark.parametrize(("low", "seen"), [(2, 32 + 40), (-9, 40)])
def test_a_pass_whose_channels_move_stops_at_the_minima_samples(low: int, seen: int) -> None:
    """Moved: the first pass stops inside its 32nd sample (the minima are complete), then the
    absorbed graph's pass reads all 40; not moved: one pass of 40."""
    calls: list[int] = []
    config = QuantConfig(equalize=True)
    quantize(pair(low), samples(40), config, progress=lambda n, _t: calls.append(n))
    assert len(calls) + (1 if low == 2 else 0) == seen  # a stopped sample reports no progress
    assert calls[-1] == 40
