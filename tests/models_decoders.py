"""Small models for the constructs issue 15 added as new ops (PRELU, RESIZE_NEAREST_NEIGHBOR
and the torch upsampling family, TRANSPOSE_CONV_2D, DEPTH_TO_SPACE): random weights (seed 0),
BatchNorm statistics set on data, inputs uniform in [0, 1)."""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn


class PNet(nn.Module):
    """MTCNN P-Net's shape (conv, PReLU, ceil-mode max pool, two heads), with a LeakyReLU and
    F.leaky_relu beside the PReLUs (per-channel and single alpha)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.prelu1 = nn.Conv2d(3, 10, 3), nn.PReLU(10)
        self.pool1 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.conv2, self.prelu2 = nn.Conv2d(10, 16, 3), nn.PReLU()
        self.conv3, self.act3 = nn.Conv2d(16, 32, 3), nn.LeakyReLU(0.1)
        self.conv4_1, self.conv4_2 = nn.Conv2d(32, 2, 1), nn.Conv2d(32, 4, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.pool1(self.prelu1(self.conv1(x)))
        x = self.act3(self.conv3(self.prelu2(self.conv2(x))))
        x = F.leaky_relu(x, 0.2)
        return torch.softmax(self.conv4_1(x), dim=1), self.conv4_2(x)


def pnet() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    with torch.no_grad():
        m = PNet().eval()
        for p in (m.prelu1, m.prelu2):
            p.weight.uniform_(0.05, 0.4)
    return m, (torch.rand(1, 3, 25, 25),)


class FPN(nn.Module):
    """A two-level feature pyramid: nn.Upsample (nearest), F.interpolate bilinear (both
    align_corners settings) and nearest-exact, merged by ADD and CONCATENATION."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.c2 = nn.Sequential(nn.Conv2d(8, 8, 3, 2, 1), nn.ReLU())
        self.c3 = nn.Sequential(nn.Conv2d(8, 8, 3, 2, 1), nn.ReLU())
        self.up = nn.Upsample(scale_factor=2)
        self.head = nn.Conv2d(32, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f1 = self.c1(x)
        f2 = self.c2(f1)
        f3 = self.c3(f2)
        p2 = f2 + self.up(f3)
        a = F.interpolate(p2, scale_factor=2, mode="bilinear", align_corners=False)
        b = F.interpolate(f3, size=f1.shape[2:], mode="bilinear", align_corners=True)
        c = F.interpolate(f2, scale_factor=2, mode="nearest-exact")
        return self.head(torch.cat([f1, a, b, c], dim=1))


def fpn() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    m = FPN()
    _bn_stats(m, (4, 3, 16, 16))
    return m.eval(), (torch.rand(1, 3, 16, 16),)


class ESPCN(nn.Module):
    """ESPCN super-resolution (x3): tanh convs, then a conv to 3 * 9 channels and PixelShuffle
    (its channel order folded into that conv); a second branch shuffles a CONCATENATION's output
    (F.pixel_shuffle: the 1x1 permutation conv)."""

    def __init__(self) -> None:
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 16, 5, padding=2), nn.Conv2d(16, 8, 3, padding=1)
        self.c3, self.shuffle = nn.Conv2d(8, 3 * 9, 3, padding=1), nn.PixelShuffle(3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.tanh(self.c2(torch.tanh(self.c1(x))))
        sr = self.shuffle(self.c3(y))
        return sr, F.pixel_shuffle(torch.cat([y, y * 0.5], dim=1), 2)


def espcn() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return ESPCN().eval(), (torch.rand(1, 3, 12, 12),)


def _cbr(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    """A three-level UNet: max-pool encoder; decoder with ConvTranspose2d (k2 s2 + BatchNorm +
    ReLU, and k3 s2 padding 1 output_padding 1), a nearest nn.Upsample skip branch, skip
    concatenations, and a bilinear (align_corners=False) auxiliary head from the bottleneck."""

    def __init__(self) -> None:
        super().__init__()
        self.enc1, self.enc2, self.enc3 = _cbr(3, 8), _cbr(8, 16), _cbr(16, 32)
        self.pool = nn.MaxPool2d(2)
        self.up2 = nn.Sequential(nn.ConvTranspose2d(32, 16, 2, stride=2), nn.BatchNorm2d(16))
        self.dec2 = _cbr(32, 16)
        self.up1 = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1)
        self.near = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec1 = _cbr(32, 8)
        self.head, self.aux = nn.Conv2d(8, 3, 1), nn.Conv2d(32, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        e3 = self.enc3(self.pool(e2))
        d2 = self.dec2(torch.cat([torch.relu(self.up2(e3)), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1, self.near(d2)], dim=1))
        aux = F.interpolate(self.aux(e3), scale_factor=4, mode="bilinear", align_corners=False)
        return self.head(d1) + aux


def unet() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    m = UNet()
    _bn_stats(m, (4, 3, 16, 16))
    return m.eval(), (torch.rand(1, 3, 16, 16),)


def _bn_stats(m: nn.Module, shape: tuple[int, ...]) -> None:
    """BatchNorm running statistics from data (random inputs), as the benches set them."""
    m.train()
    with torch.no_grad():
        for _ in range(3):
            m(torch.rand(*shape))


MODELS = {"pnet": pnet, "fpn": fpn, "espcn": espcn, "unet": unet}
