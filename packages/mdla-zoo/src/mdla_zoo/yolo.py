"""ultralytics YOLO's decoded output as detections, torch-free (what `workbench run` draws).

A YOLO model (v5u, v8, 11; ultralytics' DetectionModel, SegmentationModel, PoseModel) decodes
its own boxes: its first output is `[1, 4 + nc + extra, N]`, per anchor the box centre and size
(cx, cy, w, h) in input pixels, then nc class probabilities (sigmoid), then the task's extra
columns (32 mask coefficients, 17 × 3 keypoint values), with N = Σ (H/s)·(W/s) over the strides
8, 16, 32. What remains is ultralytics' `non_max_suppression` in its default form: each anchor's
best class, a score threshold, NMS per class (IoU 0.7), the best `max_det`; then, as its
predictor, the boxes clipped to the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mdla_zoo.detection import Detections, nms

Array = np.ndarray[Any, Any]
STRIDES = (8, 16, 32)
# Columns after the classes, by the ultralytics model class a manifest records.
EXTRA = {"DetectionModel": 0, "SegmentationModel": 32, "PoseModel": 17 * 3}


@dataclass(frozen=True)
class YoloDecoder:
    """How to read a YOLO model's first output; `detect` gives its detections."""

    image_size: tuple[int, int]  # (H, W) of the model's input
    num_classes: int
    score_thresh: float = 0.25
    nms_thresh: float = 0.7
    max_det: int = 300

    @classmethod
    def of(
        cls, module: str, input_hw: tuple[int, int], output: Sequence[int]
    ) -> YoloDecoder | None:
        """The decoder for a model of class `module` whose first output has shape `output`, or
        None when that is not a YOLO model's decoded output."""
        if module not in EXTRA or len(output) != 3 or output[0] != 1:
            return None
        h, w = input_hw
        anchors = sum((h // s) * (w // s) for s in STRIDES)
        nc = output[1] - 4 - EXTRA[module]
        if output[2] != anchors or nc < 1:
            return None
        return cls((h, w), nc)

    def detect(self, outputs: Sequence[Array]) -> Detections:
        """The first output of one image -> its detections, best first."""
        y = np.asarray(outputs[0], np.float32)[0]
        scores = y[4 : 4 + self.num_classes]
        labels = scores.argmax(axis=0)
        best = scores.max(axis=0)
        idx = np.flatnonzero(best > np.float32(self.score_thresh))
        cx, cy, bw, bh = y[:4, idx]
        boxes = np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], axis=1)
        kept: list[Array] = []
        for label in np.unique(labels[idx]):
            mine = np.flatnonzero(labels[idx] == label)
            kept.append(mine[nms(boxes[mine], best[idx][mine], self.nms_thresh)])
        pick = np.concatenate(kept) if kept else np.zeros(0, np.int64)
        order = pick[np.argsort(-best[idx][pick], kind="stable")][: self.max_det]
        h, w = self.image_size
        clipped = np.clip(boxes[order], 0, np.asarray([w, h, w, h], np.float32))
        return Detections(
            clipped.astype(np.float32), best[idx][order], labels[idx][order].astype(np.int64)
        )
