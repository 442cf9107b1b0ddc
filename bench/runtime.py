"""Emulator speed vs LiteRT on the same int8 efficientnet_lite0 (issue 5's benchmark).

One run, one machine: the int8 model (legalized, calibrated on the sample photos) is saved as a
.mdla for mdla-engine on libneuron_emu.so and exported with export_tflite for LiteRT's
interpreter, once with its reference kernels (BUILTIN_REF) and once with its default kernels
(XNNPACK). Everything single-threaded; images/s from the median of `--repeat` runs.

    .venv/bin/python bench/runtime.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import skimage.data

from mdla_compile import CompileOptions
from mdla_compile import compile as compile_model
from mdla_quant.reference import quantize_inputs
from mdla_runtime import load, open_target, save
from mdla_runtime.export.tflite import tflite_bytes
from mdla_zoo import load_model


def litert_median_ms(blob: bytes, x: np.ndarray, resolver: str, repeat: int) -> float:
    return statistics.median(litert_times_ms(blob, x, resolver, repeat))


def litert_interpreter(blob: bytes, x: np.ndarray, resolver: str) -> Any:
    """LiteRT's interpreter on 1 thread with `x` set, invoked once untimed (XNNPACK packs its
    weights in the first invocation); `resolver` names an OpResolverType."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(
        model_content=blob,
        num_threads=1,
        experimental_op_resolver_type=getattr(OpResolverType, resolver),
    )
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it


def litert_times_ms(blob: bytes, x: np.ndarray, resolver: str, repeat: int) -> list[float]:
    """`repeat` timed invocations (ms) of LiteRT's interpreter, 1 thread, after a warm-up."""
    it = litert_interpreter(blob, x, resolver)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        it.invoke()
        times.append((time.perf_counter() - t0) * 1000)
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    model = load_model("efficientnet_lite0")
    photos = [[model.prepare(f())] for f in (skimage.data.chelsea, skimage.data.coffee)]
    qgraph = compile_model(CompileOptions(model, calib=photos, count=len(photos))).qgraph
    x = photos[0]
    device_x = quantize_inputs(qgraph, x)[qgraph.inputs[0]]
    blob = tflite_bytes(qgraph)
    with tempfile.TemporaryDirectory() as tmp:
        manifest = load(save(qgraph, Path(tmp) / "lite0.mdla"))
        emu = open_target("emu")
        emu.run(manifest, x)  # warm-up: builds the engine and emulator once
        median, best = emu.run(manifest, x, repeat=args.repeat).latency_ms
    rows = [("mdla emulator (libneuron_emu.so)", median)]
    rows.append(
        (
            "LiteRT BUILTIN_REF",
            litert_median_ms(blob, device_x, "BUILTIN_REF", max(3, args.repeat // 5)),
        )
    )
    rows.append(("LiteRT default (XNNPACK)", litert_median_ms(blob, device_x, "AUTO", args.repeat)))
    print(
        f"int8 efficientnet_lite0, {len(qgraph.ops)} ops, 224x224, 1 thread, "
        f"median of {args.repeat} runs (emulator min {best:.1f} ms)\n"
    )
    print(f"{'backend':<34} {'ms/img':>8} {'img/s':>8} {'emulator speed-up':>18}")
    for name, ms in rows:
        print(f"{name:<34} {ms:>8.1f} {1000 / ms:>8.1f} {ms / median:>17.2f}x")


if __name__ == "__main__":
    main()
