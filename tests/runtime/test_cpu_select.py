"""torch.where of tensors the model computes (a comparison of two tensors, or branches that are
other tensors) runs as SELECT on the CPU: `--cpu auto` places it there (the convs stay on the
MDLA), and the engine runs the model bit-exact with run_int8 on either import path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.kernels.select import requantize_table, select
from tests.runtime.test_engine_partitions import placed_engine_is_bit_exact

TARGET = mdla_legalize.load_target("mdla3.5")


class Gates(nn.Module):
    """max-by-where of two branches, a gate on a third, a masked_fill of one by another, and a
    constant branch."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(3, 8, 3, padding=1)
        self.c = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p, q = self.a(x), self.b(x)
        y = torch.where(p > q, p, q)
        y = torch.where(p >= 0.25, y, 0.5 * q)
        y = y.masked_fill(q < p * 0.5, -1.0)
        z = self.c(y)
        return torch.where(z <= z * 0.5, torch.zeros_like(z), z)


@pytest.mark.parametrize("path", ["fx", "export"])
def test_select_imports_on_both_paths_as_torch_computes(path: str) -> None:
    torch.manual_seed(0)
    module, x = Gates().eval(), torch.randn(1, 3, 8, 8)
    graph = mdla_ir.from_torch(module, (x,), name="gates", path=path)
    assert sum(o.kind is OpKind.SELECT for o in graph.ops) == 4
    with torch.no_grad():
        want = module(x).numpy()
    np.testing.assert_allclose(mdla_ir.run_float(graph, [x.numpy()])[0], want, atol=1e-5)


@pytest.mark.parametrize("path", ["fx", "export"])
def test_select_runs_on_the_cpu_bit_exact(tmp_path: Path, path: str) -> None:
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    graph = mdla_ir.from_torch(Gates().eval(), (x,), name="gates", path=path)
    placed = mdla_legalize.place(graph, TARGET, "mtk-mdla", ["auto"])
    on_cpu = {o.kind for o in placed.ops if o.device == "cpu"}
    assert "SELECT" in on_cpu
    assert "CONV_2D" not in on_cpu
    placed_engine_is_bit_exact(placed.graph, (1, 3, 8, 8), tmp_path, "gates", seeds=2)


def test_a_branch_at_the_outputs_scale_is_copied_and_others_requantized() -> None:
    s = np.float32(0.05)
    np.testing.assert_array_equal(requantize_table(s, 3, s, 3), np.arange(-128, 128))
    half = requantize_table(np.float32(0.1), 0, np.float32(0.2), 0)
    codes = np.arange(-128, 128)
    np.testing.assert_array_equal(half, np.sign(codes) * np.floor(np.abs(codes) / 2 + 0.5))


def test_the_kernel_compares_the_dequantized_values() -> None:
    """x at scale 0.1 and y at scale 0.2: code 4 of x (0.4) equals code 2 of y (0.4)."""
    op = Op(OpKind.SELECT, "s", ("x", "y", "a", "b"), ("o",), {"compare": "ge"})
    q = [QuantParams((0.1,), (0,)), QuantParams((0.2,), (0,))]
    x, y = np.array([4, 3, 5], np.int8), np.array([2, 2, 2], np.int8)
    a, b = np.array([10, 10, 10], np.int8), np.array([-10, -10, -10], np.int8)
    out = select(op, [x, y, a, b], [*q, q[0], q[0]], q[0], "", "")
    np.testing.assert_array_equal(out, [10, -10, 10])
