"""ARGMAX (issue 17): imported from torch.argmax / Tensor.argmax, run in float as torch does,
placed on the CPU only by name, quantized to class indices (scale 1, zero point 0), and its int8
kernel refusing what an int8 index cannot hold."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_ir.attrs import ArgmaxAttrs
from mdla_ir.builders import act, qp
from mdla_ir.graph import Graph, Op
from mdla_ir.ops import OpKind
from mdla_ir.provenance import Provenance
from mdla_quant.errors import KernelError
from mdla_quant.quantize import INDEX_Q


class Scores(nn.Module):
    def __init__(self, keep: bool, method: bool) -> None:
        super().__init__()
        self.conv, self.keep, self.method = nn.Conv2d(3, 6, 1), keep, method

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.conv(x)
        return s.argmax(1, keepdim=self.keep) if self.method else torch.argmax(s, dim=1)


@pytest.mark.parametrize(("keep", "method"), [(False, True), (True, True), (False, False)])
def test_import_and_float_run_are_torchs(keep: bool, method: bool) -> None:
    torch.manual_seed(0)
    m, x = Scores(keep, method).eval(), torch.randn(1, 3, 5, 7)
    g = mdla_ir.from_torch(m, (x,), name="scores")
    assert g.ops[-1].kind is OpKind.ARGMAX
    assert g.ops[-1].attrs == ArgmaxAttrs(axis=1, keepdims=keep)
    (y,) = mdla_ir.run_float(g, [x.numpy()])
    np.testing.assert_array_equal(y, m(x).numpy().astype(np.float32))


def test_argmax_without_a_dim_is_refused() -> None:
    class Flat(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.argmax(x)

    with pytest.raises(mdla_ir.UnsupportedError, match="argmax without a dim"):
        mdla_ir.from_torch(Flat().eval(), (torch.randn(1, 3, 4, 4),), name="flat")


def test_placement_names_it_and_the_nhwc_axis_is_the_channels() -> None:
    torch.manual_seed(0)
    g = mdla_ir.from_torch(Scores(False, True).eval(), (torch.randn(1, 3, 5, 7),), name="s")
    target = mdla_legalize.load_target("mdla3.5")
    with pytest.raises(mdla_legalize.LegalizeError, match="ARGMAX"):  # never placed silently
        mdla_legalize.place(g, target, "mtk-mdla", ["CONV_2D"])
    placed = mdla_legalize.place(g, target, "mtk-mdla", ["ARGMAX"])
    (am,) = [op for op in placed.graph.ops if op.kind is OpKind.ARGMAX]
    assert am.attrs.axis == 3
    assert [p.device for p in placed.partitions] == ["mtk-mdla", "cpu"]
    rng = np.random.default_rng(0)
    calib = [[rng.normal(size=(1, 3, 5, 7)).astype(np.float32)] for _ in range(2)]
    qgraph = mdla_quant.quantize(placed.graph, calib)
    assert qgraph.tensors[am.outputs[0]].quant == INDEX_Q


def graph(classes: int, out_q: tuple[float, int]) -> Graph:
    tensors = [act("x", (1, 2, classes), qp(0.1, 0)), act("y", (1, 2), qp(*out_q))]
    ops = (Op(OpKind.ARGMAX, "am", ("x",), ("y",), {"axis": 2, "keepdims": False}),)
    prov = Provenance(device="mtk-mdla", cpu_ops=("am",))
    return Graph("am", {t.name: t for t in tensors}, ops, ("x",), ("y",), "NHWC", provenance=prov)


def test_the_int8_kernel_takes_the_first_maximum() -> None:
    x = np.array([[[0.1, 0.3, 0.3, -0.2], [0.0, 0.0, 0.0, 0.0]]], np.float32)
    (y,) = mdla_quant.run_int8(graph(4, (1.0, 0)), [x], raw=True)
    np.testing.assert_array_equal(y, [[1, 0]])


@pytest.mark.parametrize(
    ("classes", "out_q", "why"),
    [(129, (1.0, 0), "at most 128 fit int8"), (4, (0.5, 0), "scale 1 and zero point 0")],
)
def test_the_int8_kernel_refuses(classes: int, out_q: tuple[float, int], why: str) -> None:
    x = np.zeros((1, 2, classes), np.float32)
    with pytest.raises(KernelError, match=why):
        mdla_quant.run_int8(graph(classes, out_q), [x], raw=True)
