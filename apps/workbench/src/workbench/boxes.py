"""Detector outputs as boxes: what `workbench run` prints and draws for an SSD manifest.

A manifest is a detector's when it records a `model.postprocess` (compile writes it for any
model that carries an SSD decoder: the zoo's detectors and a user's `SSDHeads(their_ssd)`
factory), or, for a manifest written before that key, when its recorded spec names one of the
zoo's detectors (`mdla_zoo.detection.DECODERS`, torch-free): its outputs are the head convs per
feature level, and `mdla_zoo.detection.detect` turns them into boxes on the CPU (anchors,
decoding, NMS; the spec is only a key of that table). The FP32 boxes come from the model the
user names with `run --model SPEC` (`dense.float_graph`: needs torch, and the very model the
manifest was compiled from, else `run` says why); never from the file's recorded spec.

An ultralytics YOLO manifest (its recorded module class DetectionModel, SegmentationModel or
PoseModel, its first output `[1, 4 + classes + extra, anchors]`: `mdla_zoo.yolo`) decodes its
boxes itself, the decode on the CPU partition; `run` thresholds, NMSes and draws them. For each
input `run` prints the best `TOP` boxes of FP32 and INT8 in the photo's pixels and writes
`<image stem>.<model>.boxes.png` into `run`'s output folder (`workbench.outputs`): the photo
twice, FP32 boxes on the left, INT8 on the right.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw
from rich.console import Console
from rich.table import Table

from mdla_compile import kinds
from mdla_compile.inputs import is_data
from mdla_ir.provenance import BOXES, Provenance
from mdla_runtime.atomic import write_atomic
from mdla_zoo.detection import DECODERS, Detections, SSDDecoder, detect
from mdla_zoo.yolo import YoloDecoder
from workbench.dense import FloatSide, Sample
from workbench.errors import BAD_INPUT, WorkbenchError
from workbench.images import png_bytes, read_image
from workbench.outputs import picture

Array = np.ndarray[Any, Any]
TOP = 5  # boxes printed and drawn per image and precision
FP32_COLOUR, INT8_COLOUR = (0, 230, 64), (255, 0, 200)
GAP = 4  # white pixels between the FP32 and the INT8 panel


Decoder = SSDDecoder | YoloDecoder


def decoder_for(
    prov: Provenance, input_shape: Sequence[int], first_output: Sequence[int]
) -> Decoder | None:
    """The decoder of a model: its SSD record, the zoo detector its spec names, or a YOLO head
    (`YoloDecoder.of`); None when its outputs are not a detector's."""
    if prov.postprocess is not None:
        return SSDDecoder.of(prov.postprocess)
    if prov.spec in DECODERS:
        return DECODERS[prov.spec]
    hw = (int(input_shape[2]), int(input_shape[3])) if len(input_shape) == 4 else (0, 0)
    return YoloDecoder.of(prov.module, hw, tuple(first_output))


def decode(decoder: Decoder, outputs: Sequence[Array]) -> Detections:
    """One image's detections, best first, in the model input's pixels."""
    if isinstance(decoder, YoloDecoder):
        return decoder.detect(outputs)
    return detect(decoder, outputs)


