"""SOFTMAX at 16 bits: run_int8 against LiteRT's reference kernel (BUILTIN_REF) on every tensor,
over row lengths, betas, axes and input widths up to far past the exp table's -10 end; a case
dense enough to tell the double-made tables LiteRT uses from float-made ones; and the
emulator's int16 kernel against run_int8 on int16 codes that reach every table segment."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from mdla_ir import Graph, OpKind, QuantParams
from mdla_ir.builder import GraphBuilder
from mdla_quant.config import QuantConfig
from mdla_quant.kernels import a16_softmax
from mdla_quant.kernels.a16_softmax import input_multiplier, softmax_rows16
from mdla_quant.quantize import quantize
from tests.quant.test_a16_act import emulated as act_emulated
from tests.quant.test_a16_oracle import every_tensor

QUANT16_SYMM = 7
# (row length, axis, beta, widest input); the last two saturate the exp table's -10 end
CASES = [
    (2, -1, 1.0, 1.0),
    (5, 1, 0.5, 3.0),
    (10, -1, 2.0, 6.0),
    (33, 1, 1.0, 12.0),
    (100, -1, 1.0, 40.0),
    (1000, -1, 0.7, 200.0),
]


def case(n: int, axis: int, beta: float, width: float, seed: int) -> tuple[Graph, list[Any]]:
    rng = np.random.default_rng(seed)
    shape = (1, 3, n) if axis == -1 else (1, n, 3)
    b = GraphBuilder("softmax16", layout="NHWC", seed=seed)
    graph = b.build(b.op(OpKind.SOFTMAX, [b.input("x", shape)], name="y", axis=axis, beta=beta))
    samples = [[rng.uniform(-width, width, shape).astype(np.float32)] for _ in range(3)]
    return quantize(graph, samples, QuantConfig(a16=("y",), method="minmax")), samples


@pytest.mark.parametrize("params", CASES, ids=lambda c: f"n{c[0]}_w{c[3]}")
def test_int16_softmax_matches_litert_on_every_tensor(
    params: tuple[int, int, float, float],
) -> None:
    compared = 0
    for seed in range(3):
        qgraph, samples = case(*params, seed)
        y = qgraph.tensors["y"]
        assert y.dtype == "int16"
        assert y.quant is not None
        assert (y.quant.scale, y.quant.zero_point) == ((1.0 / 32768,), (0,))
        for sample in samples:
            ours, theirs = every_tensor(qgraph, sample)
            for name, value in ours.items():
                assert theirs[name].dtype == value.dtype, name
                np.testing.assert_array_equal(value, theirs[name], err_msg=f"seed {seed} {name}")
                compared += value.size
    assert compared >= 3 * 3 * 2 * 3 * params[0]


def float_made_table(func: Any, lo: float, hi: float) -> np.ndarray:
    """make_table's formula in float32 arithmetic (what LiteRT does not do)."""
    f, step = np.float32, np.float32((hi - lo) / 512)

    def r(v: Any) -> Any:
        return f(math.copysign(math.floor(abs(float(v)) + 0.5), float(v)))

    def at(i: float) -> Any:
        return f(func(f(f(lo) + f(i) * step))) * f(32768)

    table = np.empty(513, np.int64)
    for i in range(512):
        here = r(at(i))
        mid = r(f(func(f(f(lo) + f(i) * step + step / f(2)))) * f(32768))
        table[i] = min(max(here - r((r((at(i + 1) + here) / f(2)) - mid) / f(2)), -32768), 32767)
    table[512] = min(max(r(f(func(f(hi))) * f(32768)), -32768), 32767)
    return table


def test_litert_makes_its_tables_in_double(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two float-made entries of 1/(1+x) that differ (segments 160 and 294) change 20 of
    these 73728 outputs; LiteRT's equal the double-made tables' on all of them."""
    recip32 = float_made_table(lambda v: np.float32(1) / (np.float32(1) + v), 0.0, 1.0)
    assert (recip32 != a16_softmax.RECIPROCAL_TABLE).sum() == 2
    rng = np.random.default_rng(0)
    b = GraphBuilder("softmax16_dense", layout="NHWC", seed=0)
    x = b.input("x", (1, 192, 192, 8))
    weights = [b.const("w", (2, 1, 1, 8)), b.const("bias", (2,))]
    h = b.op(OpKind.CONV_2D, [x, *weights], name="h", stride=(1, 1), padding=(0, 0, 0, 0))
    graph = b.build(b.op(OpKind.SOFTMAX, [h], name="y", axis=-1, beta=1.0))
    samples = [[rng.uniform(-4, 4, (1, 192, 192, 8)).astype(np.float32)] for _ in range(2)]
    qgraph = quantize(graph, samples, QuantConfig(a16=("h", "y"), method="minmax"))
    ours, theirs = every_tensor(qgraph, samples[0])
    np.testing.assert_array_equal(ours["y"], theirs["y"])
    h_q = qgraph.tensors["h"].quant
    assert h_q is not None
    m, s = input_multiplier(h_q.scale[0], 1.0, "double")
    monkeypatch.setattr(a16_softmax, "RECIPROCAL_TABLE", recip32)
    floated = softmax_rows16(ours["h"].astype(np.int64), m, s, "double")
    assert (floated != theirs["y"]).sum() >= 10


def emulated(codes: np.ndarray, scale: float, beta: float, axis: int) -> np.ndarray:
    return act_emulated(OpKind.SOFTMAX, scale, codes, lambda b: [b.f32(beta), b.i32(axis)])


@pytest.mark.parametrize("rounding", ["double", "single"])
@pytest.mark.parametrize(("scale", "beta"), [(12 / 32767, 1.0), (3e-3, 0.5), (1e-5, 2.0)])
def test_the_emulators_int16_softmax_equals_run_int8(
    scale: float, beta: float, rounding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows (0, -k) for every k in [0, 32767] (every exp code, every sum's table segment), then
    random rows of 7 along axis 1; against the kernel run_int8 runs for the op, in both
    roundings (the input rescale's MultiplyByQuantizedMultiplier)."""
    monkeypatch.setenv("MDLA_EMU_ROUNDING", rounding)
    k = np.arange(32768, dtype=np.int16)
    pairs = np.stack([np.zeros_like(k), -k], -1).reshape(1, 32768, 2)
    rng = np.random.default_rng(int(scale * 1e6))
    random = rng.integers(-32768, 32768, (4, 7, 5), dtype=np.int16)
    for codes, axis in ((pairs, -1), (random, 1)):
        b = GraphBuilder("sm", layout="NHWC", seed=0)
        x = b.input("x", codes.shape)
        op = b.build(b.op(OpKind.SOFTMAX, [x], name="y", axis=axis, beta=beta)).ops[0]
        in_q, out_q = QuantParams((scale,), (0,)), QuantParams((1.0 / 32768,), (0,))
        want = a16_softmax.softmax16(op, [codes], [in_q], out_q, rounding, "saturate")
        got = emulated(codes, scale, beta, axis)
        assert axis != -1 or len(np.unique(want)) > 1000  # the sweep spans the output range
        np.testing.assert_array_equal(got, want)
