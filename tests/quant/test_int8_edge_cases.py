"""Issue 18's int8 edge cases in the reference (`mdla_quant`): the accumulator fact.

When the requantization multiplier is large (s_in * s_w / s_out >= 2), MBQM's x * 2^s leaves
int32. TFLite's reference wraps it modulo 2^32; the emulator's int64 arithmetic saturated. The
target says which (`[arith] accumulator`), and run_int8 follows it.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from mdla_ir.builders import as_floats, random_codes, random_qgraph
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_ir.provenance import Provenance, QuantRecord
from mdla_ir.testing import GraphBuilder
from mdla_quant import run_int8
from mdla_quant.arith import (
    add_offset,
    check_accumulator,
    mbqm,
    quantize_multiplier,
    sat32,
    wrap32,
)
from mdla_quant.config import QuantConfig
from mdla_quant.errors import QuantError
from mdla_quant.floors import add_output_floor, expand_tiny_range, softmax_input_floor
from mdla_quant.quantize import activation_params, quantize
from mdla_quant.reference import graph_accumulator
from mdla_target import TargetDataError, load_target, target_path, write_target
from workbench.probe.arith import requant_wrap_graph

CASE_INPUTS = np.array([1, 64, 65, 127], np.int8)


def _case(width: int = 4, s_out: float = 2.0**-17) -> Graph:
    g = requant_wrap_graph(width)
    out = g.tensors["out"]
    assert out.quant is not None
    q = dataclasses.replace(out.quant, scale=(s_out,))
    return dataclasses.replace(g, tensors={**g.tensors, "out": dataclasses.replace(out, quant=q)})


def _run(g: Graph, codes: np.ndarray, accumulator: str, rounding: str = "double") -> np.ndarray:
    x = codes.reshape(g.tensors[g.inputs[0]].shape)
    (out,) = run_int8(
        g, [x.astype(np.float32)], raw=True, rounding=rounding, accumulator=accumulator
    )
    return out.ravel()


def test_wrap32_and_sat32() -> None:
    v = np.array([2**31, -(2**31) - 1, 2**32 + 5, 7, -(2**31)], np.int64)
    assert wrap32(v).tolist() == [-(2**31), 2**31 - 1, 5, 7, -(2**31)]
    assert sat32(v).tolist() == [2**31 - 1, -(2**31), 2**31 - 1, 7, -(2**31)]
    assert add_offset(np.array([2**31 - 1]), 1, "wrap").tolist() == [-(2**31)]
    assert add_offset(np.array([2**31 - 1]), 1, "saturate").tolist() == [2**31]
    with pytest.raises(QuantError, match="unknown accumulator `clip`"):
        check_accumulator("clip")


def test_mbqm_shifts_in_int32() -> None:
    m, s = quantize_multiplier(2.0**17)
    assert (int(m), int(s)) == (2**30, 18)
    x = 127 * CASE_INPUTS.astype(np.int64)
    # 127 * 65 * 2^18 = 2163998720 > 2^31 - 1: wraps to -2130968576, halved by SRDHM(., 2^30)
    assert mbqm(x, m, s, "double", "wrap").tolist() == [
        127 * 2**17,
        127 * 64 * 2**17,
        (127 * 65 * 2**18 - 2**32) // 2,
        (127 * 127 * 2**18 - 2**32) // 2,
    ]
    assert mbqm(x, m, s, "double", "saturate").tolist() == [
        127 * 2**17,
        127 * 64 * 2**17,
        2**30,
        2**30,
    ]


def test_issue_case_saturate_and_wrap() -> None:
    g = _case()
    assert _run(g, CASE_INPUTS, "saturate").tolist() == [127, 127, 127, 127]
    assert _run(g, CASE_INPUTS, "wrap").tolist() == [127, 127, -128, -128]
    assert _run(g, -CASE_INPUTS, "wrap").tolist() == [-128, -128, 127, 127]


def test_single_rounding_wraps_its_int64_result() -> None:
    # d = 2^18: single rounding computes x * 2^18 in int64 and TFLite casts it to int32
    g = _case(s_out=2.0**-18)
    codes = np.array([1, 64, 65, 127], np.int8)
    assert _run(g, codes, "saturate", "single").tolist() == [127] * 4
    got = _run(g, codes, "wrap", "single")
    want = [(127 * int(q) * 2**18 + 2**31) % 2**32 - 2**31 for q in codes]
    assert got.tolist() == [int(np.clip(v, -128, 127)) for v in want]
    assert got.tolist() == [127, 127, -128, -128]


def _wrap_target(tmp_path: Path) -> Path:
    text = target_path("mdla3.5").read_text(encoding="utf-8")
    assert 'accumulator = "saturate"' in text
    path = tmp_path / "wrapping.toml"
    path.write_text(text.replace('accumulator = "saturate"', 'accumulator = "wrap"', 1))
    return path


def test_run_int8_follows_the_target_fact(tmp_path: Path) -> None:
    assert load_target("mdla3.5").accumulator == "saturate"
    assert load_target("mdla3.5").accumulator_source.startswith("assumed")
    g = _case()
    assert graph_accumulator(g) == "saturate"  # no provenance: mdla3.5
    path = _wrap_target(tmp_path)
    assert load_target(path).accumulator == "wrap"
    g = dataclasses.replace(g, provenance=Provenance(quant=QuantRecord(target=str(path))))
    assert graph_accumulator(g) == "wrap"
    (out,) = run_int8(g, [CASE_INPUTS.reshape(1, 1, 4, 1).astype(np.float32)], raw=True)
    assert out.ravel().tolist() == [127, 127, -128, -128]


def test_target_file_accumulator_is_checked_and_round_trips(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(_wrap_target(tmp_path).read_text().replace('= "wrap"', '= "clip"', 1))
    with pytest.raises(TargetDataError, match=r"\[arith\]: accumulator 'clip'"):
        load_target(bad)
    wrapping = load_target(_wrap_target(tmp_path))
    back = load_target(write_target(wrapping, tmp_path / "again.toml"))
    assert (back.accumulator, back.accumulator_source) == ("wrap", wrapping.accumulator_source)


PRODUCT_KINDS = (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.MUL)


def with_large_multiplier(g: Graph, k: int, offset: float = 0.5) -> Graph:
    """`g` with the output scale that makes its requantization multiplier about 2^(k + offset):
    s_in * s_w / 2^(k + offset) for the products (largest per-channel s_w), s_in / 2^(k +
    offset) for the rest. With offset 0 the multiplier sits on a power of two, where how its
    Prepare rounds s1 * s2 / s_out decides the shift (LiteRT's MUL: in float32)."""
    (op,) = g.ops
    q0 = g.tensors[op.inputs[0]].quant
    q1 = g.tensors[op.inputs[1]].quant if len(op.inputs) > 1 else None
    assert q0 is not None
    base = q0.scale[0] * (max(q1.scale) if op.kind in PRODUCT_KINDS and q1 is not None else 1.0)
    out = g.tensors[g.outputs[0]]
    assert out.quant is not None
    q = dataclasses.replace(out.quant, scale=(float(np.float32(base / 2.0 ** (k + offset))),))
    tensors = {**g.tensors, out.name: dataclasses.replace(out, quant=q)}
    return dataclasses.replace(g, tensors=tensors)


LARGE_KINDS = [
    OpKind.CONV_2D,
    OpKind.DEPTHWISE_CONV_2D,
    OpKind.MUL,
    OpKind.MEAN,
    OpKind.RELU,
    OpKind.PRELU,
]


@pytest.mark.parametrize("kind", LARGE_KINDS, ids=lambda k: k.name)
def test_wrap_differs_from_saturate_on_large_multipliers(kind: OpKind) -> None:
    """Every op whose MBQM can overflow takes the fact: some outputs differ between modes, and
    none where the multiplier is small (there the two are the same arithmetic)."""
    rng = np.random.default_rng(18_000 + kind.value)
    differ = 0
    for _ in range(20):
        g = random_qgraph(kind, rng)
        codes = random_codes(g, rng)
        x = as_floats(g, codes)
        small = [run_int8(g, x, raw=True, accumulator=a)[0] for a in ("saturate", "wrap")]
        assert np.array_equal(*small)
        big = with_large_multiplier(g, int(rng.integers(10, 30)))
        sat, wrap = (run_int8(big, x, raw=True, accumulator=a)[0] for a in ("saturate", "wrap"))
        differ += int(np.count_nonzero(sat != wrap))
    assert differ > 0


# ---- degenerate scales: the converter's 1e-6 range floor, ADD and SOFTMAX floors ----------

CONV1 = {"stride": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "groups": 1}
SHAPE = (1, 4, 4, 3)


def degenerate(case: str) -> Graph:
    """Float NHWC graphs whose calibrated ranges are degenerate (as random-init layers give):
    relu6    a conv of ~1e-9 weights with fused RELU6: its output range is ~1e-8
    add      conv(x) + conv'(x) with conv' = -conv and a 1e-7 bias: the sum is ~1e-7 while the
             inputs span ~1: the ADD output multiplier would be ~10
    softmax  SOFTMAX over a ~1e-8 input range: beta s_in 2^26 would be ~1e-3"""
    b = GraphBuilder(name=case, layout="NHWC", seed=3)
    x = b.input("x", SHAPE)
    w = b.rng.standard_normal((4, 1, 1, 3)).astype(np.float32)
    if case == "add":
        c1 = b.op(
            OpKind.CONV_2D,
            [x, b.const("w1", w), b.const("b1", np.full(4, 1e-7, np.float32))],
            name="c1",
            fuse="NONE",
            **CONV1,
        )
        c2 = b.op(
            OpKind.CONV_2D,
            [x, b.const("w2", -w), b.const("b2", np.zeros(4, np.float32))],
            name="c2",
            fuse="NONE",
            **CONV1,
        )
        return b.build(b.op(OpKind.ADD, [c1, c2], name="add", fuse="NONE"))
    tiny = b.const("w", (w * 1e-9).astype(np.float32))
    c = b.op(
        OpKind.CONV_2D,
        [x, tiny, b.const("b", np.zeros(4, np.float32))],
        name="conv",
        fuse="RELU6" if case == "relu6" else "NONE",
        **CONV1,
    )
    if case == "relu6":
        return b.build(c)
    return b.build(b.op(OpKind.SOFTMAX, [c], name="softmax", axis=-1, beta=1.0))


DEGENERATE = ("relu6", "add", "softmax")


def calibration(n: int = 8, seed: int = 0) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(SHAPE).astype(np.float32)] for _ in range(n)]


