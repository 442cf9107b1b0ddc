"""Channels-last regions (mdla_legalize.channels_last): ConvNeXt's permute -> LayerNorm -> Linear
-> GELU -> Linear -> permute back stays in the device layout, its Linears 1x1 CONV_2Ds and its
permutes gone; a region with an outside reader keeps the layout pass's TRANSPOSEs; a TRANSPOSE
that moves only axes of size 1 is a RESHAPE."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir import Graph
from mdla_legalize.channels_last import channels_last_tensors
from tests.workbench.unmappable_models import convnext_block

TARGET = mdla_legalize.load_target("mdla3.5")
NPU = "mtk-mdla"


def _device(module: nn.Module, x: torch.Tensor) -> tuple[Graph, Graph]:
    graph = mdla_ir.from_torch(module.eval(), (x,), name="m")
    return graph, mdla_legalize.rewrite(graph, TARGET, NPU)


def _float_agrees(module: nn.Module, x: torch.Tensor, device: Graph) -> None:
    torch.manual_seed(1)
    xs = torch.randn(x.shape)
    want = module(xs).detach().numpy()
    (got,) = mdla_ir.run_float(device, [xs.numpy()])
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-5)


def test_the_convnext_block_keeps_only_its_norm_and_gelu_off_the_device_layout() -> None:
    torch.manual_seed(0)
    module, x = convnext_block()
    graph, device = _device(module, x)
    assert channels_last_tensors(graph) == {"permute", "norm", "up", "act", "down"}
    assert [op.kind.name for op in device.ops] == [
        "DEPTHWISE_CONV_2D",
        "LAYER_NORM",
        "CONV_2D",
        "GELU",
        "CONV_2D",
        "ADD",
    ]
    up = device.ops[2]
    assert device.tensors[up.inputs[1]].shape == (32, 1, 1, 8)  # (O, 1, 1, I)
    assert device.tensors[up.inputs[0]].shape == (1, 8, 8, 8)  # the NHWC activation
    rules = dict(device.provenance.rules)
    assert rules["linear_last_axis_to_conv1x1"] == 2
    assert rules["drop_identity_transpose"] == 2
    _float_agrees(module, x, device)


class OpenRegion(nn.Module):
    """The channels-last view meets an NCHW-born tensor inside: no closed region."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(self.norm(x.permute(0, 2, 3, 1)))
        return (y + x.transpose(1, 3).transpose(1, 2)).permute(0, 3, 1, 2)


def test_an_open_region_keeps_the_layout_passs_transposes() -> None:
    module = OpenRegion().eval()
    graph, device = _device(module, torch.zeros(1, 8, 4, 4))
    assert channels_last_tensors(graph) == frozenset()
    kinds = [op.kind.name for op in device.ops]
    assert "TRANSPOSE" in kinds
    assert "FULLY_CONNECTED" not in kinds  # over the last axis of a rank-4 tensor: a 1x1 conv
    _float_agrees(module, torch.zeros(1, 8, 4, 4), device)


class Head(nn.Module):
    """ConvNeXt's classifier: pooled features, LayerNorm2d (permuted), flatten, Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 1)
        self.norm = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x).mean((2, 3), keepdim=True)
        y = self.norm(y.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return self.fc(y.flatten(1))  # type: ignore[no-any-return]


def test_transposes_of_unit_axes_around_a_pooled_norm_are_reshapes() -> None:
    torch.manual_seed(0)
    module = Head().eval()
    _, device = _device(module, torch.zeros(1, 3, 4, 4))
    kinds = {op.kind.name for op in device.ops}
    assert "TRANSPOSE" not in kinds
    assert dict(device.provenance.rules).get("unit_axes_transpose_to_reshape", 0) >= 1
    with pytest.raises(mdla_legalize.LegalizeError) as info:
        mdla_legalize.legalize(mdla_ir.from_torch(module, (torch.zeros(1, 3, 4, 4),)), TARGET)
    assert [i.split("(")[1].split(")")[0] for i in info.value.items] == ["LAYER_NORM"]
    _float_agrees(module, torch.zeros(1, 3, 4, 4), device)
