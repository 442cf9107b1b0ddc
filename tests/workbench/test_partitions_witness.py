"""`workbench witness` of a partitioned model (issue 17): the witness runs around the whole
model, and the report says which partitions ran on the NPU (the only ones the APU's counter can
see) and which the engine ran on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app

BLOCK = str(Path(__file__).with_name("unmappable_models.py")) + ":convnext_block"


@pytest.fixture(scope="module")
def block(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("witness") / "block.mdla"
    args = ["compile", BLOCK, "--cpu", "LAYER_NORM,GELU"]
    result = CliRunner().invoke(app, [*args, "--calib", "random", "--count", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    return out


def test_the_witness_names_the_npu_partitions(runner: CliRunner, block: Path) -> None:
    result = runner.invoke(app, ["witness", str(block), "--runs", "30", "--idle", "0.2", "--json"])
    assert result.exit_code == 0, result.output + result.stderr
    out = json.loads(result.output)
    assert out["verdict"] == "witnessed"
    assert [p["device"] for p in out["partitions"]] == ["mtk-mdla", "cpu"] * 2 + ["mtk-mdla"]
    assert out["npu_partitions"] == [0, 2, 4]
    text = runner.invoke(app, ["witness", str(block), "--runs", "30", "--idle", "0.2"])
    assert text.exit_code == 0, text.output + text.stderr
    assert "partitions on the NPU: 0, 2, 4 of 5 (" in text.output
    assert text.output.rstrip().endswith("on the cpu: 1, 3")
