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
from mdla_runtime.format import container as fmt
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
