"""What the converter tests that import one construct on both import paths share: the paths,
a conv-then-`fn` module, and the import that must compute what torch does."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

import mdla_ir
from mdla_ir import Graph
from mdla_ir.testing import relative_error

PATHS = ("fx", "export")
Fn = Callable[[torch.Tensor], torch.Tensor]


class Apply(nn.Module):
    """`fn` on a conv's output (a conv first, so the graph is not all constants)."""

    def __init__(self, fn: Fn) -> None:
        super().__init__()
        self.fn, self.conv = fn, nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(self.conv(x))


def computes_like_torch(
    module: nn.Module, x: torch.Tensor, path: str, tol: float, optimize: bool = True
) -> Graph:
    """`module` imported on `path`; its float IR within `tol` (relative) of torch on `x`."""
    graph = mdla_ir.from_torch(module, (x,), optimize=optimize, path=path)
    with torch.no_grad():
        want = module(x).numpy()
    assert relative_error(mdla_ir.run_float(graph, [x.numpy()])[0], want) <= tol
    return graph
