"""Photos in, a model's input out: the one image preprocessing, without torch.

Calibration, `run`, `validate` and the benches all call `prepare`. A model (and the manifest
compiled from it) names its preprocessing: "imagenet" ((x/255 - mean) / std, torchvision's) or
"tf" ((x - 127) / 128, the TF-trained EfficientNet-Lite's). Importing this module imports numpy
and PIL only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from mdla_zoo.errors import ZooError

Array = np.ndarray[Any, Any]
MODES = ("imagenet", "tf")
IMAGENET_MEAN = np.array((0.485, 0.456, 0.406), np.float32)
IMAGENET_STD = np.array((0.229, 0.224, 0.225), np.float32)
CROP = 0.875  # the centre crop keeps 87.5% of the resized short side


def prepare(image: Array, mode: str, size: tuple[int, int] = (224, 224)) -> Array:
    """HWC uint8 RGB (or grey) image -> (1, 3, h, w) float32, normalized as `mode` says.

    Resize the short side to round(min(h, w) / 0.875) (bicubic, PIL), centre-crop (h, w),
    then x = (p/255 - mean) / std ("imagenet") or x = (p - 127) / 128 ("tf"); NCHW, the
    model's own layout (the target permutes to the device's).
    """
    if mode not in MODES:
        raise ZooError(f"unknown preprocessing `{mode}` (expected imagenet or tf)")
    rgb = np.stack([image] * 3, axis=-1) if image.ndim == 2 else image[..., :3]
    img = Image.fromarray(np.ascontiguousarray(rgb).astype(np.uint8))
    h, w = size
    scale = round(min(h, w) / CROP) / min(img.size)
    new_w = max(w, round(img.size[0] * scale))
    new_h = max(h, round(img.size[1] * scale))
    img = img.resize((new_w, new_h), Image.Resampling.BICUBIC)
    left, top = (new_w - w) // 2, (new_h - h) // 2
    pixels = np.asarray(img.crop((left, top, left + w, top + h)), dtype=np.float32)
    if mode == "tf":
        x = (pixels - 127.0) / 128.0
    else:
        x = (pixels / 255.0 - IMAGENET_MEAN) / IMAGENET_STD
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)
