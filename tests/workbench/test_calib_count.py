"""A --calib folder holding more inputs than --count: compile says how many it calibrates on
and how to use them all (one stderr line, before the import)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from tests.workbench.conftest import TINY
from workbench.cli import app


@pytest.fixture
def photos(tmp_path: Path) -> Path:
    folder = tmp_path / "photos"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(3):
        Image.fromarray(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)).save(folder / f"{i}.png")
    return folder


@pytest.mark.parametrize(("count", "said"), [(2, True), (3, False), (5, False)])
def test_compile_says_how_many_inputs_of_the_folder_it_used(
    photos: Path, tmp_path: Path, count: int, said: bool
) -> None:
    args = ["compile", TINY, "--preset", "minus1to1", "--calib", str(photos)]
    result = CliRunner().invoke(app, [*args, "--count", str(count), "-o", str(tmp_path / "t.mdla")])
    assert result.exit_code == 0, result.output
    line = (
        f"calibrating on the first 2 of the 3 inputs in {photos} (by name); --count 3 uses them all"
    )
    assert (line in result.stderr) is said
    assert result.stderr.startswith(line) is said  # before anything else the compile says
