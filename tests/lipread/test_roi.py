from __future__ import annotations

import numpy as np
import pytest

from lipread.errors import NoFaceError, VideoError
from lipread.image import crop, resize, to_model_input
from lipread.roi import Roi, boxes_from_corners, mouth_boxes, parse_roi


def test_parse_roi() -> None:
    assert parse_roi("none") == Roi("none")
    assert parse_roi("auto") == Roi("auto")
    assert parse_roi("10,20,160,80") == Roi("box", (10, 20, 160, 80))
    for bad in ("1,2,3", "a,b,c,d", "0,0,0,10", "-1,0,5,5"):
        with pytest.raises(ValueError, match="--roi"):
            parse_roi(bad)


def corners(t: int, cx: float = 100.0, cy: float = 80.0, half: float = 20.0) -> np.ndarray:
    c = np.zeros((t, 2, 2))
    c[:, 0] = (cx - half, cy)
    c[:, 1] = (cx + half, cy)
    return c


def test_boxes_centre_on_the_mouth_with_2_to_1_aspect() -> None:
    boxes = boxes_from_corners(corners(10))
    assert np.allclose(boxes[0], [100 - 44, 80 - 22, 88, 44])


def test_short_gaps_are_interpolated() -> None:
    c = corners(20)
    c[5:8] = np.nan
    assert np.isfinite(boxes_from_corners(c)).all()


def test_no_face_names_the_frames() -> None:
    c = corners(30)
    c[10:20] = np.nan
    with pytest.raises(NoFaceError, match=r"no face found in frames 10-19 of 30"):
        boxes_from_corners(c)
    with pytest.raises(NoFaceError, match=r"any of the 30 frames"):
        boxes_from_corners(np.full((30, 2, 2), np.nan))


def test_fixed_box_and_bounds() -> None:
    frames = np.zeros((3, 100, 200, 3), np.uint8)
    boxes = mouth_boxes(frames, Roi("box", (10, 10, 50, 25)))
    assert boxes is not None
    assert boxes.shape == (3, 4)
    with pytest.raises(VideoError, match="outside"):
        mouth_boxes(frames, Roi("box", (180, 10, 50, 25)))
    assert mouth_boxes(frames, Roi("none")) is None


def test_auto_uses_the_corner_finder() -> None:
    frames = np.zeros((4, 100, 200, 3), np.uint8)
    boxes = mouth_boxes(frames, Roi("auto"), finder=lambda f: corners(len(f)))
    assert boxes is not None
    assert np.allclose(boxes[:, 2], 88)


def test_resize_antialiased_linear_and_crop_and_bgr() -> None:
    img = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    assert np.array_equal(resize(img, (4, 4)), img)
    assert np.allclose(resize(np.full((1, 6, 8, 3), 7.0), (3, 5)), 7.0)
    # shrinking by 2: weights 3/7, 3/7, 1/7 over the three nearest source rows/columns
    w = np.array([3, 3, 1, 0]) / 7
    assert np.allclose(resize(img, (2, 2))[0, 0, 0, 0], w @ img[0, :, :, 0] @ w)
    frames = np.zeros((1, 10, 10, 3), np.uint8)
    frames[0, 2:4, 2:6] = (255, 0, 0)
    out = crop(frames, np.array([[2, 2, 4, 2]]), (2, 4))
    assert np.allclose(out[0, ..., 0], 255)
    x = to_model_input(out)
    assert x.shape == (1, 3, 1, 2, 4)
    assert np.allclose(x[0, 2], 1.0)  # red is the last channel in BGR
    assert np.allclose(x[0, 0], 0.0)


def test_mtcnn_finds_the_astronauts_mouth_corners() -> None:
    pytest.importorskip("facenet_pytorch")
    skimage_data = pytest.importorskip("skimage.data")
    from lipread.roi import mtcnn_corners

    frames = np.stack([skimage_data.astronaut()] * 3)
    found = mtcnn_corners(frames)
    assert np.isfinite(found).all()
    centre = found.mean(axis=1)
    assert np.allclose(centre, [223.5, 140.5], atol=6)  # between her mouth corners
    blank = mtcnn_corners(np.zeros((2, 120, 160, 3), np.uint8))
    assert np.isnan(blank).all()
