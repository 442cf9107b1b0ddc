"""Photos in, a model's input out: the one image preprocessing, without torch.

Calibration, `run`, `validate` and the benches all call `prepare`. A model (and the manifest
compiled from it) names its preprocessing: "imagenet" ((x/255 - mean) / std, torchvision's),
"tf" ((x - 127) / 128, the TF-trained EfficientNet-Lite's) or "stretch" (torchvision SSDlite's
fixed-size detection transform: the whole photo, aspect not kept, in [-1, 1]). Importing this
module imports numpy and PIL only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from mdla_zoo.errors import ZooError

Array = np.ndarray[Any, Any]
MODES = ("imagenet", "tf", "stretch")
IMAGENET_MEAN = np.array((0.485, 0.456, 0.406), np.float32)
IMAGENET_STD = np.array((0.229, 0.224, 0.225), np.float32)
CROP = 0.875  # the centre crop keeps 87.5% of the resized short side


def prepare(image: Array, mode: str, size: tuple[int, int] = (224, 224)) -> Array:
    """HWC uint8 RGB (or grey) image -> (1, 3, h, w) float32, normalized as `mode` says.

    Resize the short side to round(min(h, w) / 0.875) (bicubic, PIL), centre-crop (h, w),
    then x = (p/255 - mean) / std ("imagenet") or x = (p - 127) / 128 ("tf"); NCHW, the
    model's own layout (the target permutes to the device's). "stretch" resizes the whole
    image to (h, w) (bilinear, no crop: a detector's boxes then map back to the photo by a
    scale per axis) and gives x = (p/255 - 0.5) / 0.5.
    """
    if mode not in MODES:
        raise ZooError(f"unknown preprocessing `{mode}` (expected {', '.join(MODES)})")
    img = to_image(image)
    h, w = size
    if mode == "stretch":
        whole = np.asarray(img.resize((w, h), Image.Resampling.BILINEAR), dtype=np.float32)
        x = (whole / 255.0 - 0.5) / 0.5
        return np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)
    pixels = resize_crop(img, size, round(min(h, w) / CROP))
    if mode == "tf":
        x = (pixels - 127.0) / 128.0
    else:
        x = (pixels / 255.0 - IMAGENET_MEAN) / IMAGENET_STD
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)


def to_image(image: Array) -> Image.Image:
    """HWC uint8 RGB (or grey, or RGBA: alpha dropped) array -> an RGB PIL image."""
    rgb = np.stack([image] * 3, axis=-1) if image.ndim == 2 else image[..., :3]
    return Image.fromarray(np.ascontiguousarray(rgb).astype(np.uint8))


def resize_crop(img: Image.Image, size: tuple[int, int], short: int) -> Array:
    """Resize `img`'s short side to `short` (bicubic), centre-crop (h, w): HWC float32 pixels."""
    h, w = size
    scale = short / min(img.size)
    new_w = max(w, round(img.size[0] * scale))
    new_h = max(h, round(img.size[1] * scale))
    img = img.resize((new_w, new_h), Image.Resampling.BICUBIC)
    left, top = (new_w - w) // 2, (new_h - h) // 2
    return np.asarray(img.crop((left, top, left + w, top + h)), dtype=np.float32)
