"""`--rounding single` and .tflite (issue 33): a .tflite cannot say how its requantizations
round and LiteRT's reference kernels round twice, so `export` and `compile --tflite` refuse a
single-rounding graph before any work (one line: why and what to do, exit 3, no file written);
double rounding still exports."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from workbench.cli import app

SMH = str(Path(__file__).with_name("softmax_models.py")) + ":softmax_over_height"
CALIB = ["--calib", "random", "--count", "2"]


def _refused(stderr: str) -> None:
    (line,) = stderr.strip().splitlines()
    assert "rounds single, which a .tflite cannot carry" in line
    assert "TFLITE_SINGLE_ROUNDING" in line
    assert "export with --rounding double" in line


def test_export_refuses_single_rounding(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "s.tflite"
    result = runner.invoke(app, ["export", SMH, "--rounding", "single", *CALIB, "-o", str(out)])
    assert result.exit_code == 3, result.output + result.stderr
    _refused(result.stderr)
    assert not out.exists()


def test_compile_tflite_refuses_single_rounding(runner: CliRunner, tmp_path: Path) -> None:
    mdla, tflite = tmp_path / "s.mdla", tmp_path / "s.tflite"
    args = ["compile", SMH, "--rounding", "single", *CALIB, "--tflite", str(tflite)]
    result = runner.invoke(app, [*args, "-o", str(mdla)])
    assert result.exit_code == 3, result.output + result.stderr
    _refused(result.stderr)
    assert not tflite.exists()
    assert not mdla.exists()


def test_double_rounding_still_exports(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "d.tflite"
    result = runner.invoke(app, ["export", SMH, "--rounding", "double", *CALIB, "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    assert out.stat().st_size > 0
