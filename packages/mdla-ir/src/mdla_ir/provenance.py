"""`Provenance`: the typed compile record a graph carries from import to the manifest.

Each floor fills its own fields with `dataclasses.replace` and leaves the others alone:

    importer (mdla_ir.from_torch)    module, source_hash, import_path ("export" or "fx")
    legalize (mdla_legalize)         target, device, rules (from the pass manager's trace),
                                     cpu_ops (the placement, `mdla_legalize.place`)
    quantize (mdla_quant)            quant (the whole QuantConfig), numerics (rounding and
                                     accumulator, and the target they came from),
                                     calibration_samples
    the app (workbench, lipread)     spec, labels, preprocess, postprocess, output_kinds

`mdla_runtime.save` writes it as the manifest's `model` section (a fixed key list, checked by
both readers), and the engine runs with the recorded rounding (`numerics.rounding`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from mdla_ir.devices import DEFAULT_TARGET, NPU


class Rounding(StrEnum):
    """How a requantization rounds: TFLite's reference double rounding (the bit-exact target),
    or TFLITE_SINGLE_ROUNDING (what XNNPACK matches)."""

    DOUBLE = "double"
    SINGLE = "single"


class Accumulator(StrEnum):
    """What an int64 sum stored into TFLite's int32 does out of range: clamp, or wrap (the
    target's `[arith] accumulator` fact)."""

    SATURATE = "saturate"
    WRAP = "wrap"


ROUNDINGS = tuple(r.value for r in Rounding)
# What a model output is, recorded per output at compile (the manifest's `model.output_kinds`):
# class scores, a class map (per-pixel scores or indices), a detector's head outputs (decoded
# into boxes), keypoints (heatmaps, one per keypoint, or coordinates), anything else.
LOGITS, CLASSMAP, BOXES, KEYPOINTS, RAW = "logits", "classmap", "boxes", "keypoints", "raw"
OUTPUT_KINDS = (LOGITS, CLASSMAP, BOXES, KEYPOINTS, RAW)
ACCUMULATORS = tuple(a.value for a in Accumulator)


@dataclass(frozen=True, slots=True)
class Numerics:
    """The integer arithmetic an int8 graph was built for, and the target it came from.

    `accumulator` is None where it was not recorded (a manifest stores the rounding only);
    a reader then takes the target's fact. Strings (as a manifest or a CLI holds them) are
    accepted and mapped to the enums; anything else is a ValueError naming the choices."""

    rounding: Rounding = Rounding.DOUBLE
    accumulator: Accumulator | None = Accumulator.SATURATE
    target: str = ""

    def __post_init__(self) -> None:
        if self.rounding not in ROUNDINGS:
            raise ValueError(f"rounding `{self.rounding}`: expected one of {ROUNDINGS}")
        if self.accumulator is not None and self.accumulator not in ACCUMULATORS:
            raise ValueError(f"accumulator `{self.accumulator}`: expected one of {ACCUMULATORS}")
        object.__setattr__(self, "rounding", Rounding(self.rounding))
        if self.accumulator is not None:
            object.__setattr__(self, "accumulator", Accumulator(self.accumulator))


@dataclass(frozen=True, slots=True)
class QuantRecord:
    """The `mdla_quant.QuantConfig` a graph was quantized with, field for field.

    mdla_ir cannot import mdla_quant, so the fields and their defaults are defined here once:
    `QuantConfig` extends this record with validation, and `QuantConfig.record()` gives the
    plain record the graph's provenance holds.
    """

    method: str = "percentile"
    percentile: float = 99.99
    rounding: str = "double"
    bias_correction: bool = False
    bins: int = 2048
    target: str = DEFAULT_TARGET
    device: str = NPU
    # Added after format 2's first files: optional in a manifest (absent = these defaults).
    equalize: bool = False
    adaround: int = 0  # AdaRound iterations per layer; 0 = round to nearest
    reconstruction: str = "layer"  # AdaRound's loss: each layer's output, or each block's
    # Activation tensors held in int16 (TFLite's 16x8: symmetric, zero point 0, int8 weights,
    # int64 bias), by graph tensor name; () = all int8.
    a16: tuple[str, ...] = ()
    # Why those: each name's measured gain in output SQNR (dB, `--a16 auto`'s simulation; () when
    # they were named, not chosen), and the request that chose them ("auto:25%", the patterns).
    a16_gain_db: tuple[float, ...] = ()
    a16_mode: str = ""
    # The int8 weights' scale ("max": max|w| / 127; "mse": the clip of least round-trip error)
    # and rounding ("nearest"; "balanced": flips that cancel per-kernel and per-channel error;
    # "kernel", "weighted"; "mean", the default: kernel flips, and the weights' mean error on
    # the calibration data in the bias, 196/200 on efficientnet_lite0 against nearest's 190).
    weight_scale: str = "max"
    weight_rounding: str = "mean"

    def __post_init__(self) -> None:
        if self.rounding not in ROUNDINGS:
            raise ValueError(f"rounding `{self.rounding}`: expected double or single")
        if isinstance(self.a16, str) or not all(isinstance(n, str) for n in self.a16):
            raise ValueError(f"a16 {self.a16!r}: expected a sequence of tensor names")
        object.__setattr__(self, "a16", tuple(self.a16))  # a manifest's list, a CLI's list
        gains = self.a16_gain_db
        if isinstance(gains, str) or not all(isinstance(g, (int, float)) for g in gains):
            raise ValueError(f"a16_gain_db {gains!r}: expected a sequence of dB values")
        if gains and len(gains) != len(self.a16):
            raise ValueError(
                f"a16_gain_db has {len(gains)} values for {len(self.a16)} a16 names: give one "
                "per name, or none"
            )
        object.__setattr__(self, "a16_gain_db", tuple(float(g) for g in gains))