@cache
def quantized(case: str) -> Graph:
    return quantize(degenerate(case), calibration(), QuantConfig(method="minmax"))


def test_expand_tiny_range_is_the_converters() -> None:
    assert expand_tiny_range(0.0, 6.9e-7) == (-5e-7, 6.9e-7)
    assert expand_tiny_range(-2e-7, 0.0) == (-5e-7, 5e-7)
    assert expand_tiny_range(0.0, 2e-6) == (0.0, 2e-6)  # wider than 1e-6: kept
    assert expand_tiny_range(0.0, 0.0) == (0.0, 0.0)  # empty: the quantizer's 1/255
    q = activation_params(0.0, 6.9e-7)  # the mobilenet_v2 case: 2.7e-9 without the rule
    assert q.scale[0] == pytest.approx((6.9e-7 + 5e-7) / 255, rel=1e-6)
    assert activation_params(0.0, 0.0).scale[0] == pytest.approx(1 / 255)
    assert activation_params(-1.0, 3.0, min_scale=0.5).scale[0] == 0.5


def test_floors_are_the_first_float32_litert_accepts() -> None:
    s = add_output_floor(0.1, 0.05)
    below = float(np.nextafter(np.float32(s), np.float32(0)))
    twice = 2.0 * float(np.float32(0.1))
    assert twice / (2**20 * s) < 1.0 <= twice / (2**20 * below)
    s = softmax_input_floor(1.0)
    below = float(np.nextafter(np.float32(s), np.float32(0)))
    assert s * 2.0**26 > 1.0 >= below * 2.0**26
    assert softmax_input_floor(2.0) == pytest.approx(s / 2)


