"""LipNet in PyTorch (LipNet-PyTorch's layers and key names), for training and the FP32 path.

Needs torch: the app's torch-free path uses `lipread.tail` and a compiled front-end instead.
"""

from __future__ import annotations

import torch
from torch import nn

from lipread.config import PUBLISHED, LipNetConfig


class FrontEnd(nn.Module):
    """STCNN: 3 x (Conv3d -> ReLU -> Dropout3d -> MaxPool3d(1,2,2)). (B,3,T,H,W) -> (B,C,T,h,w)."""

    def __init__(self, cfg: LipNetConfig = PUBLISHED, dropout: float = 0.5) -> None:
        super().__init__()
        self.conv1 = nn.Conv3d(3, cfg.conv1, (3, 5, 5), (1, 2, 2), (1, 2, 2))
        self.pool1 = nn.MaxPool3d((1, 2, 2), (1, 2, 2))
        self.conv2 = nn.Conv3d(cfg.conv1, cfg.conv2, (3, 5, 5), (1, 1, 1), (1, 2, 2))
        self.pool2 = nn.MaxPool3d((1, 2, 2), (1, 2, 2))
        self.conv3 = nn.Conv3d(cfg.conv2, cfg.conv3, (3, 3, 3), (1, 1, 1), (1, 1, 1))
        self.pool3 = nn.MaxPool3d((1, 2, 2), (1, 2, 2))
        self.relu = nn.ReLU()
        self.dropout3d = nn.Dropout3d(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(self.dropout3d(self.relu(self.conv1(x))))
        x = self.pool2(self.dropout3d(self.relu(self.conv2(x))))
        return self.pool3(self.dropout3d(self.relu(self.conv3(x))))  # type: ignore[no-any-return]


class LipNet(nn.Module):
    """LipNet-PyTorch: front-end, 2 BiGRU, Linear -> raw logits (B, T, classes)."""

    def __init__(self, cfg: LipNetConfig = PUBLISHED, dropout: float = 0.5) -> None:
        super().__init__()
        self.cfg = cfg
        self.frontend = FrontEnd(cfg, dropout)
        self.gru1 = nn.GRU(cfg.features, cfg.hidden, 1, bidirectional=True)
        self.gru2 = nn.GRU(2 * cfg.hidden, cfg.hidden, 1, bidirectional=True)
        self.FC = nn.Linear(2 * cfg.hidden, cfg.classes)  # LipNet-PyTorch's key
        self.dropout = nn.Dropout(dropout)

    def tail(self, feats: torch.Tensor) -> torch.Tensor:
        """Front-end features (B, C, T, h, w) -> logits (B, T, classes)."""
        b, c, t, h, w = feats.shape
        x = feats.permute(2, 0, 1, 3, 4).reshape(t, b, c * h * w)
        self.gru1.flatten_parameters()
        self.gru2.flatten_parameters()
        x = self.dropout(self.gru1(x)[0])
        x = self.dropout(self.gru2(x)[0])
        return self.FC(x).permute(1, 0, 2).contiguous()  # type: ignore[no-any-return]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tail(self.frontend(x))

    def load_lipnet_state(self, state: dict[str, torch.Tensor]) -> None:
        """Load LipNet-PyTorch keys (conv1.* live under frontend.* here)."""
        mapped = {(f"frontend.{k}" if k.startswith("conv") else k): v for k, v in state.items()}
        self.load_state_dict(mapped, strict=True)

    def lipnet_state(self) -> dict[str, torch.Tensor]:
        """The state dict under LipNet-PyTorch's key names."""
        return {k.removeprefix("frontend."): v for k, v in self.state_dict().items()}
