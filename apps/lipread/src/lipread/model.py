"""LipNet in PyTorch (LipNet-PyTorch's layers and key names), for training and the FP32 path.

Needs torch: the app's torch-free path uses `lipread.tail` and a compiled front-end instead.
"""

from __future__ import annotations

import torch
from torch import nn

from lipread.config import PUBLISHED, LipNetConfig


class FrontEnd(nn.Module):
    """STCNN: 3 x (Conv3d -> ReLU -> Dropout3d -> MaxPool3d(1,2,2)). (B,3,T,H,W) -> (B,C,T,h,w).

    `batchnorm=True` puts a BatchNorm3d after each conv, for training only: it is what lets a
    LipNet leave CTC's label-prior plateau in minutes on a CPU. `folded_state()` folds each
    (eval-mode) BatchNorm into its conv, which is exact, so the result is a plain LipNet-PyTorch
    front-end with the published keys.
    """

    def __init__(
        self, cfg: LipNetConfig = PUBLISHED, dropout: float = 0.5, batchnorm: bool = False
    ) -> None:
        super().__init__()
        self.conv1 = nn.Conv3d(3, cfg.conv1, (3, 5, 5), (1, 2, 2), (1, 2, 2))
        self.pool1 = nn.MaxPool3d((1, 2, 2), (1, 2, 2))
        self.conv2 = nn.Conv3d(cfg.conv1, cfg.conv2, (3, 5, 5), (1, 1, 1), (1, 2, 2))
        self.pool2 = nn.MaxPool3d((1, 2, 2), (1, 2, 2))
        self.conv3 = nn.Conv3d(cfg.conv2, cfg.conv3, (3, 3, 3), (1, 1, 1), (1, 1, 1))
        self.pool3 = nn.MaxPool3d((1, 2, 2), (1, 2, 2))
        self.relu = nn.ReLU()
        self.dropout3d = nn.Dropout3d(dropout)
        # Identity (no parameters, no state-dict keys) where there is no BatchNorm
        self.norms = nn.ModuleList(
            nn.BatchNorm3d(c) if batchnorm else nn.Identity()
            for c in (cfg.conv1, cfg.conv2, cfg.conv3)
        )

    def stages(self) -> list[tuple[nn.Conv3d, nn.Module, nn.Module]]:
        convs, pools = (self.conv1, self.conv2, self.conv3), (self.pool1, self.pool2, self.pool3)
        return list(zip(convs, self.norms, pools, strict=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv, norm, pool in self.stages():
            x = pool(self.dropout3d(self.relu(norm(conv(x)))))
        return x

    def folded_state(self) -> dict[str, torch.Tensor]:
        """conv1..3 weights and biases with each BatchNorm's running statistics folded in."""
        out: dict[str, torch.Tensor] = {}
        for i, (conv, bn, _) in enumerate(self.stages(), start=1):
            w, b = conv.weight.detach(), conv.bias.detach()  # type: ignore[union-attr]
            if isinstance(bn, nn.BatchNorm3d):
                assert bn.running_mean is not None
                assert bn.running_var is not None
                scale = bn.weight.detach() / torch.sqrt(bn.running_var + bn.eps)
                w = w * scale[:, None, None, None, None]
                b = (b - bn.running_mean) * scale + bn.bias.detach()
            out[f"conv{i}.weight"], out[f"conv{i}.bias"] = w.clone(), b.clone()
        return out


class LipNet(nn.Module):
    """LipNet-PyTorch: front-end, 2 BiGRU, Linear -> raw logits (B, T, classes)."""

    def __init__(
        self, cfg: LipNetConfig = PUBLISHED, dropout: float = 0.5, batchnorm: bool = False
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.frontend = FrontEnd(cfg, dropout, batchnorm)
        self.gru1 = nn.GRU(cfg.features, cfg.hidden, 1, bidirectional=True)
        self.gru2 = nn.GRU(2 * cfg.hidden, cfg.hidden, 1, bidirectional=True)
        self.FC = nn.Linear(2 * cfg.hidden, cfg.classes)  # LipNet-PyTorch's key
        self.dropout = nn.Dropout(dropout)

    def encode(self, feats: torch.Tensor) -> torch.Tensor:
        """Front-end features (B, C, T, h, w) -> the second BiGRU's output (T, B, 2·hidden)."""
        b, c, t, h, w = feats.shape
        x = feats.permute(2, 0, 1, 3, 4).reshape(t, b, c * h * w)
        self.gru1.flatten_parameters()
        self.gru2.flatten_parameters()
        x = self.dropout(self.gru1(x)[0])
        return self.dropout(self.gru2(x)[0])  # type: ignore[no-any-return]

    def tail(self, feats: torch.Tensor) -> torch.Tensor:
        """Front-end features (B, C, T, h, w) -> logits (B, T, classes)."""
        return self.FC(self.encode(feats)).permute(1, 0, 2).contiguous()  # type: ignore[no-any-return]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tail(self.frontend(x))

    def load_lipnet_state(self, state: dict[str, torch.Tensor]) -> None:
        """Load LipNet-PyTorch keys (conv1.* live under frontend.* here)."""
        mapped = {(f"frontend.{k}" if k.startswith("conv") else k): v for k, v in state.items()}
        self.load_state_dict(mapped, strict=True)

    def lipnet_state(self) -> dict[str, torch.Tensor]:
        """The state dict under LipNet-PyTorch's key names (training BatchNorms folded in)."""
        tail = {k: v for k, v in self.state_dict().items() if not k.startswith("frontend.")}
        return {**self.frontend.folded_state(), **tail}


def frontend(frames: int = 75) -> tuple[FrontEnd, torch.Tensor]:
    """The model spec `lipread.model:frontend`: the published front-end (random init, eval
    mode) and a zero clip (1, 3, frames, 64, 128) as its example input (no image preprocessing).
    """
    cfg = PUBLISHED
    return FrontEnd(cfg).eval(), torch.zeros(1, 3, frames, cfg.height, cfg.width)
