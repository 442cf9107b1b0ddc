"""Every int8 kernel against LiteRT's reference kernels (BUILTIN_REF): 0 mismatching elements.

Each case is a random single-op qgraph (shapes, strides 1/2, explicit paddings, dilations,
scales, zero points, fused activations, broadcast shapes, per-channel weights), written with
`export_tflite`'s flatbuffer and run by `ai_edge_litert`, which is a declared dev dependency:
without it these tests fail, they do not skip.

Where LiteRT 2.3.0's reference and the TFLite spec/other kernels disagree we follow LiteRT's
reference, because it is the oracle the emulator and the device path are held to:
- FULLY_CONNECTED requantizes in float64 (LiteRT commit 9213607), not gemmlowp double rounding.
- SOFTMAX is gemmlowp fixed point (reference/softmax.h), not the optimized float table.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdla_ir.builders import (
    INT8_KINDS,
    act,
    as_floats,
    qp,
    random_codes,
    random_qgraph,
    single_op_qgraph,
)
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes

CASES = 1000
KINDS = INT8_KINDS


def compare(graph: Graph, rng: np.random.Generator) -> tuple[int, int]:
    """(mismatching elements, elements) of run_int8 vs LiteRT BUILTIN_REF on random codes."""
    codes = random_codes(graph, rng)
    ours = run_int8(graph, as_floats(graph, codes), raw=True, rounding="double")
    theirs = run_tflite_reference(tflite_bytes(graph), codes)
    assert len(ours) == len(theirs)
    bad = total = 0
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype == np.int8
        assert a.shape == b.shape, f"{graph.ops[0].label}: shape {a.shape} vs LiteRT {b.shape}"
        bad += int(np.count_nonzero(a != b))
        total += a.size
    return bad, total


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_kernel_matches_litert_reference(kind: OpKind) -> None:
    rng = np.random.default_rng(1000 + abs(kind.value))
    bad = total = 0
    for _ in range(CASES):
        b, t = compare(random_qgraph(kind, rng), rng)
        bad, total = bad + b, total + t
    assert total > 5 * CASES  # the cases are not degenerate
    assert bad == 0, f"{kind.name}: {bad} of {total} elements differ from LiteRT"


@pytest.mark.parametrize(
    "kind", [OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.FULLY_CONNECTED], ids=lambda k: k.name
)
def test_model_sized_layers_match_litert_reference(kind: OpKind) -> None:
    rng = np.random.default_rng(2000 + kind.value)
    bad = total = 0
    for _ in range(40):
        b, t = compare(random_qgraph(kind, rng, large=True), rng)
        bad, total = bad + b, total + t
    assert total > 1_000
    assert bad == 0, f"{kind.name}: {bad} of {total} elements differ from LiteRT"


def test_softmax_long_rows_and_dropped_tails() -> None:
    """Long rows and coarse input scales (differences below diff_min give -128).

    Rows stay at <= 512 elements: LiteRT's reference aborts (RoundingDivideByPOT exponent > 31)
    once the row's sum of exponentials exceeds 512; `run_int8` computes the exact extension.
    """
    rng = np.random.default_rng(7)
    bad = total = 0
    for _ in range(40):
        n = int(rng.integers(100, 513))
        scale = float(np.exp(rng.uniform(np.log(0.01), np.log(2.0))))
        g = single_op_qgraph(
            OpKind.SOFTMAX,
            [act("x", (2, n), qp(scale, int(rng.integers(-128, 128))))],
            (2, n),
            qp(1 / 256, -128),
            {"axis": -1, "beta": float(rng.uniform(0.5, 4.0))},
        )
        b, t = compare(g, rng)
        bad, total = bad + b, total + t
    assert bad == 0, f"{bad} of {total} elements differ"


def test_extreme_scales_saturate_like_litert() -> None:
    """Tiny and huge output scales drive every requantizing op into its clamps."""
    rng = np.random.default_rng(11)
    bad = 0
    for kind in (OpKind.ADD, OpKind.MUL, OpKind.RELU, OpKind.MEAN):
        for out_scale in (1e-5, 1e-3, 10.0, 300.0):
            g = random_qgraph(kind, rng)
            out = g.tensors["out"]
            g = g.with_(
                tensors={
                    **g.tensors,
                    "out": out.__class__(out.name, out.shape, "int8", None, qp(out_scale, 3)),
                }
            )
            bad += compare(g, rng)[0]
    assert bad == 0
