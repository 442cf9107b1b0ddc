"""`workbench check MODEL --cpu ...`: the placement table and device switches (exit 0), a token
that selects nothing (exit 2), an op neither mapped nor placed (exit 3, one row per op), an op
that maps anyway (a warning on stderr)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from workbench.cli import app

BLOCK = str(Path(__file__).with_name("unmappable_models.py")) + ":convnext_block"
CPU = "LAYER_NORM,GELU"  # its Linears map: 1x1 CONV_2Ds in the device layout


def test_check_prints_the_placement(runner: CliRunner) -> None:
    result = runner.invoke(app, ["check", BLOCK, "--cpu", "LAYER_NORM", "--cpu", "up,down"])
    assert result.exit_code == 3, result.output  # GELU is neither mapped nor placed
    result = runner.invoke(app, ["check", BLOCK, "--cpu", CPU])
    assert result.exit_code == 0, result.output + result.stderr
    lines = result.output.splitlines()
    assert lines[0] == (
        "placement of convnext_block: 5 partition(s), 4 op(s) on mtk-mdla, 2 on cpu, "
        "4 device switch(es)"
    )
    row = next(line for line in lines if " norm " in line).split()
    assert row == ["1", "norm", "LAYER_NORM", "cpu", "1", "--cpu", "LAYER_NORM"]
    assert next(line for line in lines if " dw " in line).split()[3:] == ["mtk-mdla", "0", "maps"]
    assert "  partition 4 on mtk-mdla: ops #4..#5 (2), in: act, x; " in result.output
    assert result.stderr == ""


def test_a_pattern_matching_nothing_is_a_usage_error(runner: CliRunner) -> None:
    result = runner.invoke(app, ["check", BLOCK, "--cpu", f"{CPU},features.7.*"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --cpu 'features.7.*' selects no op")
    assert len(result.stderr.strip().splitlines()) == 1


def test_unplaced_ops_that_do_not_map_are_listed(runner: CliRunner) -> None:
    result = runner.invoke(app, ["check", BLOCK, "--cpu", "LAYER_NORM"])
    assert result.exit_code == 3
    assert "with --cpu LAYER_NORM, 1 op(s) cannot be placed:" in result.output
    assert "op #3 `act` (GELU)" in result.output
    assert "place it on the CPU: --cpu GELU" in result.output
    assert result.stderr == "error: `" + BLOCK + "` cannot be placed: 1 op(s), listed above\n"


def test_an_op_that_maps_is_placed_with_a_warning(runner: CliRunner) -> None:
    result = runner.invoke(app, ["check", BLOCK, "--cpu", CPU + ",add"])
    assert result.exit_code == 0
    assert "6 partition(s), 3 op(s) on mtk-mdla, 3 on cpu, 5 device switch(es)" in result.output
    assert result.stderr == (
        "warning: op `add` (ADD) maps on mtk-mdla; it runs on the CPU because of --cpu 'add'\n"
    )


def test_check_suggests_cpu_auto_and_auto_places_what_does_not_map(runner: CliRunner) -> None:
    result = runner.invoke(app, ["check", BLOCK])
    assert result.exit_code == 3
    assert "fix: run them on the CPU: --cpu auto (here: --cpu LAYER_NORM," in result.output
    result = runner.invoke(app, ["check", BLOCK, "--cpu", "auto"])
    assert result.exit_code == 0, result.output + result.stderr
    assert "4 op(s) on mtk-mdla, 2 on cpu, 4 device switch(es)" in result.output
    assert result.stderr.startswith("--cpu auto: placed 2 op(s) on the CPU (GELU, LAYER_NORM)")
    assert "  op #3 `act` (GELU): GELU needs erf" in result.stderr


def test_compile_refusal_keeps_the_cpu_advice(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "b.mdla"
    result = runner.invoke(app, ["compile", BLOCK, "--calib", "random", "-o", str(out)])
    assert result.exit_code == 3
    assert result.stderr.rstrip().endswith(
        "fix: run them on the CPU: --cpu auto (here: --cpu LAYER_NORM,GELU; 4 device switch(es))"
    )
