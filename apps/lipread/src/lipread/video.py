"""Video in and out with PyAV: any container and codec FFmpeg reads, resampled to 25 fps."""

from __future__ import annotations

import os
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from lipread.errors import VideoError

Array = np.ndarray[Any, Any]
FPS = 25
MAX_SIDE = 1280  # frames larger than this are scaled down while decoding (aspect kept)
MIN_SIDE = 16  # smaller frames cannot hold a mouth: refused
MIN_FRAMES = 3  # the front-end's first Conv3d reads 3 frames; fewer is a still, not speech
MAX_BYTES = 3 << 30  # decoded plus resampled RGB frames (3 GiB: ~1 min of 720p at 25 fps)
BUDGET_ENV = "LIPREAD_MAX_VIDEO_MB"  # overrides MAX_BYTES, in MiB
# FFmpeg demuxers that read still pictures (plus every `*_pipe` one: png_pipe, jpeg_pipe, ...).
STILL_FORMATS = frozenset({"image2", "apng", "gif", "webp"})


def read_video(path: str | Path, fps: int = FPS) -> Array:
    """Decode every frame as RGB and resample to `fps`: (T, H, W, 3) uint8, C-contiguous.

    Resampling keeps, for each output instant k/fps, the last source frame shown at or before
    it (a frame-rate conversion by sample and hold, as players do). Frames larger than
    MAX_SIDE on their longer side are scaled down while decoding, so memory stays bounded
    (an 8K clip decodes at 1280x720). Raises VideoError for a file FFmpeg cannot open, one
    without a video stream, a still picture, fewer than MIN_FRAMES frames, frames under
    MIN_SIDE pixels, or more than `video_budget()` bytes of decoded and resampled frames
    together (checked before the resampled frames are allocated: a few frames far apart in
    time would otherwise hold each one for minutes).
    """
    path = Path(path)
    if path.is_dir():
        raise VideoError(f"{path}: is a directory, not a video file")
    if not path.is_file():
        raise VideoError(f"{path}: no such file")
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise VideoError(f"{path}: not a readable video ({exc})") from exc
    with container:
        if not container.streams.video:
            raise VideoError(f"{path}: the file has no video stream")
        fmt = container.format.name
        if fmt in STILL_FORMATS or fmt.endswith("_pipe"):
            raise VideoError(f"{path}: a still picture ({fmt}), not a video of a speaker")
        frames, times = _decode(container, path, fps, video_budget())
    if not frames:
        raise VideoError(f"{path}: the video has zero frames")
    if len(frames) < MIN_FRAMES:
        raise VideoError(
            f"{path}: {len(frames)} frame(s); lip reading needs a video of at least "
            f"{MIN_FRAMES} frames (a still picture cannot be read)"
        )
    _check_resampled(path, frames, np.array(times), fps)
    return resample(frames, np.array(times), fps)


def video_budget() -> int:
    """The byte budget for one video's frames: MAX_BYTES, or $LIPREAD_MAX_VIDEO_MB MiB."""
    text = os.environ.get(BUDGET_ENV, "").strip()
    if not text:
        return MAX_BYTES
    if not text.isdigit() or not 0 < int(text) <= 1 << 30:
        raise VideoError(f"{BUDGET_ENV}={text!r}: expected a whole number of MiB, 1 or more")
    return int(text) << 20


def _over_budget(path: Path, what: str, budget: int) -> VideoError:
    return VideoError(
        f"{path}: {what}, over the {_size(budget)} budget for a video's frames; cut the clip to "
        f"the sentence (e.g. ffmpeg -ss START -t SECONDS -i IN OUT) or raise {BUDGET_ENV} (MiB)"
    )


def _size(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB" if n >= 1 << 20 else f"{n} bytes"


def _check_resampled(path: Path, frames: Sequence[Array], times: Array, fps: int) -> None:
    """VideoError if the decoded frames and their resampling to `fps` pass the budget."""
    n = grid_length(times, fps)
    need = (len(frames) + n) * frames[0].nbytes
    budget = video_budget()
    if need > budget:
        span = float(times[-1] - times[0])
        what = (
            f"{len(frames)} frames over {span:.1f} s resample to {n} frames at {fps} fps, "
            f"{_size(need)} with the decoded ones"
        )
        raise _over_budget(path, what, budget)


def _scaled(width: int, height: int) -> tuple[int, int]:
    """The decode size: the frame itself, or scaled so its longer side is MAX_SIDE (even)."""
    longer = max(width, height)
    if longer <= MAX_SIDE:
        return width, height
    k = MAX_SIDE / longer
    return max(2, round(width * k / 2) * 2), max(2, round(height * k / 2) * 2)


def _decode(container: Any, path: Path, fps: int, budget: int) -> tuple[list[Array], list[float]]:
    """Every frame as RGB at the first frame's bounded size, with its time; VideoError past
    `budget` bytes."""
    stream = container.streams.video[0]
    frames: list[Array] = []
    times: list[float] = []
    held = w = h = 0
    try:
        for frame in container.decode(stream):
            if frame.width < MIN_SIDE or frame.height < MIN_SIDE:
                raise VideoError(
                    f"{path}: frames are {frame.width}x{frame.height}; a mouth needs at least "
                    f"{MIN_SIDE}x{MIN_SIDE} pixels"
                )
            if not frames:  # a stream that changes size is decoded at its first frame's size
                w, h = _scaled(frame.width, frame.height)
            rgb = frame.to_ndarray(format="rgb24", width=w, height=h)
            held += rgb.nbytes
            if held > budget:
                what = f"{_size(held)} of decoded frames after {len(frames) + 1} frames ({w}x{h})"
                raise _over_budget(path, what, budget)
            frames.append(np.ascontiguousarray(rgb))
            rate = float(stream.average_rate or fps)
            times.append(float(frame.time) if frame.time is not None else len(times) / rate)
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise VideoError(f"{path}: decoding failed after {len(frames)} frames ({exc})") from exc
    return frames, times


def grid_length(times: Array, fps: int = FPS) -> int:
    """How many frames `resample` makes of frames shown at `times`: their span plus one
    typical frame step, at `fps`."""
    rel = times - float(times[0])
    step = float(np.median(np.diff(rel))) if len(rel) > 1 else 1.0 / fps
    return max(1, round((float(rel[-1]) + step) * fps))


def resample(frames: Array | Sequence[Array], times: Array, fps: int = FPS) -> Array:
    """Sample-and-hold frames shown at `times` (seconds) onto a regular `fps` grid
    (`grid_length(times, fps)` frames, each the last one shown at or before its instant)."""
    rel = times - float(times[0])
    grid = np.arange(grid_length(times, fps)) / fps
    idx = np.clip(np.searchsorted(rel, grid + 1e-6, side="right") - 1, 0, len(frames) - 1)
    return np.ascontiguousarray(np.stack([frames[i] for i in idx]))


def write_video(path: str | Path, frames: Array, fps: int = FPS, crf: int = 12) -> None:
    """(T, H, W, 3) uint8 RGB -> H.264 (yuv420p) in the container named by the suffix."""
    t, h, w = frames.shape[:3]
    if h % 2 or w % 2:
        raise VideoError(f"H.264 needs even frame sizes, got {w}x{h}")
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(fps))
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        stream.options = {"crf": str(crf)}
        for i in range(t):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(frames[i]), format="rgb24")
            out.mux(stream.encode(frame))
        out.mux(stream.encode())
