"""Writes into part of a tensor (`y[:, 2::3] = f(y[:, 2::3])`, `y[:, 1] = v`, `y[..., -1] =
...`), as torch.export functionalizes them (`aten.copy`, `slice_scatter`, and `where` on a
constant condition for an index), import as the base's untouched slices and the source put side
by side by a CONCATENATION; the float IR computes what torch does."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

import mdla_ir
from mdla_ir import IRError
from mdla_ir.testing import relative_error

Write = Callable[[torch.Tensor], None]


def _pose(y: torch.Tensor) -> None:  # ultralytics' keypoint decode, in short
    y[:, 2::3] = y[:, 2::3].sigmoid()
    y[:, 0::3] = (y[:, 0::3] * 2.0 + 1.0) * 8.0


def _index(y: torch.Tensor) -> None:
    y[:, 1] = y[:, 1] * 2.0


def _steps(y: torch.Tensor) -> None:
    y[:, 1:8:4] = y[:, 1:8:4] * 3.0


def _number(y: torch.Tensor) -> None:
    y[:, 2::3] = 0.5


def _last(y: torch.Tensor) -> None:
    y[..., -1] = y[..., 0]


def _range(y: torch.Tensor) -> None:
    y[:, 2:5] = torch.relu(y[:, 2:5])


class Writes(nn.Module):
    def __init__(self, write: Write) -> None:
        super().__init__()
        self.conv = nn.Conv2d(9, 9, 1)
        self.write = write

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x).clone()
        self.write(y)
        return y


@pytest.mark.parametrize("write", [_pose, _index, _steps, _number, _last, _range])
def test_a_write_into_a_slice_is_a_concatenation(write: Write) -> None:
    module = Writes(write).eval()
    x = torch.randn(1, 9, 4, 5)
    graph = mdla_ir.from_torch(module, (x,), path="export")
    with torch.no_grad():
        want = module(x).numpy()
    assert relative_error(mdla_ir.run_float(graph, [x.numpy()])[0], want) <= 1e-6
    assert "CONCATENATION" in graph.count()


def test_a_stepped_write_of_one_position_per_block_is_three_pieces() -> None:
    """`2::3` over 9 channels: 3 blocks of 3, the source between the blocks' first two
    positions and nothing after: one CONCATENATION of two pieces, not one per position."""
    graph = mdla_ir.from_torch(Writes(_number).eval(), (torch.randn(1, 9, 4, 5),), path="export")
    (cat,) = [o for o in graph.ops if o.kind.name == "CONCATENATION"]
    assert len(cat.inputs) == 2


def test_where_on_an_activation_is_refused_with_the_way_round() -> None:
    class Gate(nn.Module):
        def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
            return torch.where(keep, x, x * 0.5)

    inputs = (torch.randn(1, 3, 4, 4), torch.rand(1, 3, 4, 4) > 0.5)
    with pytest.raises(IRError, match=r"condition computed from activations.*fix: "):
        mdla_ir.from_torch(Gate().eval(), inputs, path="export")


def test_a_constant_condition_varying_along_two_axes_is_refused_with_the_way_round() -> None:
    """(one varying axis is slices and a concatenation; a checkerboard is no such thing)"""

    class Checkered(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("keep", (torch.arange(6).reshape(6, 1) + torch.arange(6)) % 2 == 0)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.where(self.keep, x, x * 0.5)

    with pytest.raises(IRError, match=r"varies along axes \[2, 3\].*fix: .*a \* mask"):
        mdla_ir.from_torch(Checkered().eval(), (torch.randn(1, 3, 6, 6),), path="export")
