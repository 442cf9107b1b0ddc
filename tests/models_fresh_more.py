"""The fresh set, part two (`tests.models_fresh` has part one): decoders with skips, norms,
1-D and 3-D models, several inputs and outputs, buffers and shape arithmetic."""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn


class TransposeDecoder(nn.Module):
    """An encoder and a ConvTranspose2d decoder with output_padding back to the input size."""

    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, 2, 1)
        self.up = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(F.relu(self.down(x)))


class UNetNearest(nn.Module):
    """Skips concatenated on dim=-3 after F.interpolate(scale_factor=2) (nearest)."""

    def __init__(self) -> None:
        super().__init__()
        self.e1, self.e2 = nn.Conv2d(3, 8, 3, 1, 1), nn.Conv2d(8, 16, 3, 2, 1)
        self.d1 = nn.Conv2d(24, 8, 3, 1, 1)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.relu(self.e1(x))
        y = F.relu(self.e2(s))
        y = torch.cat([F.interpolate(y, scale_factor=2), s], dim=-3)
        return self.out(F.relu(self.d1(y)))


class UNetAlignCorners(nn.Module):
    """Bilinear upsampling with align_corners=True to the skip's size (size=)."""

    def __init__(self) -> None:
        super().__init__()
        self.e1, self.e2 = nn.Conv2d(3, 8, 3, 1, 1), nn.Conv2d(8, 8, 3, 2, 1)
        self.e3 = nn.Conv2d(8, 8, 3, 2, 1)
        self.out = nn.Conv2d(16, 3, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = torch.relu(self.e1(x))
        y = self.e3(torch.relu(self.e2(s)))
        y = F.interpolate(y, size=s.shape[-2:], mode="bilinear", align_corners=True)
        return self.out(torch.cat((s, y), 1))


class UNetBilinear(nn.Module):
    """nn.Upsample(scale_factor=2, mode="bilinear") (align_corners=False), additive skips."""

    def __init__(self) -> None:
        super().__init__()
        self.e1, self.e2 = nn.Conv2d(3, 8, 3, 1, 1), nn.Conv2d(8, 8, 3, 2, 1)
        self.e3 = nn.Conv2d(8, 8, 3, 2, 1)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.out = nn.Conv2d(8, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = F.relu(self.e1(x))
        b = F.relu(self.e2(a))
        c = F.relu(self.e3(b))
        return self.out(self.up(self.up(c) + b) + a)


class ChunkSplitUnbind(nn.Module):
    """Per-colour scaling by unbind + stack, chunk and split of a feature map."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 12, 3, 1, 1)
        self.a, self.b = nn.Conv2d(6, 4, 3, 1, 1), nn.Conv2d(4, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r, g, b = x.unbind(1)
        x = torch.stack([r * 0.5, g, b * 2.0], dim=1)
        y1, y2 = self.conv(x).chunk(2, dim=1)
        p, q = torch.split(y2, 2, dim=1)[0], y2.split([4, 2], 1)[1]
        return self.b(F.relu(self.a(y1 * torch.sigmoid(y2)))) + p.sum(1, keepdim=True) - q[:, :1]


class GroupNormNet(nn.Module):
    """nn.GroupNorm(4, 16) after a conv, as detection heads and small UNets use it."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, 2, 1)
        self.gn = nn.GroupNorm(4, 16)
        self.out = nn.Conv2d(16, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(F.relu(self.gn(self.conv(x))))


class InstanceNormNet(nn.Module):
    """nn.InstanceNorm2d(affine=True), a style-transfer block."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, 1, 1)
        self.norm = nn.InstanceNorm2d(8, affine=True)
        self.out = nn.Conv2d(8, 3, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.out(F.relu(self.norm(self.conv(x)))))


class ChannelLayerNorm(nn.Module):
    """F.layer_norm over channels via permute(0, 2, 3, 1) and back."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 4, 4)
        self.weight, self.bias = nn.Parameter(torch.rand(16) + 0.5), nn.Parameter(torch.zeros(16))
        self.out = nn.Conv2d(16, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x).permute(0, 2, 3, 1)
        y = F.layer_norm(y, (16,), self.weight, self.bias, eps=1e-6)
        return self.out(y.permute(0, 3, 1, 2))


class ModuleListLoop(nn.Module):
    """Residual blocks in a ModuleList walked by a for loop."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 2, 1)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Conv2d(8, 8, 3, 1, 1), nn.BatchNorm2d(8), nn.ReLU()) for _ in range(3)
        )
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


class DictOutputs(nn.Module):
    """A segmentation map and a class vector returned as a dict."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU())
        self.seg, self.cls = nn.Conv2d(8, 3, 1), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        f = self.body(x)
        return {"mask": self.seg(f), "logits": self.cls(f.mean((2, 3)))}


class TupleListOutputs(nn.Module):
    """A tuple of (a list of two scales, a map) as outputs."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 3, 2, 1), nn.Conv2d(8, 8, 3, 2, 1)
        self.ha, self.hb = nn.Conv2d(8, 2, 1), nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
        a = F.relu(self.a(x))
        b = F.relu(self.b(a))
        return [self.ha(a), self.hb(b)], b


class TwoInputs(nn.Module):
    """RGB and depth streams fused by concatenation."""

    def __init__(self) -> None:
        super().__init__()
        self.rgb, self.depth = nn.Conv2d(3, 8, 3, 2, 1), nn.Conv2d(1, 4, 3, 2, 1)
        self.fuse = nn.Conv2d(12, 4, 1)

    def forward(self, rgb: torch.Tensor, depth: torch.Tensor) -> torch.Tensor:
        return self.fuse(torch.cat([F.relu(self.rgb(rgb)), F.relu(self.depth(depth))], 1))


class NormalizeInside(nn.Module):
    """(x - mean) / std with register_buffer constants inside forward."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))
        self.conv = nn.Conv2d(3, 8, 3, 2, 1)
        self.fc = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x - self.mean) / self.std
        return self.fc(F.relu(self.conv(x)).mean(dim=(2, 3)))


class IdentityDropout(nn.Module):
    """nn.Identity, nn.Dropout2d and nn.Dropout as placeholders in eval mode."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.skip = nn.Conv2d(3, 8, 3, 1, 1), nn.Identity()
        self.drop2d, self.drop = nn.Dropout2d(0.1), nn.Dropout(0.5)
        self.out = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.out(self.drop2d(F.relu(self.skip(self.conv(x))))))


class SizeArithmetic(nn.Module):
    """x.size() arithmetic: a pool kernel and an upsampling size computed from the input."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, 1, 1)
        self.out = nn.Conv2d(16, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.size(2), x.size(3)
        y = F.relu(self.conv(x))
        p = F.avg_pool2d(y, kernel_size=(h // 4, w // 4))
        p = F.interpolate(p, size=(h, w), mode="nearest")
        return self.out(torch.cat([y, p + torch.zeros_like(y)], 1))


class NonSquare(nn.Module):
    """A 24x40 input through strided convs with rectangular kernels."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 8, (3, 5), (1, 2), (1, 2))
        self.b = nn.Conv2d(8, 8, (5, 3), 2, (2, 1))
        self.fc = nn.Linear(8 * 6 * 5, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.max_pool2d(F.relu(self.b(F.relu(self.a(x)))), 2)
        return self.fc(y.reshape(1, -1))


class ListSum(nn.Module):
    """The python sum of a list of branch outputs, and a stack averaged over its new axis."""

    def __init__(self) -> None:
        super().__init__()
        self.branches = nn.ModuleList(nn.Conv2d(3, 8, k, 1, k // 2) for k in (1, 3, 5))
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ys = [F.relu(b(x)) for b in self.branches]
        return self.out(sum(ys) + torch.stack(ys, dim=0).mean(0))


class ResidualGate(nn.Module):
    """A highway-style gate: x + sigmoid(g) * tanh(h)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 1, 1)
        self.g, self.h = nn.Conv2d(8, 8, 3, 1, 1), nn.Conv2d(8, 8, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        return x + torch.sigmoid(self.g(x)) * torch.tanh(self.h(x))


class ChannelSoftmax(nn.Module):
    """Segmentation probabilities: softmax over channels, then log_softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.out = nn.Conv2d(3, 8, 3, 1, 1), nn.Conv2d(8, 5, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.out(F.relu(self.conv(x))), dim=1)


class NormalizedEmbedding(nn.Module):
    """An embedding head: Linear, then F.normalize (L2 over the features)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, 2, 1)
        self.fc = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.fc(F.relu(self.conv(x)).mean((2, 3))), dim=1)


class ECGNet(nn.Module):
    """A 1-D CNN on an ECG trace: Conv1d, BatchNorm1d, MaxPool1d, AdaptiveAvgPool1d(1)."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(1, 8, 7, 2, 3), nn.BatchNorm1d(8), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(8, 16, 5, 1, 2), nn.BatchNorm1d(16), nn.ReLU(),
        )  # fmt: skip
        self.pool, self.fc = nn.AdaptiveAvgPool1d(1), nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(self.features(x)).squeeze(-1))


class AudioSeparable(nn.Module):
    """A depthwise-separable Conv1d stack over 20 feature channels, the mean over time."""

    def __init__(self) -> None:
        super().__init__()
        self.dw = nn.Conv1d(20, 20, 5, 2, 2, groups=20)
        self.pw = nn.Conv1d(20, 32, 1)
        self.fc = nn.Linear(32, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(F.relu(self.pw(F.relu(self.dw(x)))).mean(-1))


class TinyVideo(nn.Module):
    """A small Conv3d video classifier: Conv3d, BatchNorm3d, a pool over time and space."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3, 1, 1)
        self.bn = nn.BatchNorm3d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn(self.conv(x)))
        return self.fc(F.adaptive_avg_pool3d(y, 1).flatten(1))


class MultiScaleSum(nn.Module):
    """A pyramid: avg-pooled copies processed and upsampled back, summed."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, 1, 1)
        self.scales = nn.ModuleList(nn.Conv2d(8, 8, 3, 1, 1) for _ in range(2))
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.conv(x))
        total = y
        for k, conv in enumerate(self.scales):
            f = 2 ** (k + 1)
            total = total + F.interpolate(conv(F.avg_pool2d(y, f)), scale_factor=f)
        return self.out(total)


class SpatialMeanGate(nn.Module):
    """A gate from the channel mean, unsqueezed back: x * sigmoid(x.mean(1).unsqueeze(1))."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.out = nn.Conv2d(3, 8, 3, 1, 1), nn.Conv2d(8, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return self.out(y * y.mean(1).unsqueeze(1).sigmoid())


class EinsumPointwise(nn.Module):
    """A 1x1 conv written as einsum with a registered weight."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, 1, 1)
        self.w = nn.Parameter(torch.randn(6, 8) * 0.3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("oc,nchw->nohw", self.w, F.relu(self.conv(x)))


class InvertedResidual(nn.Module):
    """MobileNetV2's block hand-written, with nn.ReLU6(inplace=True) and `out = out + x`."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 2, 1)
        self.expand = nn.Sequential(nn.Conv2d(8, 32, 1), nn.BatchNorm2d(32), nn.ReLU6(True))
        self.dw = nn.Sequential(nn.Conv2d(32, 32, 3, 1, 1, groups=32), nn.ReLU6(True))
        self.project = nn.Sequential(nn.Conv2d(32, 8, 1), nn.BatchNorm2d(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        out = self.project(self.dw(self.expand(x)))
        return out + x
