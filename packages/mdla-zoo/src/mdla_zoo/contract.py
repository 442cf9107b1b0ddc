"""A user's input contract: mean/std (or a named preset), channel order, resize and crop.

    x[c] = (p[c] / 255 - mean[c]) / std[c]      p: the pixel after resize and crop, 0..255

Presets (mean, std on the [0, 1] pixel scale):

    imagenet    (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)   torchvision's classifiers
    tf          127/255, 128/255 = (p - 127) / 128             EfficientNet-Lite (TF-trained)
    minus1to1   0.5, 0.5 = p / 127.5 - 1, in [-1, 1]           alias: inception (TF-slim's)
    zero1       0, 1 = p / 255, in [0, 1]

Geometry: the short side is resized (bicubic) to `resize` (None: round(min(h, w) / 0.875), the
torchvision evaluation resize) and the (h, w) centre is cropped; `resize=0` resizes the whole
photo to (h, w) instead (no crop, aspect not kept). `channels="bgr"` reverses the pixels'
channel order first; mean/std are given in the model's channel order (Caffe's BGR means).
A record whose mode `prepare` knows and which sets neither channels nor resize goes through
`preprocess.prepare` itself, so manifests compiled before contracts existed give the same
inputs bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from mdla_zoo.errors import ZooError
from mdla_zoo.preprocess import (
    CROP,
    IMAGENET_MEAN,
    IMAGENET_STD,
    MODES,
    prepare,
    resize_crop,
    to_image,
)

Array = np.ndarray[Any, Any]
Triple = tuple[float, float, float]


def _triple(v: float) -> Triple:
    return (v, v, v)


PRESETS: dict[str, tuple[Triple, Triple]] = {
    "imagenet": (
        (float(IMAGENET_MEAN[0]), float(IMAGENET_MEAN[1]), float(IMAGENET_MEAN[2])),
        (float(IMAGENET_STD[0]), float(IMAGENET_STD[1]), float(IMAGENET_STD[2])),
    ),
    "tf": (_triple(127 / 255), _triple(128 / 255)),
    "minus1to1": (_triple(0.5), _triple(0.5)),
    "inception": (_triple(0.5), _triple(0.5)),
    "zero1": (_triple(0.0), _triple(1.0)),
}
CHANNELS = ("rgb", "bgr")


def prepare_contract(
    image: Array,
    size: tuple[int, int],
    mean: tuple[float, ...],
    std: tuple[float, ...],
    channels: str = "rgb",
    resize: int | None = None,
) -> Array:
    """HWC uint8 RGB (or grey) image -> (1, 3, h, w) float32 under the contract above."""
    if channels not in CHANNELS:
        raise ZooError(f"channel order `{channels}`: expected rgb or bgr")
    if len(mean) not in (1, 3) or len(std) not in (1, 3) or any(s <= 0 for s in std):
        raise ZooError(f"mean {list(mean)} / std {list(std)}: give 1 or 3 values, std > 0")
    img = to_image(image)
    h, w = size
    if resize == 0:
        pixels = np.asarray(img.resize((w, h), Image.Resampling.BICUBIC), dtype=np.float32)
    else:
        short = resize if resize is not None else round(min(h, w) / CROP)
        pixels = resize_crop(img, size, short)
    if channels == "bgr":
        pixels = pixels[..., ::-1]
    m = np.asarray(mean, np.float32)
    s = np.asarray(std, np.float32)
    x = (pixels / 255.0 - m) / s
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)


def prepare_record(
    image: Array,
    mode: str,
    size: tuple[int, int],
    mean: tuple[float, ...],
    std: tuple[float, ...],
    channels: str = "rgb",
    resize: int | None = None,
) -> Array:
    """The input a manifest's (or a model's) preprocess record asks for (see the docstring)."""
    if mode in MODES and channels == "rgb" and resize is None:
        return prepare(image, mode, size)
    if not mean or not std:
        raise ZooError(f"preprocessing `{mode}` records no mean/std")
    return prepare_contract(image, size, mean, std, channels, resize)
