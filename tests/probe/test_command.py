"""`workbench probe` through Typer's CliRunner: --help, the happy path (table, JSON, target
file), and each error exit (2 usage, 4 device or connection)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from mdla_ir.ops import OpKind
from mdla_legalize import load_target
from workbench.commands.probe import probe

app = typer.Typer(add_completion=False)
app.command("probe")(probe)


@app.callback()
def _root() -> None:
    """A stand-in for the workbench app (cli.py registers `probe` the same way)."""


runner = CliRunner()


def test_help() -> None:
    result = runner.invoke(app, ["probe", "--help"])
    assert result.exit_code == 0
    for flag in ("--on", "--devices", "--output", "--json", "--only"):
        assert flag in result.output


def test_table_and_target_file(tmp_path: Path) -> None:
    out = tmp_path / "phone.toml"
    result = runner.invoke(app, ["probe", "--only", "CONV_2D", "--only", "SQRT", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "s2 implicit SAME" in result.stdout
    assert "SCR exact" in result.stdout
    assert "--- UNMAPPABLE" in result.stdout  # symmetric pads, and SQRT, on mtk-mdla
    assert "probing 11 models on emu" in result.stderr  # 10 CONV_2D (accumulator, 2 16x8), SQRT
    target = load_target(out)
    assert target.name == "phone"
    assert target.op("mtk-mdla", OpKind.CONV_2D).padding == "same-valid"
    assert not target.op("mtk-mdla", OpKind.SQRT).supported


def test_json() -> None:
    result = runner.invoke(app, ["probe", "--only", "MUL", "--devices", "mtk-mdla", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["devices"] == ["mtk-mdla"]
    assert data["version"] == "8.2.24"
    cells = [p["cells"]["mtk-mdla"] for p in data["probes"]]
    # two int8 cases and two 16x8 ones: the emulator runs MUL at 16x8 too
    assert [c["exact"] for c in cells] == [True, True, True, True]
    assert all(c["latency_us"] > 0 for c in cells)


def test_usage_errors_exit_2() -> None:
    for args in (["--devices", ""], ["--devices", "mtk-mdla,mtk-mdla"], ["--only", "NOPE"]):
        result = runner.invoke(app, ["probe", *args])
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr.startswith("error: ")


def test_device_errors_exit_4(tmp_path: Path) -> None:
    result = runner.invoke(app, ["probe", "--devices", "mtk-npu", "--only", "RELU"])
    assert result.exit_code == 4
    assert "emu has no device mtk-npu (it has: mtk-mdla, mtk-gpu, mtk-dsp)" in result.stderr
    result = runner.invoke(app, ["probe", "--on", f"lib:{tmp_path}/none.so"])
    assert result.exit_code == 4
    assert "no such library" in result.stderr
