"""Every importer refusal names the node, the module it sits in (qualified name and class), the
construct, the model's source line and what to change."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import mdla_ir
from mdla_ir import UnsupportedError


class Refused(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 4, 1), nn.LocalResponseNorm(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return torch.cumsum(y, 1)


def _items() -> list[str]:
    with pytest.raises(UnsupportedError) as caught:
        mdla_ir.from_torch(Refused().eval(), (torch.rand(1, 3, 8, 8),))
    return caught.value.items


def test_each_refusal_names_module_construct_line_and_fix() -> None:
    norm, cumsum = _items()
    assert norm.startswith(
        "`body_1` in `body.1` (torch.nn.modules.normalization.LocalResponseNorm): "
    )
    assert "module LocalResponseNorm has no converter" in norm
    assert "fix: use BatchNorm2d" in norm
    assert "in the model's forward (tests.ir.test_importer_refusals.Refused)" in cumsum
    assert "function torch.cumsum at test_importer_refusals.py:21" in cumsum
    assert "`--cpu` cannot place an op the IR cannot hold" in cumsum


def test_the_refusal_carries_what_did_import() -> None:
    """The partial graph: the refused results are inputs, their operands outputs, so a later
    stage can report on the rest of the model in the same run."""
    with pytest.raises(UnsupportedError) as caught:
        mdla_ir.from_torch(Refused().eval(), (torch.rand(1, 3, 8, 8),))
    partial = caught.value.partial
    assert isinstance(partial, mdla_ir.Graph)
    assert partial.count() == {"CONV_2D": 1}
    assert len(partial.inputs) == 3  # x, and the results of the two refused constructs
    assert partial.outputs[-1] in {o for op in partial.ops for o in op.outputs}


def test_auto_path_refusal_keeps_the_fx_items() -> None:
    """When export's ATen importer and then torch.fx both refuse, the error is still the
    UnsupportedError of the fx importer: its items (and the partial graph) kept."""
    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.Upsample(scale_factor=2, mode="bicubic")).eval()
    with pytest.raises(UnsupportedError) as caught:
        mdla_ir.from_torch(model, (torch.rand(1, 3, 8, 8),), path="auto")
    (item,) = caught.value.items
    assert "`1` (torch.nn.modules.upsampling.Upsample)" in item
    assert "torch.fx: cannot import" in str(caught.value)
    assert caught.value.partial is not None
