"""Photos in, the model's input out: decoding, the sample photos, top-k, without torch.

A manifest records how its model wants images (`model.preprocess`: "imagenet" mean/std or "tf"
(x - 127) / 128) and its input shape; `prepare(image, mode, (h, w))` is `mdla_zoo.prepare` (the
one preprocessing: short side to size / 0.875 bicubic, centre crop, normalize, NCHW float32;
its ZooError is a bad-input exit like every package error). Decoding, the sample photos
(scikit-image) and a preprocess record applied are `mdla_compile.images`'s.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from PIL.PngImagePlugin import PngInfo

from mdla_compile.images import IMAGE_SUFFIXES, SAMPLES, prepare_record, read_image
from mdla_compile.written import MARK
from mdla_zoo import prepare as prepare  # the one preprocessing, re-exported for the commands
from workbench.errors import WorkbenchError

__all__ = [
    "IMAGE_SUFFIXES",
    "SAMPLES",
    "image_files",
    "png_bytes",
    "prepare",
    "prepare_record",
    "read_image",
    "softmax",
    "tiny_warning",
    "top_k",
]
Array = np.ndarray[Any, Any]


TINY_FACTOR = 4  # an image upscaled more than this to the model's input gets a warning


def tiny_warning(name: str, image: Array, size: tuple[int, int]) -> str | None:
    """A warning when `image` is much smaller than the model's `size` (h, w) input: a 1x1
    picture "classified" is noise from the interpolation, and the user should hear so."""
    h, w = int(image.shape[0]), int(image.shape[1])
    factor = min(size) / max(1, min(h, w))
    if factor <= TINY_FACTOR:
        return None
    return (
        f"warning: `{name}` is {w}x{h} pixels, upscaled {factor:.0f}x to the model's "
        f"{size[1]}x{size[0]} input: the result says little about it"
    )


def png_bytes(img: Image.Image, what: str = "output") -> bytes:
    """`img` encoded as PNG, for `write_atomic` (the old file or the new one, never a truncated
    one), marked as the workbench's (`mdla_compile.written`: never read back as an input)."""
    info = PngInfo()
    info.add_text(MARK, what)
    buf = io.BytesIO()
    img.save(buf, format="PNG", pnginfo=info)
    return buf.getvalue()


def image_files(directory: str | Path) -> list[Path]:
    root = Path(directory)
    if not root.is_dir():
        raise WorkbenchError(f"calibration directory `{root}` does not exist")
    files = sorted(p for p in root.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise WorkbenchError(f"calibration directory `{root}` holds no images {IMAGE_SUFFIXES}")
    return files


def softmax(z: Array) -> Array:
    e = np.exp(z - z.max())
    out: Array = e / e.sum()
    return out


def top_k(
    logits: Array, labels: tuple[str, ...] | list[str] | None, k: int = 5
) -> list[tuple[int, str, float]]:
    """(class index, label or `#index`, probability) of the k best classes."""
    p = softmax(np.asarray(logits, np.float64).ravel())
    best = np.argsort(-p, kind="stable")[:k]
    names = list(labels) if labels else []
    return [(int(i), names[i] if i < len(names) else f"#{int(i)}", float(p[i])) for i in best]
