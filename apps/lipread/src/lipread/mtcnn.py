"""MTCNN's cascade in numpy over any three nets: torch float (the reference) or compiled manifests.

    frame (H, W, 3) uint8
      -> pyramid: scales 12/MIN_SIZE * FACTOR^k while the short side stays >= 12 px; each level
         the frame area-resized to (int(H*s + 1), int(W*s + 1)) -> P-Net -> 12x12 cells with
         p >= 0.6 -> NMS 0.5 per level, 0.7 over all levels -> box regression -> squares
      -> R-Net on 24x24 area-resized crops: p > 0.7, NMS 0.7, regression, squares
      -> O-Net on 48x48 crops: p > 0.7, five landmarks, regression, NMS 0.7 ("Min" overlap)
      -> faces, largest first

The steps, thresholds and pixel conventions (the +-1 in crops, widths and landmarks) are
facenet-pytorch 2.5.3's `detect_face`, so with its float nets this reproduces its detections
(`tests/lipread/test_mtcnn.py` checks that); only the nets differ between the float and the
NPU detector. Area resizing is torch's `interpolate(mode="area")`, an adaptive average pool:
output cell i averages input rows floor(i*H/h) .. ceil((i+1)*H/h) - 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]
MIN_SIZE = 20  # px: facenet-pytorch's min_face_size default
FACTOR = 0.709  # the pyramid's scale step
THRESHOLDS = (0.6, 0.7, 0.7)  # P-, R-, O-Net face probability
STRIDE, CELL = 2, 12  # P-Net's output stride and receptive cell

# (N, 3, h, w) float (pixel - 127.5) / 128 -> the net's outputs as numpy
# P-Net over every pyramid level at once (one input per level): per level reg (1, 4, h', w') and
# prob (1, 2, h', w')
PNetFn = Callable[[list[Array]], list[tuple[Array, Array]]]
RNetFn = Callable[[Array], tuple[Array, Array]]  # -> reg (N, 4), prob (N, 2)
ONetFn = Callable[[Array], tuple[Array, Array, Array]]  # -> reg (N, 4), points (N, 10), prob


@dataclass(frozen=True, slots=True)
class Nets:
    pnet: PNetFn
    rnet: RNetFn
    onet: ONetFn


def pyramid(h: int, w: int, min_size: int = MIN_SIZE) -> list[tuple[float, tuple[int, int]]]:
    """The P-Net levels of an h x w frame: (scale, (height, width)) per level."""
    scale = 12.0 / min_size
    short = min(h, w) * scale
    out = []
    while short >= 12:
        out.append((scale, (int(h * scale + 1), int(w * scale + 1))))
        scale *= FACTOR
        short *= FACTOR
    return out


def _bounds(n_in: int, n_out: int) -> tuple[Array, Array]:
    """Adaptive-pool windows: output i averages inputs floor(i n/m) .. ceil((i+1) n/m) - 1."""
    i = np.arange(n_out)
    return (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)


def _pool_axis(x: Array, n_out: int, axis: int) -> Array:
    """Window means along `axis` by differences of a running sum (float64: each window sums at
    most a few hundred pixel values, exactly representable)."""
    lo, hi = _bounds(x.shape[axis], n_out)
    cs = np.cumsum(x, axis=axis, dtype=np.float64)
    cs = np.concatenate([np.zeros_like(cs.take([0], axis=axis)), cs], axis=axis)
    shape = [1] * x.ndim
    shape[axis] = n_out
    return (cs.take(hi, axis=axis) - cs.take(lo, axis=axis)) / (hi - lo).reshape(shape)  # type: ignore[no-any-return]


def area_resize(img: Array, size: tuple[int, int]) -> Array:
    """(H, W, C) -> (h, w, C) float32 by torch's area interpolation (separable: the adaptive
    pool's window is a product of a row window and a column window)."""
    rows = _pool_axis(np.asarray(img), size[0], 0)
    return _pool_axis(rows, size[1], 1).astype(np.float32)


def net_input(patches: Array) -> Array:
    """(N, h, w, 3) pixels -> (N, 3, h, w) float32 (pixel - 127.5) / 128, as MTCNN feeds."""
    x = (np.asarray(patches, np.float32) - np.float32(127.5)) * np.float32(0.0078125)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def nms(boxes: Array, scores: Array, threshold: float, mode: str = "union") -> Array:
    """Indices kept by greedy NMS, best score first. `union`: torchvision's IoU (areas without
    +1), the cascade's first two stages; `min`: facenet's numpy NMS (areas +1, overlap over the
    smaller area), its last stage."""
    if len(boxes) == 0:
        return np.zeros(0, np.int64)
    plus = 1.0 if mode == "min" else 0.0
    x1, y1, x2, y2 = (boxes[:, k] for k in range(4))
    area = (x2 - x1 + plus) * (y2 - y1 + plus)
    order = np.argsort(-scores, kind="stable")
    keep = []
    while order.size:
        i, rest = order[0], order[1:]
        keep.append(i)
        w = np.maximum(0.0, np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]) + plus)
        h = np.maximum(0.0, np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]) + plus)
        inter = w * h
        if mode == "min":
            overlap = inter / np.minimum(area[i], area[rest])
        else:
            overlap = inter / (area[i] + area[rest] - inter)
        order = rest[overlap <= threshold]
    return np.array(keep, np.int64)


def square(boxes: Array) -> Array:
    """Each box (x1, y1, x2, y2, ...) made square about its centre on its longer side (rerec)."""
    out = boxes.copy()
    w, h = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    side = np.maximum(w, h)
    out[:, 0] = boxes[:, 0] + w * 0.5 - side * 0.5
    out[:, 1] = boxes[:, 1] + h * 0.5 - side * 0.5
    out[:, 2] = out[:, 0] + side
    out[:, 3] = out[:, 1] + side
    return out


