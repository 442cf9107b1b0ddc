"""What each model output is (`mdla_ir.OUTPUT_KINDS`): decided once at compile, recorded in the
manifest's `model.output_kinds`, and overridable with `--output-kind NAME=KIND`.

    kinds = guess(outs, input_shape, postprocess, spec, module)   # compile's guess
    kinds = overridden(kinds, outs, ("heat=keypoints",), detector=False)
    kinds = of_manifest(manifest)   # the record, or the guess for a file written before it

The guess, output by output:

    boxes      every output of a model with an SSD decoder (`model.postprocess`, or a zoo
               detector's spec: `mdla_zoo.detection.DECODERS`); the first output of an
               ultralytics YOLO model (`mdla_zoo.yolo.YoloDecoder.of`)
    logits     [1, K], K >= 2
    classmap   [1, K, H, W], K >= 2, at the input's H x W; or a CPU ARGMAX's [1, H, W] index
               map at the input's H x W (scale 1, zero point 0: the value is the class)
    raw        anything else

`keypoints` is never guessed (a heatmap head [1, K, H, W] looks like a class map): it is named.
What a kind accepts when named (`fits`): logits any output of two or more values; classmap
[1, K, H, W] with K >= 2 or [1, H, W] at any resolution; keypoints heatmaps [1, K, H, W] or
coordinates [1, K, 2 | 3]; boxes only a model with a decoder; raw anything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import mdla_runtime
from mdla_compile.errors import OptionError
from mdla_ir import Graph, Postprocess
from mdla_ir.provenance import BOXES, CLASSMAP, KEYPOINTS, LOGITS, OUTPUT_KINDS, RAW
from mdla_zoo.detection import DECODERS
from mdla_zoo.yolo import YoloDecoder


@dataclass(frozen=True)
class Out:
    """One model output as the guess sees it: shape in the model's layout, int8 scale and zero
    point."""

    name: str
    shape: tuple[int, ...]
    scale: float = 0.0
    zero_point: int = 0


def graph_outputs(graph: Graph) -> list[Out]:
    """The outputs of a quantized graph, as its manifest will record them."""
    outs = []
    for name in graph.outputs:
        q = graph.tensors[name].quant
        scale, zp = (float(q.scale[0]), int(q.zero_point[0])) if q else (0.0, 0)
        outs.append(Out(name, tuple(int(d) for d in graph.model_shape(name)), scale, zp))
    return outs


def manifest_outputs(manifest: mdla_runtime.Manifest) -> list[Out]:
    return [
        Out(o.name, tuple(int(d) for d in o.model_shape), float(o.scale), int(o.zero_point))
        for o in manifest.outputs
    ]


def is_class_map(shape: Sequence[int], input_shape: Sequence[int]) -> bool:
    """`shape` is [1, K, H, W], K >= 2, with the (H, W) of the NCHW input `input_shape`."""
    return (
        len(shape) == 4
        and len(input_shape) == 4
        and shape[0] == 1
        and shape[1] >= 2
        and tuple(shape[2:]) == tuple(input_shape[2:])
        and min(shape[2:]) > 1
    )


def is_index_map(out: Out, input_shape: Sequence[int]) -> bool:
    """A [1, H, W] output of class indices at the input's H x W (a final ARGMAX on the CPU,
    which writes int8 at scale 1, zero point 0)."""
    return (
        len(out.shape) == 3
        and len(input_shape) == 4
        and out.shape[0] == 1
        and tuple(out.shape[1:]) == tuple(input_shape[2:])
        and (out.scale, out.zero_point) == (1.0, 0)
    )


def _yolo(module: str, outs: Sequence[Out], input_shape: Sequence[int]) -> bool:
    hw = (int(input_shape[2]), int(input_shape[3])) if len(input_shape) == 4 else (0, 0)
    return YoloDecoder.of(module, hw, outs[0].shape) is not None


def has_decoder(
    outs: Sequence[Out],
    input_shape: Sequence[int],
    post: Postprocess | None,
    spec: str,
    module: str,
) -> bool:
    """The model's outputs decode into boxes: an SSD record or zoo detector, or a YOLO head."""
    return post is not None or spec in DECODERS or (bool(outs) and _yolo(module, outs, input_shape))


