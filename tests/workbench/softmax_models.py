"""Models whose softmax runs over an axis that is not the last one after the NHWC layout pass
(issue 17): over H of a feature map (NCHW dim 2 -> NHWC axis 1) and over the middle axis of a
[N, T, F] sequence. `--cpu SOFTMAX` places the first on the CPU between NPU partitions of two
and three ops, which the partition bisection tests also cut (mdla-engine --ops)."""

from __future__ import annotations

import torch
from torch import nn


class SoftmaxOverHeight(nn.Module):
    """conv, conv | softmax over H (an attention over rows) | conv, add (a residual), conv."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.ReLU(), nn.Conv2d(8, 8, 1))
        self.mix = nn.Sequential(nn.Conv2d(8, 8, 1), nn.ReLU())
        self.head = nn.Conv2d(8, 4, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = torch.softmax(self.stem(x), dim=2)
        return self.head(self.mix(s) + s)


class SoftmaxOverTime(nn.Module):
    """A [1, T, F] sequence: linear, softmax over T (the middle axis), linear (no Linear over
    a rank-3 tensor maps on mtk-mdla: `--cpu SOFTMAX,FULLY_CONNECTED` runs it all on the CPU)."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(6, 8)
        self.out = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.softmax(self.inp(x), dim=1))


def softmax_over_height() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return SoftmaxOverHeight().eval(), torch.zeros(1, 3, 16, 12)


def softmax_over_time() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return SoftmaxOverTime().eval(), torch.zeros(1, 7, 6)
