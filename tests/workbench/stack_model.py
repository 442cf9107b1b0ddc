"""A conv stack whose depth and input size come from its factory's arguments: without the same
`--arg depth=N` and `--input-shape` another graph is imported (`check` vs `compile` agreement)."""

from __future__ import annotations

import torch
from torch import nn


class Stack(nn.Module):
    def __init__(self, depth: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for _ in range(depth):
            layers += [nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU()]
        self.stem = nn.Conv2d(3, 4, 3, 2, 1)
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(self.stem(x))
        return self.head(y.mean(dim=(2, 3)))


def stack(depth: int = 1) -> Stack:
    torch.manual_seed(depth)
    return Stack(depth).eval()
