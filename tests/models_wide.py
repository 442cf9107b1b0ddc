"""Small hand-written modules reproducing the patterns the wider third-party set met
(`bench/coverage.py --third-party --wide`), each the one construct a model family used, so a
fix to the general mechanism is tested without the family's library."""

from __future__ import annotations

import torch
from torch import nn


class UpsamplingAdaptiveHead(nn.Module):
    """AlexNet's and VGG's head at a small input: AdaptiveAvgPool2d((6, 6)) on a map smaller
    than 6x6 (here 1x1 and 2x3), which copies pixels instead of averaging them, then flatten
    and Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.MaxPool2d(16))
        self.pool = nn.AdaptiveAvgPool2d((6, 6))
        self.side = nn.Conv2d(3, 4, 3, (16, 11), 1)
        self.side_pool = nn.AdaptiveMaxPool2d((4, 9))
        self.fc = nn.Linear(8 * 36, 10)
        self.side_fc = nn.Linear(4 * 36, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.fc(self.pool(self.features(x)).flatten(1))
        return a + self.side_fc(self.side_pool(torch.relu(self.side(x))).flatten(1))


class SignedStemPool(nn.Module):
    """CSPResNet's and DPN's stem: conv, BatchNorm, LeakyReLU (or no activation at all), then
    MaxPool2d(3, 2, padding=1) over values of either sign, where a zero pad could win."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.LeakyReLU(0.1))
        self.pool = nn.MaxPool2d(3, 2, padding=1)
        self.conv = nn.Conv2d(8, 8, 3, 1, 1)
        self.pool2 = nn.MaxPool2d(5, 2, padding=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool2(self.conv(self.pool(self.stem(x))))


class SpaceToDepthView(nn.Module):
    """TResNet's stem: space-to-depth by 4 written as view / permute / reshape of rank 6
    (channels ordered block row, block column, channel), then a conv; and the other order
    (channel first, as pixel_unshuffle) by 2 on a non-square map."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(48, 8, 3, 1, 1)
        self.conv2 = nn.Conv2d(32, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.size()
        y = x.view(n, c, h // 4, 4, w // 4, 4).permute(0, 3, 5, 1, 2, 4).contiguous()
        y = self.conv(y.view(n, c * 16, h // 4, w // 4))
        z = y.reshape(n, 8, 4, 2, 4, 2).permute(0, 1, 3, 5, 2, 4).reshape(n, 32, 4, 4)
        return self.conv2(torch.relu(z))


class TokenMLPDecoder(nn.Module):
    """Segformer's MLP decoder stage: a map's pixels as tokens through a Linear and back to the
    map, x.flatten(2).transpose(1, 2) -> Linear -> .transpose(1, 2).reshape(N, O, H, W)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, 2, 1)
        self.linear = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        n, _, h, w = x.shape
        t = self.linear(x.flatten(2).transpose(1, 2))
        return torch.relu(t.transpose(1, 2).reshape(n, -1, h, w))


class ClassToken(nn.Module):
    """ViT's class token: a learned vector concatenated before the patch tokens, the head
    reading it back (`torch.cat([cls.expand(n, -1, -1), tokens], 1)`); its values (0.1 to
    2.5) lie outside the patch tokens' range on one side."""

    def __init__(self) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, 16, 8, 8)
        self.cls = nn.Parameter(torch.linspace(0.1, 2.5, 16).reshape(1, 1, 16))
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(x.shape[0], -1, -1), t], dim=1)
        return self.fc(t[:, 0] + t[:, 1])


