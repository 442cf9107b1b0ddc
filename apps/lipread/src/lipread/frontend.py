"""The STCNN front-end through the project pipeline, compiled once and cached by weights hash.

    compile: FrontEnd (torch) -> mdla_compile.compile (import, legalize for mdla3.5, quantize
             on the calibration clips) -> Compiled.save(<cache>/<key>.mdla)
    run:     mdla_runtime.load + target.run(devices=("mtk-mdla",)): every op on the NPU

Compiling needs torch; running a cached (or the shipped demo) manifest does not. The cache is
$LIPREAD_CACHE, else ~/.cache/lipread; the key is the weights' SHA-256 and the clip length.

Clip length: the front-end is compiled for a static T (75 frames, GRID's 3 s). `run_chunked`
handles any length L. L > T: windows of T frames overlapping by 2·HALO, each keeping only the
frames at least HALO from an inner window edge; the last window is aligned to the clip's end.
The front-end's temporal receptive field is ±3 frames (three k=3 convs), so HALO = 3 makes this
exactly (bit for bit, in int8 too) the features of one run over all L frames. L < T: the clip is
padded to T by repeating its last frame (a still mouth) and the first L feature frames are kept;
only the last ≤ 3 of them can differ from a true length-L run (they see the still frames rather
than the zero padding).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from lipread.checkpoint import Checkpoint
from lipread.errors import LipreadError, MissingDependencyError, UnsupportedError
from mdla_ir.devices import NPU
from mdla_runtime.atomic import write_atomic
from mdla_runtime.interrupt import check
from mdla_runtime.jsontext import dumps

Array = np.ndarray[Any, Any]
FrontEndFn = Callable[[Array], Array]  # (1, 3, T, H, W) -> (1, C, T, h, w)
CLIP_FRAMES = 75
HALO = 3
CACHE_VERSION = 2  # 2: manifest format 2 (a cached format-1 file would be refused)


def cache_dir() -> Path:
    return Path(os.environ.get("LIPREAD_CACHE") or Path.home() / ".cache" / "lipread")


def cache_key(ckpt: Checkpoint, frames: int = CLIP_FRAMES) -> str:
    return f"{ckpt.sha256[:20]}-T{frames}-v{CACHE_VERSION}"


def shipped_manifest(ckpt: Checkpoint, frames: int = CLIP_FRAMES) -> Path | None:
    """A precompiled manifest shipped beside the checkpoint (the demo model's), if it matches."""
    path = ckpt.path.with_name(f"{ckpt.path.stem}.T{frames}.mdla")
    info = path.with_suffix(".json")
    ok = path.is_file() and info.is_file()
    return (
        path if ok and json.loads(info.read_text()).get("key") == cache_key(ckpt, frames) else None
    )


def cached_manifest(ckpt: Checkpoint, frames: int = CLIP_FRAMES) -> Path | None:
    """The cached compile for these weights (user-calibrated first), else the shipped one."""
    path = cache_dir() / f"{cache_key(ckpt, frames)}.mdla"
    return path if path.is_file() else shipped_manifest(ckpt, frames)


def torch_frontend(ckpt: Checkpoint) -> Any:
    """The FP32 torch FrontEnd with the checkpoint's conv weights (needs torch)."""
    try:
        import torch

        from lipread.model import FrontEnd
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(
            "compiling the front-end or --fp32 needs torch: pip install torch "
            "(the extra `mdla-lipread[torch]`)"
        ) from exc
    fe = FrontEnd(ckpt.config)
    fe.load_state_dict({k: torch.from_numpy(v) for k, v in ckpt.state.items() if "conv" in k})
    return fe.eval()


def compile_frontend(
    ckpt: Checkpoint,
    calibration: Iterable[Array],
    out: Path | None = None,
    frames: int = CLIP_FRAMES,
    source: str = "synthetic",
) -> tuple[Path, Any]:
    """Compile and save the INT8 front-end; returns the manifest path and the int8 graph."""
    key = cache_key(ckpt, frames)
    return compile_lipnet(
        ckpt, calibration, frames, out or cache_dir() / f"{key}.mdla", key, source,
        Compiled("front-end", "the INT8 front-end", NPU, "lipread.model:FrontEnd"),
    )  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Compiled:
    """What `compile_lipnet` builds, as its messages and the manifest's provenance name it."""

    name: str  # "front-end": "<name> INT8 compile failed"
    calibrated: str  # "no clips to calibrate <calibrated> on"
    devices: str  # "<name> does not compile for <devices>"
    spec: str  # provenance.spec


def compile_lipnet(
    ckpt: Checkpoint,
    calibration: Iterable[Array],
    frames: int,
    path: Path,
    key: str,
    source: str,
    what: Compiled,
    extend: Callable[[Any], Any] = lambda graph: graph,
) -> tuple[Path, Any]:
    """The LipNet front-end for `frames`-frame clips through `mdla_compile.compile`: import,
    legalize for mtk-mdla, `extend` the device graph (`fullmodel` appends the tail), quantize
    on `calibration`, save to `path` with a JSON beside it naming the cache key and the
    calibration source."""
    import torch

    import mdla_compile
    import mdla_ir
    import mdla_legalize
    import mdla_quant
    import mdla_runtime
    from mdla_zoo import Model

    cfg = ckpt.config
    example = torch.zeros(1, 3, frames, cfg.height, cfg.width)
    clips = [[pad_clip(c, frames)] for c in calibration]
    if not clips:
        raise LipreadError(f"calibration: no clips to calibrate {what.calibrated} on")
    path.parent.mkdir(parents=True, exist_ok=True)
    model = Model(what.spec, torch_frontend(ckpt), (example,), preprocess=None)
    options = mdla_compile.CompileOptions(model, calib=clips, count=len(clips), extend=extend)
    try:
        compiled = mdla_compile.compile(options)
        compiled.save(path, before_write=check)  # a Ctrl-C remembered meanwhile: no entry
    except (mdla_ir.IRError, mdla_legalize.LegalizeError) as exc:
        raise UnsupportedError(f"{what.name} does not compile for {what.devices}: {exc}") from exc
    except (
        mdla_quant.QuantError,
        mdla_runtime.ManifestError,
        mdla_runtime.LoweringError,
        mdla_compile.CompileError,
    ) as exc:
        raise LipreadError(f"{what.name} INT8 compile failed: {exc}") from exc
    qgraph = compiled.qgraph
    info = {"key": key, "calibration": source, "clips": len(clips)}
    write_atomic(path.with_suffix(".json"), dumps(info, indent=1).encode())
    return path, qgraph


def open_manifest(path: Path, spec: str) -> tuple[Any, Any]:
    """The manifest at `path` and the target `spec`, their errors as lipread's."""
    import mdla_runtime
    from lipread.errors import DeviceError

    try:
        return mdla_runtime.load(path), mdla_runtime.open_target(spec)
    except mdla_runtime.ManifestError as exc:
        raise LipreadError(f"{path}: {exc}") from exc
    except mdla_runtime.TargetError as exc:
        raise DeviceError(str(exc)) from exc


def target_runner(
    path: Path, spec: str, what: str, partitions: bool = False
) -> tuple[Callable[[Array], Array], dict[str, Any], list[float]]:
    """A function running the manifest at `path` on target `spec` (its input -> its first
    output, float32), its run info (manifest, target, devices; after a run the device and, with
    `partitions`, each partition's device, ops and ms) and its latencies. Target errors are
    DeviceErrors naming `what`."""
    import mdla_runtime
    from lipread.errors import DeviceError

    manifest, target = open_manifest(path, spec)
    latencies: list[float] = []
    info: dict[str, Any] = {"manifest": str(path), "target": spec, "devices": [NPU]}

    def run(x: Array) -> Array:
        try:
            result = target.run(manifest, [x], devices=(NPU,))
        except mdla_runtime.TargetError as exc:
            raise DeviceError(f"{what} on {spec}: {exc}") from exc
        latencies.append(result.latency_ms[0])
        info["device"] = result.device
        if partitions:
            info["partitions"] = [
                {"device": p.device, "ops": p.ops, "ms": round(p.ms, 3)} for p in result.partitions
            ]
        return np.asarray(result.outputs[0], dtype=np.float32)

    return run, info, latencies


def pad_clip(x: Array, frames: int) -> Array:
    """(1, 3, L, H, W) with L <= frames -> (1, 3, frames, H, W), the last frame repeated."""
    if x.shape[2] >= frames:
        return x[:, :, :frames]
    extra = np.repeat(x[:, :, -1:], frames - x.shape[2], axis=2)
    return np.concatenate([x, extra], axis=2)


def windows(length: int, frames: int = CLIP_FRAMES, halo: int = HALO) -> list[tuple[int, int, int]]:
    """(start, keep_from, keep_to) per window: absolute frame indices, keep_to exclusive."""
    if length <= frames:
        return [(0, 0, length)]
    step = frames - 2 * halo
    if step <= 0:
        raise ValueError(f"clip length {frames} is too short for a halo of {halo}")
    out: list[tuple[int, int, int]] = []
    start = 0
    while True:
        last = start + frames >= length
        if last:
            start = length - frames
        keep_from = out[-1][2] if out else 0
        keep_to = length if last else start + frames - halo
        out.append((start, keep_from, keep_to))
        if last:
            return out
        start += step


def run_chunked(fn: FrontEndFn, x: Array, frames: int = CLIP_FRAMES, halo: int = HALO) -> Array:
    """Features of a clip of any length through a front-end compiled for `frames` frames."""
    length = x.shape[2]
    if length <= frames:
        return fn(pad_clip(x, frames))[:, :, :length]
    parts = []
    for start, keep_from, keep_to in windows(length, frames, halo):
        feats = fn(x[:, :, start : start + frames])
        parts.append(feats[:, :, keep_from - start : keep_to - start])
    return np.concatenate(parts, axis=2)
