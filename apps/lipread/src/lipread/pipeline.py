"""Video in, sentence out: decode, mouth crop, front-end (NPU or FP32), numpy tail, greedy CTC."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lipread.checkpoint import Checkpoint
from lipread.confidence import LOW_CONFIDENCE, path_confidence
from lipread.config import LipNetConfig
from lipread.errors import LipreadError, UnsupportedError
from lipread.frontend import (
    CLIP_FRAMES,
    FrontEndFn,
    cached_manifest,
    compile_frontend,
    run_chunked,
    target_runner,
    torch_frontend,
)
from lipread.grid import greedy_ctc
from lipread.image import crop, resize, save_crops, to_model_input
from lipread.render import render_clip, spoken_sentence
from lipread.roi import CornerFinder, Roi, mouth_boxes, resolve_roi
from lipread.tail import tail_logits
from lipread.video import read_video

Array = np.ndarray[Any, Any]
CALIBRATION_SPEAKERS = 20000  # synthetic speakers 20000.. calibrate; never trained or benched
DEMO_NOTE = "synthetic demo model (trained on rendered mouths only; --weights for a real LipNet)"


@dataclass
class Reading:
    text: str
    ctc_path: list[int]
    frames: int
    device: str
    target: str
    frontend_ms: float  # device time summed over windows (emulator/NPU) or wall (FP32)
    windows: int
    window_ms: list[float] = field(default_factory=list)  # device time per 75-frame window
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per stage
    run: dict[str, Any] = field(default_factory=dict)  # what a witness needs to replay it
    confidence: float = 0.0  # lipread.confidence.path_confidence of the logits
    roi: str = "none"  # the mouth-region mode used (the default resolved)
    synthetic_demo: bool = False  # read by the shipped synthetic demo model
    warnings: list[str] = field(default_factory=list)  # for stderr, one line each

    @property
    def ms_per_frame(self) -> float:
        return self.frontend_ms / max(self.frames, 1)

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "confidence": round(self.confidence, 4),
            "model": DEMO_NOTE if self.synthetic_demo else "checkpoint",
            "roi": self.roi,
            "frames": self.frames,
            "device": self.device,
            "target": self.target,
            "frontend_ms": round(self.frontend_ms, 3),
            "frontend_ms_per_frame": round(self.ms_per_frame, 4),
            "windows": self.windows,
            "window_ms": [round(v, 3) for v in self.window_ms],
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
            "run": self.run,
            "ctc_path": self.ctc_path,
        }


def prepare(
    frames: Array, roi: Roi, cfg: LipNetConfig, finder: CornerFinder | None = None
) -> Array:
    """RGB frames (T, H, W, 3) -> the model input (1, 3, T, h, w), BGR / 255."""
    boxes = mouth_boxes(frames, roi, finder)
    size = (cfg.height, cfg.width)
    crops = resize(frames, size) if boxes is None else crop(frames, boxes, size)
    return to_model_input(crops)


def avsr_input(frames: Array, roi: Roi, name: str, finder: CornerFinder | None = None) -> Array:
    """RGB frames -> auto-avsr's input (1, 1, T, 88, 88): a square around the mouth (the ROI
    box's width, same centre; whole frames for `none`), then `avsr.to_avsr_input`."""
    from lipread.avsr import to_avsr_input

    roi, _ = resolve_roi(roi, frames.shape[1:3], name)
    boxes = mouth_boxes(frames, roi, finder)
    if boxes is None:
        return to_avsr_input(resize(frames, (96, 96)))
    square = boxes.copy()
    square[:, 1] += boxes[:, 3] / 2 - boxes[:, 2] / 2
    square[:, 3] = boxes[:, 2]
    return to_avsr_input(crop(frames, square, (96, 96)))


def synthetic_calibration(cfg: LipNetConfig, clips: int = 4) -> Iterator[Array]:
    """Synthetic GRID clips at the model's input size (the default calibration set)."""
    for i in range(clips):
        speaker = CALIBRATION_SPEAKERS + i
        words = spoken_sentence(speaker, 0)
        yield to_model_input(resize(render_clip(words, speaker, 0), (cfg.height, cfg.width)))


def npu_frontend(
    ckpt: Checkpoint, spec: str, frames: int = CLIP_FRAMES
) -> tuple[FrontEndFn, dict[str, Any], list[float]]:
    """A front-end function running the cached manifest on a target, its run info, latencies."""
    manifest_path = cached_manifest(ckpt, frames)
    if manifest_path is None:
        manifest_path, _ = compile_frontend(ckpt, synthetic_calibration(ckpt.config), frames=frames)
    return target_runner(manifest_path, spec, "front-end")


