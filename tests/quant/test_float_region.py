"""mdla_quant.float_region: a GRU (and a FULLY_CONNECTED after it) stays float32 on the CPU,
entered by one DEQUANTIZE; run_int8 runs it with kernels/gru.py (issue 17)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_ir import Graph, Op, OpKind, Tensor, run_float
from mdla_ir.partitions import partitions
from mdla_ir.provenance import Provenance
from mdla_quant import QuantConfig, QuantError, quantize, run_int8

Array = np.ndarray[Any, Any]
T, N_IN, H, N_OUT = 8, 5, 4, 3


def float_graph(cpu: tuple[str, ...] = ("gru0", "fc0"), after: bool = False) -> Graph:
    rng = np.random.default_rng(8)

    def const(name: str, *shape: int) -> Tensor:
        return Tensor(name, shape, "float32", (rng.standard_normal(shape) * 0.5).astype("f4"))

    tensors = [
        Tensor("x", (T, N_IN)),
        Tensor("r", (T, N_IN)),
        const("wi", 2, 3 * H, N_IN),
        const("wh", 2, 3 * H, H),
        const("bi", 2, 3 * H),
        const("bh", 2, 3 * H),
        Tensor("h", (T, 2 * H)),
        const("fw", N_OUT, 2 * H),
        const("fb", N_OUT),
        Tensor("y", (T, N_OUT)),
        Tensor("z", (T, N_OUT)),
    ]
    ops = [
        Op(OpKind.RELU, "relu0", ("x",), ("r",)),
        Op(OpKind.GRU, "gru0", ("r", "wi", "wh", "bi", "bh"), ("h",), {"bidirectional": True}),
        Op(OpKind.FULLY_CONNECTED, "fc0", ("h", "fw", "fb"), ("y",), {"fuse": "NONE"}),
    ]
    if after:
        ops.append(Op(OpKind.RELU, "relu1", ("y",), ("z",)))
    prov = Provenance(device="mtk-mdla", cpu_ops=cpu)
    return Graph("g", {t.name: t for t in tensors}, tuple(ops), ("x",), ("z" if after else "y",),
                 "NHWC", provenance=prov)  # fmt: skip


def calibration() -> list[list[Array]]:
    rng = np.random.default_rng(1)
    return [[rng.standard_normal((T, N_IN)).astype(np.float32)] for _ in range(4)]


def test_a_gru_tail_stays_float32_behind_one_dequantize() -> None:
    graph = float_graph()
    q = quantize(graph, calibration(), QuantConfig())
    kinds = [(op.kind, op.name) for op in q.ops]
    assert kinds == [
        (OpKind.RELU, "relu0"),
        (OpKind.DEQUANTIZE, "r.dequantize"),
        (OpKind.GRU, "gru0"),
        (OpKind.FULLY_CONNECTED_F32, "fc0"),
    ]
    assert q.ops[2].inputs[0] == "r.f32"
    for name in ("r.f32", "h", "y", "wi", "fw", "fb"):
        assert q.tensors[name].dtype == "float32"
        assert q.tensors[name].quant is None
    assert q.tensors["r"].dtype == "int8"
    assert [(p.device, p.ops) for p in partitions(q)] == [
        ("mtk-mdla", ("relu0",)),
        ("cpu", ("r.dequantize", "gru0", "fc0")),
    ]
    x = calibration()[0]
    got, want = run_int8(q, x)[0], run_float(graph, x)[0]
    assert got.dtype == np.float32
    # only the int8 RELU output is quantized: the float32 tail adds ~1e-7 on top of it
    assert np.abs(got - want).max() < 0.05
    raw = run_int8(q, x, raw=True)[0]
    assert np.array_equal(raw, got)


def test_a_float_op_off_the_cpu_is_refused() -> None:
    with pytest.raises(QuantError, match=r"`gru0` \(GRU\) computes in float32.*--cpu GRU"):
        quantize(float_graph(cpu=("fc0",)), calibration(), QuantConfig())


def test_an_int8_op_after_a_float_region_is_refused() -> None:
    with pytest.raises(QuantError, match=r"`relu1` \(RELU\) reads `y`, a float32 tensor"):
        quantize(float_graph(after=True), calibration(), QuantConfig())
