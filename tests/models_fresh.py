"""A fresh set of small CNNs written the way users write them (functional calls, tensor methods,
in-place ops, attention blocks, UNet skips, 1-D and 3-D models, several inputs and outputs),
none of them copied from the other model sets. Part one: image classifiers and attention; part
two (`tests.models_fresh_more`): decoders, norms, sequences, video and output shapes. `CASES`
holds both; `tests/zoo/test_fresh.py` and `bench/coverage.py --fresh` compile every one and
hold the emulator to run_int8 bit for bit.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn


class FunctionalConv(nn.Module):
    """F.conv2d with registered parameters, F.relu, F.avg_pool2d, an adaptive pool flattened."""

    def __init__(self) -> None:
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(8, 3, 3, 3) * 0.3)
        self.b1 = nn.Parameter(torch.randn(8) * 0.1)
        self.w2 = nn.Parameter(torch.randn(16, 8, 3, 3) * 0.2)
        self.fc = nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(F.conv2d(x, self.w1, self.b1, padding=1))
        x = F.avg_pool2d(x, 2)
        x = F.relu(F.conv2d(x, self.w2, None, stride=2, padding=1))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class InplaceResidual(nn.Module):
    """relu_, `x += y`, mul_ and a `view(x.size(0), -1)` head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 2, 1)
        self.c1, self.bn1 = nn.Conv2d(8, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8)
        self.c2, self.bn2 = nn.Conv2d(8, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.fc = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x).relu_()
        y = self.bn1(self.c1(x)).relu_()
        y = self.bn2(self.c2(y))
        y += x
        y.mul_(0.5)
        y = F.relu(y, inplace=True)
        y = self.pool(y)
        return self.fc(y.view(y.size(0), -1))


