"""The two bit-exactness checks every decoder-model test file runs on its quantized graph:
the host emulator (which must also claim every op for mtk-mdla) and the .tflite export on
LiteRT's reference kernels, each against run_int8's raw int8 outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import mdla_ir
from mdla_quant import run_int8
from mdla_quant.reference import quantize_inputs
from mdla_runtime import load, open_target, save
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes

Array = np.ndarray[Any, Any]


def assert_emulator_bit_exact(qgraph: mdla_ir.Graph, xs: list[Array], path: Path) -> None:
    """Save `qgraph` to `path`, check the emulator maps every op on mtk-mdla and runs it
    there, and that its raw outputs equal run_int8's code for code."""
    emu = open_target("emu")
    manifest = load(save(qgraph, path))
    assert emu.supported(manifest) == {"mtk-mdla": [True] * len(qgraph.ops)}
    result = emu.run(manifest, xs)
    assert result.device == "mtk-mdla"
    for got, want in zip(result.raw_outputs, run_int8(qgraph, xs, raw=True), strict=True):
        np.testing.assert_array_equal(got.reshape(want.shape), want)


def assert_tflite_bit_exact(qgraph: mdla_ir.Graph, xs: list[Array]) -> None:
    """The exported .tflite on LiteRT's reference kernels gives run_int8's raw outputs."""
    codes = quantize_inputs(qgraph, xs)
    theirs = run_tflite_reference(tflite_bytes(qgraph), [codes[n] for n in qgraph.inputs])
    for got, want in zip(theirs, run_int8(qgraph, xs, raw=True), strict=True):
        np.testing.assert_array_equal(got.reshape(want.shape), want)
