"""A reduction over the axis `torch.stack` made (an FPN's `torch.stack(maps).sum(0)`) is the
elementwise sum / mean / maximum / minimum of the stacked tensors, on both import paths and in
an exported program's decomposition (cat, then a view splitting the axis): no reduction over
the batch axis, no stacked tensor left, and the float IR computes what torch does."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

import mdla_ir
from mdla_ir import OpKind
from mdla_ir.importer import import_torch
from mdla_ir.testing import relative_error

PATHS = ("fx", "export")
Merge = Callable[[list[torch.Tensor]], torch.Tensor]


class Maps(nn.Module):
    """Three maps of one shape from one input, merged by `merge`."""

    def __init__(self, merge: Merge) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(3, 8, 1)
        self.merge = merge

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.merge([self.a(x), self.b(x), torch.relu(self.a(x))])


REDUCED = [OpKind.REDUCE_SUM, OpKind.REDUCE_MAX, OpKind.REDUCE_MIN, OpKind.MEAN]
CASES: list[tuple[Merge, dict[OpKind, int]]] = [
    (lambda ys: torch.stack(ys).sum(0), {OpKind.ADD: 2}),
    (lambda ys: torch.sum(torch.stack(ys), dim=0), {OpKind.ADD: 2}),
    (lambda ys: torch.stack(ys, 1).mean(1), {OpKind.ADD: 2, OpKind.MUL: 1}),
    (lambda ys: torch.stack(ys).amax(0), {OpKind.ADD: 2, OpKind.SUB: 2}),
    (lambda ys: torch.stack(ys, -1).amin(-1), {OpKind.SUB: 4}),
    (lambda ys: torch.stack(ys).sum(0, keepdim=True).flatten(0, 1), {OpKind.ADD: 2}),
    (lambda ys: torch.stack(ys).sum((0, 2)), {OpKind.ADD: 2, OpKind.REDUCE_SUM: 3}),
    (lambda ys: sum(ys), {OpKind.ADD: 3}),  # type: ignore[arg-type,return-value]
]


def _float_ok(module: nn.Module, graph: mdla_ir.Graph, x: torch.Tensor) -> None:
    with torch.no_grad():
        want = module(x).numpy()
    got = mdla_ir.run_float(graph, [x.numpy()])[0]
    assert relative_error(got.reshape(want.shape), want) <= 1e-6


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("merge", "kinds"), CASES)
def test_a_reduction_over_the_stacked_axis_is_elementwise(
    merge: Merge, kinds: dict[OpKind, int], path: str
) -> None:
    module = Maps(merge).eval()
    x = torch.randn(1, 3, 6, 8)
    graph = mdla_ir.from_torch(module, (x,), path=path)
    _float_ok(module, graph, x)
    got = {k: n for k, n in graph.count().items() if k not in ("CONV_2D", "RELU", "RESHAPE")}
    assert got == {k.name: n for k, n in kinds.items()}
    assert all(len(graph.tensors[o.inputs[0]].shape) == 4 for o in graph.ops if o.kind in REDUCED)


def test_the_decomposed_stack_is_recognized() -> None:
    """After `run_decompositions` a stack is `cat` along d and a view splitting d into (n,
    size): the sum over the new axis is still the ADD chain."""
    module = Maps(lambda ys: torch.stack(ys, 1).sum(1)).eval()
    x = torch.randn(1, 3, 6, 8)
    program = torch.export.export(module, (x,)).run_decompositions()
    targets = {n.target for n in program.graph.nodes}
    assert torch.ops.aten.cat.default in targets
    assert torch.ops.aten.stack.default not in targets
    graph = import_torch(program, (x,)).graph
    _float_ok(module, graph, x)
    assert graph.count().get("ADD") == 2
    assert "CONCATENATION" not in graph.count()


@pytest.mark.parametrize("path", PATHS)
def test_a_stack_alone_is_reshapes_and_a_concatenation(path: str) -> None:
    module = Maps(lambda ys: torch.stack(ys, 2).flatten(1, 2)).eval()
    x = torch.randn(1, 3, 6, 8)
    graph = mdla_ir.from_torch(module, (x,), path=path)
    _float_ok(module, graph, x)
    assert graph.count()["CONCATENATION"] == 1


def test_a_cat_viewed_otherwise_is_no_stack() -> None:
    """A view of a cat that does not split the cat's axis into (pieces, size) groups channels
    differently: it is reduced as it is, never as the pieces' sum."""
    module = Maps(lambda ys: torch.cat(ys, 1).view(1, 8, 3, 6, 8).sum(2)).eval()
    x = torch.randn(1, 3, 6, 8)
    graph = mdla_ir.from_torch(module, (x,), path="export")
    _float_ok(module, graph, x)
    assert graph.count()["REDUCE_SUM"] == 1
