"""A class map on the photo it came from, at the photo's own resolution, with a colour legend.

The model saw a crop of the photo (`mdla_zoo.preprocess`: the short side resized to `short`,
the centre (h, w) cut out; or the whole photo resized to (h, w)). `crop_box` undoes that
geometry: the rectangle of the photo, in its pixels, that the model's (h, w) grid covers.
`overlay` paints each photo pixel in that rectangle with the colour of the class-map cell it
falls in (nearest cell), blended half and half with the photo; pixels outside it (the crop
cut them away: no prediction) are dimmed. `legend` is a strip under it: a swatch, the class
index and its label for every class the map holds.

    box = crop_box((480, 640), preprocess, (224, 224))    # (x0, y0, x1, y1), photo pixels
    rgb = overlay(photo, class_map, palette(k), box)      # the photo's (H, W, 3)
    img = with_legend(rgb, classes, labels, palette(k))   # + the legend strip below
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from mdla_ir import Preprocess
from mdla_zoo.preprocess import CROP

Array = np.ndarray[Any, Any]
ALPHA = 0.5  # the class colour's share of a painted pixel
DIM = 0.4  # what is left of a pixel the model did not see
SWATCH, ROW, PAD = 12, 16, 6  # legend geometry, pixels
ENTRY_WIDTH = 150  # one legend entry: swatch, index and a label cut to fit


def crop_box(
    photo_hw: tuple[int, int], pre: Preprocess, model_hw: tuple[int, int]
) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) in photo pixels of the region the model's (h, w) input shows."""
    big_h, big_w = photo_hw
    h, w = model_hw
    whole = pre.resize == 0 or (pre.mode == "stretch" and pre.resize is None)
    if whole:
        return 0.0, 0.0, float(big_w), float(big_h)
    short = pre.resize if pre.resize is not None else round(min(h, w) / CROP)
    scale = short / min(big_h, big_w)
    new_w, new_h = max(w, round(big_w * scale)), max(h, round(big_h * scale))
    left, top = (new_w - w) // 2, (new_h - h) // 2
    sx, sy = new_w / big_w, new_h / big_h
    return left / sx, top / sy, (left + w) / sx, (top + h) / sy


def overlay(
    photo: Array, cmap: Array, colours: Array, box: tuple[float, float, float, float]
) -> Array:
    """The photo (H, W, 3) uint8 with `cmap` (h, w) class indices painted over `box`."""
    rgb = np.asarray(photo[..., :3] if photo.ndim == 3 else np.stack([photo] * 3, -1), np.float32)
    big_h, big_w = rgb.shape[:2]
    h, w = cmap.shape
    x0, y0, x1, y1 = box
    cols = np.floor((np.arange(big_w) + 0.5 - x0) * w / (x1 - x0)).astype(np.int64)
    rows = np.floor((np.arange(big_h) + 0.5 - y0) * h / (y1 - y0)).astype(np.int64)
    inside = ((rows >= 0) & (rows < h))[:, None] & ((cols >= 0) & (cols < w))[None, :]
    cells = cmap[np.clip(rows, 0, h - 1)[:, None], np.clip(cols, 0, w - 1)[None, :]]
    painted = (1 - ALPHA) * rgb + ALPHA * colours[cells].astype(np.float32)
    out = np.where(inside[..., None], painted, DIM * rgb)
    return np.asarray(np.clip(np.rint(out), 0, 255), np.uint8)


def label_of(labels: Sequence[str], c: int) -> str:
    return labels[c] if c < len(labels) else f"class {c}"


def with_legend(
    rgb: Array, classes: Sequence[int], labels: Sequence[str], colours: Array
) -> Image.Image:
    """`rgb` above a white strip naming each of `classes`: swatch, index, label."""
    img = Image.fromarray(rgb, "RGB")
    per_row = max(1, img.width // ENTRY_WIDTH)
    rows = -(-len(classes) // per_row)
    out = Image.new("RGB", (img.width, img.height + rows * ROW + 2 * PAD), (255, 255, 255))
    out.paste(img, (0, 0))
    draw = ImageDraw.Draw(out)
    font = ImageFont.load_default()
    for k, c in enumerate(classes):
        x = PAD + (k % per_row) * ENTRY_WIDTH
        y = img.height + PAD + (k // per_row) * ROW
        colour = tuple(int(v) for v in colours[c])
        draw.rectangle((x, y, x + SWATCH - 1, y + SWATCH - 1), fill=colour, outline=(0, 0, 0))
        text = f"{c} {labels[c]}" if c < len(labels) else f"class {c}"
        while text and draw.textlength(text, font=font) > ENTRY_WIDTH - SWATCH - 2 * PAD:
            text = text[:-1]
        draw.text((x + SWATCH + 4, y), text, fill=(0, 0, 0), font=font)
    return out
