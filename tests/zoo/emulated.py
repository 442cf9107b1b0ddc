"""Compile a third-party model as `workbench compile --cpu auto` does and hold the emulator to
`mdla_quant.run_int8` bit for bit: what "compiles as brought" means for a model whose ops do not
all map on the MDLA."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch

import mdla_compile
from mdla_compile import Compiled, CompileOptions
from mdla_quant import run_int8
from mdla_runtime import open_target
from mdla_zoo import Model
from tests.models_third_party import build


def compile_auto(name: str, side: int = 64) -> tuple[Compiled, list[np.ndarray]]:
    """`name` built, compiled with `--cpu auto` on two random calibration inputs; the compiled
    model and the outputs of its emulator run, which equal run_int8's raw int8 outputs."""
    module, example = build(name, side)
    return compile_module_auto(name.split(":")[1].replace("/", "_"), module, example)


def compile_module_auto(
    name: str, module: torch.nn.Module, example: tuple[torch.Tensor, ...]
) -> tuple[Compiled, list[np.ndarray]]:
    """`compile_auto` of a module built already."""
    rng = np.random.default_rng(0)
    shape = tuple(example[0].shape)
    calib = [[rng.uniform(0, 1, shape).astype(np.float32)] for _ in range(2)]
    model = Model(name, module, example, preprocess=None)
    compiled = mdla_compile.compile(CompileOptions(model, calib=calib, count=2, cpu=("auto",)))
    x = [rng.uniform(0, 1, shape).astype(np.float32)]
    want = run_int8(compiled.qgraph, x, raw=True)
    with tempfile.TemporaryDirectory() as tmp:
        manifest = compiled.save(Path(tmp) / "model.mdla")
        got = open_target("emu").run(manifest, x).raw_outputs
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g).reshape(w.shape), w)
    return compiled, got
