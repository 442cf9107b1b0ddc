"""`lipread [read] VIDEO`: print the sentence spoken in a silent mouth video."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from lipread.checkpoint import load_checkpoint
from lipread.commands.options import Debug, RoiOpt, Weights, as_roi, guarded, target_option
from lipread.frontend import CLIP_FRAMES
from lipread.pipeline import Reading, read_sentence
from lipread.video import FPS

LONG_CLIP = CLIP_FRAMES * 3 // 2  # past 1.5 sentences' length a clip can hold a second one


def read(
    video: Annotated[Path, typer.Argument(help="Any video FFmpeg reads (resampled to 25 fps).")],
    weights: Weights = None,
    on: Annotated[
        str,
        typer.Option(callback=target_option, help="Target: emu, lib:PATH.so or ssh://user@host."),
    ] = "emu",
    roi: RoiOpt = "none",
    fp32: Annotated[bool, typer.Option("--fp32", help="Run the front-end in FP32 torch.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Timings, device, run info and the CTC path as JSON.")
    ] = False,
    debug: Debug = False,
) -> None:
    """Read the sentence: the LipNet front-end INT8 on mtk-mdla, the GRU tail on the CPU."""

    def go() -> Reading:
        ckpt = load_checkpoint(weights)
        return read_sentence(video, ckpt, as_roi(roi), on=on, fp32=fp32)

    reading = guarded(go, debug)
    if reading.frames > LONG_CLIP:
        typer.echo(
            f"lipread: note: {video.name} is {reading.frames} frames "
            f"({reading.frames / FPS:.1f} s); LipNet reads one GRID sentence per "
            f"{CLIP_FRAMES}-frame ({CLIP_FRAMES / FPS:.0f} s) clip and may misread a clip holding "
            "more than one: "
            "cut it into sentences",
            err=True,
        )
    if as_json:
        typer.echo(json.dumps(reading.as_dict(), indent=1))
    else:
        typer.echo(reading.text)