class CoordChannels(nn.Module):
    """CoordConv: two constant channels holding each pixel's x and y in [-3, 3] concatenated to
    the features, read by the next conv; the same buffer also added to a second branch."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, 2, 1)
        ys, xs = torch.meshgrid(torch.linspace(-3, 3, 16), torch.linspace(-3, 3, 16), indexing="ij")
        self.register_buffer("coords", torch.stack([xs, ys])[None])
        self.head = nn.Conv2d(8, 4, 3, 1, 1)
        self.side = nn.Conv2d(3, 2, 3, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = torch.cat([torch.relu(self.conv(x)), self.coords], dim=1)
        return self.head(f) + (self.side(x) + self.coords).sum(1, keepdim=True)


class RotatedBoxHead(nn.Module):
    """An oriented-box head (ultralytics' OBB): an angle from a sigmoid, the box's offsets
    rotated by its cosine and sine, joined with the class probabilities in one output (a
    float32 concatenation on the CPU beside the tables, as YOLO's); torch's elementwise
    functions run as CPU tables."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU())
        self.angle = nn.Conv2d(8, 1, 1)
        self.offsets = nn.Conv2d(8, 2, 1)
        self.classes = nn.Conv2d(8, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.features(x)
        theta = (torch.sigmoid(self.angle(f)) - 0.25) * torch.pi
        cos, sin = torch.cos(theta), torch.sin(theta)
        dx, dy = (self.offsets(f) * 8.0).split(1, dim=1)
        boxes = torch.cat([dx * cos - dy * sin, dx * sin + dy * cos, theta], dim=1)
        return torch.cat([boxes, torch.sigmoid(self.classes(f))], dim=1)


class SplitAttention(nn.Module):
    """ResNeSt's split attention, cardinality 2 (radix 2, or 4 as resnest50d_4s2x40d): a
    grouped conv's [N, R*C, H, W] output viewed as [N, R, C, H, W], summed over the radix for
    the gate, the gate's logits through rSoftMax (view(N, K, R, -1).transpose(1, 2), softmax
    over R), viewed as [N, R, C, 1, 1], multiplied in and summed over the radix (rank-5 tensors
    throughout)."""

    def __init__(self, radix: int = 2) -> None:
        super().__init__()
        self.radix = radix
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU())
        self.conv = nn.Sequential(nn.Conv2d(16, 16 * radix, 3, 1, 1, groups=2 * radix), nn.ReLU())
        self.fc1 = nn.Sequential(nn.Conv2d(16, 8, 1), nn.ReLU())
        self.fc2 = nn.Conv2d(8, 16 * radix, 1, groups=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(self.stem(x))
        n, rc, h, w = x.shape
        r = self.radix
        x = x.reshape(n, r, rc // r, h, w)
        gap = self.fc1(x.sum(dim=1).mean((2, 3), keepdim=True))
        attn = self.fc2(gap).view(n, 2, r, -1).transpose(1, 2)
        attn = torch.softmax(attn, dim=1).reshape(n, -1).view(n, r, rc // r, 1, 1)
        return (x * attn).sum(dim=1)


class SelectiveKernel(nn.Module):
    """SKNet's selective kernel: a 3x3 and a dilated 3x3 branch stacked as [N, 2, C, H, W], the
    gate's logits viewed as [N, 2, C, 1, 1] with a softmax over the branches (rank 5), the
    branches weighted and summed."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU())
        self.paths = nn.ModuleList(
            nn.Sequential(nn.Conv2d(8, 8, 3, 1, d, dilation=d), nn.ReLU()) for d in (1, 2)
        )
        self.reduce = nn.Sequential(nn.Conv2d(8, 4, 1), nn.ReLU())
        self.select = nn.Conv2d(4, 16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        paths = torch.stack([p(x) for p in self.paths], dim=1)
        gate = self.select(self.reduce(paths.sum(1).mean((2, 3), keepdim=True)))
        gate = torch.softmax(gate.view(x.shape[0], 2, 8, 1, 1), dim=1)
        return (paths * gate).sum(dim=1) + x


class UnevenAdaptivePool(nn.Module):
    """Adaptive average pools whose bins are uneven: VGG's head at a small input (a 2x2 map
    through AdaptiveAvgPool2d((7, 7)), flatten, Linear) and UPerNet's pyramid (2x2 -> 3x3, a
    1x1 conv, upsampled back)."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.MaxPool2d(8))
        self.pool = nn.AdaptiveAvgPool2d((7, 7))
        self.fc = nn.Linear(8 * 49, 10)
        self.ppm = nn.Sequential(nn.AdaptiveAvgPool2d(3), nn.Conv2d(8, 4, 1), nn.ReLU())
        self.side = nn.Linear(4 * 16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.features(x)
        p = nn.functional.interpolate(self.ppm(f), size=(4, 4), mode="nearest")
        return self.fc(self.pool(f).flatten(1)) + self.side(p.flatten(1))
