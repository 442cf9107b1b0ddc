"""Keypoint outputs drawn on the photo: what `workbench run` writes for an output recorded as
`keypoints` (`--output-kind NAME=keypoints` at compile: `mdla_compile.kinds`).

A keypoint output is K heatmaps `[1, K, H, W]` (keypoint k is the argmax cell of channel k,
the first of tied maxima) or K coordinates `[1, K, 2|3]` (x, y in the model input's pixels; a
third column, a score, is ignored): `agreement.keypoints`. The heatmaps cover the model's input,
which shows the region of the photo `overlay.crop_box` gives; a cell (cx, cy) is drawn at its
centre's place in the photo, x0 + (cx + 0.5) (x1 - x0) / W (and likewise y), a coordinate
(x, y) at x0 + x (x1 - x0) / w_input. For each keypoint output of a photo `run` writes
`<image stem>.<model>.<output>.keypoints.png` into its output folder (`workbench.outputs`):
the photo at its own resolution twice, FP32 keypoints on the left and INT8 on the right (INT8
alone without an FP32 side), each a filled disc of radius `RADIUS` around the photo pixel the
point falls in, numbered by its channel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from mdla_compile import kinds
from mdla_ir import Preprocess
from mdla_ir.provenance import KEYPOINTS
from workbench import agreement as ag
from workbench.boxes import FP32_COLOUR, INT8_COLOUR, photo_image, write_panels
from workbench.dense import ClassMaps, Sample
from workbench.outputs import picture
from workbench.overlay import crop_box

Array = np.ndarray[Any, Any]
RADIUS = 3  # pixels around a keypoint's own pixel


def on_photo(
    y: Array, photo_hw: tuple[int, int], pre: Preprocess, input_hw: tuple[int, int]
) -> Array:
    """(K, 2) positions (x, y) in photo pixels of one image's keypoint output `y`."""
    cells, _ = ag.keypoints(y)
    x0, y0, x1, y1 = crop_box(photo_hw, pre, input_hw)
    if np.asarray(y).ndim == 4:  # heatmaps: a cell's centre, the grid spanning the crop
        h, w = int(y.shape[2]), int(y.shape[3])
        cells = cells + 0.5
    else:
        h, w = input_hw
    return np.stack([x0 + cells[:, 0] * (x1 - x0) / w, y0 + cells[:, 1] * (y1 - y0) / h], axis=1)


def line(points: Sequence[Sequence[float]] | Array, shown: int) -> str:
    """`K keypoints (x, y): (x, y) ... +M more`, the first `shown` of the K points written out
    (`run`'s table and the TUI's Run screen)."""
    cells = " ".join(f"({p[0]:g}, {p[1]:g})" for p in points[:shown])
    more = len(points) - shown
    return f"{len(points)} keypoints (x, y): {cells}" + (f" +{more} more" if more > 0 else "")


def draw(photo: Array, points: Array, colour: tuple[int, int, int]) -> Image.Image:
    """The photo with each point a filled disc in `colour`, its index beside it."""
    img = photo_image(photo)
    pen = ImageDraw.Draw(img)
    for k, (x, y) in enumerate(points):
        px, py = math.floor(float(x)), math.floor(float(y))
        pen.ellipse((px - RADIUS, py - RADIUS, px + RADIUS, py + RADIUS), fill=colour)
        pen.text((px + RADIUS + 2, py - RADIUS - 8), str(k), fill=colour)
    return img


@dataclass
class Keypoints(ClassMaps):
    """Writes the keypoint pictures of one manifest's runs (`preprocess` as in `ClassMaps`:
    without it, or without a photo, there is no picture)."""

    def outputs(self) -> list[int]:
        """Indices of the manifest's outputs recorded as keypoints."""
        return [i for i, k in enumerate(kinds.of_manifest(self.manifest)) if k == KEYPOINTS]

    def entry(self, image: str, x: Sample, int8_outputs: Sequence[Array]) -> dict[str, Any]:
        """`run`'s record of the keypoint PNGs of one input ({} when none is drawn): per
        keypoint output its PNG and the FP32 (None without) and INT8 points in photo pixels."""
        photo = self.photo(image) if self.outputs() else None
        if photo is None or self.preprocess is None:
            return {}
        floats = self.float_outputs(x)
        shape = self.manifest.inputs[0].model_shape  # NCHW: the readers guarantee it
        input_hw = (int(shape[2]), int(shape[3]))
        hw = (int(photo.shape[0]), int(photo.shape[1]))
        drawn = []
        for i in self.outputs():
            what = self.manifest.outputs[i].name or f"output{i}"
            q = on_photo(int8_outputs[i], hw, self.preprocess, input_hw)
            f = None if floats is None else on_photo(floats[i], hw, self.preprocess, input_hw)
            path = picture(self.folder, image, self.manifest.name, f"{what}.keypoints")
            left = None if f is None else draw(photo, f, FP32_COLOUR)
            write_panels(path, left, draw(photo, q, INT8_COLOUR), "keypoints")
            points = {"int8": np.round(q, 1).tolist()}
            points["fp32"] = None if f is None else np.round(f, 1).tolist()
            drawn.append({"output": what, "png": str(path), **points})
        return {"keypoint_pngs": drawn} if drawn else {}

    @staticmethod
    def lines(results: Sequence[dict[str, Any]]) -> list[str]:
        """What `run` prints after its table: each keypoint PNG and its panels."""
        return [
            f"keypoints of {e['image']} ({k['output']}): {k['png']} "
            f"({'FP32 | INT8' if k['fp32'] is not None else 'INT8 only'})"
            for e in results
            for k in e.get("keypoint_pngs", [])
        ]