def one_guess(out: Out, input_shape: Sequence[int]) -> str:
    if len(out.shape) == 2 and out.shape[0] == 1 and out.shape[1] >= 2:
        return LOGITS
    if is_class_map(out.shape, input_shape) or is_index_map(out, input_shape):
        return CLASSMAP
    return RAW


def guess(
    outs: Sequence[Out],
    input_shape: Sequence[int],
    post: Postprocess | None = None,
    spec: str = "",
    module: str = "",
) -> tuple[str, ...]:
    """The kind of each output, by the rules of the module docstring."""
    if post is not None or spec in DECODERS:
        return tuple(BOXES for _ in outs)
    kinds = [one_guess(o, input_shape) for o in outs]
    if outs and _yolo(module, outs, input_shape):
        kinds[0] = BOXES
    return tuple(kinds)


def fits(kind: str, shape: Sequence[int], detector: bool) -> str:
    """Why an output of `shape` cannot be `kind` ("" when it can)."""
    if kind == LOGITS and math.prod(shape) < 2:
        return "logits need two or more values"
    if kind == CLASSMAP and not (
        (len(shape) == 4 and shape[0] == 1 and shape[1] >= 2) or (len(shape) == 3 and shape[0] == 1)
    ):
        return "a class map is [1, K, H, W] scores (K >= 2) or a [1, H, W] index map"
    if kind == KEYPOINTS and not (
        (len(shape) == 4 and shape[0] == 1) or (len(shape) == 3 and shape[2] in (2, 3))
    ):
        return "keypoints are [1, K, H, W] heatmaps or [1, K, 2|3] coordinates"
    if kind == BOXES and not detector:
        return (
            "boxes need a decoder: an SSD model (model.postprocess, `SSDHeads(your_ssd)`) or an "
            "ultralytics YOLO model"
        )
    return ""


def parse(values: Sequence[str]) -> list[tuple[str, str]]:
    """`NAME=KIND` (or `KIND` alone, for a model of one output: NAME "") pairs, checked for
    their form and kind before anything is imported."""
    pairs = []
    for v in values:
        name, _, kind = v.rpartition("=")
        if kind not in OUTPUT_KINDS:
            raise OptionError(
                f"--output-kind `{v}`: the kind is one of {', '.join(OUTPUT_KINDS)} "
                "(e.g. --output-kind heatmaps=keypoints)"
            )
        pairs.append((name, kind))
    return pairs


def overridden(
    kinds: Sequence[str], outs: Sequence[Out], values: Sequence[str], detector: bool
) -> tuple[str, ...]:
    """`kinds` with the `--output-kind` values applied; an unknown output name, a bare KIND for
    a model of several outputs, or a kind the output's shape cannot be, is an OptionError."""
    result, names = list(kinds), [o.name for o in outs]
    for name, kind in parse(values):
        if not name and len(outs) != 1:
            raise OptionError(
                f"--output-kind {kind}: the model has {len(outs)} outputs; name one: "
                f"NAME={kind} with NAME one of {', '.join(names)}"
            )
        k = 0 if not name else names.index(name) if name in names else -1
        if k < 0:
            raise OptionError(
                f"--output-kind {name}={kind}: no output `{name}`; the outputs are "
                f"{', '.join(names)}"
            )
        why = fits(kind, outs[k].shape, detector)
        if why:
            given = f"{name}={kind}" if name else kind
            raise OptionError(
                f"--output-kind {given}: output `{names[k]}` {list(outs[k].shape)} cannot be "
                f"{kind}: {why}"
            )
        result[k] = kind
    return tuple(result)


def of_manifest(manifest: mdla_runtime.Manifest) -> tuple[str, ...]:
    """The kinds the manifest records, or compile's guess for a file written before them."""
    prov = manifest.provenance
    if prov.output_kinds:
        return prov.output_kinds
    shape = tuple(int(d) for d in manifest.inputs[0].model_shape) if manifest.inputs else ()
    return guess(manifest_outputs(manifest), shape, prov.postprocess, prov.spec, prov.module)


def check_output_names(graph: Graph, values: Sequence[str]) -> None:
    """The outputs `--output-kind` names exist in the imported graph (before calibrating)."""
    for name, kind in parse(values):
        if name and name not in graph.outputs:
            raise OptionError(
                f"--output-kind {name}={kind}: no output `{name}`; the outputs are "
                f"{', '.join(graph.outputs)}"
            )
