"""`workbench compile MODEL --cpu ...` (issue 17): the placement table, the INT8 vs FP32 cosine
of the partitioned model, a format-3 .mdla holding the partitions; `workbench run` of it runs
partition by partition and says where each ran (never a fallback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import mdla_runtime
from workbench.cli import app

BLOCK = str(Path(__file__).with_name("unmappable_models.py")) + ":convnext_block"
CPU = "LAYER_NORM,GELU"  # its Linears map: 1x1 CONV_2Ds in the device layout
PARTS = [("mtk-mdla", 1, 0), ("cpu", 1, 1), ("mtk-mdla", 1, 2), ("cpu", 1, 3), ("mtk-mdla", 2, 4)]


def test_compile_with_cpu_partitions(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # `run` without images draws the dense output into the cwd
    out = tmp_path / "block.mdla"
    args = ["compile", BLOCK, "--cpu", CPU, "--calib", "random", "--count", "2", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output + result.stderr
    assert "5 partition(s), 4 op(s) on mtk-mdla, 2 on cpu, 4 device switch(es)" in result.output
    assert "ops on mtk-mdla  4/4 (emu), 2 on cpu" in result.output  # per NPU partition
    cosine = float(result.output.split("cosine vs FP32")[1].split()[0])
    assert 0.999 < cosine <= 1.0
    m = mdla_runtime.load(out)
    assert [(p.device, len(p.operations)) for p in m.partitions] == [p[:2] for p in PARTS]
    shown = runner.invoke(app, ["inspect", str(out), "--json"])
    assert shown.exit_code == 0, shown.output
    assert (
        '"partitions": [{"device": "mtk-mdla", "operations": 1}, {"device": "cpu"' in shown.output
    )
    assert '"LAYER_NORM": 1, "GELU": 1' in shown.output
    run = runner.invoke(app, ["run", str(out)])
    assert run.exit_code == 0, run.output + run.stderr
    assert "5 partitions (random):" in run.output
    for k, (device, ops, first) in enumerate(PARTS):
        assert f"partition {k:>3} on {device:<9} {ops:>4} op(s) from op {first:<5}" in run.output
    assert "per device: cpu " in run.output
    assert (tmp_path / "mdla-out" / "random.convnext_block.add.png").is_file()
    shown = runner.invoke(app, ["run", str(out), "--json"])
    assert shown.exit_code == 0, shown.output
    (entry,) = json.loads(shown.output)["runs"]
    assert [p["device"] for p in entry["partitions"]] == [p[0] for p in PARTS]
    assert entry["npu_partitions"] == [0, 2, 4]
    assert entry["device"] == "mtk-mdla+cpu"


def test_without_cpu_nothing_changes(runner: CliRunner, tmp_path: Path) -> None:
    args = ["compile", BLOCK, "--calib", "random", "--count", "1", "-o", str(tmp_path / "b.mdla")]
    result = runner.invoke(app, args)
    assert result.exit_code == 3
    assert "do not map" in result.stderr
    assert not (tmp_path / "b.mdla").exists()


def test_a_bad_cpu_token_is_a_usage_error_before_any_work(
    runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "b.mdla"
    result = runner.invoke(app, ["compile", BLOCK, "--cpu", "nonesuch.*", "-o", str(out)])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --cpu 'nonesuch.*' selects no op")
    assert not out.exists()


def test_validate_takes_cpu_like_compile(runner: CliRunner) -> None:
    """validate compiles as compile does: without --cpu the block does not map (3); with it,
    the placement table, then FP32 vs INT8 of the partitioned model on the emulator."""
    args = ["validate", BLOCK, "--calib", "random", "--count", "2"]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 3, refused.output
    result = runner.invoke(app, [*args, "--cpu", CPU])
    assert result.exit_code == 0, result.output + result.stderr
    assert "5 partition(s), 4 op(s) on mtk-mdla, 2 on cpu" in result.output
    assert "FP32 vs INT8" in result.output
