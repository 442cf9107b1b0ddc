"""The accumulator probe (issue 18): a 1x1 CONV_2D whose requantization overflows int32 tells
whether the device wraps (TFLite's reference) or saturates, and the target file says which."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mdla_ir.builders import as_floats, random_codes
from mdla_quant import run_int8
from mdla_runtime import open_target
from mdla_target import load_target
from workbench.probe import Cell, Matrix, ProbeResult, catalogue, run_probe, write_target
from workbench.probe.targetfile import accumulator_fact
from workbench.probe.windows import rng_for

KEY = "CONV_2D/requant_wrap"


def test_the_probe_is_in_the_catalogue_and_its_references_differ() -> None:
    (probe,) = catalogue([KEY])
    assert probe.role == "accumulator"
    model = probe.build()
    codes = random_codes(model.graph, rng_for(probe.key))  # the inputs the runner feeds
    x = as_floats(model.graph, codes)
    refs = {
        n: run_int8(g, x, raw=True, accumulator=model.accumulator(n))[0]
        for n, g in model.refs().items()
    }
    assert list(refs) == ["saturate", "wrap"]  # the target's assumption first
    differ = int(np.count_nonzero(refs["saturate"] != refs["wrap"]))
    assert 0 < differ < codes[0].size  # both kinds of input are there


@pytest.fixture
def emulator_accumulator(request: pytest.FixtureRequest) -> Iterator[str]:
    old = os.environ.get("MDLA_EMU_ACCUMULATOR")
    os.environ["MDLA_EMU_ACCUMULATOR"] = str(request.param)
    yield str(request.param)
    if old is None:
        del os.environ["MDLA_EMU_ACCUMULATOR"]
    else:
        os.environ["MDLA_EMU_ACCUMULATOR"] = old


@pytest.mark.parametrize("emulator_accumulator", ["saturate", "wrap"], indirect=True)
def test_the_emulator_answers_as_told(emulator_accumulator: str, tmp_path: Path) -> None:
    (probe,) = catalogue([KEY])
    result = run_probe(open_target("emu"), probe, ["mtk-mdla"], tmp_path, repeat=1)
    cell = result.cells["mtk-mdla"]
    assert cell.runs
    assert cell.matches == (emulator_accumulator,)
    assert cell.exact is (emulator_accumulator == "saturate")
    m = Matrix("emu", "8.2.24", "2030-01-02", ("mtk-mdla",), (result,))
    t = load_target(write_target(m, tmp_path / "probed.toml"))
    assert t.accumulator == emulator_accumulator
    assert t.accumulator_source.startswith("probed on emu mtk-mdla, 2030-01-02")
    assert KEY in t.accumulator_source


def test_an_unsettled_probe_leaves_the_assumption() -> None:
    (probe,) = catalogue([KEY])
    neither = Cell(True, True, True, False, mismatches=3, max_diff=255)
    failed = Cell(True, False, False, error="BAD_DATA")
    for cell in (neither, failed):
        m = Matrix("lib:/x.so", "9", "2030-01-02", ("npu",), (ProbeResult(probe, {"npu": cell}),))
        assert accumulator_fact(m) == (
            "saturate",
            "assumed: the accumulator probe did not settle it on any device",
        )
    wrap = Cell(True, True, True, False, matches=("wrap",))
    m = Matrix("lib:/x.so", "9", "2030-01-02", ("gpu", "npu"), (ProbeResult(probe, {"npu": wrap}),))
    assert accumulator_fact(m)[0] == "wrap"
    assert accumulator_fact(m)[1].startswith("probed on lib:/x.so npu")
