"""`lipread calibrate DIR --weights CKPT`: compile a checkpoint's front-end on your videos."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from lipread.checkpoint import load_checkpoint
from lipread.commands.options import Debug, RoiOpt, Weights, as_roi, guarded, target_option
from lipread.errors import VideoError
from lipread.frontend import CLIP_FRAMES, compile_frontend
from lipread.pipeline import prepare
from lipread.progress import counted
from lipread.roi import resolve_roi, target_finder
from lipread.video import read_video

VIDEO_SUFFIXES = {".mp4", ".mpg", ".mpeg", ".avi", ".mov", ".mkv", ".webm", ".m4v"}


def videos_in(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise VideoError(f"{folder}: not a directory")
    found = sorted(p for p in folder.rglob("*") if p.suffix.lower() in VIDEO_SUFFIXES)
    if not found:
        raise VideoError(f"{folder}: no video files ({', '.join(sorted(VIDEO_SUFFIXES))})")
    return found


def calibrate(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="A folder of your videos.")],
    weights: Weights = None,
    roi: RoiOpt = None,
    max_clips: Annotated[int, typer.Option(min=1, help="Use at most this many videos.")] = 32,
    on: Annotated[
        str,
        typer.Option(
            callback=target_option,
            help="Target the face detector of --roi auto runs on: emu, lib:PATH.so or "
            "ssh://user@host (the compile itself is on the host).",
        ),
    ] = "emu",
    debug: Debug = False,
) -> None:
    """Calibrate the INT8 front-end on DIR's videos; later `lipread` runs use the result."""

    def go() -> tuple[Path, int]:
        ckpt = load_checkpoint(weights)
        paths = videos_in(folder)[:max_clips]

        def clips(tick: Callable[[], None]) -> Iterator[np.ndarray[Any, Any]]:
            for path in paths:
                frames = read_video(path)
                clip_roi, _ = resolve_roi(as_roi(roi), frames.shape[1:3], path.name)
                x = prepare(frames, clip_roi, ckpt.config, target_finder(on))  # MTCNN on `on`
                for start in range(0, max(1, x.shape[2] - CLIP_FRAMES + 1), CLIP_FRAMES):
                    yield x[:, :, start : start + CLIP_FRAMES]
                tick()  # this video's clips are calibrated when the next is asked for

        source = f"{folder} ({len(paths)} videos)"
        with counted("calibrating on videos", len(paths)) as tick:
            out, _ = compile_frontend(ckpt, clips(tick), source=source)
        return out, len(paths)

    manifest, n = guarded(go, debug)
    typer.echo(f"calibrated on {n} videos: {manifest}")
