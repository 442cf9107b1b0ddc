"""`workbench validate --dataset DIR` in shards on local processes: the same per-image rows,
agreement and worst layers as the unsharded run over DIR (cosine and SQNR equal up to the
order of their float sums); misused, one usage line before any compile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from tests.workbench.conftest import TINY_IMAGES
from workbench.cli import app

BASE = ["validate", TINY_IMAGES, "--count", "2", "--json"]


def dataset(folder: Path, n: int) -> Path:
    folder.mkdir()
    rng = np.random.default_rng(7)
    for i in range(n):
        pixels = rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"img{i:02d}.png")
    return folder


def _doc(args: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(app, [*BASE, *args])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def assert_same_validation(whole: dict[str, Any], sharded: dict[str, Any]) -> None:
    """Equal per-image rows, agreement and worst layers; sums equal to 1e-9."""
    assert sharded["inputs"] == whole["inputs"]
    assert [o["name"] for o in sharded["outputs"]] == [o["name"] for o in whole["outputs"]]
    for one, other in zip(whole["outputs"], sharded["outputs"], strict=True):
        for key in ("ref", "device"):
            assert other[key]["agreement"] == one[key]["agreement"]
            assert other[key]["cosine"] == pytest.approx(one[key]["cosine"], rel=1e-9)
            assert other[key]["sqnr_db"] == pytest.approx(one[key]["sqnr_db"], rel=1e-9)
    names = [(t["tensor"], t["op"]) for t in whole["worst_layers"]]
    assert [(t["tensor"], t["op"]) for t in sharded["worst_layers"]] == names


def test_dataset_shards_give_the_unsharded_figures(tmp_path: Path) -> None:
    folder = dataset(tmp_path / "ds", 5)
    whole = _doc([str(folder)])
    sharded = _doc(["--dataset", str(folder), "--workers", "2", "--shard-size", "2"])
    assert len(whole["inputs"]) == 5
    assert_same_validation(whole, sharded)


@pytest.mark.parametrize("extra", [["cat.jpg"], ["--on", "ssh://u@phone:8022"]])
def test_dataset_with_images_or_a_device_is_one_usage_line(
    tmp_path: Path, extra: list[str]
) -> None:
    folder = dataset(tmp_path / "ds", 1)
    result = CliRunner().invoke(app, [*BASE, "--dataset", str(folder), *extra])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [
        "error: --dataset DIR validates DIR's inputs on the emulator: drop the IMAGES arguments "
        "and --on (or validate them without --dataset)"
    ]