# What a manifest written before a QuantRecord field existed was compiled with: a reader fills
# an absent key with this value, not with today's default (a default may change; a file keeps
# meaning what it was built with). Every field after `device` has an entry.
QUANT_ABSENT: Mapping[str, Any] = {
    "equalize": False,
    "adaround": 0,
    "reconstruction": "layer",
    "a16": (),
    "a16_gain_db": (),
    "a16_mode": "",
    "weight_scale": "max",
    "weight_rounding": "nearest",
}


@dataclass(frozen=True, slots=True)
class Preprocess:
    """How a model wants its input images: `mode` ("imagenet", "tf", ...), (h, w), and the
    per-channel mean/std the mode normalizes with (empty when the mode has none), applied to
    pixels scaled to [0, 1]; `channels` the order the model takes ("rgb" or "bgr"); `resize`
    the short side the photo is resized to before the centre (h, w) crop (None: the default
    round(side / 0.875); 0: the whole photo resized to (h, w), no crop)."""

    mode: str
    size: tuple[int, ...] = ()
    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()
    channels: str = "rgb"
    resize: int | None = None


@dataclass(frozen=True, slots=True)
class Postprocess:
    """How a detector's head outputs become boxes on the CPU (kind "ssd": anchors, box decoding,
    NMS; `mdla_zoo.detection.SSDDecoder` has the same fields and does the work). Per feature
    level k the outputs are the regression conv (1, A_k*4, H_k, W_k) and the classification
    conv (1, A_k*num_classes, H_k, W_k); `order` says which group comes first
    ("regression_first": all regression levels, then all classification levels)."""

    kind: str  # "ssd"
    image_size: tuple[int, int]  # (h, w) of the head's input
    num_classes: int  # including background (class 0)
    aspect_ratios: tuple[tuple[float, ...], ...]  # per level (DefaultBoxGenerator)
    scales: tuple[float, ...]  # levels + 1 values
    box_weights: tuple[float, float, float, float]  # BoxCoder weights (wx, wy, ww, wh)
    box_clip: float  # BoxCoder.bbox_xform_clip
    score_thresh: float
    nms_thresh: float
    topk_candidates: int  # per class, before NMS
    detections_per_img: int
    clip: bool = True  # clamp the default boxes' (w, h) to [0, 1]
    order: str = "regression_first"  # or "classification_first"
    steps: tuple[int, ...] | None = None  # per level (None: each grid's own size)


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a compiled graph came from and how it was made (all fields optional until set)."""

    spec: str = ""  # the model spec the user named (torchvision name, file.py:factory, ...)
    module: str = ""  # the torch module's class
    source_hash: str = ""  # sha256 of the fx graph's code and the state dict's tensors
    target: str = ""  # target description legalize used (mdla3.5)
    device: str = ""  # the device legalize mapped to (mtk-mdla)
    rules: tuple[tuple[str, int], ...] = ()  # legalize rules that fired, times each, sorted
    quant: QuantRecord | None = None
    calibration_samples: int = 0
    labels: tuple[str, ...] = ()
    preprocess: Preprocess | None = None
    postprocess: Postprocess | None = None  # a detector's CPU decoding (boxes from its outputs)
    random_weights: bool = False  # no weights were loaded: outputs and labels mean nothing
    # Ops placed on the host CPU (`--cpu`, mdla_ir.partitions); the others run on `device`.
    cpu_ops: tuple[str, ...] = ()
    numerics: Numerics | None = None  # set by quantize; None on a float graph
    import_path: str = ""  # how the module was captured: "export" or "fx" ("" not recorded)
    # One of OUTPUT_KINDS per graph output, in order; () where none was recorded (older files).
    output_kinds: tuple[str, ...] = ()

    @property
    def rounding(self) -> Rounding:
        """The requantization rounding the int8 graph was built for (double by default)."""
        if self.numerics is not None:
            return self.numerics.rounding
        return Rounding(self.quant.rounding) if self.quant is not None else Rounding.DOUBLE

    @property
    def rule_counts(self) -> dict[str, int]:
        return dict(self.rules)


def merge_rules(
    old: Iterable[tuple[str, int]], new: Mapping[str, int]
) -> tuple[tuple[str, int], ...]:
    """`old` plus `new` counts, as a sorted tuple (the form `Provenance.rules` holds)."""
    counts = dict(old)
    for name, n in new.items():
        counts[name] = counts.get(name, 0) + n
    return tuple(sorted(counts.items()))


def source_hash(code: str, tensors: Iterable[tuple[str, Any]]) -> str:
    """sha256 over a model's structure (the fx graph's code) and its named tensors
    (name, dtype, shape and bytes of each, in name order): equal iff both are equal."""
    h = hashlib.sha256()
    h.update(code.encode())
    for name, value in sorted(tensors, key=lambda kv: kv[0]):
        arr = np.ascontiguousarray(value)
        h.update(f"\0{name}\0{arr.dtype.str}\0{arr.shape}\0".encode())
        h.update(arr.reshape(-1).view(np.uint8).data)  # its bytes in place: no copy of them
    return h.hexdigest()
