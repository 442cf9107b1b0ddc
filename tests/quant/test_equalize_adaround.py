"""Cross-layer equalization (exact in float, RELU6 pairs left alone), AdaRound (never worse per
layer, better on a real layer, ordinary int8 weights the emulator runs bit for bit), and the
config round-tripping through the manifest, old manifests without the new keys still read."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mdla_ir
import mdla_runtime
from mdla_ir import Graph, OpKind
from mdla_ir.testing import GraphBuilder
from mdla_quant import QuantConfig, quantize, run_int8
from mdla_quant.adaround import adaround
from mdla_quant.equalize import equalize
from mdla_quant.errors import QuantError
from mdla_runtime.testing import pack, split

CONV = {"stride": (1, 1), "dilation": (1, 1), "padding": (1, 1, 1, 1), "groups": 1}
ONE = {"stride": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "groups": 1}


def samples(n: int, seed: int = 0) -> list[list[Any]]:
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((1, 8, 8, 3)).astype(np.float32)] for _ in range(n)]


def chain(first_fuse: str = "RELU", seed: int = 0) -> Graph:
    """conv(3->8, fuse) -> depthwise(8, RELU) -> conv 1x1 (8->6) -> conv 1x1 (6->4): channel
    ranges spread over three decades, as a folded BatchNorm leaves them."""
    rng = np.random.default_rng(seed)
    spread = np.logspace(-1.5, 1.5, 8).astype(np.float32)
    w1 = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * spread[:, None, None, None]
    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 8, 8, 3))
    c1 = b.op(
        OpKind.CONV_2D,
        [x, b.const("w1", w1), b.const("b1", rng.standard_normal(8).astype(np.float32))],
        name="c1",
        fuse=first_fuse,
        **CONV,
    )
    wd = rng.standard_normal((1, 3, 3, 8)).astype(np.float32) / spread
    dw = b.op(
        OpKind.DEPTHWISE_CONV_2D,
        [c1, b.const("wd", wd), b.const("bd", np.zeros(8, np.float32))],
        name="dw",
        fuse="RELU",
        **{k: v for k, v in CONV.items() if k != "groups"},
    )
    w3 = rng.standard_normal((6, 1, 1, 8)).astype(np.float32)
    c3 = b.op(
        OpKind.CONV_2D,
        [dw, b.const("w3", w3), b.const("b3", np.zeros(6, np.float32))],
        name="c3",
        fuse="NONE",
        **ONE,
    )
    w4 = rng.standard_normal((4, 1, 1, 6)).astype(np.float32)
    out = b.op(
        OpKind.CONV_2D,
        [c3, b.const("w4", w4), b.const("b4", np.zeros(4, np.float32))],
        name="c4",
        fuse="NONE",
        **ONE,
    )
    return b.build(out)


def test_equalization_is_exact_in_float_and_evens_the_ranges() -> None:
    g = chain("RELU")
    e, report = equalize(g)
    assert report.pairs == [("c1", "dw"), ("dw", "c3"), ("c3", "c4")]
    assert report.range_ratio_before > 10
    assert report.range_ratio_after < 1.1
    for (x,) in samples(3):
        (a,), (b,) = mdla_ir.run_float(g, [x]), mdla_ir.run_float(e, [x])
        assert np.abs(a - b).max() <= 1e-5 * np.abs(a).max()
    w_before, w_after = g.const("w1"), e.const("w1")
    assert not np.allclose(w_before, w_after)  # it did move the weights


def test_relu6_pairs_are_left_alone_and_said_so() -> None:
    g = chain("RELU6")
    e, report = equalize(g)
    assert ("c1", "dw") not in report.pairs
    assert "RELU6" in report.skipped["c1"]
    assert np.array_equal(e.const("w1"), g.const("w1"))
    assert "skipped: 1 fused RELU6" in report.summary()


def test_equalization_helps_the_int8_model() -> None:
    g, calib = chain("RELU"), samples(8)
    held = samples(6, seed=9)
    ref = [mdla_ir.run_float(g, x)[0] for x in held]

    def sqnr(config: QuantConfig) -> float:
        q = quantize(g, calib, config)
        err = sum(
            float(((run_int8(q, x)[0] - r) ** 2).sum()) for x, r in zip(held, ref, strict=True)
        )
        return 10 * np.log10(sum(float((r**2).sum()) for r in ref) / err)

    plain, equalized = sqnr(QuantConfig()), sqnr(QuantConfig(equalize=True))
    assert equalized > plain + 3, (plain, equalized)


def test_adaround_never_worse_per_layer_and_better_on_the_model() -> None:
    g, calib = chain("RELU", seed=1), samples(8)
    q = quantize(g, calib, QuantConfig())
    qa, report = adaround(g, q, calib, iters=300, rows=512, batch=128)
    assert [name for name, *_ in report.layers] == ["c1", "dw", "c3", "c4"]
    for _name, nearest, learned, kept in report.layers:
        assert learned <= nearest
        assert kept == (learned < nearest)
    assert any(kept for *_, kept in report.layers)
    for name in ("w1", "wd", "w3", "w4"):  # only the integers move, by at most one step
        t0, t1 = q.tensors[name], qa.tensors[name]
        assert t0.quant == t1.quant
        assert np.abs(t0.data.astype(int) - t1.data.astype(int)).max() <= 1  # type: ignore[union-attr]
    held = samples(6, seed=9)
    err = {
        k: sum(float(((run_int8(m, x)[0] - mdla_ir.run_float(g, x)[0]) ** 2).sum()) for x in held)
        for k, m in (("nearest", q), ("adaround", qa))
    }
    assert err["adaround"] < err["nearest"]


def test_adaround_weights_run_bit_exact_on_the_emulator(tmp_path: Path) -> None:
    g, calib = chain("RELU", seed=2), samples(4)
    q = quantize(g, calib, QuantConfig(adaround=100, equalize=True))
    path = mdla_runtime.save(q, tmp_path / "ada.mdla")
    target = mdla_runtime.open_target("emu")
    for (x,) in samples(3, seed=5):
        got = target.run(mdla_runtime.load(path), [x]).raw_outputs[0]
        want = run_int8(q, [x], raw=True)[0]
        assert np.array_equal(got.reshape(want.shape), want)


def test_the_config_round_trips_through_the_manifest(tmp_path: Path) -> None:
    g, calib = chain("RELU"), samples(2)
    config = QuantConfig(equalize=True, adaround=20, bias_correction=True)
    q = quantize(g, calib, config)
    m = mdla_runtime.load(mdla_runtime.save(q, tmp_path / "m.mdla"))
    assert m.provenance.quant == config.record()


def test_a_manifest_from_before_the_new_fields_still_reads(tmp_path: Path) -> None:
    q = quantize(chain("RELU"), samples(2), QuantConfig())
    header, data = split(mdla_runtime.to_bytes(q))
    for key in ("equalize", "adaround"):
        del header["model"]["quant"][key]
    path = tmp_path / "old.mdla"
    path.write_bytes(pack(header, data))
    m = mdla_runtime.load(path)  # the Python reader
    assert m.provenance.quant == QuantConfig().record()
    mdla_runtime.open_target("emu").run(m, samples(1)[0])  # and the C reader
    header["model"]["quant"]["adaround"] = -1  # a present field is still type-checked
    path.write_bytes(pack(header, data))
    with pytest.raises(mdla_runtime.ManifestError, match=r"model\.quant\.adaround"):
        mdla_runtime.load(path)


def test_adaround_needs_a_reiterable_calibration_set() -> None:
    with pytest.raises(QuantError, match="re-iterable"):
        quantize(chain(), iter(samples(2)), QuantConfig(adaround=5))
    with pytest.raises(QuantError, match="adaround=-1"):
        dataclasses.replace(QuantConfig(), adaround=-1)
