"""PRELU at 16 bits keeps alpha int8: LiteRT 2.3.0's int16 PRELU reads alpha's data as int8
codes whatever the tensor's type. The quantizer's form (alpha int8) matches LiteRT on every
tensor (test_a16_oracle covers the random cases); an int16 alpha would not, and this pins why."""

from __future__ import annotations

import numpy as np

from mdla_ir import OpKind
from mdla_ir.builder import GraphBuilder
from mdla_quant.a16 import const16
from mdla_quant.config import QuantConfig
from mdla_quant.quantize import quantize
from mdla_runtime.export.tflite import run_tflite_tensors, tflite_bytes
from tests.quant.test_a16_oracle import every_tensor


def test_a_16x8_prelu_keeps_alpha_int8_which_litert_needs() -> None:
    rng = np.random.default_rng(3)
    b = GraphBuilder("prelu16", layout="NHWC", seed=3)
    x = b.input("x", (1, 4, 4, 3))
    graph = b.build(b.op(OpKind.PRELU, [x, b.const("alpha", (1, 1, 1, 3))], name="y"))
    samples = [[rng.uniform(-3, 3, (1, 4, 4, 3)).astype(np.float32)] for _ in range(2)]
    qgraph = quantize(graph, samples, QuantConfig(a16=("y",), method="minmax"))
    assert qgraph.tensors["y"].dtype == "int16"
    assert qgraph.tensors["alpha"].dtype == "int8"
    ours, theirs = every_tensor(qgraph, samples[0])
    np.testing.assert_array_equal(ours["y"], theirs["y"])
    assert (ours["x/a16"] < 0).sum() > 10  # the alpha branch ran
    wide_alpha = const16("alpha", np.asarray(graph.tensors["alpha"].data, np.float32))
    tensors = {**qgraph.tensors, "alpha": wide_alpha}
    misread = run_tflite_tensors(tflite_bytes(qgraph.with_(tensors=tensors)), [ours["x"]])
    negative = ours["x/a16"] < 0
    assert (misread["y"][negative] != ours["y"][negative]).mean() > 0.5
