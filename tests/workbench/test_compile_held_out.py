"""`workbench compile` scores INT8 against FP32 on the inputs of --calib after the --count that
calibrate, prints the agreement, and suggests the slower techniques below 99%."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

import mdla_compile
import mdla_ir
import mdla_quant
from tests.workbench.conftest import TINY, TINY_IMAGES
from workbench import held_out, images, validation
from workbench.cli import app
from workbench.errors import USAGE, WorkbenchError


def compile_json(runner: CliRunner, tmp_path: Path, *args: str) -> tuple[dict[str, Any], str]:
    out = tmp_path / "m.mdla"
    result = runner.invoke(app, ["compile", *args, "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.splitlines()[-1]), result.stderr


def test_compile_scores_the_inputs_after_count(runner: CliRunner, tmp_path: Path) -> None:
    doc, _ = compile_json(runner, tmp_path, TINY_IMAGES, "--count", "2")
    got = doc["held_out"]
    assert got["inputs"] == len(images.SAMPLES) - 2  # every sample photo not calibrated on
    assert got["kind"] == validation.CLASSIFIER
    assert 0 <= got["top1_same"] <= got["inputs"]
    assert got["agreement"] == pytest.approx(got["top1_same"] / got["inputs"])
    assert got["ci95"] == pytest.approx(list(held_out.wilson(got["top1_same"], got["inputs"])))
    fewer, _ = compile_json(runner, tmp_path, TINY_IMAGES, "--count", "2", "--held-out", "1")
    assert fewer["held_out"]["inputs"] == 1
    off, _ = compile_json(runner, tmp_path, TINY_IMAGES, "--count", "2", "--held-out", "0")
    assert off["held_out"] is None


def test_scores_equal_a_by_hand_comparison(tmp_path: Path) -> None:
    compiled = mdla_compile.compile(mdla_compile.CompileOptions(TINY_IMAGES, count=2))
    held = held_out.held_out_inputs(compiled, "samples", 2, None)
    assert len(held) == len(images.SAMPLES) - 2
    calibrated = [x[0] for x in compiled.calibration]
    for xs in held:  # none of them is a calibration input
        assert not any(np.array_equal(xs[0], c) for c in calibrated)
    same = 0
    for xs in held:
        f = mdla_ir.run_float(compiled.source.graph, xs)[0]
        q = mdla_quant.run_int8(compiled.qgraph, xs)[0]
        same += int(np.argmax(f) == np.argmax(q))
    assert held_out.measure(compiled, held).agreement == held_out.Agreement(same, len(held))


def test_random_inputs_are_not_scored(runner: CliRunner, tmp_path: Path) -> None:
    doc, _ = compile_json(runner, tmp_path, TINY, "--calib", "random", "--count", "2")
    assert doc["held_out"] is None
    result = runner.invoke(
        app,
        ["compile", TINY, "--calib", "random", "--held-out", "2", "-o", str(tmp_path / "x.mdla")],
    )
    assert result.exit_code == USAGE
    assert "random inputs are not scored" in result.stderr
    assert not (tmp_path / "x.mdla").exists()


def test_more_than_there_are_is_a_usage_error(tmp_path: Path) -> None:
    for i in range(5):
        np.save(tmp_path / f"x{i}.npy", np.zeros((1, 3, 224, 224), np.float32))
    compiled = mdla_compile.compile(
        mdla_compile.CompileOptions(TINY_IMAGES, calib=str(tmp_path), count=3)
    )
    assert len(held_out.held_out_inputs(compiled, str(tmp_path), 3, None)) == 2
    with pytest.raises(WorkbenchError, match=r"--held-out 3: .* has 2 inputs after the --count 3"):
        held_out.held_out_inputs(compiled, str(tmp_path), 3, 3)


def measured(same: int, n: int) -> held_out.Measured:
    return held_out.Measured(validation.CLASSIFIER, n, held_out.Agreement(same, n), None, None, 1.0)


def test_the_hint_names_what_is_not_yet_on() -> None:
    plain = mdla_quant.QuantConfig()
    assert held_out.hint(measured(99, 100), plain) is None  # good enough: nothing said
    low = measured(9, 10)
    both = held_out.hint(low, plain)
    assert both is not None
    assert "90.0%" in both
    assert "--adaround 300" in both
    assert "--a16 auto" in both
    ada = held_out.hint(low, mdla_quant.QuantConfig(adaround=300))
    assert ada is not None
    assert "--adaround" not in ada
    assert "--a16 auto" in ada
    every = mdla_quant.QuantConfig(adaround=300, a16=("x",))
    assert held_out.hint(low, every) is None  # nothing left to suggest
    raw = held_out.Measured("tensor", 4, None, None, None, 0.5)
    assert held_out.hint(raw, plain) is None  # no share to judge


def test_compile_prints_the_row(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "m.mdla"
    result = runner.invoke(app, ["compile", TINY_IMAGES, "--count", "3", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "top-1 agreement" in result.stdout
    assert f"/{len(images.SAMPLES) - 3}" in result.stdout
    plain = runner.invoke(app, ["compile", TINY, "--calib", "random", "-o", str(out)])
    assert "not measured (no inputs after --count)" in plain.stdout


def test_an_unreadable_held_out_input_is_said_not_fatal(runner: CliRunner, tmp_path: Path) -> None:
    """The .mdla is written before scoring: a held-out file that cannot be read costs the
    agreement row, named in a note, not the compile."""
    photos = tmp_path / "photos"
    photos.mkdir()
    for i in range(2):
        pixels = np.random.default_rng(i).integers(0, 256, (40, 52, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(photos / f"p{i}.png")
    (photos / "zz_broken.png").write_bytes(b"not a png")  # sorted last: held out
    out = tmp_path / "m.mdla"
    args = [TINY_IMAGES, "--calib", str(photos), "--count", "2", "-o", str(out), "--json"]
    result = runner.invoke(app, ["compile", *args])
    assert result.exit_code == 0, result.output
    assert out.exists()
    assert json.loads(result.stdout.splitlines()[-1])["held_out"] is None
    assert "held-out agreement not measured: cannot decode image" in result.stderr
    assert "zz_broken.png" in result.stderr
