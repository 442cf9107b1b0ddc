"""A CONCATENATION joining a sigmoid's values (LOGISTIC's output params are fixed by the target)
with other activations inside the network gets MUL(sigmoid, 1) in between, which requantizes
to the scale the concatenation shares: without it the quantizer has to refuse the graph."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_quant.float_region import float_concats

TARGET = mdla_legalize.load_target("mdla3.5")


class Joined(nn.Module):
    def __init__(self, out: bool = False) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Conv2d(3, 4, 1), nn.Conv2d(3, 4, 1), nn.Conv2d(8, 4, 1)
        self.out = out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.cat([self.a(x) * 4.0, torch.sigmoid(self.b(x))], 1)
        return y if self.out else self.c(y)


def test_a_sigmoid_joined_with_others_is_requantized_first() -> None:
    graph = mdla_ir.from_torch(Joined().eval(), (torch.randn(1, 3, 8, 8),))
    device = mdla_legalize.legalize(graph, TARGET)
    (cat,) = [o for o in device.ops if o.kind.name == "CONCATENATION"]
    producers = device.producers()
    (mul,) = [producers[n] for n in cat.inputs if ".requantize" in producers[n].name]
    assert mul.kind.name == "MUL"
    assert producers[mul.inputs[0]].kind.name == "LOGISTIC"
    rng = np.random.default_rng(0)
    calib = [[rng.normal(size=(1, 3, 8, 8)).astype(np.float32)] for _ in range(2)]
    qgraph = mdla_quant.quantize(device, calib)  # refused (shared scale) without the MUL
    assert len(mdla_quant.run_int8(qgraph, calib[0])) == 1


def test_a_model_output_concatenation_is_left_alone() -> None:
    """It joins in float32 on the CPU (`mdla_quant.float_region`): no MUL is added."""
    graph = mdla_ir.from_torch(Joined(out=True).eval(), (torch.randn(1, 3, 8, 8),))
    device = mdla_legalize.rewrite(graph, TARGET)
    assert "requantize" not in " ".join(o.name for o in device.ops)


class Nested(nn.Module):
    """YOLO-seg's output: cat((boxes, probabilities)) joined with more columns at the output."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Conv2d(3, 4, 1), nn.Conv2d(3, 4, 1), nn.Conv2d(3, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = torch.cat([self.a(x) * 40.0, torch.sigmoid(self.b(x))], 1)
        return torch.cat([inner, self.c(x)], 1)


def test_a_float_concatenation_on_the_cpu_still_sees_the_fixed_range() -> None:
    """On the CPU the inner concatenation joins in float32 (each input its own scale): the
    requantizing MUL by 1 does not hide that one input is a sigmoid's."""
    graph = mdla_ir.from_torch(Nested().eval(), (torch.randn(1, 3, 8, 8),))
    placed = mdla_legalize.place(graph, TARGET, "mtk-mdla", ["cat*"])
    inner = next(o for o in placed.graph.ops if o.kind.name == "CONCATENATION")
    assert any(".requantize" in placed.graph.producers()[n].name for n in inner.inputs)
    assert inner.name in float_concats(placed.graph)
