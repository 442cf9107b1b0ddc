"""bench/coverage.py's row function on small models: what a row says is what the pipeline did,
and a model that fails gives a row naming the stage and the error instead of a crash."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
from tests.scripts import load_script

PATH = Path(__file__).resolve().parents[1] / "bench" / "coverage.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script("bench_coverage", PATH)


def test_a_row_reports_the_pipeline(bench: ModuleType) -> None:
    s = bench.subject("espcn")
    row = bench.measure(s)
    assert row.failed is None, row.failed
    device = mdla_legalize.legalize(
        mdla_ir.from_torch(s.module, s.example), mdla_legalize.load_target("mdla3.5")
    )
    assert row.mapped == (len(device.ops), len(device.ops))
    report = mdla_legalize.explain(device, mdla_legalize.load_target("mdla3.5"))
    assert set(row.assumed) == set(report.assumptions()) == {"DEPTH_TO_SPACE"}
    assert row.assumed["DEPTH_TO_SPACE"] == sum(o.kind == "DEPTH_TO_SPACE" for o in report.ops)
    assert row.emu_exact is True
    assert row.lite_exact is True
    assert row.cosine is not None
    assert 0.99 <= row.cosine <= 1.0
    assert row.float_error is not None
    assert row.float_error <= 1e-4
    line = bench.render(row)
    assert line.startswith(f"| espcn (1x3x12x12) | {len(device.ops)}/{len(device.ops)} | ")
    assert f"DEPTH_TO_SPACE x{row.assumed['DEPTH_TO_SPACE']}" in line
    assert "| yes / yes |" in line
    assert f"| {row.cosine:.4f} (random; lowest of 2, " in line  # two outputs


def test_a_failing_model_gives_a_row_with_its_stage(bench: ModuleType) -> None:
    module = nn.Sequential(nn.Conv2d(3, 4, 1), nn.GELU()).eval()
    example = (torch.zeros(1, 3, 8, 8),)
    s = bench.Subject("gelu_net", module, example, [[example[0].numpy()]], [], "random")
    row = bench.measure(s)
    assert row.failed is not None
    stage, error = row.failed
    assert stage == "legalize"
    assert "GELU" in error
    assert "\n" not in error
    line = bench.render(row)
    assert line.count("\n") == 0
    assert "failed at legalize: " in line
    assert line.count("|") - line.count("\\|") == 7  # six cells


def test_size_option(bench: ModuleType) -> None:
    size_of = bench._sizes(["160", "fcn_resnet50=96"])
    assert size_of("fcn_resnet50") == 96
    assert size_of("vgg11_bn") == 160
    assert size_of("unet") is None  # the hand-written models keep their own shapes


def test_parity_footer_names_the_models_over_the_bar(bench: ModuleType) -> None:
    rows = [bench.Row("a", float_error=5e-5), bench.Row("b", float_error=2e-4), bench.Row("c")]
    line = bench.parity(rows)
    assert "<= 0.0001 on 1 of 2 models (worst 2.0e-04)" in line
    assert line.endswith("over it: b 2.0e-04")
    assert "over it" not in bench.parity(rows[:1])


def test_a_long_error_keeps_its_start_and_its_cause(bench: ModuleType) -> None:
    exc = RuntimeError("building failed (cc " + "-I/x " * 200 + ")\nk.c:3: error: bad type")
    line = bench.one_line(exc)
    assert len(line) <= 300
    assert line.startswith("RuntimeError: building failed (cc")
    assert line.endswith("; k.c:3: error: bad type")
    assert bench.one_line(ValueError("short")) == "ValueError: short"


def test_the_fresh_table_gives_a_verdict_per_model(
    bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    bench.fresh_table(["functional_conv", "dilated_max_pool"])
    out = capsys.readouterr().out
    # the path is whichever auto took (torch.fx where its graph is export's)
    assert re.search(r"^\| functional_conv \| (fx|export) \| npu \| 1 \|  \|$", out, re.M)
    assert re.search(r"^\| dilated_max_pool \| (fx|export) \| npu \| 1 \|  \|$", out, re.M)
    assert "2/2 end to end, bit-exact on the emulator" in out
