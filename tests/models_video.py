"""Small video (Conv3d) models, and the end-to-end check they go through on either import
path: import -> legalize -> every op on mtk-mdla -> float parity with torch -> quantize ->
emulator == run_int8 == LiteRT BUILTIN_REF, bit for bit.

A clip is (N, C, T, H, W); the legalizer holds it as frames (N*T, H, W, C) and every 3-D op
becomes 2-D ones over them (mdla_legalize.rules.frames)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from tests.models_rewrites import Result, _bn_stats, module_end_to_end


class MyConv3d(nn.Conv3d):
    """A Conv3d subclass (as libraries write them): maps by what it computes."""


class StridedClip(nn.Module):
    """Strided temporal conv with BatchNorm3d, temporal max pool, dilated grouped conv."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv3d(3, 8, (3, 3, 3), (2, 2, 2), (1, 1, 1), bias=False)
        self.bn = nn.BatchNorm3d(8)
        self.pool = nn.MaxPool3d((2, 1, 1))
        self.mix = MyConv3d(8, 8, 3, 1, (2, 1, 1), dilation=(2, 1, 1), groups=2)
        self.deep = nn.Conv3d(8, 8, (2, 1, 1), (2, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pool(torch.relu(self.bn(self.stem(x))))
        return self.deep(torch.relu(self.mix(y)))


class R2Plus1D(nn.Module):
    """An R(2+1)D block: a (1, k, k) spatial conv, then a (k, 1, 1) temporal one, a residual."""

    def __init__(self) -> None:
        super().__init__()
        self.spatial = nn.Conv3d(3, 8, (1, 3, 3), 1, (0, 1, 1), bias=False)
        self.bn1 = nn.BatchNorm3d(8)
        self.temporal = nn.Conv3d(8, 8, (3, 1, 1), 1, (1, 0, 0), bias=False)
        self.bn2 = nn.BatchNorm3d(8)
        self.pool = nn.MaxPool3d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.spatial(x)))
        return self.pool(torch.relu(y + self.bn2(self.temporal(y))))


class Depthwise3d(nn.Module):
    """A channel-wise (X3D-style) 3x3x3 conv, padded 3-D max pool with a temporal stride."""

    def __init__(self) -> None:
        super().__init__()
        self.expand = nn.Conv3d(3, 6, 1)
        self.dw = nn.Conv3d(6, 6, 3, 1, 1, groups=6)
        self.pool = nn.MaxPool3d(3, (2, 2, 2), 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(torch.relu(self.dw(torch.relu(self.expand(x)))))


class VideoClassifier(nn.Module):
    """Per-frame then over-time average pools, a padded 3-D average pool, a global
    AdaptiveAvgPool3d into a Linear classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv3d(3, 8, (3, 3, 3), (1, 2, 2), (1, 1, 1))
        self.frame_pool = nn.AvgPool3d((1, 2, 2))
        self.time_pool = nn.AvgPool3d((2, 1, 1))
        self.mix = nn.Conv3d(8, 8, 3, 1, 1)
        self.pool = nn.AvgPool3d(3, 1, 1)
        self.head = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.time_pool(self.frame_pool(torch.relu(self.stem(x))))
        y = self.pool(torch.relu(self.mix(y)))
        return self.fc(torch.flatten(self.head(y), 1))


class TemporalFeatures(nn.Module):
    """Per-frame features pooled to (T', 1, 1) (an AdaptiveAvgPool3d over space, and over time
    to half the frames), F.avg_pool3d without counting the padding."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv3d(3, 8, (1, 3, 3), 1, (0, 1, 1))
        self.pool = nn.AdaptiveAvgPool3d((4, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.avg_pool3d(torch.relu(self.conv(x)), 3, 1, 1, count_include_pad=False)
        return self.pool(y)


class MeanHeads(nn.Module):
    """Means over a clip's space (per-frame features (N, C, T)), a Conv1d over time on them,
    and a mean over the whole clip into the classifier (summed)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3, (1, 2, 2), 1)
        self.temporal = nn.Conv1d(8, 8, 3, 1, 1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x))
        frames = torch.relu(self.temporal(y.mean((-2, -1))))
        return self.fc(frames.mean(-1) + y.mean((2, 3, 4)))


@dataclass(frozen=True)
class Case:
    make: Callable[[], nn.Module]
    shape: tuple[int, ...] = (1, 3, 8, 12, 12)


CASES = {
    "strided_clip": Case(StridedClip),
    "r2plus1d": Case(R2Plus1D),
    "depthwise3d": Case(Depthwise3d),
    "video_classifier": Case(VideoClassifier),
    "temporal_features": Case(TemporalFeatures, (1, 3, 16, 12, 12)),
    "mean_heads": Case(MeanHeads),
}


def build(name: str, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return _bn_stats(CASES[name].make(), seed)


def end_to_end(name: str, tmp: Path, path: str) -> Result:
    """The whole path; raises AssertionError (or the stage's error) on the first failure."""
    return run_module(build(name), CASES[name].shape, name, tmp, path)


def run_module(
    module: nn.Module, shape: tuple[int, ...], name: str, tmp: Path, path: str
) -> Result:
    """end_to_end of any module on inputs of `shape` (`models_rewrites.module_end_to_end`)."""
    return module_end_to_end(module, shape, name, tmp, path)
