"""The whole LipNet through mdla-engine: front-end INT8 on mtk-mdla, the GRU tail in float32 on
the CPU, in one manifest (issue 17), so a phone runs it without Python or numpy.

    compile: FrontEnd (torch) -> from_torch -> legalize(mdla3.5)    the NPU partition
             + tail ops built here in mdla_ir (torch.fx cannot trace nn.GRU into ops):
               TRANSPOSE (T, h, w, C) -> (T, C, h, w); RESHAPE -> (T, C·h·w)    (int8, cpu)
               GRU gru1, GRU gru2 (bidirectional), FULLY_CONNECTED FC -> logits (float32, cpu)
             -> quantize (the tail becomes DEQUANTIZE + float32 ops: mdla_quant.float_region)
             -> save(<cache>/<key>-full.mdla): format 3, partitions [mtk-mdla] [cpu]
    run:     target.run(manifest, [clip]) -> logits (T, classes) float32, straight from the
             engine's cpu partition (csrc/cpu/gru.c; bit for bit mdla_quant.run_int8)

The flatten is LipNet-PyTorch's `permute(2, 0, 1, 3, 4).reshape(t, b, c·h·w)`: per frame the
channels, then rows, then columns. On the device the front-end's output is NHWC frames
(T, h, w, C), so TRANSPOSE (0, 3, 1, 2) and RESHAPE give exactly that order; both move int8
codes unchanged (the quantizer ties their parameters), and the DEQUANTIZE after them is the one
the numpy tail's input went through on the host.

The GRU runs over the whole clip (the backward direction reads it from its end), so the full
model is compiled for the clip's own length L (cached per length), not windowed as the
front-end alone is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from lipread.checkpoint import Checkpoint
from lipread.frontend import Compiled, cache_dir, cache_key, compile_lipnet, target_runner

Array = np.ndarray[Any, Any]
FULL_VERSION = 1  # bump when the full manifest's graph changes
TAIL_OPS = ("tail.transpose", "tail.flatten", "gru1", "gru2", "FC")


def full_key(ckpt: Checkpoint, frames: int) -> str:
    return f"{cache_key(ckpt, frames)}-full{FULL_VERSION}"


def full_manifest_path(ckpt: Checkpoint, frames: int) -> Path:
    return cache_dir() / f"{full_key(ckpt, frames)}.mdla"


def _stacked(state: dict[str, Array], name: str, param: str) -> Array:
    """nn.GRU's `<name>.<param>_l0` and `_l0_reverse`, stacked as [2, ...] float32."""
    keys = (f"{name}.{param}_l0", f"{name}.{param}_l0_reverse")
    return np.stack([np.asarray(state[k], np.float32) for k in keys])


def with_tail(frontend: Any, state: dict[str, Array]) -> Any:
    """The legalized (NHWC) float front-end graph with LipNet's tail appended, placed on the
    CPU: its output becomes `logits` (T, classes)."""
    from mdla_ir import Op, OpKind, Tensor, verify

    feats = frontend.outputs[0]
    steps, h, w, c = frontend.tensors[feats].shape
    tensors = dict(frontend.tensors)

    def add(name: str, shape: tuple[int, ...], data: Array | None = None) -> str:
        tensors[name] = Tensor(name, shape, "float32", data)
        return name

    hidden = state["gru1.weight_hh_l0"].shape[1]
    classes = state["FC.weight"].shape[0]
    add("tail.chw", (steps, c, h, w))
    add("tail.features", (steps, c * h * w))
    ops = [
        Op(OpKind.TRANSPOSE, "tail.transpose", (feats,), ("tail.chw",), {"perm": (0, 3, 1, 2)}),
        Op(OpKind.RESHAPE, "tail.flatten", ("tail.chw",), ("tail.features",),
           {"shape": (steps, c * h * w)}),
    ]  # fmt: skip
    x = "tail.features"
    for name in ("gru1", "gru2"):
        params = tuple(
            add(f"{name}.{p}", arr.shape, arr)
            for p in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            for arr in [_stacked(state, name, p)]
        )
        add(name, (steps, 2 * hidden))
        ops.append(Op(OpKind.GRU, name, (x, *params), (name,), {"bidirectional": True}))
        x = name
    fc_w = add("FC.weight", (classes, 2 * hidden), np.asarray(state["FC.weight"], np.float32))
    fc_b = add("FC.bias", (classes,), np.asarray(state["FC.bias"], np.float32))
    add("logits", (steps, classes))
    ops.append(Op(OpKind.FULLY_CONNECTED, "FC", (x, fc_w, fc_b), ("logits",), {"fuse": "NONE"}))
    boundary = {k: v for k, v in frontend.boundary.items() if k != feats}
    prov = dataclasses.replace(
        frontend.provenance, cpu_ops=(*frontend.provenance.cpu_ops, *TAIL_OPS)
    )
    graph = frontend.with_(
        tensors=tensors,
        ops=(*frontend.ops, *ops),
        outputs=("logits",),
        boundary=boundary,
        provenance=prov,
    )
    verify(graph)
    return graph


def compile_full(
    ckpt: Checkpoint,
    calibration: Iterable[Array],
    frames: int,
    out: Path | None = None,
    source: str = "synthetic",
) -> tuple[Path, Any]:
    """Compile and save the whole model for clips of `frames` frames; returns the manifest path
    and the int8 graph (its tail float32)."""
    return compile_lipnet(
        ckpt, calibration, frames, out or full_manifest_path(ckpt, frames),
        full_key(ckpt, frames), source,
        Compiled("LipNet", "the INT8 model", "mtk-mdla + cpu", "lipread.model:LipNet"),
        lambda device_graph: with_tail(device_graph, ckpt.state),
    )  # fmt: skip


def engine_model(
    ckpt: Checkpoint, spec: str, frames: int, calibration: Iterable[Array] | None = None
) -> tuple[Any, dict[str, Any], list[float]]:
    """A function running the whole model (clip (1, 3, frames, H, W) -> logits (frames,
    classes)) on target `spec`, its run info and latencies; compiles on first use."""
    path = full_manifest_path(ckpt, frames)
    if not path.is_file():
        if calibration is None:
            from lipread.pipeline import synthetic_calibration

            calibration = synthetic_calibration(ckpt.config)
        path, _ = compile_full(ckpt, calibration, frames)
    run, info, latencies = target_runner(path, spec, "LipNet", partitions=True)
    info["tail"] = "engine"
    return run, info, latencies
