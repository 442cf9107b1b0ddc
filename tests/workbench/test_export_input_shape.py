"""`workbench export` takes compile's input contract (issue 33): `--input-shape` (with `--arg`
and the normalization options) loads the model as `compile` does, so a 64x64 export has a
64x64 input instead of the 224x224 it used silently."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from mdla_runtime.export.tflite import run_tflite_reference
from workbench.cli import app

SPEC = f"{Path(__file__).with_name('stack_model.py')}:stack"
CALIB = ["--calib", "random", "--count", "2"]


def _input_shape(path: Path) -> tuple[int, ...]:
    from ai_edge_litert.interpreter import Interpreter

    (detail,) = Interpreter(model_content=path.read_bytes()).get_input_details()
    return tuple(int(n) for n in detail["shape"])


def test_a_64x64_export_has_a_64x64_input(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "stack64.tflite"
    args = ["export", SPEC, "--arg", "depth=2", "--input-shape", "1,3,64,64", *CALIB]
    result = runner.invoke(app, [*args, "--preset", "imagenet", "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    assert _input_shape(out) == (1, 64, 64, 3)  # NHWC, as the device takes it
    x = np.random.default_rng(0).integers(-128, 128, (1, 64, 64, 3)).astype(np.int8)
    (logits,) = run_tflite_reference(out.read_bytes(), [x])
    assert logits.shape == (1, 3)


def test_without_input_shape_the_model_default_stays(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "stack.tflite"
    result = runner.invoke(app, ["export", SPEC, *CALIB, "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    assert _input_shape(out) == (1, 224, 224, 3)


def test_a_malformed_input_shape_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "bad.tflite"
    result = runner.invoke(app, ["export", SPEC, "--input-shape", "1,3,x", "-o", str(out)])
    assert result.exit_code == 2, result.output + result.stderr
    assert "--input-shape `1,3,x`" in result.stderr
    assert not out.exists()
