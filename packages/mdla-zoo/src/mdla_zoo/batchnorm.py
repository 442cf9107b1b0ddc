"""BatchNorm statistics for randomly initialized models (needs torch)."""

from __future__ import annotations

import torch
from torch import nn


def recalibrate_batchnorm(
    module: nn.Module, shape: tuple[int, ...] = (2, 3, 224, 224), steps: int = 4, seed: int = 0
) -> None:
    """Give a randomly initialized model the BatchNorm statistics of (random) data.

    At init every BN has mean 0 and var 1 whatever its input, so the activations of a deep
    random model shrink to ~1e-10 and int8 scales (and fused RELU6 bounds) degenerate; LiteRT
    then refuses the model. Running it in training mode over uniform [-1, 1] inputs sets
    honest statistics (a cumulative average), then returns it to eval mode.
    """
    for m in module.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    module.train()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(steps):
            module(torch.rand(shape, generator=gen) * 2 - 1)
    module.eval()
