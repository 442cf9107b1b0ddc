"""`run` draws a keypoint head's points on the photo, at the photo's own resolution: FP32 on the
left, INT8 on the right, each keypoint a disc around the photo pixel its heatmap's argmax cell
maps to; the input folder is left as it was."""

from __future__ import annotations

import errno
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from mdla_ir import Preprocess
from mdla_runtime import load
from workbench.boxes import FP32_COLOUR, GAP, INT8_COLOUR
from workbench.cli import app
from workbench.images import read_image
from workbench.overlay import crop_box

HERE = Path(__file__).parent
COMPILE = ("compile", "--input-shape", "1,3,64,64", "--calib", "random", "--count", "2")
SEG = f"{HERE / 'seg_model.py'}:segmenter"  # outputs `out` [1, 5, 64, 64] and `aux` [1, 3, 32, 32]


def _argmax_cells(maps: np.ndarray) -> list[tuple[int, int]]:
    """(x, y) of each channel's largest value, computed here rather than by the workbench."""
    cells = []
    for m in maps:
        best = (0, 0)
        for yy in range(m.shape[0]):
            for xx in range(m.shape[1]):
                if m[yy, xx] > m[best[1], best[0]]:
                    best = (xx, yy)
        cells.append(best)
    return cells


def _expected(
    cells: list[tuple[int, int]], hw: tuple[int, ...], box: tuple[float, ...]
) -> list[tuple[float, float]]:
    """Each cell's centre in photo pixels: the (h, w) grid spans the crop `box`."""
    x0, y0, x1, y1 = box
    h, w = hw
    return [(x0 + (cx + 0.5) * (x1 - x0) / w, y0 + (cy + 0.5) * (y1 - y0) / h) for cx, cy in cells]


def test_run_draws_keypoints_on_the_photo(tmp_path: Path) -> None:
    mdla = tmp_path / "kp.mdla"
    compiled = CliRunner().invoke(
        app,
        [
            COMPILE[0],
            SEG,
            *COMPILE[1:],
            "-o",
            str(mdla),
            "--output-kind",
            "out=keypoints",
            "--output-kind",
            "aux=keypoints",
        ],
    )
    assert compiled.exit_code == 0, compiled.output
    photos = tmp_path / "photos"
    photos.mkdir()
    Image.fromarray(read_image("chelsea")[..., :3]).save(photos / "cat.png")
    before = {p.name: p.read_bytes() for p in photos.iterdir()}
    out, saved_npz = tmp_path / "out", str(tmp_path / "o.npz")
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(mdla),
            str(photos),
            "--json",
            "--out-dir",
            str(out),
            "--save-outputs",
            saved_npz,
        ],
    )
    assert result.exit_code == 0, result.output
    assert {p.name: p.read_bytes() for p in photos.iterdir()} == before
    drawn = json.loads(result.output)["runs"][0]["keypoint_pngs"]
    assert [d["output"] for d in drawn] == ["out", "aux"]

    photo = np.asarray(Image.open(photos / "cat.png").convert("RGB"))
    pre = load(mdla).provenance.preprocess
    assert isinstance(pre, Preprocess)
    box = crop_box(photo.shape[:2], pre, (64, 64))
    width = photo.shape[1]
    with np.load(tmp_path / "o.npz") as saved:
        for d in drawn:
            png = np.asarray(Image.open(d["png"]).convert("RGB"))
            assert png.shape == (photo.shape[0], 2 * width + GAP, 3)  # the photo's own size
            for key, colour, left in (("fp32", FP32_COLOUR, 0), ("int8", INT8_COLOUR, width + GAP)):
                maps = saved[f"0/{d['output']}" + ("/fp32" if key == "fp32" else "")][0]
                points = _expected(_argmax_cells(maps), maps.shape[1:], box)
                assert np.allclose(d[key], points, atol=0.051)
                for x, y in points:
                    px, py = math.floor(x), math.floor(y)
                    assert tuple(png[py, left + px]) == colour, (d["output"], key, px, py)


def test_a_keypoint_png_that_cannot_be_written_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mdla = tmp_path / "kp.mdla"
    compiled = CliRunner().invoke(
        app, [COMPILE[0], SEG, *COMPILE[1:], "-o", str(mdla), "--output-kind", "out=keypoints"]
    )
    assert compiled.exit_code == 0, compiled.output
    photo = tmp_path / "cat.png"
    Image.fromarray(read_image("chelsea")[..., :3]).save(photo)

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(mdla), str(photo), "--out-dir", str(out)])
    assert result.exit_code == 1, result.output
    png = out / "cat.segmenter.out.keypoints.png"  # the first keypoint output
    assert f"error: cannot write the keypoints PNG `{png}`: " in result.output
    assert "No space left on device" in result.output
    assert not png.exists()
