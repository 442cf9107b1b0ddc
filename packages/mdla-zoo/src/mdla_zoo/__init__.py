"""mdla_zoo: model specs, the one image preprocessing, ImageNet labels, BN recalibration.

    model = mdla_zoo.load_model("efficientnet_lite0")   # torchvision names, file.py:factory
    x = model.prepare(photo)                             # HWC uint8 -> NCHW float32 input
    x = mdla_zoo.prepare(photo, "tf", (224, 224))        # the same, from a manifest's fields
    names = mdla_zoo.imagenet_labels()                   # 1000 class names, or None
    mdla_zoo.recalibrate_batchnorm(model.module)         # BN statistics for random weights

Importing this package never imports torch: `load_model`, `Model` and `recalibrate_batchnorm`
load `mdla_zoo.models` / `mdla_zoo.batchnorm` on first use (the preprocessing runs on a phone).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mdla_zoo.errors import ZooError
from mdla_zoo.labels import imagenet_labels
from mdla_zoo.preprocess import IMAGENET_MEAN, IMAGENET_STD, MODES, prepare

if TYPE_CHECKING:
    from mdla_zoo.batchnorm import recalibrate_batchnorm
    from mdla_zoo.models import Model, load_model

_LAZY = {
    "Model": "mdla_zoo.models",
    "load_model": "mdla_zoo.models",
    "recalibrate_batchnorm": "mdla_zoo.batchnorm",
}


def __getattr__(name: str) -> Any:
    """`Model`, `load_model`, `recalibrate_batchnorm`: imported (with torch) on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module 'mdla_zoo' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "MODES",
    "Model",
    "ZooError",
    "imagenet_labels",
    "load_model",
    "prepare",
    "recalibrate_batchnorm",
]
