"""A torchvision SSD cut to its NPU part: backbone + head convolutions (needs torch).

torchvision's `SSD.forward` takes a list of images and runs the GeneralizedRCNNTransform,
anchors and post-processing around the network: Python loops torch.fx cannot trace, and CPU
work besides. `SSDHeads(ssd)` keeps `ssd.backbone` and `ssd.head` (same attribute names, so a
torchvision SSD state dict loads into it unchanged) and returns, per feature level, the head's
raw conv outputs before their view/permute/reshape/cat (which would need TRANSPOSE, which the
MDLA lacks): all regression levels, then all classification levels. `decoder` is the
`mdla_zoo.detection.SSDDecoder` that turns them into boxes on the CPU. Any torchvision SSD or
SSDlite fits (a user's factory may return `SSDHeads(their_ssd)`).
"""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import nn

from mdla_zoo.batchnorm import recalibrate_batchnorm
from mdla_zoo.detection import SSDDecoder
from mdla_zoo.errors import ZooError


class SSDHeads(nn.Module):
    """The backbone and head of a torchvision `SSD`, returning the head's per-level convs."""

    def __init__(self, ssd: nn.Module) -> None:
        super().__init__()
        head = getattr(ssd, "head", None)
        if not hasattr(ssd, "backbone") or not all(
            hasattr(head, h) for h in ("regression_head", "classification_head")
        ):
            raise ZooError(
                f"{type(ssd).__name__} is not a torchvision SSD (backbone, head.regression_head, "
                "head.classification_head)"
            )
        self.backbone = cast(nn.Module, ssd.backbone)
        self.head = cast(nn.Module, head)
        self.decoder = decoder_of(ssd)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        features = self.backbone(x)
        levels = list(features.values()) if isinstance(features, dict) else [features]
        regs = cast(nn.ModuleList, self.head.get_submodule("regression_head.module_list"))
        clss = cast(nn.ModuleList, self.head.get_submodule("classification_head.module_list"))
        return (
            *(conv(f) for conv, f in zip(regs, levels, strict=True)),
            *(conv(f) for conv, f in zip(clss, levels, strict=True)),
        )


def decoder_of(ssd: Any) -> SSDDecoder:
    """The SSDDecoder of a torchvision SSD: its DefaultBoxGenerator, BoxCoder, thresholds and
    the fixed input size of its transform."""
    gen, coder, transform = ssd.anchor_generator, ssd.box_coder, ssd.transform
    fixed = getattr(transform, "fixed_size", None)
    if fixed is None:
        raise ZooError(f"{type(ssd).__name__}: its transform has no fixed input size")
    return SSDDecoder(
        image_size=(int(fixed[1]), int(fixed[0])),  # fixed_size is (w, h) in the transform
        num_classes=int(ssd.head.classification_head.num_columns),
        aspect_ratios=tuple(tuple(float(a) for a in r) for r in gen.aspect_ratios),
        scales=tuple(float(s) for s in gen.scales),
        steps=None if gen.steps is None else tuple(int(s) for s in gen.steps),
        clip=bool(gen.clip),
        box_weights=tuple(float(w) for w in coder.weights),  # type: ignore[arg-type]
        box_clip=float(coder.bbox_xform_clip),
        score_thresh=float(ssd.score_thresh),
        nms_thresh=float(ssd.nms_thresh),
        topk_candidates=int(ssd.topk_candidates),
        detections_per_img=int(ssd.detections_per_img),
    )


def ssd_heads(builder: Any, kwargs: dict[str, Any], seed: int = 0) -> SSDHeads:
    """`SSDHeads` of a torchvision detection builder with random weights and BatchNorm
    statistics set on data (uniform [-1, 1], the detector's normalized range, at its size)."""
    module = SSDHeads(builder(**kwargs))
    h, w = module.decoder.image_size
    recalibrate_batchnorm(module, shape=(2, 3, h, w), steps=2, seed=seed)
    return module


def zoo_detector(spec: str, seed: int = 0) -> tuple[SSDHeads, tuple[str, ...]]:
    """The zoo's torchvision detector `spec` as `SSDHeads` (random weights, never a download:
    `weights` and `weights_backbone` are None) and its class names (COCO's 91, from the
    weights' metadata, which torchvision ships in its code)."""
    import torchvision

    from mdla_zoo.models import no_weights

    builder = torchvision.models.get_model_builder(spec)
    enum = torchvision.models.get_model_weights(spec)
    labels = tuple(str(c) for c in next(iter(enum)).meta["categories"])
    return ssd_heads(builder, no_weights(builder), seed), labels
