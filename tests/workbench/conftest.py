"""Shared fixtures: the tiny test models compiled once per session (through the CLI itself)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app

MODEL = str(Path(__file__).with_name("tiny_model.py"))
TINY = f"{MODEL}:tiny"  # no image preprocessing: random calibration
TINY_IMAGES = f"{MODEL}:tiny_images"  # 32×32 images, ImageNet preprocessing
UNMAPPABLE = f"{MODEL}:unmappable"


@pytest.fixture(scope="session")
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """tiny.mdla (+ .tflite) and tiny_images.mdla, compiled with `workbench compile`."""
    out = tmp_path_factory.mktemp("compiled")
    runner = CliRunner()
    args = [TINY, "--calib", "random", "--count", "2", "-o", str(out / "tiny.mdla")]
    first = runner.invoke(app, ["compile", *args, "--tflite", str(out / "tiny.tflite")])
    second = runner.invoke(
        app, ["compile", TINY_IMAGES, "--count", "2", "-o", str(out / "images.mdla")]
    )
    for result in (first, second):
        assert result.exit_code == 0, result.output
    (out / "compile.txt").write_text(first.output)
    return {
        "tiny": out / "tiny.mdla",
        "tflite": out / "tiny.tflite",
        "images": out / "images.mdla",
        "log": out / "compile.txt",
    }
