"""mdla_zoo.yolo: a YOLO model's decoded output [1, 4 + nc + extra, anchors] as detections, the
same boxes, scores and classes as ultralytics' own `non_max_suppression` (its predictor's
defaults: conf 0.25, IoU 0.7, best class per anchor, NMS per class), clipped to the input as
its predictor clips them; and which manifests'
outputs are such an output."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mdla_zoo.yolo import YoloDecoder
from tests.models_third_party import build  # noqa: F401  (sets ultralytics' config folder)

ANCHORS_160 = 20 * 20 + 10 * 10 + 5 * 5


def _output(nc: int, extra: int = 0, seed: int = 0) -> np.ndarray:
    """Clustered boxes (so that NMS has work) with sparse high class scores."""
    rng = np.random.default_rng(seed)
    y = np.zeros((1, 4 + nc + extra, ANCHORS_160), np.float32)
    centres = rng.uniform(5, 155, (8, 2))
    pick = rng.integers(0, 8, ANCHORS_160)
    y[0, :2] = (centres[pick] + rng.normal(0, 3, (ANCHORS_160, 2))).T
    y[0, 2:4] = rng.uniform(10, 40, (2, ANCHORS_160))  # some cross the edges: clipped
    y[0, 4 : 4 + nc] = rng.uniform(0, 0.3, (nc, ANCHORS_160)) ** 2
    hot = rng.choice(ANCHORS_160, 60, replace=False)
    y[0, 4 + rng.integers(0, min(nc, 3), 60), hot] = rng.uniform(0.3, 1.0, 60)  # 3 classes
    y[0, 4 + nc :] = rng.normal(size=(extra, ANCHORS_160))
    return y


@pytest.mark.parametrize(("nc", "extra"), [(80, 0), (3, 32)])
def test_detections_are_ultralytics_non_max_suppression(nc: int, extra: int) -> None:
    from ultralytics.utils.nms import non_max_suppression

    y = _output(nc, extra)
    dets = YoloDecoder((160, 160), nc).detect([y])
    (want,) = non_max_suppression(torch.from_numpy(y), 0.25, 0.7, nc=nc)
    want[:, :4] = want[:, :4].clamp(0, 160)
    want = want.numpy()
    assert 5 < len(dets) < 60  # some suppressed, some kept
    order = np.argsort(-want[:, 4], kind="stable")
    np.testing.assert_allclose(dets.boxes, want[order, :4], atol=1e-4)
    np.testing.assert_allclose(dets.scores, want[order, 4], atol=1e-6)
    np.testing.assert_array_equal(dets.labels, want[order, 5].astype(np.int64))


def test_nothing_above_the_threshold_is_no_detection() -> None:
    y = _output(80)
    y[0, 4:] = 0.1
    assert len(YoloDecoder((160, 160), 80).detect([y])) == 0


@pytest.mark.parametrize(
    ("module", "shape", "classes"),
    [
        ("DetectionModel", (1, 84, ANCHORS_160), 80),
        ("SegmentationModel", (1, 116, ANCHORS_160), 80),
        ("PoseModel", (1, 56, ANCHORS_160), 1),
        ("DetectionModel", (1, 84, 500), None),  # not the anchors of a 160 x 160 input
        ("ResNet", (1, 84, ANCHORS_160), None),  # not an ultralytics model
        ("DetectionModel", (1, 1000), None),
    ],
)
def test_which_outputs_are_yolo_outputs(
    module: str, shape: tuple[int, ...], classes: int | None
) -> None:
    decoder = YoloDecoder.of(module, (160, 160), shape)
    assert (decoder and decoder.num_classes) == classes
