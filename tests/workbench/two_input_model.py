"""A hand-written model of two inputs for `run`/`validate` with an `.npz`: two images of
different sizes through their own conv branches, the second upsampled, added, and a
4-class head (no image preprocessing: it takes arrays only)."""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

SHAPES = ((1, 3, 16, 16), (1, 2, 8, 8))


class TwoBranches(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.left = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.right = nn.Sequential(nn.Conv2d(2, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(8, 4, 1)

    def forward(self, image: torch.Tensor, depth: torch.Tensor) -> torch.Tensor:
        right = F.interpolate(self.right(depth), scale_factor=2.0, mode="nearest")
        return self.head(self.left(image) + right).mean(dim=(2, 3))


def two_branches() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Seeded random weights, with the example inputs that fix both shapes."""
    torch.manual_seed(0)
    return TwoBranches().eval(), tuple(torch.rand(s) for s in SHAPES)
