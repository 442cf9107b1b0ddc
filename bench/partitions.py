"""Partitioned models on the host emulator (issue 17, docs/partitions.md): placed with `--cpu`,
quantized (2 random calibration inputs, random weights seed 0), written as a format-3 .mdla and
run by mdla-engine partition by partition (NPU partitions on the emulated mtk-mdla, cpu ones in
the engine), 5 timed runs after 1 warm-up:

    model | partitions | ops on NPU / CPU | latency per partition on the emulator |
    emu == run_int8 | cosine vs FP32

Latency (ms) is per device: partitions x (sum of their medians / of their minima, the slowest
one's median), then the whole run's median / minimum. On a loaded machine the minima are the
steadier figure (the median of a sum is not the sum of the medians). The cosine is the engine's
(dequantized) output against the float graph on one random input (random weights: a consistency
figure, not an accuracy).

    .venv/bin/python bench/partitions.py [convnext_tiny@64 convnext_block ...]
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torchvision
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # ConvNeXt's block is the `tests` package's (its unmappable models)
    sys.path.insert(1, str(ROOT))

import mdla_ir  # noqa: E402
import mdla_quant  # noqa: E402
import mdla_runtime  # noqa: E402
from mdla_compile import CompileOptions, Event, Placed  # noqa: E402
from mdla_compile import compile as compile_model  # noqa: E402
from mdla_legalize import Placement  # noqa: E402
from mdla_zoo import Model  # noqa: E402
from tests.workbench.unmappable_models import ConvNeXtBlock  # noqa: E402
from workbench.output import each as bench_progress  # noqa: E402

CPU = ["LAYER_NORM,GELU"]  # ConvNeXt's Linears map: 1x1 CONV_2Ds in the device layout


class ArgmaxSegmenter(nn.Module):
    """A segmenter ending in argmax over its 5 class scores (the class map is the output)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU())
        self.body = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(16, 5, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = nn.functional.interpolate(self.head(self.body(self.stem(x))), scale_factor=2.0)
        return s.argmax(dim=1)


def convnext(size: int) -> Callable[[], tuple[nn.Module, tuple[int, ...]]]:
    def make() -> tuple[nn.Module, tuple[int, ...]]:
        return torchvision.models.convnext_tiny().eval(), (1, 3, size, size)

    return make


MODELS: dict[str, tuple[Callable[[], tuple[nn.Module, tuple[int, ...]]], list[str]]] = {
    "convnext_block": (lambda: (ConvNeXtBlock(32).eval(), (1, 32, 16, 16)), CPU),
    "convnext_block (+dwconv, add on cpu)": (
        lambda: (ConvNeXtBlock(32).eval(), (1, 32, 16, 16)),
        [*CPU, "DEPTHWISE_CONV_2D,ADD"],
    ),
    "segmenter + argmax@64": (lambda: (ArgmaxSegmenter().eval(), (1, 3, 64, 64)), ["ARGMAX"]),
    "convnext_tiny@64": (convnext(64), CPU),
    "convnext_tiny@96": (convnext(96), CPU),
}


def cosine(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    return float(np.dot(a.ravel(), b.ravel()) / np.linalg.norm(a) / np.linalg.norm(b))


def similarity(qgraph: mdla_ir.Graph, f: np.ndarray[Any, Any], q: np.ndarray[Any, Any]) -> str:
    """The cosine, or for a class map (an ARGMAX output) the share of pixels of one class."""
    if qgraph.ops[-1].kind is mdla_ir.OpKind.ARGMAX:
        return f"class map: {100 * float(np.mean(f == q)):.1f}% of pixels agree"
    return f"{cosine(f, q):.4f}"


def row(name: str) -> str:
    make, cpu = MODELS[name]
    torch.manual_seed(0)
    module, shape = make()
    model = Model(name.split()[0].split("@")[0], module, (torch.zeros(shape),), preprocess=None)
    rng = np.random.default_rng(0)
    calib = [[rng.uniform(-1, 1, shape).astype(np.float32)] for _ in range(2)]
    placements: list[Placement] = []

    def keep(event: Event) -> None:
        if isinstance(event, Placed):
            placements.append(event.placement)

    options = CompileOptions(model, calib=calib, count=len(calib), cpu=tuple(cpu))
    compiled = compile_model(options, on_event=keep)
    (placed,), qgraph = placements, compiled.qgraph
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.mdla"
        compiled.save(path)
        r = mdla_runtime.open_target("emu").run(path, [x], repeat=5, warmup=1)
    (want,) = mdla_quant.run_int8(qgraph, [x], raw=True)
    exact = np.array_equal(r.raw_outputs[0], want)
    (f,) = mdla_ir.run_float(placed.graph, [x])
    per: dict[str, list[tuple[float, float]]] = {}
    for p in r.partitions:
        per.setdefault(p.device, []).append((p.ms, p.min_ms))
    latency = "; ".join(
        f"{d} {len(t)} x (sum {sum(m for m, _ in t):.2f} / {sum(m for _, m in t):.2f}, "
        f"slowest {max(m for m, _ in t):.2f})"
        for d, t in per.items()
    )
    npu = placed.count("mtk-mdla")
    return (
        f"| {name} | {len(r.partitions)} | {npu} / {len(placed.ops) - npu} | {latency}; "
        f"run {r.latency_ms[0]:.2f} / {r.latency_ms[1]:.2f} | {'yes' if exact else 'NO'} | "
        f"{similarity(qgraph, f, r.outputs[0])} |"
    )


def main() -> None:
    print(
        "| model | partitions | ops on NPU / CPU | latency per partition on the emulator (ms) "
        "| emu == run_int8 | cosine vs FP32 |"
    )
    print("|---|---|---|---|---|---|")
    for name in bench_progress(sys.argv[1:] or MODELS, "models"):
        print(row(name), flush=True)


if __name__ == "__main__":
    main()
