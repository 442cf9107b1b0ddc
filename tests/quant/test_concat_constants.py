"""A CONCATENATION with a constant operand (ViT's class token, CoordConv's coordinate channels):
the constant is quantized at the output's params, whose range holds its values, as the int8
kernel (which never rescales) and the device require; a constant other ops also read is copied
for the concatenation; a range fixed by an op that cannot hold it is refused by name."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mdla_ir
from mdla_ir import Graph, OpKind
from mdla_ir.testing import GraphBuilder
from mdla_quant import run_int8
from mdla_quant.config import QuantConfig
from mdla_quant.errors import QuantError
from mdla_quant.quantize import quantize

SHAPE = (1, 4, 4, 3)
CONV = {"stride": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "groups": 1}
K = np.linspace(-0.5, 6.0, 48, dtype=np.float32).reshape(SHAPE)  # past x's range above


def samples(n: int, seed: int = 0, amp: float = 1.0) -> list[list[Any]]:
    rng = np.random.default_rng(seed)
    return [[rng.uniform(-amp, amp, SHAPE).astype(np.float32)] for _ in range(n)]


def graph(also_add: bool = False, gate: bool = False, conv: bool = False) -> Graph:
    """concat(k, x) on channels, k a constant; `also_add`: x + k beside it; `gate`: the
    concatenation's other input a LOGISTIC (a range fixed at [0, 1)); `conv`: a 1x1 conv
    reads the concatenation (an inner tensor, whose range a clipping method clips)."""
    b = GraphBuilder(layout="NHWC")
    x = b.input("x", SHAPE)
    k = b.const("k", K)
    a = b.op(OpKind.LOGISTIC, [x], name="sig") if gate else x
    outputs = [b.op(OpKind.CONCATENATION, [k, a], name="cat", axis=3)]
    if conv:
        w = b.const("w", np.full((2, 1, 1, 6), 0.1, np.float32))
        outputs = [b.op(OpKind.CONV_2D, [outputs[0], w, b.const("b", (2,))], name="c", **CONV)]
    if also_add:
        outputs.append(b.op(OpKind.ADD, [x, k], name="add", fuse="NONE"))
    return b.build(*outputs)


def operand(q: Graph, op_name: str, i: int) -> mdla_ir.Tensor:
    (op,) = [op for op in q.ops if op.name == op_name]
    return q.tensors[op.inputs[i]]


def test_the_constant_takes_the_outputs_params_and_keeps_its_values() -> None:
    q = quantize(graph(), samples(4))
    k, out = operand(q, "cat", 0), q.tensors["cat"]
    assert k.quant == out.quant == q.tensors["x"].quant  # one scale: the kernel never rescales
    assert out.quant is not None
    scale, zp = out.quant.scale[0], out.quant.zero_point[0]
    assert scale >= 6.0 / 255  # the group's range holds the constant's 6.0, not x's ~1 alone
    assert k.data is not None
    assert np.abs((k.data.astype(np.float64) - zp) * scale - K).max() <= scale / 2 + 1e-7
    x = samples(1, seed=5)[0]
    (got,) = run_int8(q, x, raw=True)  # refused with the constant at its own params before
    np.testing.assert_array_equal(got[..., :3], k.data)  # the constant's codes, copied


def test_a_clipping_method_never_clips_the_constant() -> None:
    """percentile 90 would cut the concatenation's range at about 4.7: the constant's values
    (the class token a head reads) join its range unclipped."""
    q = quantize(graph(conv=True), samples(4), QuantConfig(method="percentile", percentile=90))
    k, out = operand(q, "cat", 0), q.tensors["cat"]
    assert out.quant is not None
    assert k.data is not None
    scale, zp = out.quant.scale[0], out.quant.zero_point[0]
    assert np.abs((k.data.astype(np.float64) - zp) * scale - K).max() <= scale / 2 + 1e-7


def test_a_constant_another_op_reads_is_copied_for_the_concatenation() -> None:
    q = quantize(graph(also_add=True), samples(4))
    k_cat, k_add = operand(q, "cat", 0), operand(q, "add", 1)
    assert k_cat.name != k_add.name  # `k` and its copy `k.1`
    assert k_cat.quant == q.tensors["cat"].quant
    assert k_add.quant != k_cat.quant  # the ADD's operand at its own range, as before
    run_int8(q, samples(1, seed=5)[0])


def test_a_16_bit_concatenation_holds_the_constant_in_int16() -> None:
    """x reaches past the constant here: symmetric int16 params of the constant's own range
    would be finer than the concatenation's."""
    q = quantize(graph(), samples(4, amp=9.0), QuantConfig(a16=("cat",)))
    k, out = operand(q, "cat", 0), q.tensors["cat"]
    assert k.dtype == out.dtype == "int16"
    assert k.quant == out.quant
    assert out.quant is not None
    assert k.data is not None
    scale = out.quant.scale[0]
    assert np.abs(k.data.astype(np.float64) * scale - K).max() <= scale / 2 + 1e-7
    run_int8(q, samples(1, seed=5, amp=9.0)[0])


def test_a_constant_outside_a_fixed_range_is_refused_by_name() -> None:
    """LOGISTIC fixes its output at [0, 1): the concatenation shares it, and its constant's 6.0
    (among the concatenation's observed values) cannot be held."""
    with pytest.raises(QuantError, match=r"`cat` \(range \[-0\.5, 6\]\) shares a scale with `sig`"):
        quantize(graph(gate=True), samples(2))
