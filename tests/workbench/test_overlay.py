"""A class map on its photo (`workbench.overlay`): the crop the model saw mapped back to the
photo's pixels, the map painted there at the photo's resolution, and a legend strip below."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from mdla_ir import Preprocess
from mdla_zoo.contract import prepare_record
from workbench import dense
from workbench import images as imgs
from workbench.cli import app
from workbench.overlay import ALPHA, DIM, PAD, ROW, crop_box, overlay, with_legend

Array = np.ndarray[Any, Any]
SEG = f"{Path(__file__).with_name('seg_model.py')}:segmenter"
MEAN, STD = (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)


def _square_photo(h: int, w: int, box: tuple[int, int, int, int]) -> Array:
    photo = np.zeros((h, w, 3), np.uint8)
    x0, y0, x1, y1 = box
    photo[y0:y1, x0:x1] = 255
    return photo


@pytest.mark.parametrize(
    "pre",
    [
        Preprocess("imagenet", (64, 64), MEAN, STD),  # short side to round(64 / 0.875), crop
        Preprocess("custom", (48, 64), MEAN, STD, resize=80),  # --resize 80, a wide crop
        Preprocess("custom", (64, 64), MEAN, STD, resize=0),  # the whole photo, stretched
        Preprocess("stretch", (64, 64), MEAN, STD),  # SSDlite's: the whole photo
    ],
    ids=["default", "resize80", "resize0", "stretch"],
)
def test_the_crop_box_maps_the_models_pixels_back_to_the_photo(pre: Preprocess) -> None:
    """A white square in a 300 x 451 photo, found in the model's input, lands on the square
    when mapped through crop_box (to within a model pixel's size in the photo)."""
    square = (180, 110, 260, 190)
    x = prepare_record(_square_photo(300, 451, square), pre.mode, pre.size, MEAN, STD, "rgb",
                       pre.resize)  # fmt: skip
    ys, xs = np.nonzero(x[0, 0] > 0.5)  # white: (1 - 0.5) / 0.5 = 1
    h, w = pre.size
    x0, y0, x1, y1 = crop_box((300, 451), pre, (h, w))
    sx, sy = (x1 - x0) / w, (y1 - y0) / h
    found = (
        x0 + xs.min() * sx,
        y0 + ys.min() * sy,
        x0 + (xs.max() + 1) * sx,
        y0 + (ys.max() + 1) * sy,
    )
    np.testing.assert_allclose(found, square, atol=max(sx, sy) + 1)


def test_overlay_paints_inside_the_box_and_dims_outside() -> None:
    photo = np.full((20, 30, 3), 100, np.uint8)
    cmap = np.array([[0, 1], [2, 3]])
    colours = dense.palette(4)
    out = overlay(photo, cmap, colours, (10.0, 0.0, 30.0, 20.0))
    assert out.shape == (20, 30, 3)
    assert (out[:, :10] == round(DIM * 100)).all()  # the crop cut these away
    for (r, c), k in {(0, 10): 0, (0, 29): 1, (19, 10): 2, (19, 29): 3}.items():
        want = np.rint((1 - ALPHA) * 100 + ALPHA * colours[k].astype(np.float32))
        assert out[r, c].tolist() == want.astype(np.uint8).tolist()


def test_the_legend_strip_shows_each_class_swatch() -> None:
    rgb = np.zeros((40, 320, 3), np.uint8)
    colours = dense.palette(3)
    img = np.asarray(with_legend(rgb, [1, 2], ("bg", "cat", "dog"), colours))
    assert img.shape == (40 + ROW + 2 * PAD, 320, 3)
    assert img[40 + PAD + 5, PAD + 5].tolist() == colours[1].tolist()
    assert img[40 + PAD + 5, PAD + 150 + 5].tolist() == colours[2].tolist()


def test_run_writes_the_map_on_the_photo_at_its_resolution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "seg.mdla"
    assert CliRunner().invoke(app, ["compile", SEG, "--count", "2", "-o", str(out)]).exit_code == 0
    photo = tmp_path / "cat.png"
    Image.fromarray(imgs.read_image("chelsea")).save(photo)
    result = CliRunner().invoke(app, ["run", str(out), str(photo), "--json"])
    assert result.exit_code == 0, result.output
    ((cmap,),) = [e["class_maps"] for e in json.loads(result.stdout)["runs"]]
    legend = cmap["legend"]
    assert [c["class"] for c in legend] == sorted(c["class"] for c in legend)
    assert len(legend) >= 3
    assert legend[0] == {"class": legend[0]["class"], "label": f"class {legend[0]['class']}",
                         "rgb": dense.palette(5)[legend[0]["class"]].tolist()}  # fmt: skip
    on = np.asarray(Image.open(cmap["overlay"]).convert("RGB"))
    assert cmap["overlay"] == str(Path("mdla-out") / "cat.segmenter.out.overlay.png")
    assert on.shape[1] == 451  # the photo's width; its 300 rows, then the legend strip
    assert on.shape[0] > 300
    text = CliRunner().invoke(app, ["run", str(out), str(photo)]).output
    assert f"INT8 on the photo, with a legend: {cmap['overlay']}" in text
