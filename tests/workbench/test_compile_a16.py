"""`workbench compile --a16`: auto[:BUDGET] chooses int16 activations by measured gain, patterns
name them; a bad budget is a usage error (exit 2), a pattern that matches nothing bad input
(exit 1), each one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import mdla_runtime
from mdla_compile.a16 import resolve
from mdla_quant import QuantConfig, quantize
from mdla_quant.precision import parse_a16
from tests.quant.test_sensitivity import inputs, mlp
from tests.workbench.conftest import TINY
from workbench.cli import app

BASE = ["compile", TINY, "--calib", "random", "--count", "4"]


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize("budget", ["auto:0%", "auto:120%", "auto:lots"])
def test_a_bad_budget_is_a_usage_error(tmp_path: Path, budget: str) -> None:
    result = CliRunner().invoke(app, [*BASE, "--a16", budget, "-o", str(tmp_path / "t.mdla")])
    assert result.exit_code == 2, result.output
    line = _one_error_line(result.stderr)
    assert "not a share of activation bytes" in line
    assert "auto:10%" in line
    assert not (tmp_path / "t.mdla").exists()


def test_a_pattern_matching_nothing_is_bad_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*BASE, "--a16", "nope*", "-o", str(tmp_path / "t.mdla")])
    assert result.exit_code == 1, result.output
    assert "pattern `nope*` matches no tensor or op" in _one_error_line(result.stderr)
    assert not (tmp_path / "t.mdla").exists()


def test_auto_chooses_within_the_budget_and_the_manifest_records_it(tmp_path: Path) -> None:
    out = tmp_path / "t.mdla"
    result = CliRunner().invoke(app, [*BASE, "--a16", "auto:30%", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert "--a16 auto:30%:" in result.stderr
    chosen = mdla_runtime.load(out).provenance.quant.a16
    doc = json.loads(result.stdout)
    assert doc["calibration"]["a16"] == list(chosen)
    assert doc["calibration"]["a16_share"] <= 0.30
    for name in chosen:
        assert f"int16 `{name}`: +" in result.stderr  # each with its gain and cost
    quant = mdla_runtime.load(out).provenance.quant
    assert quant.a16_mode == "auto:30%"
    assert len(quant.a16_gain_db) == len(chosen)


def test_joint_chooses_within_the_budget_and_records_its_mode(tmp_path: Path) -> None:
    out = tmp_path / "t.mdla"
    result = CliRunner().invoke(app, [*BASE, "--a16", "joint:30%", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert "--a16 joint:30%:" in result.stderr
    quant = mdla_runtime.load(out).provenance.quant
    assert quant.a16
    assert json.loads(result.stdout)["calibration"]["a16_share"] <= 0.30
    assert quant.a16_mode == "joint:30%"
    assert len(quant.a16_gain_db) == len(quant.a16)


def test_refit_records_its_mode_in_the_manifest(tmp_path: Path) -> None:
    out = tmp_path / "t.mdla"
    args = [*BASE, "--adaround", "5", "--a16", "refit:30%", "-o", str(out), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "--a16 refit:30%:" in result.stderr
    quant = mdla_runtime.load(out).provenance.quant
    assert quant.a16
    assert json.loads(result.stdout)["calibration"]["a16_share"] <= 0.30
    assert (quant.a16_mode, quant.adaround) == ("refit:30%", 5)
    assert len(quant.a16_gain_db) == len(quant.a16)
    shown = CliRunner().invoke(app, ["inspect", str(out)])
    assert "by --a16 refit:30%" in shown.stdout


def test_inspect_lists_the_int16_activations(tmp_path: Path) -> None:
    graph = mlp()
    q = quantize(graph, inputs(8, 1), QuantConfig(method="minmax", a16=("h", "h2")))
    path = tmp_path / "mlp.mdla"
    mdla_runtime.save(q, path)
    result = CliRunner().invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0, result.output
    assert "int16" in result.stdout
    assert "2 activations (16x8): h, h2" in result.stdout
    doc = json.loads(CliRunner().invoke(app, ["inspect", str(path), "--json"]).stdout)
    assert doc["quant"]["a16"] == ["h", "h2"]


def test_inspect_says_why_each_chosen_activation_is_int16(tmp_path: Path) -> None:
    config = QuantConfig(
        method="minmax", a16=("h", "h2"), a16_gain_db=(1.25, 0.5), a16_mode="auto:25%"
    )
    path = tmp_path / "mlp.mdla"
    mdla_runtime.save(quantize(mlp(), inputs(8, 1), config), path)
    result = CliRunner().invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0, result.output
    assert "2 activations (16x8), by --a16 auto:25%, each for its gain:" in result.stdout
    assert "h  +1.25 dB output SQNR" in result.stdout
    assert "h2  +0.50 dB output SQNR" in result.stdout
    doc = json.loads(CliRunner().invoke(app, ["inspect", str(path), "--json"]).stdout)
    assert doc["quant"]["a16_gain_db"] == [1.25, 0.5]
    assert doc["quant"]["a16_mode"] == "auto:25%"


def test_a_new_request_replaces_the_recorded_choice_and_its_gains() -> None:
    """A config read back from a chosen file carries gains; naming other tensors drops them."""
    recorded = QuantConfig(a16=("h", "h2"), a16_gain_db=(1.0, 2.0), a16_mode="auto:25%")
    config, picked = resolve(parse_a16("h2"), mlp(), inputs(4, 1), recorded, lambda e: None)
    assert picked == ()
    assert config.a16 == ("h2",)
    assert config.a16_gain_db == ()
    assert config.a16_mode == "h2"
