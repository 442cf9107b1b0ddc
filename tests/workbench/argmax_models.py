"""A segmentation net whose last op is an argmax over its 5 class scores (issue 17): the MDLA
has no ARGMAX, so `--cpu ARGMAX` places it on the CPU and the .mdla's output is the class map."""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn


class ArgmaxSegmenter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU())
        self.head = nn.Conv2d(8, 5, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = F.interpolate(self.head(self.stem(x)), size=x.shape[-2:], mode="nearest")
        return scores.argmax(dim=1)


def argmax_segmenter() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return ArgmaxSegmenter().eval(), torch.zeros(1, 3, 32, 32)
