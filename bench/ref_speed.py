"""`run_int8` (the numpy int8 reference) against the emulator in CPU time per image (issue 19).

On a shared machine a wall-clock best-of favours the emulator: an 8 ms run often fits one
quiet scheduler slice, a 50 ms Python run rarely does. CPU time is what each one costs:
`run_int8` by `time.process_time` (best of --repeat), the emulator by the mdla-engine child's
user + system time between a 40-run and an 8-run invocation, divided by 32 (so the engine's
start, compile and warm-up cancel; least of three tries). One thread everywhere. The wall
best-of of both is printed beside it.

    .venv/bin/python bench/ref_speed.py [--models mobilenet_v2,resnet18] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from accuracy import PHOTOS, crops
from perf import MODELS, REAL_WEIGHTS, THREAD_VARS, mdla_compile

from mdla_quant import run_int8
from mdla_runtime import load, open_target
from mdla_zoo import load_model, recalibrate_batchnorm


def child_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def emu_ms(manifest: Any, x: np.ndarray) -> tuple[float, float]:
    """(CPU ms per image, wall best ms) of the emulator on `x`."""
    target, cpu, wall = open_target("emu"), [], []
    # untimed: the first run may build the engine (a child's compile would count in one
    # invocation and not the other, and the difference could come out negative)
    target.run(manifest, x, repeat=1, warmup=0)
    for _ in range(3):
        c0 = child_cpu_s()
        short = target.run(manifest, x, repeat=8, warmup=1)
        c1 = child_cpu_s()
        long = target.run(manifest, x, repeat=40, warmup=1)
        cpu.append(((child_cpu_s() - c1) - (c1 - c0)) / 32 * 1000)
        wall += [short.latency_ms[1], long.latency_ms[1]]
    return min(cpu), min(wall)


def ref_ms(qgraph: Any, x: np.ndarray, repeat: int) -> tuple[float, float]:
    """(CPU ms, wall ms) of `run_int8`, best of `repeat` after one warm-up run."""
    run_int8(qgraph, [x], raw=True)  # builds the per-op plans and tables
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        run_int8(qgraph, [x], raw=True)
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
    return min(cpu), min(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if any(os.environ.get(v) != "1" for v in THREAD_VARS):  # BLAS reads them when it loads
        os.environ.update(dict.fromkeys(THREAD_VARS, "1"))
        os.execv(sys.executable, [sys.executable, *sys.argv])
    os.environ["MDLA_EMU_THREADS"] = "1"
    with tempfile.TemporaryDirectory(prefix="mdla-ref-speed-") as tmp:
        table(args.models.split(","), Path(tmp), args.repeat)


def table(specs: list[str], tmp: Path, repeat: int) -> None:
    """Print one row per model, its .mdla written under `tmp` (deleted by the caller)."""
    photos = [f() for f in PHOTOS.values()]
    print(
        f"{'model':27s} {'CPU ms/img: emu':>16s} {'run_int8':>9s} {'ratio':>6s}   "
        f"{'wall best: emu':>15s} {'run_int8':>9s}  load"
    )
    for spec in specs:
        model = load_model(spec, seed=0)
        if spec not in REAL_WEIGHTS:
            recalibrate_batchnorm(model.module, (2, *model.example_inputs[0].shape[1:]))
        side = int(model.example_inputs[0].shape[-1])
        pool = crops(photos, 8, seed=1, side=side)
        qgraph = mdla_compile(model, [[c] for c in pool], tmp / f"{spec}.mdla")
        e_cpu, e_wall = emu_ms(load(tmp / f"{spec}.mdla"), pool[0])
        r_cpu, r_wall = ref_ms(qgraph, pool[0], repeat)
        print(
            f"{spec:27s} {e_cpu:16.2f} {r_cpu:9.1f} {r_cpu / e_cpu:6.2f}   "
            f"{e_wall:15.2f} {r_wall:9.1f}  {os.getloadavg()[0]:4.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
