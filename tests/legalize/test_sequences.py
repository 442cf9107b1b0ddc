"""1-D models map with no layout TRANSPOSE: every (N, C, L) activation is held (N, L, C)
(mdla_legalize.sequences), and the whole model runs on the MDLA bit-exact (emulator ==
run_int8 == LiteRT) on both import paths. Before, the causal TCN had 3 TRANSPOSEs, the mean
over channels 1 and the CRNN 2, none of which the MDLA maps."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_legalize.sequences import sequence_tensors
from tests.models_sequences import CASES, SHAPE, build
from tests.models_video import run_module
from tests.runtime.test_engine_partitions import placed_engine_is_bit_exact


@pytest.mark.parametrize("path", ["fx", "export"])
@pytest.mark.parametrize("name", list(CASES))
def test_a_1d_model_has_no_transpose_and_is_bit_exact(name: str, path: str, tmp_path: Path) -> None:
    module = build(name)
    graph = mdla_ir.from_torch(module, torch.zeros(SHAPE), name=name, path=path)
    device = mdla_legalize.rewrite(graph, mdla_legalize.load_target("mdla3.5"))
    assert [op.name for op in device.ops if op.kind is mdla_ir.OpKind.TRANSPOSE] == []
    result = run_module(module, SHAPE, name, tmp_path, path)
    assert result.float_error <= 1e-4


class OverTime(nn.Module):
    """A Linear over the time axis of (N, C, L): no channels-last form."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(2, 8, 3, 1, 1)
        self.fc = nn.Linear(64, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)))


def test_a_tensor_an_op_reads_over_time_keeps_the_model_layout() -> None:
    graph = mdla_ir.from_torch(OverTime().eval(), torch.zeros(SHAPE), name="t", path="fx")
    (fc,) = [op for op in graph.ops if op.kind is mdla_ir.OpKind.FULLY_CONNECTED]
    held = sequence_tensors(graph)
    assert fc.inputs[0] not in held
    assert all(len(graph.tensors[n].shape) == 3 for n in held)


class CpuOps(nn.Module):
    """Ops the MDLA does not map on a 1-D activation (a strided slice over time, GroupNorm, a
    reflect pad's slices): held (N, L, C) too, so `--cpu auto` runs them with no TRANSPOSE
    around them."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(2, 8, 3, 1, 1)
        self.norm = nn.GroupNorm(2, 8)
        self.out = nn.Conv1d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x))[:, :, ::2]
        return self.out(F.pad(torch.relu(self.norm(y)), (1, 1), mode="reflect"))


def test_cpu_ops_on_a_1d_activation_need_no_transpose(tmp_path: Path) -> None:
    torch.manual_seed(0)
    module = CpuOps().eval()
    graph = mdla_ir.from_torch(module, torch.zeros(SHAPE), name="cpu_ops", path="fx")
    target = mdla_legalize.load_target("mdla3.5")
    placed = mdla_legalize.place(graph, target, "mtk-mdla", ["auto"])
    kinds = [op.kind for op in placed.graph.ops]
    assert mdla_ir.OpKind.TRANSPOSE not in kinds
    on_cpu = {o.kind for o in placed.ops if o.device == "cpu"}
    assert {"STRIDED_SLICE", "GROUP_NORM"} <= on_cpu
    placed_engine_is_bit_exact(placed.graph, SHAPE, tmp_path, "cpu_ops", seeds=2)
