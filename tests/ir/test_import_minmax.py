"""Elementwise extremes of two tensors (`torch.maximum`/`minimum`, two-tensor `max`/`min`, a
clamp whose bounds are tensors) on both import paths: each is SUB, RELU, then ADD (max) or
SUB (min), and the float IR computes what torch does."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

import mdla_ir
from mdla_ir import OpKind
from tests.ir.both_paths import PATHS, computes_like_torch

Fn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


class Pair(nn.Module):
    """`fn(x, y, c)`: two activations and a per-channel constant."""

    def __init__(self, fn: Fn) -> None:
        super().__init__()
        self.fn = fn
        self.register_buffer("c", torch.linspace(-0.5, 0.5, 4).reshape(1, 4, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x, x * 0.5, self.c)


CASES: list[tuple[Fn, dict[OpKind, int]]] = [
    (lambda x, y, c: torch.maximum(x, y), {OpKind.ADD: 1, OpKind.SUB: 1, OpKind.RELU: 1}),
    (lambda x, y, c: torch.minimum(x, other=c), {OpKind.SUB: 2, OpKind.RELU: 1}),
    (lambda x, y, c: torch.max(x, y), {OpKind.ADD: 1, OpKind.SUB: 1, OpKind.RELU: 1}),
    (lambda x, y, c: x.min(y), {OpKind.SUB: 2, OpKind.RELU: 1}),
    (lambda x, y, c: x.maximum(c), {OpKind.ADD: 1, OpKind.SUB: 1, OpKind.RELU: 1}),
    (lambda x, y, c: x.clamp(min=c, max=y), {OpKind.ADD: 1, OpKind.SUB: 3, OpKind.RELU: 2}),
    (lambda x, y, c: torch.clamp(x, min=y), {OpKind.ADD: 1, OpKind.SUB: 1, OpKind.RELU: 1}),
    (lambda x, y, c: torch.clip(x, max=c), {OpKind.SUB: 2, OpKind.RELU: 1}),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("fn", "kinds"), CASES)
def test_extremes_of_two_tensors(fn: Fn, kinds: dict[OpKind, int], path: str) -> None:
    graph = computes_like_torch(Pair(fn).eval(), torch.randn(1, 4, 6, 8), path, 1e-6, False)
    got = {k: n for k, n in graph.count().items() if k != "MUL"}
    assert got == {k.name: n for k, n in kinds.items()}


@pytest.mark.parametrize("path", PATHS)
def test_a_clamp_with_number_bounds_stays_one_clamp(path: str) -> None:
    module = Pair(lambda x, y, c: x.clamp(torch.tensor(-0.5).item(), 0.5)).eval()
    graph = mdla_ir.from_torch(module, (torch.randn(1, 4, 6, 8),), path=path)
    assert [o.kind for o in graph.ops if o.kind is not OpKind.MUL] == [OpKind.CLAMP]
