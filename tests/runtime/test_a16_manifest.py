"""A graph with int16 activations (QuantConfig.a16) in the .mdla: TENSOR_QUANT16_SYMM operands and
TENSOR_INT32 biases (the int64 ones, as LiteRT casts them), read by both readers; the emulator
says which operation it has no 16x8 kernel for."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mdla_quant.config import QuantConfig
from mdla_quant.quantize import quantize
from mdla_runtime import load, save
from mdla_runtime.build import engine_path
from mdla_runtime.engine.target import open_target
from mdla_runtime.errors import TargetError
from mdla_runtime.format import container as fmt
from tests.quant.test_quantize import net, samples


@pytest.fixture(scope="module")
def a16_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    qgraph = quantize(net(), samples(4), QuantConfig(a16=("c2", "ap")))
    return save(qgraph, tmp_path_factory.mktemp("a16") / "m.mdla")


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


def test_the_emulator_names_the_first_op_it_cannot_map(a16_file: Path) -> None:
    with pytest.raises(TargetError, match=r"`ap` \(AVERAGE_POOL_2D\)"):
        open_target("emu").run(load(a16_file), samples(1)[0])