def fp32_frontend(ckpt: Checkpoint) -> tuple[FrontEndFn, list[float]]:
    import torch

    fe = torch_frontend(ckpt)
    latencies: list[float] = []

    def run(x: Array) -> Array:
        start = time.perf_counter()
        with torch.no_grad():
            out = fe(torch.from_numpy(np.ascontiguousarray(x))).numpy()
        latencies.append((time.perf_counter() - start) * 1e3)
        return out  # type: ignore[no-any-return]

    return run, latencies


STAGES = (
    "decoding video",
    "cropping the mouth",
    "setting up the front-end (a compile on new weights)",
    "running the front-end",
    "GRU tail and CTC",
)


def read_sentence(
    video: Path,
    ckpt: Checkpoint,
    roi: Roi,
    on: str = "emu",
    fp32: bool = False,
    finder: CornerFinder | None = None,
    crops_dir: Path | None = None,
    stage: Callable[[str], None] = lambda _name: None,
    tail: str = "numpy",
) -> Reading:
    """The whole app: the decoded sentence, how sure it is and where the time went.
    `stage(name)` is called as each of the STAGES steps starts (the CLI's progress).

    `Roi("default")` becomes `auto` or `none` by the frames' look (`roi.resolve_roi`);
    `crops_dir` receives the crops the model read (`image.save_crops`). `--roi auto` runs
    MTCNN's nets compiled on target `on` (`lipread.mtcnn_npu`); with `fp32` in torch float
    (`lipread.track.MtcnnDetector`, the reference). `tail="engine"` runs the whole model in
    mdla-engine (`lipread.fullmodel`: the GRU tail is a cpu partition) instead of the front-end
    there and the numpy tail here."""
    if tail not in ("numpy", "engine"):
        raise LipreadError(f"tail {tail!r}: use numpy or engine")
    if tail == "engine" and fp32:
        raise UnsupportedError("--fp32 runs the front-end in torch; --tail engine runs the whole "
                               "INT8 model in mdla-engine: choose one")  # fmt: skip
    t0 = time.perf_counter()
    stage(STAGES[0])
    frames = read_video(video)
    t1 = time.perf_counter()
    stage(STAGES[1])
    roi, warnings = resolve_roi(roi, frames.shape[1:3], video.name)
    if finder is None and not fp32:
        import lipread.roi  # looked up here: tests replace roi.mtcnn_corners

        def on_target(f: Array) -> Array:  # MTCNN's nets on the same target
            return lipread.roi.mtcnn_corners(f, on)

        finder = on_target
    x = prepare(frames, roi, ckpt.config, finder)
    if crops_dir is not None:
        try:
            save_crops(x, crops_dir)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise LipreadError(f"--save-crops {crops_dir}: {where}{exc.strerror or exc}") from exc
    t2 = time.perf_counter()
    stage(STAGES[2])
    info: dict[str, Any]
    if tail == "engine":
        from lipread.fullmodel import engine_model

        whole, info, latencies = engine_model(ckpt, on, x.shape[2])
    elif fp32:
        fn, latencies = fp32_frontend(ckpt)
        info = {"device": "cpu (torch fp32)", "target": "host"}
    else:
        fn, info, latencies = npu_frontend(ckpt, on)
    t3 = time.perf_counter()
    stage(STAGES[3])
    if tail == "engine":
        logits = whole(x)  # the whole model: the front-end and the GRU tail in mdla-engine
    else:
        feats = run_chunked(fn, x)
    t4 = time.perf_counter()
    stage(STAGES[4])
    if tail != "engine":
        logits = tail_logits(feats, ckpt.state)
    text, path = greedy_ctc(logits)
    confidence = path_confidence(logits)
    t5 = time.perf_counter()
    if confidence < LOW_CONFIDENCE:
        warnings.append(
            f"low confidence {confidence:.2f} (below {LOW_CONFIDENCE}): {video.name} may not show "
            "a mouth the way the model was trained to read one; --save-crops DIR shows what it read"
        )
    seconds = {"decode": t1 - t0, "crop": t2 - t1, "setup": t3 - t2, "frontend": t4 - t3}
    seconds |= {"tail": t5 - t4, "total": t5 - t0}
    return Reading(
        text=text,
        ctc_path=path,
        frames=x.shape[2],
        device=str(info.get("device", "?")),
        target=str(info.get("target", on)),
        frontend_ms=float(sum(latencies)),
        windows=len(latencies),
        window_ms=list(latencies),
        seconds=seconds,
        run=info,
        confidence=confidence,
        roi=roi.mode,
        synthetic_demo=bool(ckpt.meta.get("synthetic")),
        warnings=warnings,
    )
