"""mdla-engine's cpu partitions on several threads (cpu/cpu_split.h): MDLA_CPU_THREADS=n cuts
LAYER_NORM by rows, the table group (GELU) by element ranges and the emulator's int8 kernels
(FULLY_CONNECTED's token rows, the depthwise conv, ADD) as libneuron_emu.so does, and the bytes
are run_int8's for every n. MDLA_EMU_MIN_WORK=1 makes every op with two rows split."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mdla_ir
from mdla_emu import build_emulator
from mdla_quant import run_int8
from mdla_runtime import load, save
from tests.runtime.test_engine_partitions import CPU, engine, outputs, placed_qgraph
from tests.workbench.unmappable_models import ConvNeXtBlock


@pytest.mark.parametrize("min_work", ["1", ""], ids=["split_all", "default"])
def test_cpu_partition_bytes_do_not_depend_on_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, min_work: str
) -> None:
    import torch

    torch.manual_seed(0)
    x = torch.zeros(1, 8, 8, 8)
    graph = mdla_ir.from_torch(ConvNeXtBlock().eval(), (x,), name="block")
    qgraph = placed_qgraph(graph, [*CPU, "DEPTHWISE_CONV_2D,ADD"])
    path = save(qgraph, tmp_path / "block.mdla")
    assert [p.device for p in load(path).partitions] == ["cpu"]
    lib = str(build_emulator())
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", min_work)
    rng = np.random.default_rng(7)
    xs = [rng.uniform(-1.5, 1.5, s.model_shape).astype(np.float32) for s in load(path).inputs]
    want = run_int8(qgraph, xs, raw=True)
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("MDLA_CPU_THREADS", threads)
        code, out, err = engine(path, tmp_path, xs, "--lib", lib, "--json")
        assert code == 0, out + err
        assert [p["device"] for p in json.loads(out)["partitions"]] == ["cpu"]
        for got, w in zip(outputs(path, tmp_path, want), want, strict=True):
            assert got.tobytes() == np.asarray(w).tobytes(), f"{threads} threads"