@dataclass
class Boxes(FloatSide):
    """The boxes of one detector manifest's runs; the FP32 graph is imported on first use."""

    @property
    def decoder(self) -> SSDDecoder | YoloDecoder | None:
        """The manifest's decoder, or None when its outputs are not a detector's (compile did
        not record boxes: `mdla_compile.kinds`)."""
        if BOXES not in kinds.of_manifest(self.manifest):
            return None
        x, y = self.manifest.inputs[0], self.manifest.outputs[0]
        return decoder_for(self.manifest.provenance, x.model_shape, y.model_shape)

    def detections(
        self,
        decoder: SSDDecoder | YoloDecoder,
        size: tuple[int, int],
        x: Sample,
        outputs: Sequence[Array],
    ) -> tuple[Detections | None, Detections]:
        """FP32 (None when it cannot be imported) and INT8 detections in pixels of a picture
        of `size` (height, width)."""

        def found(outs: Sequence[Array]) -> Detections:
            return decode(decoder, outs).scaled(decoder.image_size, size)

        floats = self.float_outputs(x)
        return (None if floats is None else found(floats)), found(outputs)

    def entry(self, image: str, x: Sample, int8_outputs: Sequence[Array]) -> dict[str, Any]:
        """`run`'s record of one input's boxes and their PNG ({} for a non-detector). An
        array or random input has no photo: its boxes are in the model input's pixels, and
        no PNG is drawn ("png": None)."""
        decoder = self.decoder
        if decoder is None:
            return {}
        photo = None if image == "random" or is_data(image) else read_image(image)
        size = decoder.image_size if photo is None else (int(photo.shape[0]), int(photo.shape[1]))
        fp32, int8 = self.detections(decoder, size, x, int8_outputs)
        labels = self.manifest.provenance.labels
        png = None
        if photo is not None:
            png = picture(self.folder, image, self.manifest.name, "boxes")
            write_png(png, photo, fp32, int8, labels)
        found = {
            "fp32": None if fp32 is None else rows(fp32, labels),
            "int8": rows(int8, labels),
            "png": None if png is None else str(png),
        }
        return {"boxes": found | ({"no_fp32": self.why_no_float} if self.why_no_float else {})}

    @staticmethod
    def print(results: Sequence[dict[str, Any]], random_weights: bool) -> None:
        """One table per input with boxes: FP32 and INT8 rows, then the PNG written."""
        console = Console(highlight=False, soft_wrap=True)
        warn = " (random weights: these boxes mean nothing)" if random_weights else ""
        for e in results:
            if "boxes" not in e:
                continue
            table = Table(title=f"{e['image']}: best {TOP} boxes, x0 y0 x1 y1 in pixels{warn}")
            for col in ("", "label", "score", "box"):
                table.add_column(col)
            for which in ("fp32", "int8"):
                for r in e["boxes"][which] or []:
                    box = " ".join(f"{v:.1f}" for v in r["box"])
                    table.add_row(which.upper(), r["label"], f"{r['score']:.3f}", box)
            console.print(table)
            if "no_fp32" in e["boxes"]:
                console.print(f"  no FP32 boxes: {e['boxes']['no_fp32']}", markup=False)
            side = "FP32 | INT8" if e["boxes"]["fp32"] is not None else "INT8 only"
            png = e["boxes"]["png"] or "no PNG (an array input has no photo to draw on)"
            console.print(f"boxes of {e['image']}: {png} ({side})", markup=False)


def rows(dets: Detections, labels: Sequence[str], k: int = TOP) -> list[dict[str, Any]]:
    """The best k detections as JSON rows: label, class index, score, box (x0 y0 x1 y1)."""
    return [
        {
            "label": _name(labels, int(c)),
            "class": int(c),
            "score": round(float(s), 4),
            "box": [round(float(v), 1) for v in b],
        }
        for b, s, c in zip(dets.boxes[:k], dets.scores[:k], dets.labels[:k], strict=True)
    ]


def _name(labels: Sequence[str], c: int) -> str:
    return labels[c] if c < len(labels) else f"#{c}"


def draw(
    photo: Array,
    dets: Detections,
    labels: Sequence[str],
    colour: tuple[int, int, int],
    k: int = TOP,
) -> Image.Image:
    """The photo with the best k boxes outlined 2 px wide in `colour` (pixels x0..x1-1 and
    y0..y1-1 of the rounded box), each labelled inside its top-left corner."""
    img = photo_image(photo)
    pen = ImageDraw.Draw(img)
    for b, s, c in zip(dets.boxes[:k], dets.scores[:k], dets.labels[:k], strict=True):
        x0, y0, x1, y1 = (round(float(v)) for v in b)
        if x1 - x0 < 1 or y1 - y0 < 1:
            continue
        pen.rectangle((x0, y0, x1 - 1, y1 - 1), outline=colour, width=2)
        pen.text((x0 + 3, y0 + 3), f"{_name(labels, int(c))} {float(s):.2f}", fill=colour)
    return img


def side_by_side(left: Image.Image, right: Image.Image) -> Image.Image:
    """Two panels of one height, `GAP` white columns between them."""
    out = Image.new("RGB", (left.width + GAP + right.width, left.height), (255, 255, 255))
    out.paste(left, (0, 0))
    out.paste(right, (left.width + GAP, 0))
    return out


def photo_image(photo: Array) -> Image.Image:
    """The photo's first three channels as an 8-bit RGB image to draw on."""
    return Image.fromarray(np.ascontiguousarray(photo[..., :3]).astype(np.uint8)).convert("RGB")


def write_panels(path: Path, fp32: Image.Image | None, int8: Image.Image, what: str) -> None:
    """FP32's panel on the left and INT8's on the right (INT8's alone without FP32's), written
    atomically as the PNG `path`; an OSError is one line naming `what` and the path."""
    img = int8 if fp32 is None else side_by_side(fp32, int8)
    try:
        write_atomic(path, png_bytes(img))
    except OSError as exc:
        raise WorkbenchError(f"cannot write the {what} PNG `{path}`: {exc}", BAD_INPUT) from None


def write_png(
    path: Path,
    photo: Array,
    fp32: Detections | None,
    int8: Detections,
    labels: Sequence[str],
) -> None:
    """FP32 boxes on the left and INT8 boxes on the right; INT8 alone without FP32."""
    left = None if fp32 is None else draw(photo, fp32, labels, FP32_COLOUR)
    write_panels(path, left, draw(photo, int8, labels, INT8_COLOUR), "boxes")