class TorchFlatten(nn.Module):
    """A padded max pool then torch.flatten(x, 1) into two Linears (Dropout between)."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 12, 5, 2, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, padding=1)
        )
        self.head = nn.Sequential(nn.Linear(12 * 8 * 8, 32), nn.Dropout(0.2), nn.Linear(32, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), 1))


class MeanListHead(nn.Module):
    """x.mean([2, 3]) as the global pool, tensor-method activations."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 16, 3, 2, 1)
        self.b = nn.Conv2d(16, 24, 3, 2, 1)
        self.fc = nn.Linear(24, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.b(self.a(x).relu()).clamp_min(0.0)
        return self.fc(x.mean([2, 3]))


class SqueezeExcite(nn.Module):
    def __init__(self, c: int, r: int = 4) -> None:
        super().__init__()
        self.reduce = nn.Conv2d(c, c // r, 1)
        self.expand = nn.Conv2d(c // r, c, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.mean((-1, -2), keepdim=True)
        return x * torch.sigmoid(self.expand(F.silu(self.reduce(s))))


class SENet(nn.Module):
    """Squeeze-excitation from mean((-1, -2), keepdim=True), SiLU, hardswish stem."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 2, 1)
        self.dw = nn.Conv2d(16, 16, 3, 1, 1, groups=16)
        self.se = SqueezeExcite(16)
        self.proj = nn.Conv2d(16, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.hardswish(self.stem(x))
        return self.proj(self.se(F.relu6(self.dw(x))))


class CBAM(nn.Module):
    """CBAM: a shared MLP on the avg and max pooled channels, then a 7x7 spatial gate on the
    channel mean and max."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, 1, 1)
        self.mlp = nn.Sequential(nn.Linear(16, 4), nn.ReLU(), nn.Linear(4, 16))
        self.spatial = nn.Conv2d(2, 1, 7, padding=3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv(x))
        avg = self.mlp(F.adaptive_avg_pool2d(x, 1).flatten(1))
        mx = self.mlp(F.adaptive_max_pool2d(x, 1).flatten(1))
        x = x * torch.sigmoid(avg + mx)[:, :, None, None]
        maps = torch.cat([x.mean(1, keepdim=True), x.max(dim=1, keepdim=True)[0]], dim=1)
        return x * torch.sigmoid(self.spatial(maps))


class CoordAttention(nn.Module):
    """Coordinate attention: pool along H and along W, a shared 1x1 conv on their concat, split,
    a gate per axis."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, 1, 1)
        self.shared = nn.Sequential(nn.Conv2d(16, 8, 1), nn.BatchNorm2d(8), nn.Hardswish())
        self.ah, self.aw = nn.Conv2d(8, 16, 1), nn.Conv2d(8, 16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        h, w = x.shape[2], x.shape[3]
        xh = x.mean(3, keepdim=True)
        xw = x.mean(2, keepdim=True).permute(0, 1, 3, 2)
        y = self.shared(torch.cat([xh, xw], dim=2))
        yh, yw = torch.split(y, [h, w], dim=2)
        gh = self.ah(yh).sigmoid()
        gw = self.aw(yw.permute(0, 1, 3, 2)).sigmoid()
        return x * gh * gw


class ShuffleBlock(nn.Module):
    """Grouped 1x1 convs around a channel shuffle written view/transpose/contiguous/view."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 2, 1)
        self.g1 = nn.Conv2d(16, 16, 1, groups=4)
        self.dw = nn.Conv2d(16, 16, 3, 1, 1, groups=16)
        self.g2 = nn.Conv2d(16, 16, 1, groups=4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem(x))
        y = F.relu(self.g1(x))
        n, c, h, w = y.size()
        y = y.view(n, 4, c // 4, h, w).transpose(1, 2).contiguous().view(n, c, h, w)
        return F.relu(x + self.g2(self.dw(y)))


class SubPixel(nn.Module):
    """Super-resolution tail: conv to 4x channels, F.pixel_shuffle(x, 2)."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 5, 1, 2), nn.Tanh(), nn.Conv2d(16, 12, 3, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(F.pixel_shuffle(self.body(x), 2))


class Unshuffle(nn.Module):
    """nn.PixelUnshuffle(2) as the downsampling stem."""

    def __init__(self) -> None:
        super().__init__()
        self.down = nn.PixelUnshuffle(2)
        self.conv = nn.Conv2d(12, 16, 3, 1, 1)
        self.head = nn.Conv2d(16, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.leaky_relu(self.conv(self.down(x)), 0.1))


def _dws(cin: int, cout: int, stride: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
        nn.BatchNorm2d(cin),
        nn.ReLU6(inplace=True),
        nn.Conv2d(cin, cout, 1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU6(inplace=True),
    )


class MobileNetV1ish(nn.Module):
    """Depthwise-separable blocks, a global average pool, a 1x1 conv classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU6())
        self.blocks = nn.Sequential(_dws(8, 16, 1), _dws(16, 32, 2), _dws(32, 32, 1))
        self.classifier = nn.Conv2d(32, 10, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.blocks(self.stem(x)), (1, 1))
        return self.classifier(x).squeeze(-1).squeeze(-1)


class DilatedContext(nn.Module):
    """Parallel dilated 3x3 convs (rates 1, 2, 4) summed, ASPP-style."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 1, 1)
        self.rates = nn.ModuleList(nn.Conv2d(8, 8, 3, padding=r, dilation=r) for r in (1, 2, 4))
        self.out = nn.Conv2d(8, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        return self.out(sum(torch.relu(conv(x)) for conv in self.rates))


class GroupedBottleneck(nn.Module):
    """A grouped 3x3 (groups 2) in a bottleneck with a strided projection shortcut."""

    def __init__(self) -> None:
        super().__init__()
        self.reduce = nn.Conv2d(3, 8, 1)
        self.grouped = nn.Conv2d(8, 8, 3, 2, 1, groups=2)
        self.expand = nn.Conv2d(8, 16, 1)
        self.short = nn.Conv2d(3, 16, 1, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.expand(F.relu(self.grouped(F.relu(self.reduce(x)))))
        return F.relu(y + self.short(x))


class WhereGates(nn.Module):
    """torch.where with constants: a hand-written leaky ReLU and a threshold."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 3, 1, 1), nn.Conv2d(8, 4, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        y = torch.where(y > 0, y, 0.1 * y)
        z = self.b(y)
        return torch.where(z > 0.2, z, torch.zeros_like(z))


class ElementwiseMath(nn.Module):
    """clamp(min=...), abs, neg, square, pow(2), a tensor method chain."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 3, 1, 1), nn.Conv2d(8, 8, 3, 1, 1)
        self.out = nn.Conv2d(16, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x).clamp(min=-0.5)
        z = self.b(y.abs())
        e = torch.square(z) - (-y).pow(2) * 0.5
        return self.out(torch.cat([e, z.neg()], 1))


class SwishByHand(nn.Module):
    """`x * torch.sigmoid(x)`, F.hardsigmoid and F.hardswish, F.silu."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 3, 1, 1), nn.Conv2d(8, 8, 3, 2, 1)
        self.c = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        y = y * torch.sigmoid(y)
        z = F.hardswish(self.b(y)) * F.hardsigmoid(self.b(y))
        return F.silu(self.c(z))


class SmoothActs(nn.Module):
    """GELU and Mish (the CPU's, where the MDLA has no form)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 3, 1, 1), nn.Conv2d(8, 4, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.mish(self.b(F.gelu(self.a(x))))


class LeakyElu(nn.Module):
    """F.leaky_relu(0.2) and F.elu."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 3, 2, 1), nn.Conv2d(8, 4, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(self.b(F.leaky_relu(self.a(x), negative_slope=0.2)))


class PReLUNet(nn.Module):
    """nn.PReLU per channel and F.prelu with a registered one-parameter slope."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.act = nn.Conv2d(3, 8, 3, 1, 1), nn.PReLU(8)
        self.b = nn.Conv2d(8, 4, 3, 2, 1)
        self.slope = nn.Parameter(torch.tensor([0.3]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.prelu(self.b(self.act(self.a(x))), self.slope)


class PoolVariants(nn.Module):
    """AvgPool2d with ceil_mode and count_include_pad=False; a padded MaxPool2d; a ceil_mode
    MaxPool2d."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, 1, 1)
        self.avg = nn.AvgPool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=False)
        self.pmax = nn.MaxPool2d(3, 1, padding=1)
        self.cmax = nn.MaxPool2d(2, ceil_mode=True)
        self.out = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.avg(torch.relu(self.conv(x)))
        return self.out(self.cmax(self.pmax(y)))


class DilatedMaxPool(nn.Module):
    """A dilated max pool (kernel 3, dilation 2) between convs."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, 1, 1)
        self.pool = nn.MaxPool2d(3, 1, padding=1, dilation=2)
        self.out = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.pool(torch.relu(self.conv(x))))


class GlobalMaxHead(nn.Module):
    """A global max pool by F.max_pool2d over the whole map, softmax over the logits."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, 2, 1)
        self.fc = nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.conv(x))
        y = F.max_pool2d(y, kernel_size=y.shape[2:])
        return F.softmax(self.fc(y.view(y.shape[0], -1)), dim=-1)


class GhostModule(nn.Module):
    """GhostNet's module: a primary conv, a cheap depthwise conv of it, concat, a slice."""

    def __init__(self) -> None:
        super().__init__()
        self.primary = nn.Sequential(nn.Conv2d(3, 6, 1), nn.BatchNorm2d(6), nn.ReLU())
        self.cheap = nn.Sequential(nn.Conv2d(6, 6, 3, 1, 1, groups=6), nn.ReLU())
        self.out = nn.Conv2d(10, 4, 3, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.primary(x)
        return self.out(torch.cat([p, self.cheap(p)], dim=1)[:, :10])


class PermuteLinear(nn.Module):
    """x.permute(0, 2, 3, 1) -> nn.Linear over channels -> permute back."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, 2, 1)
        self.mix = nn.Linear(8, 12)
        self.out = nn.Conv2d(12, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.mix(F.relu(self.conv(x)).permute(0, 2, 3, 1))
        return self.out(F.relu(y).permute(0, 3, 1, 2))
