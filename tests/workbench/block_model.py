"""A small CNN with one inverted-residual block (expand 1x1, depthwise 3x3, project 1x1, ADD):
the shape `QuantConfig(reconstruction="block")` refines as a whole."""

from __future__ import annotations

import torch
from torch import nn


class MBConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.ReLU())
        self.expand = nn.Sequential(nn.Conv2d(8, 24, 1), nn.ReLU6())
        self.depthwise = nn.Sequential(nn.Conv2d(24, 24, 3, 1, 1, groups=24), nn.ReLU6())
        self.project = nn.Conv2d(24, 8, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = x + self.project(self.depthwise(self.expand(x)))
        return self.fc(torch.flatten(self.pool(x), 1))  # type: ignore[no-any-return]


def mbconv() -> tuple[nn.Module, torch.Tensor]:
    """The model (seeded weights) and its example input: random calibration, 12x12."""
    torch.manual_seed(0)
    return MBConv().eval(), torch.zeros(1, 3, 12, 12)
