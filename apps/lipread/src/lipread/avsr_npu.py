"""The auto-avsr front-end compiled and run through the pipeline (`lipread.avsr` says how).

    compile: StemConv, DeviceTrunk -> mdla_ir.from_torch -> mdla_legalize (mdla3.5)
             -> mdla_quant, 99.999th-percentile ranges over every WINDOW-frame window of the
             calibration clips (the trunk calibrated on the FP32 stem's outputs) -> two
             manifests
    run:     stem on mtk-mdla -> (1, 64, W, 44, 44) -> the host views the frames as a batch
             (W, 64, 44, 44) -> trunk on mtk-mdla -> (W, 512)

Compiled for windows of WINDOW frames; `frontend.run_chunked` runs any length with HALO = 2
(the stem's 5-tap temporal kernel sees +-2 frames; the trunk is per frame), exactly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lipread.avsr import SIZE, AvsrFrontEnd, DeviceTrunk, StemConv
from lipread.checkpoint import weights_hash
from lipread.errors import DeviceError, LipreadError, UnsupportedError
from lipread.frontend import cache_dir, pad_clip
from mdla_ir.devices import DEFAULT_TARGET, NPU
from mdla_runtime.interrupt import check

Array = np.ndarray[Any, Any]
WINDOW = 25
HALO = 2
# 3: every window of each calibration clip (2 read only its first WINDOW frames: mostly the
# closed mouth before the first word) and percentile 99.999 ranges (2: MSE). Held-out 75-frame
# clips, random weights (bench/lipread.py): v2 0.9926 / 0.9816 / 0.9964, v3 with 12 clips
# 0.9978 / 0.9956 / 0.9967 (bench/README.md has the steps between).
VERSION = 3
PERCENTILE = 99.999


def cache_paths(fe: AvsrFrontEnd, frames: int = WINDOW) -> tuple[Path, Path]:
    state = {k: v.detach().numpy() for k, v in fe.state_dict().items()}
    key = f"avsr-{weights_hash(state)[:20]}-T{frames}-v{VERSION}"
    return cache_dir() / f"{key}.stem.mdla", cache_dir() / f"{key}.trunk.mdla"


def _compile(module: torch.nn.Module, example: torch.Tensor, calib: list[Array], out: Path) -> None:
    import mdla_ir
    import mdla_legalize
    import mdla_quant
    import mdla_runtime

    try:
        graph = mdla_ir.from_torch(module, (example,))
        device_graph = mdla_legalize.legalize(graph, mdla_legalize.load_target(DEFAULT_TARGET))
        config = mdla_quant.QuantConfig(method="percentile", percentile=PERCENTILE)
        qgraph = mdla_quant.quantize(device_graph, [[c] for c in calib], config)
        out.parent.mkdir(parents=True, exist_ok=True)
        check()  # a Ctrl-C remembered during the compile's imports: no cache entry
        mdla_runtime.save(qgraph, out)
    except (mdla_ir.IRError, mdla_legalize.LegalizeError) as exc:
        raise UnsupportedError(f"avsr front-end does not compile for mtk-mdla: {exc}") from exc
    except (mdla_quant.QuantError, mdla_runtime.ManifestError, mdla_runtime.LoweringError) as exc:
        raise LipreadError(f"avsr front-end INT8 compile failed: {exc}") from exc


def compile_avsr(
    fe: AvsrFrontEnd, calibration: list[Array], frames: int = WINDOW
) -> tuple[Path, Path]:
    """Compile the stem and the trunk for `frames`-frame windows, calibrated on every window
    of the clips (1, 1, L, 88, 88); returns the two manifest paths (cached by weights hash)."""
    stem_path, trunk_path = cache_paths(fe, frames)
    if stem_path.is_file() and trunk_path.is_file():
        return stem_path, trunk_path
    stem, trunk = StemConv(fe).eval(), DeviceTrunk(fe).eval()
    clips = [w for c in calibration for w in calibration_windows(c, frames)]
    if not clips:
        raise LipreadError("avsr front-end: no calibration clips")
    _compile(stem, torch.zeros(1, 1, frames, SIZE, SIZE), clips, stem_path)
    with torch.no_grad():
        mids = [frames_batch(stem(torch.from_numpy(c)).numpy()) for c in clips]
    _compile(trunk, torch.from_numpy(mids[0]), mids, trunk_path)
    return stem_path, trunk_path


def calibration_windows(clip: Array, frames: int = WINDOW) -> list[Array]:
    """A clip (1, 1, L, h, w) as consecutive `frames`-frame windows, the last padded by
    repeating its final frame: calibration sees the whole clip, not its first window only."""
    return [pad_clip(clip[:, :, s : s + frames], frames) for s in range(0, clip.shape[2], frames)]


def frames_batch(y: Array) -> Array:
    """(1, 64, W, h, w) -> (W, 64, h, w): the clip's frames as the trunk's batch."""
    return np.ascontiguousarray(y[0].transpose(1, 0, 2, 3))


def npu_avsr(
    fe: AvsrFrontEnd, spec: str, frames: int = WINDOW, calibration: list[Array] | None = None
) -> tuple[Callable[[Array], Array], list[float]]:
    """A function (1, 1, W, 88, 88) -> (1, 512, W) running both graphs on the target, and the
    device milliseconds per window (stem + trunk)."""
    import mdla_runtime

    stem_path, trunk_path = compile_avsr(fe, calibration or [], frames)
    try:
        stem, trunk = mdla_runtime.load(stem_path), mdla_runtime.load(trunk_path)
        target = mdla_runtime.open_target(spec)
    except mdla_runtime.ManifestError as exc:
        raise LipreadError(f"{stem_path}: {exc}") from exc
    except mdla_runtime.TargetError as exc:
        raise DeviceError(str(exc)) from exc
    latencies: list[float] = []

    def run(x: Array) -> Array:
        try:
            a = target.run(stem, [x], devices=(NPU,))
            b = target.run(trunk, [frames_batch(np.asarray(a.outputs[0]))], devices=(NPU,))
        except mdla_runtime.TargetError as exc:
            raise DeviceError(f"avsr front-end on {spec}: {exc}") from exc
        latencies.append(a.latency_ms[0] + b.latency_ms[0])
        return np.asarray(b.outputs[0], np.float32).T[None]

    return run, latencies


def fp32_avsr(fe: AvsrFrontEnd) -> tuple[Callable[[Array], Array], list[float]]:
    """The published module in torch: (1, 1, W, 88, 88) -> (1, 512, W), wall milliseconds."""
    latencies: list[float] = []

    def run(x: Array) -> Array:
        start = time.perf_counter()
        with torch.no_grad():
            out = fe(torch.from_numpy(np.ascontiguousarray(x)))[0].numpy().T[None]
        latencies.append((time.perf_counter() - start) * 1e3)
        return out  # type: ignore[no-any-return]

    return run, latencies
