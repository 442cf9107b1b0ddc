"""The export path maps what torch.export gives without `run_decompositions` when that is safe
(`mdla_ir.importer.aten_direct`), and decomposes when an in-place op could be seen."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

import mdla_ir
from mdla_ir.importer import aten_direct, exported, import_torch
from mdla_ir.testing import relative_error


class _Block(nn.Module):
    """What the bar models hold: conv, BatchNorm, in-place ReLU, an in-place residual add,
    dropout in eval, flatten, and F.pad."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.act = nn.ReLU(inplace=True)
        self.drop = nn.Dropout(0.5, inplace=True)
        self.fc = nn.Linear(4 * 8 * 8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn(self.conv(x))
        y += self.conv(x)
        y = self.act(y)
        y = nn.functional.pad(y, (1, 1, 1, 1))[:, :, 1:-1, 1:-1]
        return self.fc(self.drop(torch.flatten(y, 1)))


class _Shuffle(nn.Module):
    """ShuffleNet's block: chunk, then a channel shuffle by view/transpose/contiguous."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = x.chunk(2, dim=1)
        y = torch.cat((a, torch.relu(b)), 1).view(1, 2, 2, 4, 4)
        return torch.transpose(y, 1, 2).contiguous().view(1, 4, 4, 4)


class _Seen(nn.Module):
    """`a` changes in place while `b`, read later, was computed from it before."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.conv(x)
        b = a * 2.0
        a.relu_()
        return a + b


def _bn_stats(module: nn.Module) -> nn.Module:
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    return module.eval()


def _no_decompose(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(program: Any) -> Any:
        raise AssertionError("decomposed")

    monkeypatch.setattr(exported, "decompose", refuse)


def _agrees(module: nn.Module, graph: mdla_ir.Graph, x: torch.Tensor) -> None:
    with torch.no_grad():
        want = module(x.clone()).numpy()
    (got,) = mdla_ir.run_float(graph, [x.numpy()])
    assert relative_error(got, want) <= 1e-5


def test_a_program_of_mapped_ops_is_not_decomposed(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    module = _bn_stats(_Block())
    x = torch.randn(1, 3, 8, 8)
    _no_decompose(monkeypatch)
    imported = import_torch(module, (x,), optimize=False, path="export")
    kinds = {op.kind.name for op in imported.graph.ops}
    assert {"CONV_2D", "BATCH_NORM", "ADD", "RELU", "PAD", "DROPOUT", "FLATTEN"} <= kinds
    _agrees(module, imported.graph, x)


def test_chunk_transpose_and_contiguous_map_as_exported(monkeypatch: pytest.MonkeyPatch) -> None:
    x = torch.randn(1, 4, 4, 4)
    _no_decompose(monkeypatch)
    module = _Shuffle().eval()
    graph = mdla_ir.from_torch(module, (x,), optimize=False, path="export")
    assert {"SLICE", "TRANSPOSE", "IDENTITY"} <= {op.kind.name for op in graph.ops}
    _agrees(module, graph, x)


def test_an_in_place_op_someone_sees_is_decomposed(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    module = _Seen().eval()
    x = torch.randn(1, 3, 4, 4)
    program = torch.export.export(module, (x,))
    assert not aten_direct.mappable(program)
    graph = mdla_ir.from_torch(module, (x,), optimize=False, path="export")
    _agrees(module, graph, x)
    _no_decompose(monkeypatch)
    with pytest.raises(AssertionError, match="decomposed"):
        import_torch(module, (x,), path="export")


def test_batch_norm_in_training_mode_is_named() -> None:
    program = torch.export.export(_bn_stats(_Block()).train(), (torch.randn(2, 3, 8, 8),))
    assert not aten_direct.mappable(program)  # it updates its running statistics


@pytest.mark.parametrize(
    ("op", "functional"),
    [
        (torch.ops.aten.relu_.default, torch.ops.aten.relu.default),
        (torch.ops.aten.add_.Tensor, torch.ops.aten.add.Tensor),
        (torch.ops.aten.relu.default, None),
        (torch.ops.aten._foreach_add_.List, None),
    ],
)
def test_in_place_ops_read_as_their_out_of_place_form(op: Any, functional: Any) -> None:
    assert aten_direct._out_of_place(op) is functional
