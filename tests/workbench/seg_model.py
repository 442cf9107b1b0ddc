"""A small segmentation net for `workbench run`'s class-map PNGs: a stride-2 conv, a dilated
conv, a 5-class 1x1 head upsampled (bilinear) to the input, and a dict output whose `aux` head
stays at half resolution (so it is not a class map of the input)."""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn


class Segmenter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU())
        self.atrous = nn.Sequential(nn.Conv2d(8, 8, 3, padding=2, dilation=2), nn.ReLU())
        self.head, self.aux = nn.Conv2d(8, 5, 1), nn.Conv2d(8, 3, 1)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        f = self.atrous(self.stem(x))
        out = F.interpolate(self.head(f), size=x.shape[-2:], mode="bilinear", align_corners=False)
        return {"out": out, "aux": self.aux(f)}


def segmenter() -> nn.Module:
    """Random weights (seed 0: N(0, 1/fan_in), no biases, so that no class wins everywhere
    and a photo gives a map of several classes), ImageNet preprocessing at 224 x 224."""
    torch.manual_seed(0)
    m = Segmenter().eval()
    with torch.no_grad():
        for conv in (m.stem[0], m.atrous[0], m.head, m.aux):
            assert isinstance(conv, nn.Conv2d)
            assert conv.bias is not None
            nn.init.normal_(conv.weight, 0.0, conv.weight[0].numel() ** -0.5)
            conv.bias.zero_()
    return m
