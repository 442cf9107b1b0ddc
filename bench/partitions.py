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

A second table sets the engine against LiteRT on the same partitioned graph's `.tflite` export
(`tflite_bytes`: the CPU partitions' ops as TFLite builtins), one thread everywhere, in CPU
time per inference (ms), which the other jobs of a shared machine disturb less than the wall:

    model | engine CPU | NPU / cpu partitions (sum of minima, wall) | XNNPACK CPU |
    LiteRT default kernels CPU | engine / XNNPACK | engine / LiteRT default | load

The engine's is its process's CPU time (RUSAGE_CHILDREN) at R + 1 runs less at 2 runs, over
R - 1 (the set-up, reading the file and compiling the NPU partitions, cancels), R = `--runs` or
more for a small model (about 200 ms of runs, so the difference stands above the set-up's own
variation);
LiteRT's the interpreter's (time.process_time) over `--runs` invocations after a warm-up one,
with XNNPACK (OpResolverType.AUTO, as bench/perf.py) and without (its optimized builtin
kernels); `load` is os.getloadavg()[0] at the row's end.

    .venv/bin/python bench/partitions.py [convnext_tiny@224 convnext_block ...] [--runs 10]
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torchvision
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
# ConvNeXt's block is the `tests` package's (its unmappable models); runtime.py is a sibling
for _path in (ROOT, ROOT / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(1, str(_path))


from runtime import litert_interpreter  # noqa: E402

import mdla_ir  # noqa: E402
import mdla_quant  # noqa: E402
import mdla_runtime  # noqa: E402
from mdla_compile import CompileOptions, Event, Placed  # noqa: E402
from mdla_compile import compile as compile_model  # noqa: E402
from mdla_legalize import Placement  # noqa: E402
from mdla_quant.reference import quantize_inputs  # noqa: E402
from mdla_runtime.export.tflite import tflite_bytes  # noqa: E402
from mdla_zoo import Model  # noqa: E402
from tests.workbench.unmappable_models import ConvNeXtBlock  # noqa: E402
from workbench.output import each as bench_progress  # noqa: E402
from workbench.sweep.threads import scoped_env  # noqa: E402

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
    "convnext_tiny@224": (convnext(224), CPU),
}
THREAD_VARS = {"MDLA_EMU_THREADS": "1", "MDLA_CPU_THREADS": "1"}
RESOLVERS = {"xnnpack": "AUTO", "litert": "BUILTIN_WITHOUT_DEFAULT_DELEGATES"}


def cosine(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    return float(np.dot(a.ravel(), b.ravel()) / np.linalg.norm(a) / np.linalg.norm(b))


def similarity(qgraph: mdla_ir.Graph, f: np.ndarray[Any, Any], q: np.ndarray[Any, Any]) -> str:
    """The cosine, or for a class map (an ARGMAX output) the share of pixels of one class."""
    if qgraph.ops[-1].kind is mdla_ir.OpKind.ARGMAX:
        return f"class map: {100 * float(np.mean(f == q)):.1f}% of pixels agree"
    return f"{cosine(f, q):.4f}"


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def engine_cpu_ms(path: Path, x: np.ndarray[Any, Any], runs: int) -> float:
    """The engine's CPU time per inference (ms), one thread: its process's CPU at runs + 1
    runs less at 2 runs (one warm-up each), over runs - 1."""
    if runs < 2:
        raise ValueError(f"--runs {runs}: the engine's CPU time needs at least 2 runs")
    target = mdla_runtime.open_target("emu")
    with scoped_env(THREAD_VARS):
        spent = []
        for repeat in (1, runs):
            t0 = children_cpu_s()
            target.run(path, [x], repeat=repeat, warmup=1)
            spent.append(children_cpu_s() - t0)
    return (spent[1] - spent[0]) * 1000 / (runs - 1)


def litert_cpu_ms(blob: bytes, codes: np.ndarray[Any, Any], resolver: str, runs: int) -> float:
    """LiteRT's CPU time per invocation (ms) on 1 thread, after one untimed invocation (XNNPACK
    packs its weights in the first)."""
    it = litert_interpreter(blob, codes, resolver)
    t0 = time.process_time()
    for _ in range(runs):
        it.invoke()
    return (time.process_time() - t0) * 1000 / runs


def compile_placed(name: str) -> tuple[Any, Placement, np.ndarray[Any, Any]]:
    """The model `name` placed with its `--cpu` kinds and quantized: (compiled, placement, a
    random input); random weights (seed 0), 2 random calibration inputs then the input (seed 0)."""
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
    (placed,) = placements
    return compiled, placed, rng.uniform(-1, 1, shape).astype(np.float32)


def partition_latency(r: Any) -> tuple[str, dict[str, float]]:
    """The per-device latency text of the first table, and each device's sum of minima."""
    per: dict[str, list[tuple[float, float]]] = {}
    for p in r.partitions:
        per.setdefault(p.device, []).append((p.ms, p.min_ms))
    text = "; ".join(
        f"{d} {len(t)} x (sum {sum(m for m, _ in t):.2f} / {sum(m for _, m in t):.2f}, "
        f"slowest {max(m for m, _ in t):.2f})"
        for d, t in per.items()
    )
    return text, {d: sum(m for _, m in t) for d, t in per.items()}


def cpu_times(
    compiled: Any, x: np.ndarray[Any, Any], runs: int
) -> tuple[Any, float, dict[str, float]]:
    """(the engine's timed run, its CPU ms per inference, LiteRT's per resolver) of a compiled
    model on input `x`, one thread everywhere."""
    qgraph = compiled.qgraph
    codes = quantize_inputs(qgraph, [x])[qgraph.inputs[0]]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.mdla"
        compiled.save(path)
        r = mdla_runtime.open_target("emu").run(path, [x], repeat=5, warmup=1)
        # enough runs for the difference to stand above the set-up's variation (~200 ms)
        engine = engine_cpu_ms(path, x, max(runs, math.ceil(200 / max(r.latency_ms[0], 0.01))))
    blob = tflite_bytes(qgraph)
    lite = {k: litert_cpu_ms(blob, codes, v, runs) for k, v in RESOLVERS.items()}
    return r, engine, lite


def rows(name: str, runs: int) -> tuple[str, str]:
    """The model's row of each table."""
    compiled, placed, x = compile_placed(name)
    qgraph = compiled.qgraph
    r, engine, lite = cpu_times(compiled, x, runs)
    (want,) = mdla_quant.run_int8(qgraph, [x], raw=True)
    exact = np.array_equal(r.raw_outputs[0], want)
    (f,) = mdla_ir.run_float(placed.graph, [x])
    latency, minima = partition_latency(r)
    npu = placed.count("mtk-mdla")
    first = (
        f"| {name} | {len(r.partitions)} | {npu} / {len(placed.ops) - npu} | {latency}; "
        f"run {r.latency_ms[0]:.2f} / {r.latency_ms[1]:.2f} | {'yes' if exact else 'NO'} | "
        f"{similarity(qgraph, f, r.outputs[0])} |"
    )
    split = " / ".join(f"{minima.get(d, 0.0):.2f}" for d in ("mtk-mdla", "cpu"))
    second = (
        f"| {name} | {engine:.2f} | {split} | {lite['xnnpack']:.2f} | {lite['litert']:.2f} | "
        f"{engine / lite['xnnpack']:.2f} | {engine / lite['litert']:.2f} | "
        f"{os.getloadavg()[0]:.1f} |"
    )
    return first, second


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help=f"of: {', '.join(MODELS)} (default: all)")
    parser.add_argument("--runs", type=int, default=10, help="timed runs for the CPU times")
    args = parser.parse_args(argv)
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        parser.error(f"unknown model {unknown[0]!r}; models: {', '.join(MODELS)}")
    if args.runs < 2:
        parser.error(f"--runs {args.runs}: at least 2 (the engine's CPU time is a difference)")
    second = []
    print(
        "| model | partitions | ops on NPU / CPU | latency per partition on the emulator (ms) "
        "| emu == run_int8 | cosine vs FP32 |"
    )
    print("|---|---|---|---|---|---|")
    for name in bench_progress(args.models or list(MODELS), "models"):
        first, row2 = rows(name, args.runs)
        print(first, flush=True)
        second.append(row2)
    print(
        f"\nCPU ms per inference, 1 thread, at least {args.runs} runs; {os.cpu_count()} CPUs\n"
        "| model | engine | NPU / cpu partitions (sum of minima, wall) | XNNPACK "
        "| LiteRT default kernels | engine / XNNPACK | engine / LiteRT default | load |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(second))


if __name__ == "__main__":
    main()
