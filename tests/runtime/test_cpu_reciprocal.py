"""A division by an activation (`y / (relu(y) + 1)`, `F.normalize`, `torch.reciprocal`): the
MDLA has no division, so legalize makes it a MUL by the divisor's RECIPROCAL, a 256-entry int8
table on the CPU; `--cpu auto` places the reciprocal there (the MULs stay on the MDLA), and the
engine runs the model bit-exact with run_int8, on either import path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
import mdla_legalize
from tests.runtime.test_engine_partitions import placed_engine_is_bit_exact

TARGET = mdla_legalize.load_target("mdla3.5")


class Ratios(nn.Module):
    """Three divisions by activations and an L2-normalized head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        r = y / (torch.relu(y) + 1.0) + 2.0 / (torch.sigmoid(y) + 0.5)
        r = r * torch.reciprocal(torch.relu(y) + 2.0)
        return F.normalize(self.fc(r.mean((2, 3))), dim=1)


@pytest.mark.parametrize("path", ["fx", "export"])
def test_division_by_an_activation_runs_its_reciprocal_on_the_cpu(
    tmp_path: Path, path: str
) -> None:
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    module = Ratios().eval()
    graph = mdla_ir.from_torch(module, (x,), name="ratios", path=path)
    with torch.no_grad():
        want = module(x).numpy()
    placed = mdla_legalize.place(graph, TARGET, "mtk-mdla", ["auto"])
    np.testing.assert_allclose(
        mdla_ir.run_float(placed.graph, [x.numpy()])[0], want, rtol=1e-5, atol=1e-6
    )
    assert not any(o.kind is mdla_ir.OpKind.DIV for o in placed.graph.ops)
    on_cpu = sorted({o.kind for o in placed.ops if o.device == "cpu"})
    assert on_cpu == ["RECIPROCAL", "SQRT"]  # normalize's root too; every MUL on the MDLA
    placed_engine_is_bit_exact(placed.graph, (1, 3, 8, 8), tmp_path, "ratios", seeds=2)
