"""`workbench` commands through Typer's CliRunner: --help, the happy path on the emulator and
each error exit (1 bad input/model, 2 usage, 3 unsupported, 4 device/connection)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

import mdla_quant
from tests.workbench.conftest import TINY, TINY_IMAGES, UNMAPPABLE
from workbench.cli import app
from workbench.commands.options import (
    MethodName,
    RoundingName,
    WeightRoundingName,
    quant_config,
)

COMMANDS = ["compile", "check", "run", "bisect", "validate", "witness", "devices", "export", "tui"]
COMMANDS += ["doctor", "engine", "inspect", "sweep"]


@pytest.mark.parametrize("command", COMMANDS)
def test_help(runner: CliRunner, command: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert "Examples" in result.output
    assert f"workbench {command}" in result.output


def test_top_level_help_fits_a_terminal_in_panels(runner: CliRunner) -> None:
    """`workbench --help` at 80 columns: under 50 lines, each command on one line of its panel
    (it was 89 lines of full docstrings)."""
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert len(lines) < 50
    assert max(len(line) for line in lines) <= 80
    for panel in ("Build a model", "Run a compiled model", "Set up a target"):
        assert f"─ {panel} ─" in result.output
    for command in [*COMMANDS, "tune", "probe"]:
        (row,) = [line for line in lines if line.startswith(f"│ {command} ")]
        assert len(row.split()) > 4  # `│ name`, its one-line summary, `│`
        after = lines[lines.index(row) + 1]
        assert not after.startswith("│" + " " * 11)  # no continuation line


@pytest.mark.parametrize("command", [*COMMANDS, "tune", "probe"])
def test_help_at_80_columns_cuts_no_word(runner: CliRunner, command: str) -> None:
    """Rich ends a word longer than the help column with an ellipsis: `--on`'s
    `lib:/path/libneuron_adapter.so` read `lib:/path/libneuron_ad…` in five commands."""
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "…" not in result.output, [line for line in result.output.splitlines() if "…" in line]


def test_method_choices_are_the_quantizers() -> None:
    assert tuple(m.value for m in MethodName) == mdla_quant.METHODS


def test_quant_config_maps_each_option_to_its_field() -> None:
    plain = quant_config(MethodName.mse, 99.9, RoundingName.single, "mdla3.5")
    assert plain == mdla_quant.QuantConfig(
        method="mse", percentile=99.9, rounding="single", target="mdla3.5"
    )
    full = quant_config(
        MethodName.entropy,
        99.0,
        RoundingName.double,
        "mdla3.5",
        bias_correction=True,
        equalize=True,
        adaround=7,
    )
    assert (full.method, full.percentile, full.rounding) == ("entropy", 99.0, "double")
    assert (full.bias_correction, full.equalize, full.adaround) == (True, True, 7)
    for name in WeightRoundingName:
        got = quant_config(MethodName.mse, 99.9, RoundingName.single, "t", weight_rounding=name)
        assert got.weight_rounding == name.value
    assert tuple(n.value for n in WeightRoundingName) == mdla_quant.WEIGHT_ROUNDINGS


def test_compile_summary(artifacts: dict[str, Path]) -> None:
    log = artifacts["log"].read_text()
    assert "6 imported -> 8" in log
    assert "ops on mtk-mdla  8/8 (emu)" in log
    assert "worst layer" in log
    assert "SQNR" in log
    assert artifacts["tiny"].read_bytes()[:5] == b"\x89MDLA"
    assert artifacts["tflite"].read_bytes()[4:8] == b"TFL3"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["no_such_net", "-o", "x.mdla"], 1, "unknown model `no_such_net`"),
        ([TINY, "-o", "x.bin"], 2, "must end in .mdla"),
        ([TINY, "--method", "median", "-o", "x.mdla"], 2, "median"),
        ([TINY, "--calib", "samples", "-o", "x.mdla"], 1, "--calib random"),
        ([TINY, "--skip-rule", "no_rule", "-o", "x.mdla"], 2, "unknown rule(s) no_rule"),
        ([UNMAPPABLE, "--calib", "random", "-o", "x.mdla"], 3, "GELU needs erf"),
    ],
)
def test_compile_errors(
    runner: CliRunner, tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    args = [str(tmp_path / a) if a.endswith((".mdla", ".bin")) else a for a in args]
    result = runner.invoke(app, ["compile", *args])
    assert result.exit_code == code, result.output
    assert message in result.stderr
    if code != 2 or "must end" in message:
        assert len(result.stderr.strip().splitlines()) == 1  # one line, no traceback


def test_debug_shows_the_traceback(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["compile", UNMAPPABLE, "-o", str(tmp_path / "x.mdla"), "--debug"])
    assert result.exit_code == 3
    assert "Traceback" in result.stderr
    assert "LegalizeError" in result.stderr


def test_check_model_before_and_after_legalization(runner: CliRunner) -> None:
    before = runner.invoke(app, ["check", TINY])
    assert before.exit_code == 0, before.output  # the rules named under fix make it map
    assert "note: graph layout is NCHW" in before.output  # a note, not a failure
    assert "rule conv_pad_to_pad_valid" in before.output
    assert "rule silu_to_logistic_mul" in before.output
    assert "all 8 ops of the device graph map on mtk-mdla" in before.output
    after = runner.invoke(app, ["check", TINY, "--legalized"])
    assert after.exit_code == 0, after.output
    assert "8/8 ops map" in after.output


def test_check_manifest_and_errors(runner: CliRunner, artifacts: dict[str, Path]) -> None:
    ok = runner.invoke(app, ["check", str(artifacts["tiny"])])
    assert ok.exit_code == 0
    assert "8/8 ops supported" in ok.output
    missing = runner.invoke(app, ["check", "missing.mdla"])
    assert missing.exit_code == 1
    assert "does not exist" in missing.stderr
    bad_device = runner.invoke(app, ["check", TINY, "--device", "mtk-npu"])
    assert bad_device.exit_code == 3, bad_device.output


def test_run_json(runner: CliRunner, artifacts: dict[str, Path]) -> None:
    result = runner.invoke(app, ["run", str(artifacts["tiny"]), "--json", "--repeat", "3"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    (entry,) = out["runs"]
    assert entry["device"] == "mtk-mdla"
    assert entry["latency_ms"]["min"] <= entry["latency_ms"]["median"]
    assert len(entry["top5"]) == 5
    assert sum(t["p"] for t in entry["top5"]) <= 1.0001


def test_run_images(runner: CliRunner, artifacts: dict[str, Path], tmp_path: Path) -> None:
    photo = tmp_path / "grey.png"
    Image.fromarray(np.full((40, 50, 3), 128, np.uint8)).save(photo)
    result = runner.invoke(app, ["run", str(artifacts["images"]), str(photo), "chelsea"])
    assert result.exit_code == 0, result.output
    assert "grey.png" in result.output
    assert "chelsea" in result.output
    assert "mtk-mdla" in result.output


def test_run_errors(runner: CliRunner, artifacts: dict[str, Path], tmp_path: Path) -> None:
    junk = tmp_path / "junk.jpg"
    junk.write_text("not an image")
    corrupt = tmp_path / "corrupt.mdla"
    corrupt.write_bytes(b"\x89MDLA\r\n\x1a\n" + bytes(20))
    (tmp_path / "adir.mdla").mkdir()
    cases = [
        ([str(tmp_path / "adir.mdla")], 1, "adir.mdla` is a directory; a .mdla is a file"),
        ([str(artifacts["images"]), str(junk)], 1, "cannot decode image"),
        ([str(artifacts["images"]), "nothing.png"], 1, "does not exist"),
        ([str(artifacts["tiny"]), "chelsea"], 1, "records no image preprocessing"),
        ([str(tmp_path / "none.mdla")], 1, "does not exist"),
        (["ssdlite320_mobilenet_v3_large"], 2, "is not a manifest (.mdla): compile it first"),
        ([str(corrupt)], 1, "is format version 10, newer than this reader's 3: update mdla"),
        ([str(artifacts["tiny"]), "--on", "lib:/no/such/lib.so"], 4, "no such library"),
        ([str(artifacts["tiny"]), "--on", "tcp://x"], 2, "unknown target"),
        ([str(artifacts["tiny"]), "--repeat", "0"], 2, ""),
    ]
    for args, code, message in cases:
        result = runner.invoke(app, ["run", *args])
        assert result.exit_code == code, (args, result.output)
        assert message in result.stderr, (args, result.stderr)


def test_bisect_all_map(runner: CliRunner, artifacts: dict[str, Path]) -> None:
    result = runner.invoke(app, ["bisect", str(artifacts["tiny"])])
    assert result.exit_code == 0
    assert "ops[:8]: 8/8 supported -> maps" in result.output
    assert "all 8 ops map on mtk-mdla" in result.output


def test_bisect_finds_the_unmappable_conv(runner: CliRunner) -> None:
    result = runner.invoke(app, ["bisect", TINY, "--skip-rule", "conv_pad_to_pad_valid"])
    assert result.exit_code == 3, result.output
    steps = [ln for ln in result.output.splitlines() if ln.strip().startswith("ops[:")]
    # all-or-nothing (0 of 7, not 6 of 7), then halving: 7 ops, the first does not map
    assert [s.split(":", 2)[1] + ":" + s.split(":", 2)[2].split()[0] for s in steps] == [
        "7]:0/7",
        "3]:0/3",
        "1]:0/1",
    ]
    assert "first unmappable op: #0 stem.0 (CONV_2D): pads (1, 1, 1, 1)" in result.output
    assert "fix: rule conv_pad_to_pad_valid" in result.output


def test_validate(runner: CliRunner) -> None:
    result = runner.invoke(app, ["validate", TINY_IMAGES, "--count", "2", "chelsea", "coffee"])
    assert result.exit_code == 0, result.output
    assert "INT8 reference: top-1 agreement" in result.output
    assert "device (mtk-mdla): top-1 agreement" in result.output
    assert "five worst layers" in result.output
    bad = runner.invoke(app, ["validate", TINY, "--calib", "random", "chelsea"])
    assert bad.exit_code == 1
    assert "takes no images" in bad.stderr


def test_witness_on_the_emulators_counter(runner: CliRunner, artifacts: dict[str, Path]) -> None:
    result = runner.invoke(
        app, ["witness", str(artifacts["tiny"]), "--idle", "0.2", "--runs", "300"]
    )
    assert result.exit_code == 0, result.output
    assert "the emulator's fake runtime-PM node" in result.output
    assert "verdict: witnessed" in result.output
    assert "runtime_active_time +0 ms" in result.output  # the idle control
    broken = runner.invoke(app, ["witness", str(artifacts["tiny"]), "--on", "lib:/nope.so"])
    assert broken.exit_code == 4


def test_devices(runner: CliRunner) -> None:
    result = runner.invoke(app, ["devices"])
    assert result.exit_code == 0
    assert "devices: mtk-mdla, mtk-gpu, mtk-dsp" in result.output
    assert "libneuron_emu.so" in result.output
    assert runner.invoke(app, ["devices", "--on", "lib:/nope.so"]).exit_code == 4


def test_export(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "t.tflite"
    result = runner.invoke(
        app, ["export", TINY, "--calib", "random", "--count", "1", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[4:8] == b"TFL3"
    wrong = runner.invoke(app, ["export", TINY, "-o", str(tmp_path / "t.mdla")])
    assert wrong.exit_code == 2
