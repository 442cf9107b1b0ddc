"""Small 1-D (audio, ECG) models: Conv1d, BatchNorm1d, the 1-D pools, a causal pad, a
per-channel scale, a mean over channels and a CRNN's permute into a Linear. On the device every
(N, C, L) activation is held (N, L, C) (mdla_legalize.sequences), so none needs a TRANSPOSE."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from tests.models_rewrites import _bn_stats

SHAPE = (1, 2, 64)


class EcgNet(nn.Module):
    """Conv1d + BatchNorm1d + MaxPool1d, strided Conv1d + AvgPool1d, depthwise Conv1d,
    AdaptiveAvgPool1d, Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv1d(2, 8, 7, 1, 3, bias=False)
        self.bn1 = nn.BatchNorm1d(8)
        self.c2 = nn.Conv1d(8, 16, 5, 2, 2)
        self.dw = nn.Conv1d(16, 16, 3, 1, 1, groups=16)
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.max_pool1d(torch.relu(self.bn1(self.c1(x))), 2)
        y = F.avg_pool1d(torch.relu(self.c2(y)), 2)
        y = F.adaptive_avg_pool1d(torch.relu(self.dw(y)), 1)
        return self.fc(torch.flatten(y, 1))


class CausalTcn(nn.Module):
    """A causal dilated Conv1d after F.pad (left only), a per-channel scale, a residual."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Conv1d(2, 8, 1)
        self.conv = nn.Conv1d(8, 8, 3, dilation=2)
        self.scale = nn.Parameter(torch.rand(8, 1) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.inp(x))
        z = self.conv(F.pad(y, (4, 0))) * self.scale
        return torch.relu(y + z)


class ChannelMean(nn.Module):
    """A mean over the channel axis (an energy envelope)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(2, 8, 5, 1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x)).mean(1)


class Crnn(nn.Module):
    """A CRNN's front: Conv1d features, permute(0, 2, 1) to (N, L, C), a Linear per step."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(2, 8, 3, 1, 1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).permute(0, 2, 1))


class FlattenHead(nn.Module):
    """A strided Conv1d stack flattened into a Linear (the common ECG classifier head)."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv1d(2, 8, 5, 2, 2)
        self.bn = nn.BatchNorm1d(8)
        self.c2 = nn.Conv1d(8, 8, 3, 1, 1)
        self.fc = nn.Linear(8 * 16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.max_pool1d(torch.relu(self.bn(self.c1(x))), 2)
        return self.fc(torch.flatten(torch.relu(self.c2(y)), 1))


CASES: dict[str, Callable[[], nn.Module]] = {
    "ecg": EcgNet,
    "causal_tcn": CausalTcn,
    "channel_mean": ChannelMean,
    "crnn": Crnn,
    "flatten_head": FlattenHead,
}


def build(name: str, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return _bn_stats(CASES[name](), seed)
