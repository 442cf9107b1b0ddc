"""`lipread [read] VIDEO`: print the sentence spoken in a silent mouth video."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lipread.checkpoint import load_checkpoint
from lipread.commands.features import Frontend
from lipread.commands.options import Debug, RoiOpt, Weights, as_roi, guarded, target_option
from lipread.errors import UnsupportedError
from lipread.frontend import CLIP_FRAMES
from lipread.pipeline import STAGES, Reading, read_sentence
from lipread.progress import stages
from lipread.video import FPS
from mdla_runtime.jsontext import dumps

LONG_CLIP = CLIP_FRAMES * 3 // 2  # past 1.5 sentences' length a clip can hold a second one
DEMO_TAG = "[synthetic demo model]"  # ends every line the shipped demo model prints


def tail_option(text: str) -> str:
    if text in ("numpy", "engine"):
        return text
    raise typer.BadParameter(f"{text!r}: expected numpy or engine")


def read(
    video: Annotated[
        Path,
        typer.Argument(metavar="VIDEO", help="Any video FFmpeg reads (resampled to 25 fps)."),
    ],
    weights: Weights = None,
    frontend: Frontend = "lipnet",
    on: Annotated[
        str,
        typer.Option(callback=target_option, help="Target: emu, lib:PATH.so or ssh://user@host."),
    ] = "emu",
    roi: RoiOpt = None,
    fp32: Annotated[bool, typer.Option("--fp32", help="Run the front-end in FP32 torch.")] = False,
    tail: Annotated[
        str,
        typer.Option(
            "--tail",
            callback=tail_option,
            metavar="numpy|engine",
            help="Where the GRU tail runs: numpy here, after the front-end ran on the target, or "
            "engine: the whole model in mdla-engine on the target (the tail a cpu partition in C; "
            "compiled per clip length, cached).",
        ),
    ] = "numpy",
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Confidence, timings, device, run info and the CTC path as JSON."
        ),
    ] = False,
    save_crops: Annotated[
        Path | None,
        typer.Option(
            "--save-crops",
            metavar="DIR",
            help="Write the mouth crops the model read: DIR/frame_NNNN.png and DIR/strip.png.",
        ),
    ] = None,
    debug: Debug = False,
) -> None:
    """Read the sentence: the LipNet front-end INT8 on mtk-mdla, the GRU tail on the CPU.

    Without --weights this is the shipped SYNTHETIC DEMO model: it reads rendered mouths (the samples), not real ones, and says so on every line it prints. A low-confidence reading gets a warning on stderr.
    """  # noqa: E501

    def go() -> Reading:
        if frontend == "avsr":
            raise UnsupportedError(
                "--frontend avsr reads no sentence here: auto-avsr's back end (a Conformer "
                "encoder and an attention decoder) needs weights that cannot be downloaded; "
                f"`lipread features {video} -o feats.npy --frontend avsr --weights CKPT` "
                "writes its features"
            )
        with stages(len(STAGES)) as stage:
            ckpt = load_checkpoint(weights)
            return read_sentence(
                video,
                ckpt,
                as_roi(roi),
                on=on,
                fp32=fp32,
                crops_dir=save_crops,
                stage=stage,
                tail=tail,
            )

    reading = guarded(go, debug)
    tag = f"  {DEMO_TAG}" if reading.synthetic_demo else ""
    if reading.frames > LONG_CLIP:
        typer.echo(
            f"lipread: note: {video.name} is {reading.frames} frames "
            f"({reading.frames / FPS:.1f} s); LipNet reads one GRID sentence per "
            f"{CLIP_FRAMES}-frame ({CLIP_FRAMES / FPS:.0f} s) clip and may misread a clip holding "
            "more than one: "
            f"cut it into sentences{tag}",
            err=True,
        )
    for warning in reading.warnings:
        typer.echo(f"lipread: warning: {warning}{tag}", err=True)
    if as_json:
        typer.echo(dumps(reading.as_dict(), indent=1))
    else:
        typer.echo(f"{reading.text}{tag}")
