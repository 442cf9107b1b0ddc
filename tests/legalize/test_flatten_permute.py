"""flatten_linear_to_conv with a permute before the flatten: the permute goes into the filter
(exact in float and int8), for every batch-keeping permutation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir import OpKind


class PermuteFlattenLinear(nn.Module):
    def __init__(self, perm: tuple[int, ...]) -> None:
        super().__init__()
        self.perm = perm
        self.conv = nn.Conv2d(3, 5, 3)
        self.fc = nn.Linear(5 * 4 * 6, 7)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(x).permute(*self.perm).flatten(1))


@pytest.mark.parametrize("perm", [(0, *p) for p in itertools.permutations((1, 2, 3))])
def test_the_permute_folds_into_the_conv(perm: tuple[int, ...]) -> None:
    torch.manual_seed(0)
    module = PermuteFlattenLinear(perm).eval()
    x = torch.randn(1, 3, 6, 8)
    graph = mdla_ir.from_torch(module, (x,))
    target = mdla_legalize.load_target("mdla3.5")
    legal = mdla_legalize.legalize(graph, target)
    assert mdla_legalize.explain(legal, target).all_supported
    assert OpKind.TRANSPOSE not in {op.kind for op in legal.ops}
    with torch.no_grad():
        want = module(x).numpy()
    (got,) = mdla_ir.run_float(legal, [x.numpy()])
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
