"""Photos in, a model's input out, without torch: decoding, the sample photos, a preprocess
record applied (`mdla_zoo.contract.prepare_record`, the one preprocessing).

    image = read_image("cat.jpg")            # HWC uint8 RGB; `chelsea`, `coffee`, ...: samples
    x = prepare_record(image, record)        # the (1, 3, H, W) float32 input the record asks for
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError
from PIL.Image import DecompressionBombError, DecompressionBombWarning

from mdla_compile.errors import CompileError
from mdla_ir import Preprocess
from mdla_zoo.contract import prepare_record as _prepare_record

Array = np.ndarray[Any, Any]
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp")
MAX_PIXELS = 50_000_000  # decoded at most (a 50 Mpx phone photo); a JPEG decodes reduced first
REDUCIBLE = ("L", "LA", "RGB", "RGBA", "I", "F")  # modes Image.reduce takes
KEEP_SIDE = 1024  # larger images are decoded reduced, short side still >= this (inputs <= 896)

# PIL's own opener, as this module found it: a library imported later may replace `Image.open`
# for every caller (ultralytics does: on a file PIL cannot identify, its wrapper checks for a
# HEIF plugin, pip-installs it when online and imports it), and reading a user's photo must
# neither install packages nor fail with that plugin's ImportError.
_PIL_OPEN = Image.open if Image.open.__module__ == Image.__name__ else None


def _skimage(name: str) -> Callable[[], Array]:
    def load() -> Array:
        try:
            import skimage.data
        except ModuleNotFoundError as exc:
            raise CompileError(
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
        raise CompileError(f"image `{path}` is a directory, not an image file")
    try:
        with warnings.catch_warnings():  # PIL's own bomb check: MAX_PIXELS below is ours
            warnings.simplefilter("ignore", DecompressionBombWarning)
            with (_PIL_OPEN or Image.open)(path) as img:
                return _decoded(img, path)
    except FileNotFoundError:
        raise CompileError(
            f"image `{path}` does not exist (nor is it a sample: {', '.join(SAMPLES)})"
        ) from None
    except DecompressionBombError:
        raise _too_large(path, "over 178 M pixels") from None
    except (UnidentifiedImageError, OSError, ImportError) as exc:  # a replaced opener's import
        raise CompileError(f"cannot decode image `{path}`: {exc}") from None


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


def _too_large(path: str | Path, size: str) -> CompileError:
    return CompileError(
        f"image `{path}` is {size}, more than the {MAX_PIXELS / 1e6:.0f} M pixels the "
        "workbench decodes: scale it down first (e.g. convert IN -resize 4000x4000 OUT)"
    )


def prepare_record(image: Array, record: Preprocess) -> Array:
    """A photo as the input a preprocess record (a manifest's, or a contract's) asks for."""
    size = (int(record.size[0]), int(record.size[1]))
    return _prepare_record(
        image, record.mode, size, record.mean, record.std, record.channels, record.resize
    )
