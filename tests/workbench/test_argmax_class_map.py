"""`workbench compile SEG --cpu ARGMAX` then `workbench run` (issue 17): the model's final argmax
runs on the CPU inside mdla-engine, the .mdla's output is the class map itself, and run draws
it (FP32 | INT8) beside the input as for a [1, K, H, W] score output."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

import mdla_runtime
from workbench.cli import app

SEG = str(Path(__file__).with_name("argmax_models.py")) + ":argmax_segmenter"


def test_compile_and_run_write_the_class_map(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "seg.mdla"
    args = ["compile", SEG, "--cpu", "ARGMAX", "--calib", "random", "--count", "2", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output + result.stderr
    assert "ops on mtk-mdla  4/4 (emu), 1 on cpu" in result.output
    (spec,) = mdla_runtime.load(out).outputs
    assert (spec.model_shape, spec.scale, spec.zero_point) == ((1, 32, 32), 1.0, 0)
    monkeypatch.chdir(tmp_path)  # a random input's PNG goes to the working directory
    run = runner.invoke(app, ["run", str(out), "--json", "--model", SEG])  # the FP32 side
    assert run.exit_code == 0, run.output + run.stderr
    (entry,) = json.loads(run.output)["runs"]
    assert [p["device"] for p in entry["partitions"]] == ["mtk-mdla", "cpu"]
    (cmap,) = entry["class_maps"]
    assert cmap["fp32_int8_agree"] > 0.9
    png = np.asarray(Image.open(cmap["png"]))
    assert png.shape[0] == 32  # FP32 | gap | INT8, each 32 x 32
    assert len(np.unique(png[:, -32:].reshape(-1, 3), axis=0)) >= 2  # several classes drawn
