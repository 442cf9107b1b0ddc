"""Models for the partition tests (issue 17): torchvision's ConvNeXt-Tiny at a small input, so
a whole placed model quantizes and runs in the int8 reference in seconds."""

from __future__ import annotations

import torch
import torchvision
from torch import nn


def convnext_tiny_64() -> tuple[nn.Module, torch.Tensor]:
    """ConvNeXt-Tiny (random weights, seed 0) at 64 x 64: its 18 blocks and 4 LayerNorm2d."""
    torch.manual_seed(0)
    return torchvision.models.convnext_tiny().eval(), torch.zeros(1, 3, 64, 64)
