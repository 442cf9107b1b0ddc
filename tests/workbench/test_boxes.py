"""The boxes `workbench run` draws for a detector: where the outline pixels land, the scaling
from the head's input to the photo, the FP32 | INT8 panels, and that a non-detector gets none."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from PIL import Image

from mdla_zoo.detection import Detections
from workbench.boxes import FP32_COLOUR, GAP, INT8_COLOUR, Boxes, draw, write_png
from workbench.errors import WorkbenchError
from workbench.outputs import picture

Array = np.ndarray[Any, Any]
GREY = 90


def _dets(*boxes: tuple[float, float, float, float]) -> Detections:
    n = len(boxes)
    return Detections(
        np.asarray(boxes, np.float32).reshape(n, 4),
        np.linspace(0.9, 0.5, n).astype(np.float32),
        np.arange(1, n + 1, dtype=np.int64),
    )


def _read(path: Path) -> Array:
    with Image.open(path) as img:
        return np.asarray(img.convert("RGB"))


def _photo(h: int = 60, w: int = 80) -> Array:
    return np.full((h, w, 3), GREY, np.uint8)


def test_the_outline_is_two_pixels_on_the_box_edges() -> None:
    img = np.asarray(draw(_photo(), _dets((10, 20, 50, 40)), ("bg", "a"), (255, 0, 0)))
    red, grey = [255, 0, 0], [GREY] * 3
    for y in (30, 35):  # left edge x0, x0+1; right edge x1-1, x1-2
        for x in (10, 11, 48, 49):
            assert img[y, x].tolist() == red, (x, y)
        for x in (9, 12, 47, 50):
            assert img[y, x].tolist() == grey, (x, y)
    for y in (20, 21, 38, 39):
        assert img[y, 40].tolist() == red
    for y in (19, 22, 37, 40):
        assert img[y, 40].tolist() == grey
    assert (img[:10] == GREY).all()  # nothing outside the box
    assert (img[:, 51:] == GREY).all()


def test_boxes_scale_from_the_head_input_to_the_photo() -> None:
    """A box in 320x320 head pixels on a 480x640 photo: x doubles, y grows 1.5x."""
    dets = _dets((32, 64, 160, 192)).scaled((320, 320), (480, 640))
    np.testing.assert_allclose(dets.boxes, [[64, 96, 320, 288]])
    img = np.asarray(draw(_photo(480, 640), dets, ("bg", "a"), (0, 0, 255)))
    assert img[200, 64].tolist() == [0, 0, 255]
    assert img[200, 319].tolist() == [0, 0, 255]
    assert img[287, 200].tolist() == [0, 0, 255]
    assert img[200, 63].tolist() == [GREY] * 3


def test_only_the_best_k_are_drawn() -> None:
    dets = _dets((2, 2, 10, 10), (20, 20, 30, 30), (40, 40, 50, 50))
    img = np.asarray(draw(_photo(), dets, (), (0, 255, 0), k=2))
    assert img[5, 2].tolist() == [0, 255, 0]
    assert img[25, 20].tolist() == [0, 255, 0]
    assert (img[40:51, 40:51] == GREY).all()


def test_the_png_is_fp32_left_int8_right(tmp_path: Path) -> None:
    path = tmp_path / "p.png"
    write_png(path, _photo(), _dets((10, 10, 30, 30)), _dets((40, 20, 70, 50)), ("bg", "a"))
    img = _read(path)
    assert img.shape == (60, 2 * 80 + GAP, 3)
    assert img[20, 10].tolist() == list(FP32_COLOUR)
    assert (img[:, 80 : 80 + GAP] == 255).all()
    right = img[:, 80 + GAP :]
    assert right[35, 40].tolist() == list(INT8_COLOUR)
    assert right[20, 10].tolist() == [GREY] * 3  # the FP32 box is not on the INT8 side
    write_png(path, _photo(), None, _dets((40, 20, 70, 50)), ())
    assert _read(path).shape == (60, 80, 3)


def test_png_in_the_output_folder_never_beside_the_image(tmp_path: Path) -> None:
    photo = tmp_path / "cat.jpg"
    photo.write_bytes(b"")
    out = tmp_path / "out"
    assert picture(out, str(photo), "ssd", "boxes") == out / "cat.ssd.boxes.png"
    assert picture(out, "chelsea", "ssd", "boxes") == out / "chelsea.ssd.boxes.png"


def _manifest(module: str, spec: str, input_shape: tuple[int, ...], output: tuple[int, ...]) -> Any:
    return SimpleNamespace(
        name=spec,
        path=None,
        provenance=SimpleNamespace(
            spec=spec, module=module, labels=(), postprocess=None, output_kinds=()
        ),
        inputs=[SimpleNamespace(model_shape=input_shape)],
        outputs=[SimpleNamespace(name="y", model_shape=output, scale=0.1, zero_point=0)],
    )


def test_a_classifier_manifest_has_no_boxes() -> None:
    manifest = _manifest("MobileNetV2", "mobilenet_v2", (1, 3, 224, 224), (1, 1000))
    boxes = Boxes(manifest)
    assert boxes.decoder is None
    assert boxes.entry("chelsea", np.zeros((1, 3, 8, 8), np.float32), []) == {}


def test_a_yolo_manifest_draws_its_decoded_boxes(tmp_path: Path) -> None:
    """ultralytics' DetectionModel at 160 x 160: output [1, 84, 525] (xywh in input pixels, 80
    class probabilities); the box is drawn in the photo's pixels (chelsea, 451 x 300: x 451/160
    and y 300/160)."""
    y = np.zeros((1, 84, 525), np.float32)
    y[0, :4, 7] = (80, 40, 50, 20)  # cx cy w h: x 55..105, y 30..50
    y[0, 4 + 15, 7] = 0.9  # class 15
    boxes = Boxes(_manifest("DetectionModel", "yolo.py:yolo", (1, 3, 160, 160), y.shape),
                  folder=tmp_path)  # fmt: skip
    entry = boxes.entry("chelsea", np.zeros((1, 3, 160, 160), np.float32), [y])["boxes"]
    assert entry["fp32"] is None
    assert entry["int8"] == [
        {"label": "#15", "class": 15, "score": 0.9, "box": [155.0, 56.2, 296.0, 93.8]}
    ]
    drawn = _read(Path(entry["png"]))
    assert drawn.shape == (300, 451, 3)
    assert tuple(drawn[75, 155]) == INT8_COLOUR  # the box's left edge


def test_a_full_disk_keeps_the_old_png(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "p.png"
    path.write_bytes(b"old")

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(WorkbenchError, match=rf"No space left on device: '{path}'"):
        write_png(path, _photo(), None, _dets((40, 20, 70, 50)), ())
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["p.png"]
