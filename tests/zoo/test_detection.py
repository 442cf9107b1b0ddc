"""mdla_zoo.detection's pieces on hand-made numbers (tests/decoders/test_ssdlite.py holds the
whole against torchvision): the head layout, NMS's strict threshold, the "stretch" input."""

from __future__ import annotations

import numpy as np

from mdla_zoo import prepare
from mdla_zoo.detection import DECODERS, SSDDecoder, decode, default_boxes, flatten, nms


def test_flatten_is_location_major_then_anchor() -> None:
    """Channel a*K + k of pixel (y, x) is row (y*W + x)*A + a, column k."""
    a, k, h, w = 3, 5, 2, 4
    level = np.arange(a * k * h * w, dtype=np.float32).reshape(1, a * k, h, w)
    flat = flatten(level, k)
    assert flat.shape == (h * w * a, k)
    for y, x, anchor, col in [(0, 0, 0, 0), (1, 2, 2, 4), (0, 3, 1, 2)]:
        assert flat[(y * w + x) * a + anchor, col] == level[0, anchor * k + col, y, x]


def test_nms_suppresses_only_above_the_threshold() -> None:
    """IoU 1/3 with the best box at threshold 1/3: kept (torchvision drops IoU > threshold);
    IoU 0.6: dropped; kept indices come best first."""
    boxes = np.asarray(
        [[0, 0, 10, 10], [5, 0, 15, 10], [0, 0, 10, 6], [20, 20, 30, 30]], np.float32
    )
    scores = np.asarray([0.9, 0.5, 0.8, 0.95], np.float32)
    assert nms(boxes, scores, 1 / 3).tolist() == [3, 0, 1]
    assert nms(boxes, scores, 0.7).tolist() == [3, 0, 2, 1]
    assert nms(boxes, scores, 0.2).tolist() == [3, 0]


def test_decoding_zero_codes_gives_the_default_boxes_clipped() -> None:
    dec = DECODERS["ssdlite320_mobilenet_v3_large"]
    anchors = default_boxes(dec, [(20, 20), (10, 10), (5, 5), (3, 3), (2, 2), (1, 1)])
    got = decode(dec, np.zeros_like(anchors), anchors)
    np.testing.assert_allclose(got, np.clip(anchors, 0, 320), atol=1e-4)
    # the first anchor: centre (8, 8) px, square side 0.2 * 320 = 64
    np.testing.assert_allclose(anchors[0], [8 - 32, 8 - 32, 8 + 32, 8 + 32], atol=1e-4)


def test_anchors_follow_steps_when_given() -> None:
    dec = SSDDecoder((48, 64), 3, ((2.0,),), (0.5, 0.9), steps=(16,), clip=False)
    boxes = default_boxes(dec, [(3, 4)])
    centres = (boxes[:, :2] + boxes[:, 2:]) / 2
    assert boxes.shape == (3 * 4 * 4, 4)
    np.testing.assert_allclose(centres[4 * 5], [8 + 16, 8 + 16])  # location (1, 1), anchor 0


def test_stretch_keeps_the_whole_photo() -> None:
    """Left half black, right half white, 100 x 300: no crop, so the 320-wide input is half
    -1 and half +1 (a centre crop would have kept only the middle third)."""
    photo = np.zeros((100, 300, 3), np.uint8)
    photo[:, 150:] = 255
    x = prepare(photo, "stretch", (320, 320))
    assert x.shape == (1, 3, 320, 320)
    np.testing.assert_allclose(x[0, :, :, :150], -1.0)
    np.testing.assert_allclose(x[0, :, :, 170:], 1.0)
