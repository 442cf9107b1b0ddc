"""Photos in, the model's input out: decoding, the sample photos, top-k, without torch.

A manifest records how its model wants images (`model.preprocess`: "imagenet" mean/std or "tf"
(x - 127) / 128) and its input shape; `prepare(image, mode, (h, w))` is `mdla_zoo.prepare` (the
one preprocessing: short side to size / 0.875 bicubic, centre crop, normalize, NCHW float32;
its ZooError is a bad-input exit like every package error). Sample photos come from scikit-image.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError
from PIL.Image import DecompressionBombError, DecompressionBombWarning

from mdla_ir import Preprocess
from mdla_zoo import prepare as prepare  # the one preprocessing, re-exported for the commands
from mdla_zoo.contract import prepare_record as _prepare_record
from workbench.errors import BAD_INPUT, WorkbenchError

Array = np.ndarray[Any, Any]
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp")
MAX_PIXELS = 50_000_000  # decoded at most (a 50 Mpx phone photo); a JPEG decodes reduced first
REDUCIBLE = ("L", "LA", "RGB", "RGBA", "I", "F")  # modes Image.reduce takes
KEEP_SIDE = 1024  # larger images are decoded reduced, short side still >= this (inputs <= 896)


def _skimage(name: str) -> Callable[[], Array]:
    def load() -> Array:
        try:
            import skimage.data
        except ModuleNotFoundError as exc:
            raise WorkbenchError(
                "the sample photos need scikit-image: pip install scikit-image (it needs no "
                "torch), or name image files"
            ) from exc
        image: Array = getattr(skimage.data, name)()
        return image[0] if name == "stereo_motorcycle" else image

    return load


SAMPLES: dict[str, Callable[[], Array]] = {
    "chelsea": _skimage("chelsea"),
    "coffee": _skimage("coffee"),
    "rocket": _skimage("rocket"),
    "motorcycle": _skimage("stereo_motorcycle"),
    "camera": _skimage("camera"),
    "astronaut": _skimage("astronaut"),
}


def read_image(path: str | Path) -> Array:
    """An image file as HWC uint8 RGB; a sample name (`chelsea`, ...) as that photo.

    Memory stays bounded whatever the header claims: an image whose short side is k times
    KEEP_SIDE or more is decoded reduced k times (a JPEG at 1/2, 1/4 or 1/8 scale while
    decoding, `Image.draft`; other formats by `Image.reduce` before any RGB copy), and one that
    still has more than MAX_PIXELS pixels to decode is refused before decoding."""
    if str(path) in SAMPLES and not Path(path).exists():
        return SAMPLES[str(path)]()
    if Path(path).is_dir():
        raise WorkbenchError(f"image `{path}` is a directory, not an image file")
    try:
        with warnings.catch_warnings():  # PIL's own bomb check: MAX_PIXELS below is ours
            warnings.simplefilter("ignore", DecompressionBombWarning)
            with Image.open(path) as img:
                return _decoded(img, path)
    except FileNotFoundError:
        raise WorkbenchError(
            f"image `{path}` does not exist (nor is it a sample: {', '.join(SAMPLES)})"
        ) from None
    except DecompressionBombError:
        raise _too_large(path, "over 178 M pixels") from None
    except (UnidentifiedImageError, OSError) as exc:
        raise WorkbenchError(f"cannot decode image `{path}`: {exc}", BAD_INPUT) from None


def _decoded(img: Image.Image, path: str | Path) -> Array:
    w, h = img.size
    k = max(1, min(w, h) // KEEP_SIDE)
    if k > 1 and img.format == "JPEG":
        img.draft("RGB", (max(1, w // k), max(1, h // k)))  # DCT scaling: 1/2, 1/4 or 1/8
    dw, dh = img.size  # the draft size: the pixels actually decoded
    if dw * dh > MAX_PIXELS:
        raise _too_large(path, f"{w}x{h} ({w * h / 1e6:.0f} M pixels)")
    img.load()
    k = max(1, min(dw, dh) // KEEP_SIDE)
    if k > 1:  # a box filter k x k: no aliasing, and no full-size RGB copy of a grey image
        img = (img if img.mode in REDUCIBLE else img.convert("RGB")).reduce(k)
    return np.asarray(img.convert("RGB"), dtype=np.uint8)


def _too_large(path: str | Path, size: str) -> WorkbenchError:
    return WorkbenchError(
        f"image `{path}` is {size}, more than the {MAX_PIXELS / 1e6:.0f} M pixels the "
        "workbench decodes: scale it down first (e.g. convert IN -resize 4000x4000 OUT)",
        BAD_INPUT,
    )


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


def png_bytes(img: Image.Image) -> bytes:
    """`img` encoded as PNG, for `write_atomic` (a PNG beside a photo: the old one or the new
    one, never a truncated file)."""
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def prepare_record(image: Array, record: Preprocess) -> Array:
    """A photo as the input a preprocess record (a manifest's, or a contract's) asks for."""
    size = (int(record.size[0]), int(record.size[1]))
    return _prepare_record(
        image, record.mode, size, record.mean, record.std, record.channels, record.resize
    )


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
