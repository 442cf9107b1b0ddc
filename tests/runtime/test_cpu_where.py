"""torch.where / masked_fill on one tensor run as WHERE, a 256-entry int8 table on the CPU:
`--cpu auto` places it there (the convs stay on the MDLA), the engine runs the model bit-exact
with run_int8 on either import path, and the exported .tflite reads the same table (GATHER)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir.affine import dequantize_output
from mdla_ir.attrs import WhereAttrs
from mdla_ir.ops import OpKind
from mdla_quant.kernels.functions import function_table
from tests.runtime.test_engine_partitions import placed_engine_is_bit_exact

TARGET = mdla_legalize.load_target("mdla3.5")


class Gates(nn.Module):
    """A hand-written leaky ReLU (PRELU on the MDLA after legalization), a masked_fill and a
    threshold between convs (WHERE tables on the CPU)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        y = torch.where(y > 0, y, 0.1 * y)
        y = y.masked_fill(y > 1.5, 1.5)
        z = self.b(y)
        return torch.where(z > 0.2, z, torch.zeros_like(z))


@pytest.mark.parametrize("path", ["fx", "export"])
def test_where_runs_as_a_cpu_table_bit_exact(tmp_path: Path, path: str) -> None:
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    graph = mdla_ir.from_torch(Gates().eval(), (x,), name="gates", path=path)
    placed = mdla_legalize.place(graph, TARGET, "mtk-mdla", ["auto"])
    on_cpu = [o.kind for o in placed.ops if o.device == "cpu"]
    assert on_cpu == ["WHERE"] * 2
    assert [o.kind for o in placed.ops if o.device == "mtk-mdla"].count("PRELU") == 1
    placed_engine_is_bit_exact(placed.graph, (1, 3, 8, 8), tmp_path, "gates", seeds=2)


def test_the_table_compares_each_codes_value_with_the_threshold() -> None:
    """Code c is taken when its dequantized float32 value is greater than the threshold: with
    scale 0.05 and zero point 0, code 4 is 0.2 exactly in float32 arithmetic only if 0.05 * 4
    rounds to float32(0.2); the table says what float32 says."""
    s = np.float32(0.05)
    attrs = WhereAttrs("gt", 0.2, 1.0, 0.0, 0.0, 0.0)
    table = function_table(OpKind.WHERE, attrs, s, 0, s, 0)
    values = dequantize_output(np.arange(-128, 128), float(s), 0)
    taken = values > np.float32(0.2)
    codes = np.arange(-128, 128)
    np.testing.assert_array_equal(table, np.where(taken, codes, 0).astype(np.int8))