def _scale(g: Graph, name: str) -> float:
    q = g.tensors[name].quant
    assert q is not None
    return q.scale[0]


def test_quantizer_floors_a_fused_relu6_output() -> None:
    g = quantized("relu6")
    s = _scale(g, "conv")
    assert s >= 1e-6 / 255 * (1 - 1e-6)  # the converter's floor: [-5e-7, 5e-7] at least
    assert 6.0 / np.float32(s) < 2.0**31  # LiteRT's no_integer_overflow_from_quantization
    (out,) = run_int8(g, calibration(1, 5)[0], raw=True)
    assert out.shape == (1, 4, 4, 4)


def test_quantizer_floors_an_add_output() -> None:
    g = quantized("add")
    twice = 2 * max(_scale(g, "c1"), _scale(g, "c2"))
    assert twice > 0.01  # the inputs span ~1
    assert twice / (2**20 * _scale(g, "add")) < 1.0
    assert _scale(g, "add") == add_output_floor(_scale(g, "c1"), _scale(g, "c2"))
    run_int8(g, calibration(1, 5)[0], raw=True)


def test_quantizer_floors_a_softmax_input() -> None:
    g = quantized("softmax")
    assert _scale(g, "conv") == softmax_input_floor(1.0)
    assert _scale(g, "softmax") == 1 / 256
    run_int8(g, calibration(1, 5)[0], raw=True)


def test_ordinary_scales_are_untouched() -> None:
    """The floors change nothing where the ranges are not degenerate: the input keeps the
    plain minmax scale of the calibration data."""
    data = np.concatenate([xs[0].ravel() for xs in calibration()])
    lo, hi = min(float(data.min()), 0.0), max(float(data.max()), 0.0)
    for case in DEGENERATE:
        assert _scale(quantized(case), "x") == float(np.float32((hi - lo) / 255.0))
