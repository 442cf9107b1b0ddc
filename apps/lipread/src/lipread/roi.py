"""The mouth region of interest: `none`, a fixed `X,Y,W,H` box, or `auto` (MTCNN landmarks).

`auto` uses MTCNN from facenet-pytorch 2.5.3 (its pnet/rnet/onet weights ship in the wheel; it
needs torch and torchvision), run in full every second and as a tracker (its O-Net alone) in
between (`lipread.track`). Its five points include both mouth corners: the crop is centred
on their midpoint, its width is 2.2x the corner distance (LipNet-PyTorch's 160x80 crop around
a mouth ~70 px wide), its height half the width. The centre is smoothed with a centred 5-frame
moving average; the width first with a centred 25-frame (1 s) moving median, then the same
average: the corners move apart and together as the lips spread and round (by up to 2x on the
synthetic corpus), and a crop that followed them would zoom with every /u/. Gaps of up to
MAX_GAP frames without a face are interpolated; longer ones are errors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lipread.errors import NoFaceError, UnsupportedError, VideoError
from lipread.track import MAX_GAP

Array = np.ndarray[Any, Any]
CornerFinder = Callable[[Array], Array]  # (T, H, W, 3) RGB -> (T, 2, 2) corners (x, y) or NaN
SMOOTH = 5
SMOOTH_WIDTH = 25


MOUTH_ASPECT = (1.6, 2.5)  # width / height of a mouth crop: LipNet's are 2:1 (64x128, 50x100)
MOUTH_MAX_HEIGHT = 160  # 2.5x the published input's 64 rows; faces are filmed larger


@dataclass(frozen=True, slots=True)
class Roi:
    mode: str  # "none" | "box" | "auto" | "default" (none or auto by the frames' look)
    box: tuple[int, int, int, int] | None = None
    why: str = ""  # how a default was resolved, for error messages


def looks_like_mouth_crop(height: int, width: int) -> bool:
    """Frames of a mouth crop: about 2:1 (aspect 1.6-2.5) and at most 160 px high.

    Face and phone video is 4:3, 16:9 or 9:16 (GRID: 360x288) and taller than 160 px; a 2:1
    frame that tall is a wide shot, not a crop. Geometry only: no detector runs to decide.
    """
    lo, hi = MOUTH_ASPECT
    return lo <= width / height <= hi and height <= MOUTH_MAX_HEIGHT


def resolve_roi(roi: Roi, size: tuple[int, int], name: str) -> tuple[Roi, list[str]]:
    """The ROI to use for frames of `size` (H, W), and warnings for stderr.

    `default` becomes `none` for frames that look like a mouth crop, else `auto`; `none` on
    frames that do not look like one is kept, with a warning.
    """
    h, w = size
    crop_like = looks_like_mouth_crop(h, w)
    if roi.mode == "default":
        if crop_like:
            return Roi("none"), []
        why = f"{name}: its {w}x{h} frames are not a mouth crop (2:1, <= {MOUTH_MAX_HEIGHT} px)"
        return Roi("auto", why=why), []
    if roi.mode == "none" and not crop_like:
        return roi, [
            f"--roi none, but {name}'s {w}x{h} frames do not look like a mouth crop (about 2:1, "
            f"at most {MOUTH_MAX_HEIGHT} px high): the model reads each whole frame as a mouth; "
            "for a face use --roi auto"
        ]
    return roi, []


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


def mtcnn_corners(frames: Array, on: str | None = None) -> Array:
    """Mouth corners per frame by MTCNN, tracked between keyframes; NaN where no face is found.

    `on` a target spec ("emu", "lib:...", "ssh://..."): its nets compiled and run there
    (`lipread.mtcnn_npu`); None: in torch float (`lipread.track`), the reference."""
    from lipread.progress import phases

    with phases("tracking the face") as report:  # on stderr, with ETA (MDLA_PROGRESS)
        if on is not None:
            from lipread.mtcnn_npu import npu_corners

            return npu_corners(on, report)(frames)
        from lipread.track import MtcnnDetector, track_corners

        detector = MtcnnDetector()
        with detector.one_thread():
            return track_corners(frames, detector, report=report)


def target_finder(on: str) -> CornerFinder:
    """The `CornerFinder` of `--roi auto` off --fp32: MTCNN's compiled nets on target `on`
    (`mtcnn_corners(frames, on)`, looked up at each call so tests can replace it). `lipread
    VIDEO`, `lipread features` and `lipread calibrate` all find the mouth this way."""

    def find(frames: Array) -> Array:
        return mtcnn_corners(frames, on)

    return find


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
    track[:, 2] = _centred(track[:, 2], SMOOTH_WIDTH, np.median)
    smooth = np.stack([_centred(track[:, j], SMOOTH, np.mean) for j in range(3)], axis=1)
    w = np.maximum(smooth[:, 2], 4.0)
    return np.stack([smooth[:, 0] - w / 2, smooth[:, 1] - w / 4, w, w / 2], axis=1)


def _centred(x: Array, k: int, reduce: Callable[..., Array]) -> Array:
    """`reduce` over a centred window of k frames (shorter clips: all), edges replicated."""
    k = min(k, len(x))
    padded = np.pad(x, (k // 2, k - 1 - k // 2), mode="edge")
    return reduce(np.lib.stride_tricks.sliding_window_view(padded, k), axis=1)


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
    try:
        corners = (finder or mtcnn_corners)(frames)
    except UnsupportedError as exc:
        if not roi.why:
            raise
        raise type(exc)(f"{roi.why}: {exc}") from exc  # a missing package stays one
    return boxes_from_corners(corners)
