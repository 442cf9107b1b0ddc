"""The data-free weight choices and bias correction on the bar models (issue 34's default).

Per model (random init, seed 0, BatchNorm statistics set on random data, as bench/accuracy.py's
part 2: these have no real weights here, so no top-1 to agree on) the logits SQNR of each
output against FP32 on --val inputs of uniform noise, calibrated on 8 others, and the CPU
seconds of the quantize step (process time of this process: AdaRound's and the calibration's
threads included). Each setting re-quantizes the same imported and legalized graph
(`Compiled.requantize`). The efficientnet_lite0 agreement figures come from

    .venv/bin/python bench/accuracy.py --techniques efficientnet_lite0 --held-out crops \\
        --methods percentile --only none,balanced,wclip,bias,balanced+bias,CLE,AdaRound \\
        --crops 200 --calib 32 --adaround 20

    .venv/bin/python bench/weight_choices.py [--models mobilenet_v2,resnet18,...] \\
        [--only none,nearest,...] [--val 4]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from mdla_compile import CompileOptions
from mdla_compile import compile as compile_model
from mdla_quant import QuantConfig, compare
from mdla_zoo import load_model, recalibrate_batchnorm

MODELS = (
    "mobilenet_v2",
    "resnet18",
    "efficientnet_b0",
    "lraspp_mobilenet_v3_large",
)
SETTINGS: dict[str, dict[str, object]] = {
    "none": {},  # the default compile
    "nearest": {"weight_rounding": "nearest"},
    "balanced": {"weight_rounding": "balanced"},
    "balanced+bias": {"weight_rounding": "balanced", "bias_correction": True},
    "wclip": {"weight_scale": "mse"},
    "kernel": {"weight_rounding": "kernel"},
    "weighted": {"weight_rounding": "weighted"},
    "mean": {"weight_rounding": "mean"},
    "bias": {"bias_correction": True},
    "nearest+bias": {"weight_rounding": "nearest", "bias_correction": True},
    "CLE": {"equalize": True},
    "Ada20": {"adaround": 20},
}


def table(models: list[str], names: list[str], n_val: int) -> None:
    print(f"{'model':<27} {'setting':<13} {'SQNR dB per output':>20} {'quantize CPU s':>14}")
    for spec in models:
        rng = np.random.default_rng(0)
        model = load_model(spec, seed=0)
        recalibrate_batchnorm(model.module)
        shape = tuple(model.example_inputs[0].shape)
        calib = [[rng.uniform(-1, 1, shape).astype(np.float32)] for _ in range(8)]
        val = [[rng.uniform(-1, 1, shape).astype(np.float32)] for _ in range(n_val)]
        first = compile_model(
            CompileOptions(model, calib=calib, count=len(calib), quant=QuantConfig())
        )
        graph = first.device_graph
        for name in names:
            start = time.process_time()
            q = first.requantize(QuantConfig(**SETTINGS[name])).qgraph  # type: ignore[arg-type]
            cpu = time.process_time() - start
            report = compare(graph, q, val)
            sqnr = " ".join(f"{report.stat(o).sqnr_db:6.2f}" for o in graph.outputs)
            print(f"{spec:<27} {name:<13} {sqnr:>20} {cpu:>14.1f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--only", default="none,balanced,wclip,bias,balanced+bias,CLE")
    parser.add_argument("--val", type=int, default=4, help="validation inputs per model")
    args = parser.parse_args(argv)
    unknown = [s for s in args.only.split(",") if s not in SETTINGS]
    if unknown:
        parser.error(f"unknown setting(s) {unknown}: expected some of {list(SETTINGS)}")
    torch.set_num_threads(1)
    table(args.models.split(","), args.only.split(","), args.val)


if __name__ == "__main__":
    main()
