"""A user's own torchvision SSD (not a zoo name): a 2-level conv backbone, torchvision's SSDHead,
DefaultBoxGenerator and BoxCoder, wrapped in `SSDHeads` so its NPU part compiles and its
decoder (anchors, box coder, thresholds) travels in the manifest's `model.postprocess`."""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn
from torchvision.models.detection.anchor_utils import DefaultBoxGenerator
from torchvision.models.detection.ssd import SSD, SSDHead

from mdla_zoo.batchnorm import recalibrate_batchnorm
from mdla_zoo.ssd_heads import SSDHeads


def _block(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, 2, 1), nn.BatchNorm2d(c_out), nn.ReLU())


class Backbone(nn.Module):
    """Feature maps at 1/4 and 1/8 of the input, as an ordered dict (what SSD expects)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.low = nn.Sequential(_block(3, width), _block(width, width))
        self.high = _block(width, width)

    def forward(self, x: torch.Tensor) -> OrderedDict[str, torch.Tensor]:
        low = self.low(x)
        return OrderedDict([("0", low), ("1", self.high(low))])


def detector(size: int = 64, classes: int = 4, width: int = 8) -> SSDHeads:
    """`SSDHeads` of a small SSD at `size` x `size` (seeded weights, BN statistics on data)."""
    torch.manual_seed(0)
    anchors = DefaultBoxGenerator([[2], [2, 3]], min_ratio=0.2, max_ratio=0.9)
    head = SSDHead([width, width], anchors.num_anchors_per_location(), classes)
    ssd = SSD(
        Backbone(width),
        anchors,
        (size, size),
        classes,
        head=head,
        score_thresh=0.05,
        nms_thresh=0.5,
        detections_per_img=20,
        topk_candidates=50,
    )
    module = SSDHeads(ssd)
    recalibrate_batchnorm(module, shape=(2, 3, size, size), steps=2, seed=0)
    return module.eval()
