"""Video in and out with PyAV: any container and codec FFmpeg reads, resampled to 25 fps."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from lipread.errors import VideoError

Array = np.ndarray[Any, Any]
FPS = 25


def read_video(path: str | Path, fps: int = FPS) -> Array:
    """Decode every frame as RGB and resample to `fps`: (T, H, W, 3) uint8, C-contiguous.

    Resampling keeps, for each output instant k/fps, the last source frame shown at or before
    it (a frame-rate conversion by sample and hold, as players do). Raises VideoError for a
    file FFmpeg cannot open, one without a video stream, or one with no decodable frame.
    """
    path = Path(path)
    if not path.is_file():
        raise VideoError(f"{path}: no such file")
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise VideoError(f"{path}: not a readable video ({exc})") from exc
    with container:
        if not container.streams.video:
            raise VideoError(f"{path}: the file has no video stream")
        stream = container.streams.video[0]
        frames: list[Array] = []
        times: list[float] = []
        try:
            for frame in container.decode(stream):
                frames.append(np.ascontiguousarray(frame.to_ndarray(format="rgb24")))
                rate = float(stream.average_rate or fps)
                times.append(float(frame.time) if frame.time is not None else len(times) / rate)
        except (av.FFmpegError, OSError, ValueError) as exc:
            raise VideoError(f"{path}: decoding failed after {len(frames)} frames ({exc})") from exc
    if not frames:
        raise VideoError(f"{path}: the video has zero frames")
    return resample(np.stack(frames), np.array(times), fps)


def resample(frames: Array, times: Array, fps: int = FPS) -> Array:
    """Sample-and-hold frames shown at `times` (seconds) onto a regular `fps` grid."""
    start = float(times[0])
    rel = times - start
    step = np.median(np.diff(rel)) if len(rel) > 1 else 1.0 / fps
    duration = float(rel[-1]) + float(step)
    n = max(1, round(duration * fps))
    grid = np.arange(n) / fps
    idx = np.searchsorted(rel, grid + 1e-6, side="right") - 1
    return np.ascontiguousarray(frames[np.clip(idx, 0, len(frames) - 1)])


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
