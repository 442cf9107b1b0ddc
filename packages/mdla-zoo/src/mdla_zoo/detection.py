"""SSD-family detection on the CPU, in numpy (no torch): what follows the NPU's head convolutions.

The NPU runs backbone + head convolutions (`mdla_zoo.ssd_heads`) and returns, per feature level
k, the regression head's raw conv output (1, A_k*4, H_k, W_k) and the classification head's
(1, A_k*C, H_k, W_k): all regression levels first, then all classification levels
(`SSDDecoder.split`). The rest is CPU work torchvision's `SSD.forward` does after the head:

    per level: (A*K, H, W) -> (H, W, A, K) -> (H*W*A, K); concatenate the levels  (`flatten`)
    default boxes of DefaultBoxGenerator, (cx, cy, w, h) -> (x0, y0, x1, y1) px    (`default_boxes`)
    BoxCoder.decode_single with weights (10, 10, 5, 5), clipped to the image       (`decode`)
    softmax over classes; per class c >= 1: score > threshold, top-k; per-class NMS (`detect`)

`detect` returns what `SSD.postprocess_detections` returns (boxes, scores, labels, best first),
in the head's input pixels; `Detections.scaled` maps them to the photo's (what torchvision's
transform.postprocess does). One difference, said where it lives: `nms` is per class (what
torchvision's `batched_nms` does over 1000 boxes); under 1000 it offsets each class's boxes by
class * (max coordinate + 1) instead, which can move an IoU at float32 rounding level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from mdla_ir import Postprocess
from mdla_zoo.errors import ZooError

Array = np.ndarray[Any, Any]


@dataclass(frozen=True, slots=True)
class SSDDecoder:
    """Everything the CPU post-processing needs, as plain numbers (a manifest-free, torch-free
    record: `workbench run` builds it from the zoo's table or from the model itself)."""

    image_size: tuple[int, int]  # (h, w) of the head's input
    num_classes: int  # including background (class 0)
    aspect_ratios: tuple[tuple[float, ...], ...]  # per level: DefaultBoxGenerator.aspect_ratios
    scales: tuple[float, ...]  # levels + 1 values: DefaultBoxGenerator.scales
    steps: tuple[int, ...] | None = None  # DefaultBoxGenerator.steps (None: the grid's own size)
    clip: bool = True  # clamp the default boxes' (w, h) to [0, 1]
    box_weights: tuple[float, float, float, float] = (10.0, 10.0, 5.0, 5.0)
    box_clip: float = math.log(1000.0 / 16)  # BoxCoder.bbox_xform_clip: dw, dh <= this
    score_thresh: float = 0.001
    nms_thresh: float = 0.55
    topk_candidates: int = 300  # per class, before NMS
    detections_per_img: int = 300
    order: str = "regression_first"  # the head outputs' groups: or "classification_first"

    @property
    def levels(self) -> int:
        return len(self.aspect_ratios)

    def anchors_per_location(self) -> list[int]:
        """2 square boxes (scales s_k and sqrt(s_k s_k+1)) + 2 per aspect ratio (w/h and h/w)."""
        return [2 + 2 * len(r) for r in self.aspect_ratios]

    def record(self) -> Postprocess:
        """The manifest's `model.postprocess` record of this decoder (kind "ssd")."""
        own = {f.name: getattr(self, f.name) for f in fields(self)}
        return Postprocess(kind="ssd", **own)

    @classmethod
    def of(cls, record: Postprocess) -> SSDDecoder:
        """The decoder a manifest's postprocess record describes (field for field)."""
        if record.kind != "ssd":
            raise ZooError(f"postprocess kind `{record.kind}`: only `ssd` decodes here")
        return cls(**{f.name: getattr(record, f.name) for f in fields(cls)})

    def split(self, outputs: Sequence[Array]) -> tuple[list[Array], list[Array]]:
        """The head outputs (regression levels and classification levels, in `order`), each
        checked."""
        if len(outputs) != 2 * self.levels:
            raise ZooError(
                f"an SSD with {self.levels} feature levels has {2 * self.levels} head outputs "
                f"(regression and classification per level), got {len(outputs)}"
            )
        regs, clss = list(outputs[: self.levels]), list(outputs[self.levels :])
        if self.order == "classification_first":
            regs, clss = clss, regs
        for k, (a, r, c) in enumerate(zip(self.anchors_per_location(), regs, clss, strict=True)):
            want_r, want_c = (1, a * 4, *r.shape[2:]), (1, a * self.num_classes, *r.shape[2:])
            if r.ndim != 4 or tuple(r.shape) != want_r or tuple(c.shape) != want_c:
                raise ZooError(
                    f"SSD level {k}: head outputs {tuple(r.shape)} and {tuple(c.shape)}, expected "
                    f"{want_r} (boxes) and {want_c} ({a} anchors x {self.num_classes} classes)"
                )
        return regs, clss


def flatten(level: Array, columns: int) -> Array:
    """(1, A*K, H, W) -> (H*W*A, K): torchvision's view(N, A, K, H, W), permute(0, 3, 4, 1, 2),
    reshape(N, -1, K) (location-major, then anchor), on the CPU: the MDLA has no TRANSPOSE."""
    _, ak, h, w = level.shape
    a = ak // columns
    return level.reshape(a, columns, h, w).transpose(2, 3, 0, 1).reshape(h * w * a, columns)


def default_boxes(dec: SSDDecoder, grids: Sequence[tuple[int, int]]) -> Array:
    """(sum H_k W_k A_k, 4) float32 default boxes (x0, y0, x1, y1) in head-input pixels, in the
    order of `flatten`: DefaultBoxGenerator's widths/heights (computed in float64, stored as
    float32 as torch does), centres (i + 0.5) / f_k in float32, then (c -+ wh/2) * (W, H)."""
    img_h, img_w = dec.image_size
    out = []
    for k, (fh, fw) in enumerate(grids):
        s, s_next = dec.scales[k], dec.scales[k + 1]
        pairs = [(s, s), (math.sqrt(s * s_next),) * 2]
        for ar in dec.aspect_ratios[k]:
            w, h = s * math.sqrt(ar), s / math.sqrt(ar)
            pairs += [(w, h), (h, w)]
        wh = np.asarray(pairs, np.float32)
        if dec.clip:
            wh = np.clip(wh, 0, 1)
        y_f, x_f = (img_h / dec.steps[k], img_w / dec.steps[k]) if dec.steps else (fh, fw)
        cx = (np.arange(fw, dtype=np.float32) + np.float32(0.5)) / np.float32(x_f)
        cy = (np.arange(fh, dtype=np.float32) + np.float32(0.5)) / np.float32(y_f)
        gy, gx = np.meshgrid(cy, cx, indexing="ij")
        centres = np.repeat(np.stack([gx.ravel(), gy.ravel()], axis=1), len(pairs), axis=0)
        sizes = np.tile(wh, (fh * fw, 1))
        out.append(np.concatenate([centres, sizes], axis=1))
    cxcywh = np.concatenate(out).astype(np.float32)
    size = np.asarray([img_w, img_h], np.float32)
    half = np.float32(0.5) * cxcywh[:, 2:]
    return np.concatenate(
        [(cxcywh[:, :2] - half) * size, (cxcywh[:, :2] + half) * size], axis=1
    ).astype(np.float32)


def decode(dec: SSDDecoder, codes: Array, anchors: Array) -> Array:
    """BoxCoder.decode_single: centre += (dx/wx) * size, size *= exp(min(dw/ww, clip)); then
    (x0, y0, x1, y1), clipped to the image (clip_boxes_to_image). float32 throughout."""
    codes = codes.astype(np.float32)
    widths, heights = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    cx, cy = anchors[:, 0] + np.float32(0.5) * widths, anchors[:, 1] + np.float32(0.5) * heights
    wx, wy, ww, wh = (np.float32(v) for v in dec.box_weights)
    clip = np.float32(dec.box_clip)
    px = codes[:, 0] / wx * widths + cx
    py = codes[:, 1] / wy * heights + cy
    pw = np.exp(np.minimum(codes[:, 2] / ww, clip)) * widths
    ph = np.exp(np.minimum(codes[:, 3] / wh, clip)) * heights
    half_w, half_h = np.float32(0.5) * pw, np.float32(0.5) * ph
    boxes = np.stack([px - half_w, py - half_h, px + half_w, py + half_h], axis=1)
    img_h, img_w = dec.image_size
    boxes[:, 0::2] = np.clip(boxes[:, 0::2], 0, img_w)
    boxes[:, 1::2] = np.clip(boxes[:, 1::2], 0, img_h)
    return boxes.astype(np.float32)


def softmax(logits: Array) -> Array:
    """Row-wise softmax in float32 (max subtracted first, as torch does)."""
    z = logits.astype(np.float32)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    out: Array = e / e.sum(axis=1, keepdims=True)
    return out


def nms(boxes: Array, scores: Array, iou_thresh: float) -> Array:
    """Greedy NMS (torchvision.ops.nms): visit boxes best score first; keep one unless its IoU
    with a box already kept is > `iou_thresh`. Indices of the kept boxes, best first."""
    order = np.argsort(-scores, kind="stable")
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    suppressed = np.zeros(len(boxes), bool)
    keep = []
    for pos, i in enumerate(order):
        if suppressed[i]:
            continue
        keep.append(i)
        rest = order[pos + 1 :]
        w = np.minimum(boxes[i, 2], boxes[rest, 2]) - np.maximum(boxes[i, 0], boxes[rest, 0])
        h = np.minimum(boxes[i, 3], boxes[rest, 3]) - np.maximum(boxes[i, 1], boxes[rest, 1])
        inter = np.maximum(w, 0) * np.maximum(h, 0)
        iou = inter / (area[i] + area[rest] - inter)
        suppressed[rest[iou > np.float32(iou_thresh)]] = True
    return np.asarray(keep, np.int64)


@dataclass(frozen=True)
class Detections:
    """Boxes (N, 4) as (x0, y0, x1, y1) pixels, scores (N,), labels (N,) class ids, best first."""

    boxes: Array
    scores: Array
    labels: Array

    def __len__(self) -> int:
        return len(self.scores)

    def scaled(self, from_size: tuple[int, int], to_size: tuple[int, int]) -> Detections:
        """Boxes of a (h, w) = `from_size` input in a `to_size` photo's pixels (the photo was
        stretched to `from_size`: x scales by W'/W, y by H'/H, as torchvision's resize_boxes)."""
        ry, rx = to_size[0] / from_size[0], to_size[1] / from_size[1]
        scale = np.asarray([rx, ry, rx, ry], np.float32)
        return Detections(self.boxes * scale, self.scores, self.labels)


def detect(dec: SSDDecoder, outputs: Sequence[Array]) -> Detections:
    """The head outputs of one image -> its detections (`SSD.postprocess_detections`)."""
    regs, clss = dec.split([np.asarray(o, np.float32) for o in outputs])
    codes = np.concatenate([flatten(r, 4) for r in regs])
    scores = softmax(np.concatenate([flatten(c, dec.num_classes) for c in clss]))
    boxes = decode(dec, codes, default_boxes(dec, [r.shape[2:4] for r in regs]))
    picked_boxes, picked_scores, picked_labels = [], [], []
    for label in range(1, dec.num_classes):
        idx = np.flatnonzero(scores[:, label] > np.float32(dec.score_thresh))
        best = idx[np.argsort(-scores[idx, label], kind="stable")[: dec.topk_candidates]]
        kept = best[nms(boxes[best], scores[best, label], dec.nms_thresh)]
        picked_boxes.append(boxes[kept])
        picked_scores.append(scores[kept, label])
        picked_labels.append(np.full(len(kept), label, np.int64))
    all_scores = np.concatenate(picked_scores)
    order = np.argsort(-all_scores, kind="stable")[: dec.detections_per_img]
    return Detections(
        np.concatenate(picked_boxes)[order], all_scores[order], np.concatenate(picked_labels)[order]
    )


# The zoo's detectors, by spec: their decoders, so `workbench run` decodes a manifest's outputs
# without torch (`mdla_zoo.ssd_heads` builds the same record from the torch model; a test holds
# the two equal).
DECODERS: dict[str, SSDDecoder] = {
    "ssdlite320_mobilenet_v3_large": SSDDecoder(
        image_size=(320, 320),
        num_classes=91,
        aspect_ratios=((2.0, 3.0),) * 6,
        scales=(0.2, 0.35, 0.5, 0.65, 0.8, 0.95, 1.0),
    ),
}
