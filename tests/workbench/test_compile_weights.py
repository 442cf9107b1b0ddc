"""`workbench compile --equalize --adaround N --bias-correction`: recorded in the manifest,
shown in the summary, and a negative iteration count is a usage error."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import mdla_runtime
from tests.workbench.conftest import TINY
from workbench.cli import app


def test_weight_options_are_recorded_and_shown(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "t.mdla"
    args = [TINY, "--calib", "random", "--count", "2", "-o", str(out)]
    result = runner.invoke(
        app, ["compile", *args, "--equalize", "--adaround", "5", "--bias-correction"]
    )
    assert result.exit_code == 0, result.output
    assert "equalized, AdaRound 5 iters/layer, bias-corrected" in result.output
    quant = mdla_runtime.load(out).provenance.quant
    assert quant is not None
    assert (quant.equalize, quant.adaround, quant.bias_correction) == (True, 5, True)


def test_plain_compile_records_the_defaults(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "t.mdla"
    result = runner.invoke(
        app, ["compile", TINY, "--calib", "random", "--count", "2", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "AdaRound" not in result.output
    assert "weight rounding" not in result.output  # the default's rounding is not an extra
    quant = mdla_runtime.load(out).provenance.quant
    assert quant is not None
    assert (quant.equalize, quant.adaround, quant.bias_correction) == (False, 0, False)


def test_a_rounding_other_than_the_default_is_shown(runner: CliRunner, tmp_path: Path) -> None:
    args = [TINY, "--calib", "random", "--count", "2", "-o", str(tmp_path / "t.mdla")]
    result = runner.invoke(app, ["compile", *args, "--weight-rounding", "nearest"])
    assert result.exit_code == 0, result.output
    assert "nearest weight rounding" in result.output


def test_negative_adaround_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["compile", TINY, "--adaround", "-3", "-o", str(tmp_path / "t.mdla")]
    )
    assert result.exit_code == 2


def test_a_compile_the_device_does_not_run_exits_3_and_writes_only_with_force(
    runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "t.mdla"
    args = [TINY, "--calib", "random", "--count", "2", "--skip-rule", "conv_pad_to_pad_valid"]
    refused = runner.invoke(app, ["compile", *args, "-o", str(out)])
    assert refused.exit_code == 3, refused.output
    assert "nothing written" in refused.stderr
    assert "--force" in refused.stderr
    assert not out.exists()
    forced = runner.invoke(app, ["compile", *args, "-o", str(out), "--force"])
    assert forced.exit_code == 3, forced.output
    assert "written because of --force" in forced.stderr
    assert out.read_bytes()[:5] == b"\x89MDLA"


def test_block_reconstruction_is_recorded_and_needs_adaround(
    runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "t.mdla"
    args = [TINY, "--calib", "random", "--count", "2", "-o", str(out)]
    result = runner.invoke(app, ["compile", *args, "--adaround", "3", "--reconstruction", "block"])
    assert result.exit_code == 0, result.output
    assert "AdaRound 3 iters/layer, block reconstruction" in result.output
    quant = mdla_runtime.load(out).provenance.quant
    assert quant is not None
    assert (quant.adaround, quant.reconstruction) == (3, "block")
    alone = runner.invoke(app, ["compile", *args, "--reconstruction", "block"])
    assert alone.exit_code == 1
    assert "adaround > 0" in alone.stderr
    unknown = runner.invoke(app, ["compile", *args, "--adaround", "3", "--reconstruction", "net"])
    assert unknown.exit_code == 2
