"""`lipread features VIDEO -o feats.npy`: the visual front-end's features, nothing after it."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from lipread.commands.options import Debug, RoiOpt, Weights, as_roi, guarded, target_option
from lipread.errors import LipreadError, MissingDependencyError, UnsupportedError
from mdla_runtime.atomic import write_atomic

FRONTENDS = ("lipnet", "avsr")
Array = np.ndarray[Any, Any]


def frontend_option(text: str) -> str:
    if text not in FRONTENDS:
        raise typer.BadParameter(f"{text!r}: expected lipnet or avsr")
    return text


Frontend = Annotated[
    str,
    typer.Option(
        callback=frontend_option,
        metavar="lipnet|avsr",
        help="lipnet: LipNet's STCNN (the sentence reader). avsr: auto-avsr's Conv3d + "
        "ResNet-18 visual front-end, 88x88 grayscale, 512 features a frame (its back end's "
        "weights cannot be downloaded here, so it gives features only).",
    ),
]


def features(
    video: Annotated[Path, typer.Argument(metavar="VIDEO", help="Any video FFmpeg reads.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Where to write the .npy.")],
    frontend: Frontend = "lipnet",
    weights: Weights = None,
    on: Annotated[
        str,
        typer.Option(callback=target_option, help="Target: emu, lib:PATH.so or ssh://user@host."),
    ] = "emu",
    roi: RoiOpt = None,
    fp32: Annotated[bool, typer.Option("--fp32", help="Run the front-end in FP32 torch.")] = False,
    debug: Debug = False,
) -> None:
    """Write the front-end's features, (frames, features) float32, to a .npy file.

    lipnet: the STCNN output flattened as LipNet's GRU reads it. avsr: auto-avsr's visual front-end (a Conv3d 5x7x7 stem and a ResNet-18 per frame), 512 per frame, INT8 on mtk-mdla in two compiled graphs; needs --weights (an auto-avsr .pt: the whole model or its front-end).
    """  # noqa: E501

    def go() -> tuple[int, int]:
        feats = avsr_features(video, weights, roi, on, fp32) if frontend == "avsr" else (
            lipnet_features(video, weights, roi, on, fp32)
        )  # fmt: skip
        buf = io.BytesIO()
        np.save(buf, feats)
        try:
            write_atomic(out, buf.getvalue())
        except OSError as exc:
            raise LipreadError(f"{exc.filename or out}: {exc.strerror or exc}") from exc
        return feats.shape  # type: ignore[no-any-return]

    frames, width = guarded(go, debug)
    tag = "  [synthetic demo model]" if frontend == "lipnet" and weights is None else ""
    typer.echo(f"wrote {out}: {frames} frames x {width} {frontend} features{tag}")


def lipnet_features(
    video: Path, weights: Path | None, roi: str | None, on: str, fp32: bool
) -> Array:
    from lipread.checkpoint import load_checkpoint
    from lipread.frontend import run_chunked
    from lipread.pipeline import fp32_frontend, npu_frontend, prepare
    from lipread.roi import resolve_roi, target_finder
    from lipread.tail import flatten_features
    from lipread.video import read_video

    ckpt = load_checkpoint(weights)
    frames = read_video(video)
    chosen, _ = resolve_roi(as_roi(roi), frames.shape[1:3], video.name)
    # --roi auto: MTCNN on the target like `lipread VIDEO`; with --fp32 in torch float
    x = prepare(frames, chosen, ckpt.config, None if fp32 else target_finder(on))
    fn = fp32_frontend(ckpt)[0] if fp32 else npu_frontend(ckpt, on)[0]
    return flatten_features(run_chunked(fn, x))


def avsr_features(video: Path, weights: Path | None, roi: str | None, on: str, fp32: bool) -> Array:
    if weights is None:
        raise UnsupportedError(
            "--frontend avsr needs --weights: no auto-avsr weights ship with lipread and none "
            "can be downloaded here (pass an auto-avsr .pt, the whole model or its front-end)"
        )
    try:
        from lipread.avsr import load_avsr
        from lipread.avsr_npu import HALO, WINDOW, fp32_avsr, npu_avsr
    except ModuleNotFoundError as exc:
        raise MissingDependencyError("--frontend avsr needs torch: pip install torch") from exc
    from lipread.frontend import run_chunked
    from lipread.pipeline import avsr_input
    from lipread.roi import target_finder
    from lipread.video import read_video

    fe = load_avsr(weights)
    frames = read_video(video)
    x = avsr_input(frames, as_roi(roi), video.name, None if fp32 else target_finder(on))
    fn = fp32_avsr(fe)[0] if fp32 else npu_avsr(fe, on, calibration=[x])[0]
    return np.ascontiguousarray(run_chunked(fn, x, WINDOW, HALO)[0].T)
