"""Video in, sentence out: decode, mouth crop, front-end (NPU or FP32), numpy tail, greedy CTC."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lipread.checkpoint import Checkpoint
from lipread.config import LipNetConfig
from lipread.errors import DeviceError, LipreadError
from lipread.frontend import (
    CLIP_FRAMES,
    FrontEndFn,
    cached_manifest,
    compile_frontend,
    run_chunked,
    torch_frontend,
)
from lipread.grid import greedy_ctc
from lipread.image import crop, resize, to_model_input
from lipread.render import render_clip, spoken_sentence
from lipread.roi import CornerFinder, Roi, mouth_boxes
from lipread.tail import tail_logits
from lipread.video import read_video

Array = np.ndarray[Any, Any]
CALIBRATION_SPEAKERS = 20000  # synthetic speakers 20000.. calibrate; never trained or benched


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

    @property
    def ms_per_frame(self) -> float:
        return self.frontend_ms / max(self.frames, 1)

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
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
    import mdla_runtime

    manifest_path = cached_manifest(ckpt, frames)
    if manifest_path is None:
        manifest_path, _ = compile_frontend(ckpt, synthetic_calibration(ckpt.config), frames=frames)
    try:
        manifest = mdla_runtime.load(manifest_path)
        target = mdla_runtime.open_target(spec)
    except mdla_runtime.ManifestError as exc:
        raise LipreadError(f"{manifest_path}: {exc}") from exc
    except mdla_runtime.TargetError as exc:
        raise DeviceError(str(exc)) from exc
    latencies: list[float] = []
    info = {"manifest": str(manifest_path), "target": spec, "devices": ["mtk-mdla"]}

    def run(x: Array) -> Array:
        try:
            result = target.run(manifest, [x], devices=("mtk-mdla",))
        except mdla_runtime.TargetError as exc:
            raise DeviceError(f"front-end on {spec}: {exc}") from exc
        latencies.append(result.latency_ms[0])
        info["device"] = result.device
        return np.asarray(result.outputs[0], dtype=np.float32)

    return run, info, latencies


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


def read_sentence(
    video: Path,
    ckpt: Checkpoint,
    roi: Roi,
    on: str = "emu",
    fp32: bool = False,
    finder: CornerFinder | None = None,
) -> Reading:
    """The whole app: the decoded sentence and where the time went."""
    t0 = time.perf_counter()
    frames = read_video(video)
    t1 = time.perf_counter()
    x = prepare(frames, roi, ckpt.config, finder)
    t2 = time.perf_counter()
    if fp32:
        fn, latencies = fp32_frontend(ckpt)
        info: dict[str, Any] = {"device": "cpu (torch fp32)", "target": "host"}
    else:
        fn, info, latencies = npu_frontend(ckpt, on)
    t3 = time.perf_counter()
    feats = run_chunked(fn, x)
    t4 = time.perf_counter()
    text, path = greedy_ctc(tail_logits(feats, ckpt.state))
    t5 = time.perf_counter()
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
    )
