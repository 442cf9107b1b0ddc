"""How far an INT8 output agrees with FP32, by the output's kind (`mdla_compile.kinds`).

    logits     top-1: 1.0 when the argmax class is the same, else 0.0
    classmap   the share of pixels whose argmax class is the same
    boxes      detections matched one to one (same class, IoU >= 0.5, best IoU first):
               F1 = 2 matched / (FP32 boxes + INT8 boxes) (1.0 when neither has a box), and
               the mean IoU of the matched pairs
    keypoints  per keypoint the FP32 and INT8 position (a heatmap's argmax cell, or the first
               two coordinates of [1, K, 2|3]); the mean distance between them, and an OKS-like
               similarity: mean over keypoints of exp(-d² / (2 s² κ²)), κ = 0.1 for every
               keypoint, s² the object's area (a heatmap's H x W; for coordinates the area of
               the FP32 keypoints' bounding box, at least 1)
    raw        SQNR in dB: 10 log10(sum f² / sum (f - q)²) (inf when equal)

Each function takes one image's arrays with the batch dimension (as a run returns them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mdla_zoo.detection import Detections

Array = np.ndarray[Any, Any]
MATCH_IOU = 0.5
KAPPA = 0.1


def top1(f: Array, q: Array) -> float:
    return float(np.argmax(f) == np.argmax(q))


def iou(a: Array, b: Array) -> float:
    """IoU of two (x1, y1, x2, y2) boxes."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(0.0, float(w)) * max(0.0, float(h))
    union = float((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1])) - inter
    return inter / union if union > 0 else 0.0


@dataclass(frozen=True)
class BoxMatch:
    fp32: int  # boxes found by FP32
    int8: int  # ... by INT8
    matched: int
    mean_iou: float | None  # over matched pairs (None: none matched)

    @property
    def f1(self) -> float:
        total = self.fp32 + self.int8
        return 1.0 if total == 0 else 2 * self.matched / total


def match_boxes(f: Detections, q: Detections, threshold: float = MATCH_IOU) -> BoxMatch:
    """FP32 and INT8 detections matched one to one: pairs of the same class with IoU at least
    `threshold`, taken by IoU, best first."""
    pairs = [
        (iou(f.boxes[i], q.boxes[j]), i, j)
        for i in range(len(f))
        for j in range(len(q))
        if int(f.labels[i]) == int(q.labels[j])
    ]
    used_f: set[int] = set()
    used_q: set[int] = set()
    ious: list[float] = []
    for value, i, j in sorted(pairs, key=lambda p: -p[0]):
        if value < threshold or i in used_f or j in used_q:
            continue
        used_f.add(i)
        used_q.add(j)
        ious.append(value)
    return BoxMatch(len(f), len(q), len(ious), float(np.mean(ious)) if ious else None)


def keypoints(y: Array) -> tuple[Array, float]:
    """(K, 2) positions (x, y) of one image's keypoint output, and the object area s²."""
    a = np.asarray(y, np.float64)[0]
    if a.ndim == 3:  # heatmaps (K, H, W): the argmax cell of each
        k, h, w = a.shape
        flat = np.argmax(a.reshape(k, -1), axis=1)
        return np.stack([flat % w, flat // w], axis=1).astype(np.float64), float(h * w)
    xy = a[:, :2]
    span = xy.max(axis=0) - xy.min(axis=0)
    return xy, max(float(span[0] * span[1]), 1.0)


@dataclass(frozen=True)
class KeypointMatch:
    mean_distance: float  # in the output's units: heatmap cells, or the coordinates' own
    oks: float  # 0..1


def match_keypoints(f: Array, q: Array) -> KeypointMatch:
    pf, area = keypoints(f)
    pq, _ = keypoints(q)
    d2 = np.sum((pf - pq) ** 2, axis=1)
    oks = float(np.mean(np.exp(-d2 / (2 * area * KAPPA**2))))
    return KeypointMatch(float(np.mean(np.sqrt(d2))), oks)


def mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


@dataclass(frozen=True)
class KindScore:
    """The agreement of a first output over the held-out inputs, as its kind measures it:
    `value` the mean top-1 / pixel share / box F1 / keypoint OKS (SQNR dB for raw), `detail`
    the mean IoU of matched boxes or the keypoints' mean distance (None for the others)."""

    kind: str
    value: float | None
    detail: float | None = None

    def text(self) -> str:
        v, d = self.value, self.detail
        if v is None:
            return f"no agreement metric for a {self.kind} output (cosine and SQNR only)"
        if self.kind == "boxes":
            iou_text = "no box matched" if d is None else f"mean IoU {d:.3f}"
            return f"box F1 {v:.1%} (one-to-one, same class, IoU >= {MATCH_IOU}), {iou_text}"
        if self.kind == "keypoints":
            return f"keypoint OKS {v:.3f} (κ {KAPPA}), mean distance {d or 0:.2f}"
        if self.kind == "raw":
            return f"output SQNR {'inf' if math.isinf(v) else f'{v:.1f}'} dB"
        return f"agreement {v:.2%}"

    def doc(self) -> dict[str, Any]:
        names = {
            "boxes": ("box_f1", "box_mean_iou"),
            "keypoints": ("keypoint_oks", "mean_distance"),
        }
        value, detail = names.get(self.kind, ("sqnr_db" if self.kind == "raw" else "value", ""))
        return {"kind": self.kind, value: self.value} | ({detail: self.detail} if detail else {})
