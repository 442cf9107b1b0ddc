"""What the Run screen says about one input's outputs, by what the model's first output is.

    classifier   [1, K]                   top-5 with labels
    class map    [1, K, H, W] at the input's H x W, or a CPU ARGMAX's index map:
                 per-pixel argmax agreement with FP32 (when the model's float graph is open)
                 and the classes' shares of the pixels
    boxes        a detector's head outputs (`model.postprocess`): the number of boxes and the
                 best ones with labels
    keypoints    the first keypoints' (x, y): a heatmap's argmax cell, or the coordinates
    tensor       anything else: shape, mean, min and max

A top-5 over a class map's 32,768 "classes" (its flattened pixels) or a detector's anchors says
nothing, so each kind gets its own line (the kinds and the agreement are `workbench.validation`'s).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import mdla_ir
import mdla_runtime
from mdla_compile import kinds
from mdla_ir import Graph, provenance
from mdla_zoo.detection import SSDDecoder, detect
from mdla_zoo.yolo import YoloDecoder
from workbench import agreement as ag
from workbench import dense, keypoints, validation
from workbench.boxes import Boxes
from workbench.images import top_k

Array = np.ndarray[Any, Any]
BOXES = provenance.BOXES
SHOWN = 3  # classes and boxes named per input


def output_kind(manifest: mdla_runtime.Manifest) -> str:
    """The first output's kind, as the manifest records it (`kinds.of_manifest`)."""
    kind = kinds.of_manifest(manifest)[0]
    return kind if kind != BOXES or decoder_of(manifest) is not None else validation.TENSOR


def decoder_of(manifest: mdla_runtime.Manifest) -> SSDDecoder | YoloDecoder | None:
    """The detector decoder `run` uses for this manifest (`boxes.Boxes.decoder`), if any."""
    return Boxes(manifest).decoder


def name(labels: Sequence[str], c: int) -> str:
    return labels[c] if 0 <= c < len(labels) else f"#{c}"


def summary(
    kind: str,
    manifest: mdla_runtime.Manifest,
    x: Array,
    outputs: Sequence[Array],
    float_graph: Graph | None,
) -> str:
    """One input's line for `kind` (`float_graph`: the open model's FP32 graph, if any)."""
    labels = manifest.provenance.labels
    if kind == validation.CLASSIFIER:
        return ", ".join(f"{lab} {p:.2f}" for _, lab, p in top_k(outputs[0], labels, 5))
    if kind == validation.CLASS_MAP:
        return class_map_line(outputs[0], labels, x, float_graph)
    if kind == BOXES:
        decoder = decoder_of(manifest)
        assert decoder is not None  # what made the kind
        if isinstance(decoder, YoloDecoder):
            return boxes_line(decoder.detect(outputs), labels)
        return boxes_line(detect(decoder, outputs), labels)
    if kind == provenance.KEYPOINTS:
        return keypoints.line(ag.keypoints(np.asarray(outputs[0]))[0], SHOWN)
    out = np.asarray(outputs[0], np.float64)
    return (
        f"{'×'.join(map(str, out.shape))}: mean {out.mean():.4g}, min {out.min():.4g}, "
        f"max {out.max():.4g}"
    )


def class_map_line(int8: Array, labels: Sequence[str], x: Array, float_graph: Graph | None) -> str:
    """Per-pixel agreement with FP32 (or why there is none), then the INT8 map's classes."""
    q = dense.class_map(np.asarray(int8))
    if float_graph is None:
        agree = "pixel agreement: open the model spec (c) to compare with FP32"
    else:
        f = dense.class_map(np.asarray(mdla_ir.run_float(float_graph, [x])[0]))
        agree = f"pixel agreement {100 * float(np.mean(f == q)):.1f}%"
    return f"{agree}; classes {histogram(q, labels)}"


def histogram(class_map: Array, labels: Sequence[str]) -> str:
    """The SHOWN largest classes by share of the pixels, and how many more there are."""
    classes, counts = np.unique(class_map, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    total = class_map.size
    shown = [f"{name(labels, int(classes[i]))} {100 * counts[i] / total:.0f}%" for i in order]
    more = len(shown) - SHOWN
    return ", ".join(shown[:SHOWN]) + (f" (+{more} more)" if more > 0 else "")


def boxes_line(dets: Any, labels: Sequence[str]) -> str:
    n = len(dets)
    best = ", ".join(
        f"{name(labels, int(c))} {float(s):.2f}"
        for s, c in zip(dets.scores[:SHOWN], dets.labels[:SHOWN], strict=True)
    )
    return f"{n} box{'' if n == 1 else 'es'}" + (f": {best}" if best else "")
