"""The engine's cpu-partition LAYER_NORM on each of its paths (cpu/cpu_split.c picks by the
emulator's emu_isa(): the AVX2 kernel of cpu/layer_norm_x86.c at AVX2 and AVX-512, the C of
cpu/float_ops.c under MDLA_EMU_PORTABLE=1), bit for bit with run_int8: a ConvNeXt block of 12
channels at 5 x 5 with `--cpu LAYER_NORM,GELU`, so LAYER_NORM normalizes 25 rows of 12 (three
blocks of 8 rows and one row apart, 8 columns in registers and 4 apart)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_emu import build_emulator
from mdla_quant import run_int8
from mdla_runtime import load, save
from tests.runtime.test_engine_partitions import engine, outputs
from tests.workbench.unmappable_models import ConvNeXtBlock

SHAPE = (1, 12, 5, 5)
PATHS = {"portable": ("MDLA_EMU_PORTABLE", "1"), "avx2": ("MDLA_EMU_ISA", "avx2"), "best": None}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, mdla_ir.Graph]:
    import torch

    torch.manual_seed(0)
    graph = mdla_ir.from_torch(ConvNeXtBlock(12).eval(), (torch.zeros(SHAPE),), name="block")
    target = mdla_legalize.load_target("mdla3.5")
    placed = mdla_legalize.place(graph, target, "mtk-mdla", ["LAYER_NORM,GELU"])
    rng = np.random.default_rng(1)
    calib = [[rng.uniform(-1, 1, SHAPE).astype(np.float32)] for _ in range(2)]
    qgraph = mdla_quant.quantize(placed.graph, calib)
    path = save(qgraph, tmp_path_factory.mktemp("ln") / "block.mdla")
    assert any(op.kind is mdla_ir.OpKind.LAYER_NORM for op in qgraph.ops)
    assert any(p.on_cpu for p in load(path).partitions)
    return path, qgraph


@pytest.mark.parametrize("name", PATHS)
def test_each_layer_norm_path_is_run_int8s(
    name: str, model: tuple[Path, mdla_ir.Graph], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MDLA_EMU_PORTABLE", raising=False)
    monkeypatch.delenv("MDLA_EMU_ISA", raising=False)
    if PATHS[name] is not None:
        monkeypatch.setenv(*PATHS[name])
    path, qgraph = model
    rng = np.random.default_rng(5)
    for _ in range(3):
        xs = [rng.uniform(-2, 2, SHAPE).astype(np.float32)]
        code, out, err = engine(path, tmp_path, xs, "--lib", str(build_emulator()))
        assert code == 0, out + err
        want = run_int8(qgraph, xs, raw=True)
        for got, w in zip(outputs(path, tmp_path, want), want, strict=True):
            np.testing.assert_array_equal(got, w)
