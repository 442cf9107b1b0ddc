"""Stock torchvision models that need issue 15's exact rewrites, end to end (random init, seed 0,
BatchNorm statistics set on random data; 2 random calibration inputs, 1 random test input):

    model | ops on mtk-mdla | emu == run_int8 | LiteRT == run_int8 | float rel. err | cosine |
    conv GMAC imported -> device | legalize s | quantize s

The cosine is INT8 vs FP32 logits on a random input (random weights: a consistency figure, not
an accuracy). The MAC column shows what the rewrites cost: grouped convs become block-diagonal
dense convs (groups x that layer's MACs), channel selections 1x1 convs where not folded.

    .venv/bin/python bench/rewrites.py [shufflenet_v2_x1_0 vgg11_bn resnext50_32x4d ...]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import mdla_ir
import mdla_legalize
from mdla_ir.testing import relative_error
from mdla_quant import QuantConfig, quantize, run_int8
from mdla_quant.reference import quantize_inputs
from mdla_runtime import load, open_target, save
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes
from mdla_zoo import load_model, recalibrate_batchnorm
from workbench.commands.check import conv_macs

MODELS = ["shufflenet_v2_x1_0", "vgg11_bn", "resnext50_32x4d", "regnet_y_400mf"]


def row(name: str) -> str:
    target, emu = mdla_legalize.load_target("mdla3.5"), open_target("emu")
    model = load_model(name)
    recalibrate_batchnorm(model.module)
    start = time.perf_counter()
    graph = mdla_ir.from_torch(model.module, model.example_inputs, name=name)
    device = mdla_legalize.legalize(graph, target)
    legalized = time.perf_counter()
    rng = np.random.default_rng(0)
    shape = tuple(model.example_inputs[0].shape)
    calib = [[rng.standard_normal(shape).astype(np.float32)] for _ in range(2)]
    qgraph = quantize(device, calib, QuantConfig())
    quantized = time.perf_counter()
    x = [rng.standard_normal(shape).astype(np.float32)]
    ref = run_int8(qgraph, x, raw=True)
    with tempfile.TemporaryDirectory() as tmp:
        manifest = load(save(qgraph, Path(tmp) / f"{name}.mdla"))
        support = emu.supported(manifest)["mtk-mdla"]
        got = emu.run(manifest, x).raw_outputs
    emu_ok = all(np.array_equal(a.reshape(b.shape), b) for a, b in zip(got, ref, strict=True))
    codes = list(quantize_inputs(qgraph, x).values())
    lite = run_tflite_reference(tflite_bytes(qgraph), codes)
    lite_ok = all(np.array_equal(a.reshape(b.shape), b) for a, b in zip(lite, ref, strict=True))
    with torch.no_grad():
        want = model.module(torch.from_numpy(x[0])).numpy()
    fp32 = mdla_ir.run_float(device, x)[0]
    int8 = run_int8(qgraph, x)[0]
    cosine = float((fp32 * int8).sum() / np.linalg.norm(fp32) / np.linalg.norm(int8))
    macs = f"{conv_macs(graph) / 1e9:.2f} -> {conv_macs(device) / 1e9:.2f}"
    return (
        f"| {name} | {sum(support)}/{len(support)} | {emu_ok} | {lite_ok} | "
        f"{relative_error(fp32, want):.1e} | {cosine:.4f} | {macs} | "
        f"{legalized - start:.1f} | {quantized - legalized:.1f} |"
    )


def main() -> None:
    print(
        "| model | ops on mtk-mdla | emu == run_int8 | LiteRT == run_int8 | float rel. err "
        "| cosine | conv GMAC | legalize s | quantize s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in sys.argv[1:] or MODELS:
        print(row(name), flush=True)


if __name__ == "__main__":
    main()
