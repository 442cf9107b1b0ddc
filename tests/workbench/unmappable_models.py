"""Hand-written blocks the MDLA cannot run (silicon fact 2), for `workbench check`'s report."""

from __future__ import annotations

import torch
from torch import nn


class ConvNeXtBlock(nn.Module):
    """ConvNeXt's block: depthwise conv, LayerNorm over channels (permuted), Linear, GELU."""

    def __init__(self, c: int = 8) -> None:
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c)
        self.up = nn.Linear(c, 4 * c)
        self.act = nn.GELU()
        self.down = nn.Linear(4 * c, c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.down(self.act(self.up(self.norm(y))))
        out: torch.Tensor = x + y.permute(0, 3, 1, 2)
        return out


class Attention(nn.Module):
    """A ViT-style encoder step: patchify conv, LayerNorm, multi-head self-attention."""

    def __init__(self, c: int = 8) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, c, 4, 4)
        self.norm = nn.LayerNorm(c)
        self.attn = nn.MultiheadAttention(c, 2, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.norm(self.patch(x).flatten(2).transpose(1, 2))
        out: torch.Tensor = self.attn(t, t, t, need_weights=False)[0]
        return out


def convnext_block() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return ConvNeXtBlock().eval(), torch.zeros(1, 8, 8, 8)


class NormAndDilatedPool(nn.Module):
    """A patchify conv, a LayerNorm over channels and a max pool dilated by different rates on
    H and W (which does not import: its phase split takes one rate)."""

    def __init__(self, c: int = 8) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, c, 4, 4)
        self.norm = nn.LayerNorm(c)
        self.pool = nn.MaxPool2d(3, 1, padding=1, dilation=(2, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.norm(self.patch(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        out: torch.Tensor = self.pool(t)
        return out


def norm_and_dilated_pool() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return NormAndDilatedPool().eval(), torch.zeros(1, 3, 16, 16)


def attention() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return Attention().eval(), torch.zeros(1, 3, 16, 16)
