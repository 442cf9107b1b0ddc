"""The mouth region of interest: `none`, a fixed `X,Y,W,H` box, or `auto` (MTCNN landmarks).

`auto` uses MTCNN from facenet-pytorch 2.5.3 (its pnet/rnet/onet weights ship in the wheel; it
needs torch and torchvision). Its five points include both mouth corners: the crop is centred
on their midpoint, its width is 2.2x the corner distance (LipNet-PyTorch's 160x80 crop around
a mouth ~70 px wide), its height half the width, both smoothed over time with a centred moving
average. Gaps of up to MAX_GAP frames without a face are interpolated; longer ones are errors.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lipread.errors import NoFaceError, UnsupportedError, VideoError

Array = np.ndarray[Any, Any]
CornerFinder = Callable[[Array], Array]  # (T, H, W, 3) RGB -> (T, 2, 2) corners (x, y) or NaN
MAX_GAP = 5
SMOOTH = 5


@dataclass(frozen=True, slots=True)
class Roi:
    mode: str  # "none" | "box" | "auto"
    box: tuple[int, int, int, int] | None = None


def parse_roi(text: str) -> Roi:
    """`none`, `auto` or `X,Y,W,H` (integers, W and H > 0); ValueError otherwise."""
    if text in ("none", "auto"):
        return Roi(text)
    parts = text.split(",")
    try:
        x, y, w, h = (int(p) for p in parts)
    except ValueError:
        raise ValueError(f"--roi {text!r}: expected none, auto or X,Y,W,H in pixels") from None
    if w <= 0 or h <= 0 or x < 0 or y < 0:
        raise ValueError(f"--roi {text!r}: X, Y must be >= 0 and W, H > 0")
    return Roi("box", (x, y, w, h))


def _ranges(idx: list[int]) -> str:
    spans: list[str] = []
    start = prev = idx[0]
    for i in [*idx[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(spans)


def mtcnn_corners(frames: Array) -> Array:
    """Mouth corners per frame with facenet-pytorch's MTCNN; NaN where no face is found."""
    try:
        mtcnn_cls = importlib.import_module("facenet_pytorch").MTCNN
    except ModuleNotFoundError as exc:
        raise UnsupportedError(
            "--roi auto needs facenet-pytorch 2.5.3 (MTCNN, weights in its wheel) with torch and "
            "torchvision: pip install torch torchvision facenet-pytorch (the extra "
            "`mdla-lipread[auto]`); or pass --roi X,Y,W,H or --roi none"
        ) from exc
    detector = mtcnn_cls(device="cpu", keep_all=False)
    out = np.full((len(frames), 2, 2), np.nan)
    for i in range(0, len(frames), 16):
        batch = [np.ascontiguousarray(f) for f in frames[i : i + 16]]
        _, probs, points = detector.detect(batch, landmarks=True)
        for j, pts in enumerate(points):
            if pts is not None and probs[j] is not None:
                out[i + j] = np.asarray(pts[0], dtype=float)[3:5]
    return out


def boxes_from_corners(corners: Array) -> Array:
    """Mouth corners (T, 2, 2) -> smoothed crop boxes (T, 4) as x, y, w, h (aspect 2:1)."""
    missing = [int(t) for t in np.flatnonzero(np.isnan(corners).any(axis=(1, 2)))]
    total = len(corners)
    if len(missing) == total:
        raise NoFaceError(f"no face found in any of the {total} frames (0-{total - 1})")
    gaps = _long_gaps(missing)
    if gaps:
        raise NoFaceError(f"no face found in frames {_ranges(gaps)} of {total}")
    centre = corners.mean(axis=1)  # (T, 2)
    width = 2.2 * np.linalg.norm(corners[:, 1] - corners[:, 0], axis=1)
    t = np.arange(total)
    ok = ~np.isnan(width)
    track = np.stack(
        [np.interp(t, t[ok], centre[ok, 0]), np.interp(t, t[ok], centre[ok, 1]),
         np.interp(t, t[ok], width[ok])], axis=1,
    )  # fmt: skip
    k = min(SMOOTH, total)
    padded = np.pad(track, ((k // 2, k - 1 - k // 2), (0, 0)), mode="edge")
    kernel = np.ones(k) / k
    smooth = np.stack([np.convolve(padded[:, j], kernel, mode="valid") for j in range(3)], axis=1)
    w = np.maximum(smooth[:, 2], 4.0)
    return np.stack([smooth[:, 0] - w / 2, smooth[:, 1] - w / 4, w, w / 2], axis=1)


def _long_gaps(missing: list[int]) -> list[int]:
    """The missing frames that lie in runs longer than MAX_GAP."""
    out: list[int] = []
    run: list[int] = []
    for i in [*missing, None]:
        if i is not None and (not run or i == run[-1] + 1):
            run.append(i)
            continue
        if len(run) > MAX_GAP:
            out.extend(run)
        run = [i] if i is not None else []
    return out


def mouth_boxes(frames: Array, roi: Roi, finder: CornerFinder | None = None) -> Array | None:
    """Per-frame crop boxes (T, 4) for the ROI mode, or None for `none` (use whole frames)."""
    if roi.mode == "none":
        return None
    h, w = frames.shape[1:3]
    if roi.mode == "box" and roi.box is not None:
        x, y, bw, bh = roi.box
        if x + bw > w or y + bh > h:
            raise VideoError(f"--roi {x},{y},{bw},{bh} reaches outside the {w}x{h} frame")
        return np.tile(np.array(roi.box, dtype=float), (len(frames), 1))
    return boxes_from_corners((finder or mtcnn_corners)(frames))
