"""16x8 kernels against LiteRT's reference kernels (BUILTIN_REF): every tensor, bit for bit.

Each case is a random float graph (`mdla_quant.a16_cases`) quantized with its op's output in
int16: the QUANTIZE int8 -> int16 in front, the 16x8 op, its int16 output. The .tflite holds the
int16 tensors, the int64 bias and ADD/SUB's general-scale form; LiteRT runs it and every tensor
it computed must equal what `run_int8` computed for the same name."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_ir import Graph, OpKind
from mdla_quant import run_int8
from mdla_quant.a16_cases import BUILDERS, a16_case
from mdla_quant.config import QuantConfig
from mdla_quant.quantize import quantize
from mdla_runtime.export.tflite import run_tflite_tensors, tflite_bytes
from tests.quant.test_quantize import net, samples

SEEDS = range(12)


def every_tensor(qgraph: Graph, sample: list[Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(run_int8's activations, LiteRT's tensors) by name, on one input."""
    ours: dict[str, Any] = {}
    run_int8(qgraph, sample, raw=True, observe=ours.__setitem__)
    codes = [ours[n] for n in qgraph.inputs]
    return ours, run_tflite_tensors(tflite_bytes(qgraph), codes)


@pytest.mark.parametrize("kind", sorted(BUILDERS, key=lambda k: k.name), ids=lambda k: k.name)
def test_16x8_kernel_matches_litert_on_every_tensor(kind: OpKind) -> None:
    compared = 0
    for seed in SEEDS:
        graph, a16, samples = a16_case(kind, seed)
        qgraph = quantize(graph, samples, QuantConfig(a16=a16, method="minmax"))
        assert qgraph.tensors[a16[0]].dtype == "int16"
        ours, theirs = every_tensor(qgraph, samples[1])
        for name, value in ours.items():
            assert theirs[name].dtype == value.dtype, name
            np.testing.assert_array_equal(value, theirs[name], err_msg=f"{kind.name} `{name}`")
            compared += value.size
    assert compared > 100 * len(SEEDS)


@pytest.mark.parametrize("a16", [("c2",), ("c2", "ap"), ("c", "c2", "ap", "mp", "gate", "cat")])
def test_a_mixed_int8_int16_graph_matches_litert_on_every_tensor(a16: tuple[str, ...]) -> None:
    """conv -> {logistic, maxpool, mul; conv, avgpool} -> concat, tanh: int16 where named, and
    QUANTIZE int8 <-> int16 at each boundary (both directions are in these graphs)."""
    qgraph = quantize(net(), samples(8), QuantConfig(a16=a16))
    kinds = [(op.kind, qgraph.tensors[op.inputs[0]].dtype) for op in qgraph.ops]
    assert (OpKind.QUANTIZE, "int8") in kinds
    assert (OpKind.QUANTIZE, "int16") in kinds
    for sample in samples(3, seed=9):
        ours, theirs = every_tensor(qgraph, sample)
        assert {n for n in ours if ours[n].dtype == np.int16} >= set(a16)
        for name, value in ours.items():
            np.testing.assert_array_equal(value, theirs[name], err_msg=f"`{name}`")
