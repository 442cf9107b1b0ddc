"""Where a model's float parity error comes from: the float IR and torch float32, each against
torch float64 (the exact answer up to 2^-53), with and without BatchNorm folded.

    .venv/bin/python bench/float_parity.py fcn_resnet50 regnet_y_400mf     # 224 px, ~1 min each
    .venv/bin/python bench/float_parity.py fcn_resnet50 --size 96

Setup as `bench/coverage.py` (random weights, BatchNorm statistics from `recalibrate_batchnorm`,
one standard-normal input from seed 1). Rows, each as max |a - b| / max |b| (`relative_error`):

    torch fp32                   the module in float32 (the coverage bench's reference)
    IR, BN unfolded (NCHW)       `from_torch(optimize=False)`: BATCH_NORM ops kept
    IR, BN folded (NCHW)         the default import (`fold_batchnorm`: float64 fold, one rounding)
    IR legalized (NHWC)          the device graph `compile` quantizes

against torch float64 and against torch float32. The error of the IR against float32 torch
is at most the sum of both against float64: when torch float32's own error is the larger part,
the IR-vs-torch-fp32 figure measures torch's rounding, not the IR's.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import torch

import mdla_ir
import mdla_legalize
from mdla_ir.importer.outputs import flatten_outputs
from mdla_ir.testing import relative_error
from mdla_zoo import load_model, recalibrate_batchnorm

Array = np.ndarray[Any, Any]


def rows(spec: str, side: int) -> list[tuple[str, float, float]]:
    """(what, relative error vs torch fp64, vs torch fp32) for the model's first output."""
    module = load_model(spec).module
    shape = (1, 3, side, side)
    recalibrate_batchnorm(module, (2, *shape[1:]))
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        t32 = flatten_outputs(module(torch.from_numpy(x)))[0].numpy()
        t64 = flatten_outputs(module.double()(torch.from_numpy(x).double()))[0].numpy()
    module.float()
    example = (torch.zeros(shape),)
    unfolded = mdla_ir.from_torch(module, example, name=spec, optimize=False)
    folded = mdla_ir.from_torch(module, example, name=spec)
    legal = mdla_legalize.legalize(folded, mdla_legalize.load_target("mdla3.5"))
    got = {
        "torch fp32": t32,
        "IR, BN unfolded (NCHW)": mdla_ir.run_float(unfolded, [x])[0],
        "IR, BN folded (NCHW)": mdla_ir.run_float(folded, [x])[0],
        "IR legalized (NHWC)": mdla_ir.run_float(legal, [x])[0],
    }
    return [
        (what, relative_error(a.reshape(t64.shape), t64), relative_error(a.reshape(t32.shape), t32))
        for what, a in got.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--size", type=int, default=224)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("| model (side) | output | vs torch fp64 | vs torch fp32 |\n|---|---|---|---|")
    for spec in args.models:
        for what, e64, e32 in rows(spec, args.size):
            print(f"| {spec} ({args.size}) | {what} | {e64:.3e} | {e32:.3e} |", flush=True)


if __name__ == "__main__":
    main()
