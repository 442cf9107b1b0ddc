"""A small CNN for the workbench tests: stride-2 conv (PyTorch pads), SiLU, SE gate, Linear."""

from __future__ import annotations

import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.SiLU())
        self.block = nn.Sequential(nn.Conv2d(8, 8, 3, 1, 1, groups=8), nn.ReLU6())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block(self.stem(x))
        return self.fc(torch.flatten(self.pool(x), 1))  # type: ignore[no-any-return]


def tiny() -> tuple[nn.Module, torch.Tensor]:
    """The model and its example input (so it has no image preprocessing: random calibration)."""
    torch.manual_seed(0)
    return Tiny().eval(), torch.zeros(1, 3, 32, 32)


def tiny_images() -> nn.Module:
    """The same model taking 32×32 images (ImageNet preprocessing)."""
    torch.manual_seed(0)
    return Tiny().eval()


def unmappable() -> tuple[nn.Module, torch.Tensor]:
    """A conv followed by GELU: erf has no Neuron operation, so legalization must refuse it."""
    return nn.Sequential(nn.Conv2d(3, 4, 1), nn.GELU()).eval(), torch.zeros(1, 3, 8, 8)
