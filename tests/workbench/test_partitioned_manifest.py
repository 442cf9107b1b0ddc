"""Every command that reads a compiled model, on one partitioned manifest (`compile --cpu`):
check asks the device per NPU partition and prints each partition's device and op counts (it
used to die on zip() with one flag per NPU op against one row per op), inspect lists the
partitions, run runs them, bisect counts the cpu ops apart, validate compiles with --cpu."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app

SMH = str(Path(__file__).with_name("softmax_models.py")) + ":softmax_over_height"
CALIB = ["--calib", "random", "--count", "2"]


@pytest.fixture(scope="module")
def smh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The model as mtk-mdla (2 ops), cpu (SOFTMAX), mtk-mdla (3 ops)."""
    out = tmp_path_factory.mktemp("partitioned") / "smh.mdla"
    result = CliRunner().invoke(app, ["compile", SMH, "--cpu", "SOFTMAX", *CALIB, "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    return out


def test_check_prints_each_partition(runner: CliRunner, smh: Path) -> None:
    result = runner.invoke(app, ["check", str(smh)])
    assert result.exit_code == 0, result.output + result.stderr
    lines = [line.strip() for line in result.output.splitlines()]
    assert "partition 0 on mtk-mdla: 2 op(s), 2/2 supported" in lines
    assert "partition 1 on cpu: 1 op(s), not asked (the engine's own kernels)" in lines
    assert "partition 2 on mtk-mdla: 3 op(s), 3/3 supported" in lines
    assert any(line.startswith("2  softmax") and line.endswith("cpu") for line in lines)


def test_check_json_gives_each_op_its_partition(runner: CliRunner, smh: Path) -> None:
    result = runner.invoke(app, ["check", str(smh), "--json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["maps"], doc["supported"]) == (True, 5)
    assert [p["device"] for p in doc["partitions"]] == ["mtk-mdla", "cpu", "mtk-mdla"]
    assert [(o["partition"], o["supported"]) for o in doc["ops"]] == [
        (0, True),
        (0, True),
        (1, None),
        (2, True),
        (2, True),
        (2, True),
    ]


def test_inspect_lists_the_partitions(runner: CliRunner, smh: Path) -> None:
    result = runner.invoke(app, ["inspect", str(smh)])
    assert result.exit_code == 0, result.output + result.stderr
    assert "mtk-mdla (2 ops), cpu (1 ops), mtk-mdla (3 ops)" in result.output


def test_run_runs_the_partitions(
    runner: CliRunner, smh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # `run` without images draws the dense output into the cwd
    result = runner.invoke(app, ["run", str(smh), "--json"])
    assert result.exit_code == 0, result.stderr
    (entry,) = json.loads(result.stdout)["runs"]
    assert entry["device"] == "mtk-mdla+cpu"
    assert [(p["device"], p["ops"]) for p in entry["partitions"]] == [
        ("mtk-mdla", 2),
        ("cpu", 1),
        ("mtk-mdla", 3),
    ]


def test_bisect_counts_the_cpu_ops_apart(runner: CliRunner, smh: Path) -> None:
    result = runner.invoke(app, ["bisect", str(smh)])
    assert result.exit_code == 0, result.output + result.stderr
    assert "ops[:6]: 5/5 supported (1 on cpu, not asked) -> maps" in result.output
    assert "all 6 ops map on mtk-mdla" in result.output


def test_validate_compiles_the_partitioned_model(runner: CliRunner) -> None:
    result = runner.invoke(app, ["validate", SMH, "--cpu", "SOFTMAX", *CALIB])
    assert result.exit_code == 0, result.output + result.stderr
    assert "3 partition(s), 5 op(s) on mtk-mdla, 1 on cpu" in result.output
    assert "FP32 vs INT8" in result.output