def regress(boxes: Array, reg: Array) -> Array:
    """Box regression with facenet's +1 widths (bbreg)."""
    out = boxes.copy()
    w = boxes[:, 2] - boxes[:, 0] + 1
    h = boxes[:, 3] - boxes[:, 1] + 1
    out[:, 0] += reg[:, 0] * w
    out[:, 1] += reg[:, 1] * h
    out[:, 2] += reg[:, 2] * w
    out[:, 3] += reg[:, 3] * h
    return out


def crops(img: Array, boxes: Array, side: int) -> tuple[Array, Array]:
    """Area-resized side x side patches of the boxes (truncated to ints, clipped to the frame,
    1-based like facenet's `pad`), and the indices of the boxes that have any pixels."""
    h, w = img.shape[:2]
    b = np.trunc(boxes[:, :4]).astype(np.int64)
    x, y = np.maximum(b[:, 0], 1), np.maximum(b[:, 1], 1)
    ex, ey = np.minimum(b[:, 2], w), np.minimum(b[:, 3], h)
    ok = np.flatnonzero((ey > y - 1) & (ex > x - 1))
    patches = [area_resize(img[y[k] - 1 : ey[k], x[k] - 1 : ex[k]], (side, side)) for k in ok]
    return np.stack(patches) if patches else np.zeros((0, side, side, 3), np.float32), ok


def _cells(reg: Array, prob: Array, scale: float) -> Array:
    """P-Net's cells with p >= threshold as boxes (N, 9): x1, y1, x2, y2, score, 4 offsets."""
    ys, xs = np.nonzero(prob >= THRESHOLDS[0])
    q1x, q1y = np.floor((STRIDE * xs + 1) / scale), np.floor((STRIDE * ys + 1) / scale)
    q2x = np.floor((STRIDE * xs + CELL) / scale)
    q2y = np.floor((STRIDE * ys + CELL) / scale)
    offsets = reg[:, ys, xs].T
    return np.column_stack([q1x, q1y, q2x, q2y, prob[ys, xs], offsets]).astype(np.float64)


def detect_faces(frame: Array, nets: Nets) -> tuple[Array, Array]:
    """Faces in an RGB frame (H, W, 3): boxes (N, 5) x1, y1, x2, y2, p and landmarks (N, 5, 2),
    largest box first (facenet's select_largest)."""
    img = np.asarray(frame, np.float32)
    h, w = img.shape[:2]
    scales = pyramid(h, w)
    levels = []
    outs = nets.pnet([net_input(area_resize(img, size)[None]) for _, size in scales])
    for (scale, _), (reg, prob) in zip(scales, outs, strict=True):
        cells = _cells(np.asarray(reg)[0], np.asarray(prob)[0, 1], scale)
        levels.append(cells[nms(cells[:, :4], cells[:, 4], 0.5)])
    boxes = np.concatenate(levels) if levels else np.zeros((0, 9))
    boxes = boxes[nms(boxes[:, :4], boxes[:, 4], 0.7)]
    bw, bh = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    moved = boxes[:, :4] + boxes[:, 5:9] * np.stack([bw, bh, bw, bh], axis=1)
    boxes = square(np.column_stack([moved, boxes[:, 4]]))
    empty = (np.zeros((0, 5)), np.zeros((0, 5, 2)))
    if not len(boxes):
        return empty
    # R-Net
    patches, ok = crops(img, boxes, 24)
    reg, prob = (np.asarray(a, np.float64) for a in nets.rnet(net_input(patches)))
    boxes, reg, score = boxes[ok], reg, prob[:, 1]
    keep = score > THRESHOLDS[1]
    boxes = np.column_stack([boxes[keep, :4], score[keep]])
    reg = reg[keep]
    pick = nms(boxes[:, :4], boxes[:, 4], 0.7)
    boxes = square(regress(boxes[pick], reg[pick]))
    if not len(boxes):
        return empty
    # O-Net
    patches, ok = crops(img, boxes, 48)
    reg, pts, prob = (np.asarray(a, np.float64) for a in nets.onet(net_input(patches)))
    boxes, score = boxes[ok], prob[:, 1]
    keep = score > THRESHOLDS[2]
    boxes = np.column_stack([boxes[keep, :4], score[keep]])
    reg, pts = reg[keep], pts[keep]
    bw = boxes[:, 2] - boxes[:, 0] + 1
    bh = boxes[:, 3] - boxes[:, 1] + 1
    points = np.stack(
        [bw[:, None] * pts[:, :5] + boxes[:, :1] - 1, bh[:, None] * pts[:, 5:] + boxes[:, 1:2] - 1],
        axis=2,
    )
    boxes = regress(boxes, reg)
    pick = nms(boxes[:, :4], boxes[:, 4], 0.7, "min")
    boxes, points = boxes[pick], points[pick]
    order = np.argsort(-(boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1]), kind="stable")
    return boxes[order], points[order]


def refine_crop(frame: Array, box: Array) -> Array | None:
    """The O-Net input for a tracked square box (x1, y1, x2, y2): the box rounded, pixels
    outside the frame replicating the edge, area-resized to 48x48; None if under MIN_FACE."""
    from lipread.track import box_crop

    pixels = box_crop(frame, box)
    return None if pixels is None else net_input(area_resize(pixels, (48, 48))[None])


def iou(a: Array, b: Array) -> float:
    """Intersection over union of two boxes x1, y1, x2, y2."""
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return float(w * h / union) if union > 0 else 0.0


def downscale_side(h: int, w: int, side: int) -> float:
    """The factor that brings the longer side down to `side` px (1.0 if already smaller)."""
    return min(1.0, side / max(h, w)) if max(h, w) else 1.0
