"""A graph with int16 activations (QuantConfig.a16) in the .mdla: TENSOR_QUANT16_SYMM operands and
TENSOR_INT32 biases (the int64 ones, as LiteRT casts them), read by both readers, and run by the
emulator as run_int8 runs it."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mdla_ir import Graph
from mdla_quant import run_int8
from mdla_quant.config import QuantConfig
from mdla_quant.quantize import quantize
from mdla_runtime import load, save
from mdla_runtime.build import engine_path
from mdla_runtime.engine.target import open_target
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes
from mdla_runtime.format import container as fmt
from mdla_runtime.testing_int16 import int16_output_qgraph
from tests.quant.test_quantize import net, samples


@functools.cache
def quantize_net() -> Graph:
    config = QuantConfig(a16=("c2", "ap"), a16_gain_db=(0.5, 0.125), a16_mode="auto:10%")
    return quantize(net(), samples(4), config)


@pytest.fixture(scope="module")
def a16_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save(quantize_net(), tmp_path_factory.mktemp("a16") / "m.mdla")


def test_int16_activations_lower_to_quant16_symm_and_round_trip(a16_file: Path) -> None:
    m = load(a16_file)
    by_name = {o.name: o for o in m.operands}
    for name in ("c/a16", "c2", "ap"):
        assert by_name[name].type == fmt.TENSOR_QUANT16_SYMM
        assert by_name[name].zero_point == 0
    assert by_name["b2"].type == fmt.TENSOR_INT32  # the 16x8 conv's int64 bias
    assert by_name["b2"].data is not None
    assert by_name["b2"].data.dtype == np.int32
    assert m.provenance.quant is not None
    assert m.provenance.quant.a16 == ("c2", "ap")


def test_the_c_reader_accepts_the_int16_file(a16_file: Path) -> None:
    proc = subprocess.run(
        [str(engine_path()), str(a16_file), "--check", "--json"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ok"] is True


def test_the_emulator_runs_the_mixed_graph_as_run_int8(a16_file: Path) -> None:
    """int8 and int16 ops mixed (LOGISTIC, TANH and the rest int8, a conv and a pool 16x8)."""
    m = load(a16_file)
    for sample in samples(3):
        got = open_target("emu").run(m, sample).raw_outputs
        want = run_int8(quantize_net(), sample, raw=True)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g.reshape(w.shape), w)


@functools.cache
def int16_outputs_net() -> Graph:
    """net() with both graph outputs int16: `cat` (a 16x8 CONCATENATION of a 16x8 pool and a
    requantized int8 branch) and `th` (a 16x8 TANH, fixed at 1/32768)."""
    return quantize(net(), samples(4), QuantConfig(a16=("c2", "ap", "cat", "th")))


def test_int16_graph_outputs_round_trip_and_run_as_run_int8_and_litert(tmp_path: Path) -> None:
    qgraph = int16_outputs_net()
    path = save(qgraph, tmp_path / "out16.mdla")
    m = load(path)
    for spec in m.outputs:
        assert m.operands[spec.operand].type == fmt.TENSOR_QUANT16_SYMM
        assert spec.zero_point == 0
        assert spec.scale == qgraph.tensors[spec.name].quant.scale[0]  # type: ignore[union-attr]
    check = subprocess.run(
        [str(engine_path()), str(path), "--check", "--json"], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    model = tflite_bytes(qgraph)
    for sample in samples(3, seed=5):
        got = open_target("emu").run(m, sample)
        want = run_int8(qgraph, sample, raw=True)
        codes: dict[str, np.ndarray] = {}
        run_int8(qgraph, sample, raw=True, observe=codes.__setitem__)
        theirs = run_tflite_reference(model, [codes[n] for n in qgraph.inputs])
        for raw, real, spec, w, t in zip(
            got.raw_outputs, got.outputs, m.outputs, want, theirs, strict=True
        ):
            assert raw.dtype == w.dtype == t.dtype == np.int16
            np.testing.assert_array_equal(raw.reshape(w.shape), w)
            np.testing.assert_array_equal(t, w)
            deq = raw.reshape(w.shape).astype(np.float32) * np.float32(spec.scale)
            np.testing.assert_array_equal(real.reshape(w.shape), deq)


def test_the_smallest_int16_output_file_passes_both_readers_and_runs(tmp_path: Path) -> None:
    """The graph the malformed int16 I/O cases edit is itself valid: both readers accept it and
    the emulator's QUANTIZE int8 -> int16 gives run_int8's codes."""
    qgraph = int16_output_qgraph()
    path = save(qgraph, tmp_path / "q.mdla")
    proc = subprocess.run(
        [str(engine_path()), str(path), "--check", "--json"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    x = np.linspace(-0.2, 0.2, 8, dtype=np.float32).reshape(1, 8)
    (got,) = open_target("emu").run(load(path), [x]).raw_outputs
    (want,) = run_int8(qgraph, [x], raw=True)
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got.reshape(want.shape), want)
