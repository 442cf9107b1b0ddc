"""pixel_unshuffle (`nn.PixelUnshuffle`, `F.pixel_unshuffle`, `torch.pixel_unshuffle`) on both
import paths: one spatial selection CONV_2D (kernel and stride r), exact in float, every op on
the MDLA, and in int8 the selected input codes bit for bit."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir import OpKind
from mdla_ir.selection import is_selection
from mdla_quant import QuantConfig, quantize, run_int8

TARGET = mdla_legalize.load_target("mdla3.5")
Fn = Callable[[torch.Tensor], torch.Tensor]


class Down(nn.Module):
    def __init__(self, fn: Fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


CASES: list[Fn] = [
    nn.PixelUnshuffle(2),
    lambda x: F.pixel_unshuffle(x, 3),
    lambda x: torch.pixel_unshuffle(x, downscale_factor=2),
]


@pytest.mark.parametrize("path", ["fx", "export"])
@pytest.mark.parametrize("fn", CASES)
def test_pixel_unshuffle_is_one_selection_conv(fn: Fn, path: str) -> None:
    module = Down(fn).eval()
    x = torch.randn(1, 3, 6, 12)
    graph = mdla_ir.from_torch(module, (x,), optimize=False, path=path)
    assert [o.kind for o in graph.ops] == [OpKind.CONV_2D]
    assert is_selection(graph, graph.ops[0])
    np.testing.assert_array_equal(mdla_ir.run_float(graph, [x.numpy()])[0], module(x).numpy())


def test_pixel_unshuffle_maps_and_selects_the_int8_codes() -> None:
    module = Down(nn.PixelUnshuffle(2)).eval()
    device = mdla_legalize.legalize(mdla_ir.from_torch(module, (torch.zeros(1, 2, 4, 6),)), TARGET)
    assert mdla_legalize.explain(device, TARGET).all_supported
    rng = np.random.default_rng(1)
    calib = [[rng.uniform(-3, 5, (1, 2, 4, 6)).astype(np.float32)] for _ in range(3)]
    q = quantize(device, calib, QuantConfig())
    x_q = q.tensors[q.inputs[0]].quant
    assert x_q is not None
    assert q.tensors[q.outputs[0]].quant == x_q
    x = rng.uniform(-3, 5, (1, 2, 4, 6)).astype(np.float32)
    codes = np.clip(np.round(x / x_q.scale[0]) + x_q.zero_point[0], -128, 127).astype(np.int8)
    (got,) = run_int8(q, [x], raw=True)
    want = F.pixel_unshuffle(torch.from_numpy(codes.astype(np.float32)), 2).numpy()
    np.testing.assert_array_equal(got.reshape(-1), want.transpose(0, 2, 3, 1).reshape(-1))
