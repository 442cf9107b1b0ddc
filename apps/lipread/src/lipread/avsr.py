"""The auto-avsr visual front-end (mpc001/auto_avsr `Conv3dResNet`), INT8 on the MDLA: features.

The module as published (its state-dict keys: `frontend3D.0/1.*`, `trunk.layerL.B.*`):

    (B, 1, T, 88, 88) grayscale mouth crops, (x/255 - 0.421) / 0.165
    frontend3D: Conv3d 1->64 k(5,7,7) s(1,2,2) p(2,3,3), no bias -> BatchNorm3d -> Swish
                -> MaxPool3d k(1,3,3) s(1,2,2) p(0,1,1)                      (B, 64, T, 22, 22)
    trunk, per frame: ResNet-18 (BasicBlock x [2,2,2,2], 64/128/256/512, Swish, 1x1-conv + BN
                downsample) -> global average pool                          (B, T, 512)

On the device it is two compiled graphs, both every op on mtk-mdla, the host only moving bytes
between them (NCDHW (1, 64, T, 44, 44) -> the frames as a batch (T, 64, 44, 44)):

    stem:  the Conv3d with its BatchNorm3d folded in (exact), through mdla_legalize's
           CONV_3D -> CONV_2D rule (the 5 taps stacked on channels)
    trunk: Swish -> PAD(top 1, left 1, value SILU_MIN) -> MaxPool2d 3/2 VALID -> ResNet-18
           -> MEAN over H, W. The device's max pool takes no symmetric pads at stride 2; a max
           over a window that includes a pixel of value SILU_MIN equals the max without it,
           because Swish never goes below -0.27846 (at x = -1.2785): exact, not approximate.

What reads these features (auto-avsr's Conformer + Transformer decoder) needs weights nobody can
download here; `lipread features VIDEO -o feats.npy --frontend avsr` stops at the features.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from lipread.checkpoint import key_problems
from lipread.errors import CheckpointError

Array = np.ndarray[Any, Any]
SIZE = 88  # the centre crop auto-avsr reads at test time (of 96x96)
MEAN, STD = 0.421, 0.165
SILU_MIN = -0.2785  # below min_x x*sigmoid(x) = -0.278465
PREFIXES = ("encoder.frontend.", "frontend.")  # a whole auto-avsr model, or its frontend
FEATURES = 512


class Block(nn.Module):
    """ResNet's BasicBlock with Swish: conv3x3-BN-Swish-conv3x3-BN, + shortcut, Swish."""

    def __init__(self, inplanes: int, planes: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.act = nn.SiLU()
        self.downsample: nn.Module | None = None
        if stride != 1 or inplanes != planes:
            conv = nn.Conv2d(inplanes, planes, 1, stride, bias=False)
            self.downsample = nn.Sequential(conv, nn.BatchNorm2d(planes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn2(self.conv2(self.act(self.bn1(self.conv1(x)))))
        short = x if self.downsample is None else self.downsample(x)
        return self.act(out + short)  # type: ignore[no-any-return]


class Trunk(nn.Module):
    """ResNet-18 without its stem: (N, 64, h, w) -> (N, 512) after a global average pool."""

    def __init__(self) -> None:
        super().__init__()
        planes = (64, 128, 256, 512)
        for i, p in enumerate(planes, start=1):
            inp = planes[max(i - 2, 0)]
            stride = 1 if i == 1 else 2
            self.add_module(f"layer{i}", nn.Sequential(Block(inp, p, stride), Block(p, p, 1)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(1, 5):
            x = getattr(self, f"layer{i}")(x)
        return x.mean(dim=(2, 3))


class AvsrFrontEnd(nn.Module):
    """The published module: (B, 1, T, 88, 88) -> (B, T, 512)."""

    def __init__(self) -> None:
        super().__init__()
        self.frontend3D = nn.Sequential(
            nn.Conv3d(1, 64, (5, 7, 7), (1, 2, 2), (2, 3, 3), bias=False),
            nn.BatchNorm3d(64),
            nn.SiLU(),
            nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1)),
        )
        self.trunk = Trunk()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.frontend3D(x)
        b, c, t, h, w = y.shape
        feats = self.trunk(y.transpose(1, 2).reshape(b * t, c, h, w))
        return feats.view(b, t, FEATURES)  # type: ignore[no-any-return]


class StemConv(nn.Module):
    """The Conv3d with the BatchNorm3d after it folded in: w * s, beta - mean * s,
    s = gamma / sqrt(var + eps). (1, 1, T, 88, 88) -> (1, 64, T, 44, 44)."""

    def __init__(self, fe: AvsrFrontEnd) -> None:
        super().__init__()
        conv = cast(nn.Conv3d, fe.frontend3D[0])
        bn = cast(nn.BatchNorm3d, fe.frontend3D[1])
        var, mean = torch.as_tensor(bn.running_var), torch.as_tensor(bn.running_mean)
        scale = bn.weight.detach() / torch.sqrt(var + bn.eps)
        self.conv = nn.Conv3d(1, 64, (5, 7, 7), (1, 2, 2), (2, 3, 3), bias=True)
        with torch.no_grad():
            self.conv.weight.copy_(conv.weight * scale[:, None, None, None, None])
            self.conv.bias.copy_(bn.bias.detach() - mean * scale)  # type: ignore[union-attr]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)  # type: ignore[no-any-return]


class DeviceTrunk(nn.Module):
    """Swish, the max pool as PAD(SILU_MIN) + VALID pool, the trunk: (T, 64, 44, 44) -> (T, 512)."""

    def __init__(self, fe: AvsrFrontEnd) -> None:
        super().__init__()
        self.act = nn.SiLU()
        self.pool = nn.MaxPool2d(3, 2)
        self.trunk = fe.trunk

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.pad(self.act(x), (1, 0, 1, 0), value=SILU_MIN))
        return self.trunk(x)  # type: ignore[no-any-return]


def avsr_shapes() -> dict[str, tuple[int, ...]]:
    """Every key of the published visual front-end and its shape."""
    return {k: tuple(v.shape) for k, v in AvsrFrontEnd().state_dict().items()}


def select_frontend(state: dict[str, Array]) -> dict[str, Array]:
    """The front-end's keys of a state dict: a whole auto-avsr model's `encoder.frontend.*`
    (or `frontend.*`) with the prefix removed, else the dict itself; `module.` is stripped."""
    state = {k.removeprefix("module."): v for k, v in state.items()}
    for prefix in PREFIXES:
        if any(k.startswith(prefix) for k in state):
            return {k.removeprefix(prefix): v for k, v in state.items() if k.startswith(prefix)}
    return state


def check_avsr(state: dict[str, Array], where: str) -> None:
    """Raise CheckpointError naming every missing, unexpected and mis-shaped key."""
    want = avsr_shapes()
    optional = frozenset(k for k in want if k.endswith("num_batches_tracked"))
    problems = key_problems(state, want, optional)
    if problems:
        raise CheckpointError(
            f"{where}: not an auto-avsr visual front-end (Conv3dResNet): " + "; ".join(problems)
        )


def load_avsr(path: Path) -> AvsrFrontEnd:
    """An auto-avsr checkpoint (.pt: the front-end's state dict or a whole model's) as the
    FP32 module, every key checked."""
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a bad file
        raise CheckpointError(f"{path}: not a readable PyTorch checkpoint ({exc})") from exc
    for nest in ("state_dict", "model"):
        if isinstance(obj, dict) and isinstance(obj.get(nest), dict):
            obj = obj[nest]
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise CheckpointError(f"{path}: expected a state dict of tensors")
    state = select_frontend({str(k): v.detach().numpy() for k, v in obj.items()})
    check_avsr(state, str(path))
    fe = AvsrFrontEnd()
    fe.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()}, strict=False)
    return fe.eval()


def to_avsr_input(crops: Array) -> Array:
    """RGB mouth crops (T, h, w, 3) 0..255 -> (1, 1, T, 88, 88): grayscale (BT.601), resized to
    96x96, the centre 88x88, (x / 255 - 0.421) / 0.165."""
    from lipread.image import resize

    gray = np.asarray(crops, np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
    big = resize(gray[..., None], (96, 96))[..., 0]
    off = (96 - SIZE) // 2
    x = (big[:, off : off + SIZE, off : off + SIZE] / 255.0 - MEAN) / STD
    return np.ascontiguousarray(x[None, None], dtype=np.float32)


def bn_stats_from(fe: AvsrFrontEnd, clips: list[Array]) -> AvsrFrontEnd:
    """Set every BatchNorm's running statistics to the mean and variance of its input over
    `clips` (each (1, 1, T, 88, 88)): random weights then give activations of a sane scale."""
    for m in fe.modules():
        if isinstance(m, nn.BatchNorm2d | nn.BatchNorm3d):
            m.reset_running_stats()
            m.momentum = None  # a cumulative average over the clips
    fe.train()
    with torch.no_grad():
        for x in clips:
            fe(torch.from_numpy(x))
    return fe.eval()
