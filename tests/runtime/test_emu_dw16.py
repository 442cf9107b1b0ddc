"""The emulator's 16x8 DEPTHWISE_CONV_2D (conv16.c): its multiplier-1 row sums (simd.h
emu_dw16_row, portable C and AVX2 vpmaddwd) and its plain loop (any multiplier, more than 256
taps) equal run_int8 byte for byte. Shapes aim at what the vector code could get wrong: channel
counts around the 16- and 8-lane blocks (and the scalar tail), odd and even tap counts inside
the image (an odd last tap pairs with zero), strides, dilations, padded edges."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdla_ir import OpKind
from mdla_ir.testing import GraphBuilder
from mdla_legalize import place
from mdla_quant.config import QuantConfig
from mdla_quant.quantize import quantize
from mdla_runtime.engine.target import Target, open_target
from mdla_target import load_target
from tests.runtime.test_emu_a16 import emulated_equals_run_int8

# (h, w, c, k, stride, dilation, pad, multiplier)
SHAPES = {
    "c5_3x3": (7, 6, 5, 3, 1, 1, 1, 1),
    "c8_s2": (9, 8, 8, 3, 2, 1, 1, 1),
    "c24_dil2": (9, 9, 24, 3, 1, 2, 2, 1),
    "c33_5x5": (8, 7, 33, 5, 1, 1, 2, 1),
    "c40_valid": (6, 6, 40, 3, 1, 1, 0, 1),
    "c16_7x7_s2": (11, 11, 16, 7, 2, 1, 3, 1),
    "c3_mult2": (6, 6, 3, 3, 1, 1, 1, 2),
    "c9_17x17_loop": (17, 17, 9, 17, 1, 1, 8, 1),  # 289 taps: the plain int64 loop
}
PATHS = {"portable": ("MDLA_EMU_PORTABLE", "1"), "avx2": ("MDLA_EMU_ISA", "avx2"), "best": None}


@pytest.fixture(scope="module")
def emu() -> Target:
    return open_target("emu")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("shape", SHAPES)
def test_the_16x8_depthwise_equals_run_int8(
    shape: str, path: str, emu: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MDLA_EMU_PORTABLE", raising=False)
    monkeypatch.delenv("MDLA_EMU_ISA", raising=False)
    if (env := PATHS[path]) is not None:
        monkeypatch.setenv(*env)
    h, w, c, k, stride, dil, pad, mult = SHAPES[shape]
    seed = sum(map(ord, shape))
    rng = np.random.default_rng(seed)
    b = GraphBuilder(f"dw16_{shape}", layout="NHWC", seed=seed)
    x = b.input("x", (1, h, w, c))
    co = c * mult
    attrs = {"stride": (stride, stride), "dilation": (dil, dil), "padding": (pad,) * 4}
    wgt, bias = b.const("w", (1, k, k, co)), b.const("bias", (co,))
    y = b.op(OpKind.DEPTHWISE_CONV_2D, [x, wgt, bias], name="y", multiplier=mult, **attrs)
    size = int(np.prod(b.tensors[y].shape))
    graph = b.build(b.op(OpKind.RESHAPE, [y], name="tail", shape=(1, size)))
    graph = place(graph, load_target("mdla3.5"), "mtk-mdla", ["auto"]).graph
    samples = [[rng.uniform(-2 - j, 2 + j, (1, h, w, c)).astype(np.float32)] for j in range(3)]
    qgraph = quantize(graph, samples, QuantConfig(a16=("y",), method="minmax"))
    assert qgraph.tensors["y"].dtype == "int16"
    assert emulated_equals_run_int8(emu, qgraph, samples, tmp_path) == 3 * size
