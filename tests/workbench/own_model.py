"""A user's own 64x64 classifier for the TUI's input-contract tests: its Linear head is sized for
a 64x64 input, so it imports only with `--input-shape 1,3,64,64` (at the default 224x224 the
head's matmul fails), and it is meant to run with the weights of a state-dict file."""

from __future__ import annotations

import torch
from torch import nn

CLASSES = 4


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 4, 3, 4, 1), nn.ReLU())  # 64 -> 16
        self.head = nn.Linear(4 * 16 * 16, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.stem(x), 1))  # type: ignore[no-any-return]


def save_weights(path: str) -> None:
    """A state dict unlike any fresh Net's (seeded), so loading it is visible in the outputs."""
    torch.manual_seed(7)
    net = Net()
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0.0, 0.2)
    torch.save(net.state_dict(), path)
