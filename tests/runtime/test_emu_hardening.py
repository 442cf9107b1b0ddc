"""The emulator is safe for any client: quantization it cannot represent is NEURON_BAD_DATA at
addOperand or at prepare (never an out-of-range shift or an inf->int conversion in a kernel),
and the results at the edges of the representable range are the well-defined ones.

The same cases under UBSan, through the engine harness, are in test_fuzz.py."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from mdla_ir.builders import random_codes, random_qgraph
from mdla_ir.graph import Graph, QuantParams
from mdla_ir.ops import OpKind
from tests.runtime.test_emu_support import (
    BAD_DATA,
    DEVICES,
    NO_ERROR,
    QUANT8_SIGNED,
    QUANT8_SYMM,
    TENSOR_INT32,
    NeuronModelBuilder,
    compile_model,
    lower_single_op,
)

FLT_MIN = float(np.finfo(np.float32).tiny)
QUANT8_ASYMM, QUANT16_SYMM, QUANT16_ASYMM, PER_CHANNEL = 5, 7, 12, 11


def with_scale(g: Graph, name: str, scale: float) -> Graph:
    t = g.tensors[name]
    assert t.quant is not None
    quant = QuantParams((scale,), t.quant.zero_point, t.quant.channel_dim)
    return g.with_(tensors={**g.tensors, name: dataclasses.replace(t, quant=quant)})


@pytest.mark.parametrize("kind", [OpKind.FULLY_CONNECTED, OpKind.CONV_2D, OpKind.RELU, OpKind.ADD])
def test_a_multiplier_past_int32_shifts_is_bad_data_at_finish(kind: OpKind) -> None:
    """s_out = 1e-38 makes s_in * s_w / s_out about 2^118: no int32 shift represents it."""
    g = random_qgraph(kind, np.random.default_rng(1))
    g = with_scale(g, g.outputs[0], 1e-38)
    b, _ = lower_single_op(g)
    try:
        assert b.finish() == BAD_DATA
    finally:
        b.free()


@pytest.mark.parametrize("kind", [OpKind.RELU, OpKind.RELU6])
def test_relu_at_flt_min_scales_clamps_to_the_int8_range(kind: OpKind) -> None:
    """s_in = s_out = FLT_MIN: M = 1, and the RELU6 ceiling 6 / FLT_MIN is +inf in float32;
    its bound saturates (no inf->int conversion), so the output is max(x - z_in + z_out, lo)."""
    b = NeuronModelBuilder()
    try:
        x = b.operand(QUANT8_SIGNED, (2, 128), FLT_MIN, 3)
        y = b.operand(QUANT8_SIGNED, (2, 128), FLT_MIN, 3)
        assert b.operation(kind.value, [x], [y]) == NO_ERROR
        assert b.identify([x], [y]) == NO_ERROR
        assert b.finish() == NO_ERROR
        rc, comp = compile_model(b, DEVICES, [(2, 128)])
        assert rc == NO_ERROR
        codes = np.arange(-128, 128, dtype=np.int8).reshape(2, 128)
        (got,) = comp.run([codes])
        comp.free()
    finally:
        b.free()
    np.testing.assert_array_equal(got, np.maximum(codes, 3))


def test_fully_connected_at_the_edges_runs_clean() -> None:
    """An unmutated random FULLY_CONNECTED (odd input width: the accumulators used to sit 2
    bytes off int32 alignment in the scratch) computes through the ABI."""
    rng = np.random.default_rng(0)
    g = random_qgraph(OpKind.FULLY_CONNECTED, rng)
    b, names = lower_single_op(g)
    try:
        assert b.finish() == NO_ERROR
        out_shape = g.tensors[g.outputs[0]].shape
        rc, comp = compile_model(b, DEVICES, [out_shape])
        assert rc == NO_ERROR
        codes = dict(zip(g.inputs, random_codes(g, rng), strict=True))
        (got,) = comp.run([codes[n] for n in names])
        comp.free()
    finally:
        b.free()
    assert got.shape == out_shape


BAD_QUANT = [
    (QUANT8_SIGNED, math.nan, 0),
    (QUANT8_SIGNED, math.inf, 0),
    (QUANT8_SIGNED, -math.inf, 0),
    (QUANT8_SIGNED, 0.0, 0),
    (QUANT8_SIGNED, -0.5, 0),
    (QUANT8_SIGNED, 0.5, 128),
    (QUANT8_SIGNED, 0.5, -129),
    (QUANT8_ASYMM, 0.5, -1),
    (QUANT8_ASYMM, 0.5, 256),
    (QUANT8_SYMM, 0.5, 1),
    (QUANT16_SYMM, math.nan, 0),
    (QUANT16_SYMM, 0.0, 0),
    (QUANT16_SYMM, 0.5, 1),
    (QUANT16_ASYMM, math.inf, 0),
    (QUANT16_ASYMM, 0.5, -1),
    (QUANT16_ASYMM, 0.5, 65536),
    (PER_CHANNEL, math.nan, 0),
    (PER_CHANNEL, -1.0, 0),
    (PER_CHANNEL, 0.0, 1),
    (TENSOR_INT32, math.nan, 0),
    (TENSOR_INT32, -1.0, 0),
    (TENSOR_INT32, math.inf, 0),
]


@pytest.mark.parametrize(("code", "scale", "zp"), BAD_QUANT)
def test_add_operand_rejects_quantization_no_runtime_accepts(
    code: int, scale: float, zp: int
) -> None:
    b = NeuronModelBuilder()
    try:
        with pytest.raises(ValueError, match=f"-> {BAD_DATA}"):
            b.operand(code, (2, 3), scale, zp)
    finally:
        b.free()


@pytest.mark.parametrize(
    ("code", "scale", "zp"),
    [
        (QUANT8_SIGNED, FLT_MIN, -128),
        (QUANT8_SIGNED, 3.0e38, 127),
        (QUANT8_ASYMM, 0.5, 255),
        (QUANT16_SYMM, 0.5, 0),
        (QUANT16_ASYMM, 0.5, 65535),
        (PER_CHANNEL, 0.0, 0),
        (TENSOR_INT32, 0.0, 0),
    ],
)
def test_add_operand_accepts_the_edges_of_the_ranges(code: int, scale: float, zp: int) -> None:
    b = NeuronModelBuilder()
    try:
        assert b.operand(code, (2, 3), scale, zp) == 0
    finally:
        b.free()
