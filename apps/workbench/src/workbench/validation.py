"""FP32 vs INT8 (numpy reference and device): per image and per output agreement, worst layers.

v = validate(compiled, [("chelsea", x)], target)
v.outputs[0].kind                             # "logits", "classmap", "boxes", ... or "raw"
v.outputs[0].agreement("ref")                 # top-1 / per-pixel argmax agreement, 0..1
v.outputs[0].values["device"].cosine, .sqnr_db  # over all images

The agreement metric follows what an output is: the kind compile recorded for it
(`mdla_compile.kinds`, the manifest's `model.output_kinds`), because a top-1 over anything but
a classifier's scores says nothing: a segmentation head's flattened 21x224x224 map has one
"top-1" pixel whose position moves with any rounding although the cosine is 1.0.

    logits      top-1 agreement (the argmax class is the same)
    classmap    per-pixel argmax agreement (`dense.class_map`)
    anything    cosine and SQNR only
    else
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import mdla_ir
import mdla_quant
import mdla_runtime
from mdla_compile.compiled import decided_kinds
from mdla_ir.provenance import BOXES, CLASSMAP, KEYPOINTS, LOGITS, RAW
from workbench import agreement as ag
from workbench import dense
from workbench.boxes import Decoder, decode, decoder_for
from workbench.images import top_k
from workbench.pipeline import Compiled

Array = np.ndarray[Any, Any]
CLASSIFIER, CLASS_MAP, TENSOR = LOGITS, CLASSMAP, RAW
KEYS = ("ref", "device")


def graph_kinds(compiled: Compiled) -> tuple[str, ...]:
    """The kind of each output of `compiled`: what its int8 graph records (compile's guess with
    the `--output-kind` overrides), else compile's own guess (`decided_kinds`)."""
    prov = compiled.qgraph.provenance
    return prov.output_kinds or decided_kinds(compiled.qgraph, prov, ())


@dataclass
class Agreement:
    """Accumulated cosine and SQNR of one set of outputs against FP32."""

    dot: float = 0.0
    ff: float = 0.0
    qq: float = 0.0
    err2: float = 0.0

    def add(self, f: Array, q: Array) -> None:
        f64, q64 = np.asarray(f, np.float64).ravel(), np.asarray(q, np.float64).ravel()
        self.dot += float(f64 @ q64)
        self.ff += float(f64 @ f64)
        self.qq += float(q64 @ q64)
        self.err2 += float((f64 - q64) @ (f64 - q64))

    @property
    def cosine(self) -> float:
        return self.dot / math.sqrt(self.ff * self.qq) if self.ff and self.qq else 0.0

    @property
    def sqnr_db(self) -> float:
        return math.inf if self.err2 == 0 else 10 * math.log10(self.ff / self.err2)


def matches(kind: str, f: Array, q: Array) -> float | None:
    """One image's agreement of INT8 output `q` with FP32 `f`: 1.0 or 0.0 for the same top-1
    class, the share of pixels with the same argmax class, the keypoints' OKS-like similarity
    (`agreement`), None for boxes (decoded from all outputs: `image_score`) and raw."""
    return image_score(kind, [f], [q], None)[0]


def image_score(
    kind: str, fs: Sequence[Array], qs: Sequence[Array], decoder: Decoder | None
) -> tuple[float | None, float | None]:
    """One image's (agreement, detail) of its first output by `kind` (`agreement`): top-1,
    pixel share, box F1 and mean IoU (the boxes `decoder` finds in all outputs), keypoint OKS
    and mean distance; (None, None) for raw, or boxes without a decoder."""
    f, q = fs[0], qs[0]
    if kind == CLASSIFIER:
        return ag.top1(f, q), None
    if kind == CLASS_MAP:
        return float(np.mean(dense.class_map(f) == dense.class_map(q))), None
    if kind == KEYPOINTS:
        k = ag.match_keypoints(f, q)
        return k.oks, k.mean_distance
    if kind == BOXES and decoder is not None:
        b = ag.match_boxes(decode(decoder, fs), decode(decoder, qs))
        return b.f1, b.mean_iou
    return None, None


def decoder_of(compiled: Compiled) -> Decoder | None:
    """The boxes decoder of a compiled detector (`boxes.decoder_for`), None for another model."""
    prov, q = compiled.qgraph.provenance, compiled.qgraph
    return decoder_for(prov, compiled.source.input_shapes[0], q.model_shape(q.outputs[0]))


@dataclass
class OutputAgreement:
    """One model output's agreement with FP32, over all images, for "ref" and "device"."""

    name: str
    shape: tuple[int, ...]
    kind: str
    values: dict[str, Agreement] = field(default_factory=dict)  # cosine and SQNR
    shares: dict[str, list[float]] = field(default_factory=dict)  # per image, `image_score`'s
    details: dict[str, list[float]] = field(default_factory=dict)  # mean IoU, mean distance

    def add(
        self, key: str, f: Array, q: Array, scored: tuple[float | None, float | None] | None = None
    ) -> float | None:
        """Accumulate one image's output; its agreement (`scored`, when the caller measured
        it from all outputs: boxes; else `image_score` of this output alone)."""
        self.values.setdefault(key, Agreement()).add(f, q)
        share, detail = scored if scored is not None else image_score(self.kind, [f], [q], None)
        if share is not None:
            self.shares.setdefault(key, []).append(share)
        if detail is not None:
            self.details.setdefault(key, []).append(detail)
        return share

    def detail(self, key: str) -> float | None:
        """Mean IoU of matched boxes / keypoints' mean distance over the images (else None)."""
        return ag.mean(self.details.get(key, []))

    def agreement(self, key: str) -> float | None:
        """Mean top-1 or per-pixel agreement over the images (None for a tensor output)."""
        got = self.shares.get(key)
        return float(np.mean(got)) if got else None


@dataclass
class ImageRow:
    name: str
    top1: dict[str, tuple[int, str, float]]  # a classifier's: "fp32"/"ref"/"device" -> top-1
    # first output's per-image agreement with FP32, by key: `matches`, or cosine for a tensor
    agree: dict[str, float] = field(default_factory=dict)


@dataclass
class Validation:
    rows: list[ImageRow] = field(default_factory=list)
    outputs: list[OutputAgreement] = field(default_factory=list)
    worst: list[Any] = field(default_factory=list)  # mdla_quant TensorStats
    device: str = ""
    latency_ms: tuple[float, float] = (0.0, 0.0)
    latencies: list[float] = field(default_factory=list)  # each run's, in image order

    @property
    def kind(self) -> str:
        """The first output's kind: what the per-image table shows."""
        return self.outputs[0].kind if self.outputs else TENSOR

    def agreement(self, key: str) -> float | None:
        """The first output's top-1 or per-pixel agreement (None for a tensor output)."""
        return self.outputs[0].agreement(key) if self.outputs else None


def _cosine(f: Array, q: Array) -> float:
    one = Agreement()
    one.add(f, q)
    return one.cosine


def validate(
    compiled: Compiled,
    images: Sequence[tuple[str, Array | list[Array]]],
    target: mdla_runtime.Target | None,
    manifest: mdla_runtime.Manifest | None = None,
    worst: int = 5,
) -> Validation:
    """Compare FP32 (the imported graph), the int8 reference and (with a target) the device,
    output by output; an image's input is one array, or a list of one per model input."""
    labels = compiled.source.labels
    graph = compiled.source.graph
    result = Validation()
    for o, kind in zip(graph.outputs, graph_kinds(compiled), strict=True):
        shape = tuple(int(d) for d in graph.tensors[o].shape)
        result.outputs.append(OutputAgreement(o, shape, kind))
    latencies: list[float] = []
    samples = [(name, x if isinstance(x, list) else [x]) for name, x in images]
    decoder = decoder_of(compiled) if BOXES in graph_kinds(compiled) else None
    boxed = [o.kind for o in result.outputs].index(BOXES) if decoder is not None else -1
    for name, xs in samples:
        fp32 = [np.asarray(o) for o in mdla_ir.run_float(graph, xs)]
        runs = {"ref": [np.asarray(o) for o in mdla_quant.run_int8(compiled.qgraph, xs)]}
        if target is not None and manifest is not None:
            run = target.run(manifest, xs)
            runs["device"] = [np.asarray(o) for o in run.outputs]
            result.device = run.device
            latencies.append(run.latency_ms[0])
        row = ImageRow(name, {})
        if result.kind == CLASSIFIER:
            row.top1 = {k: top_k(v[0], labels, 1)[0] for k, v in [("fp32", fp32), *runs.items()]}
        for key, outs in runs.items():
            boxes = image_score(BOXES, fp32, outs, decoder) if decoder is not None else None
            for i, (spec, f, q) in enumerate(zip(result.outputs, fp32, outs, strict=True)):
                share = spec.add(key, f, q, boxes if i == boxed else None)
                if i == 0:
                    row.agree[key] = share if share is not None else _cosine(f, q)
        result.rows.append(row)
    if latencies:
        result.latency_ms = (float(np.median(latencies)), min(latencies))
        result.latencies = latencies
    inputs = [xs for _, xs in samples]
    report = mdla_quant.compare(compiled.device_graph, compiled.qgraph, inputs)
    result.worst = report.worst(worst)
    return result


def db(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.1f}"


def summary_lines(v: Validation) -> list[str]:
    """One line per compared precision ("ref", "device") and output: the kind's agreement
    metric, then cosine and SQNR (the output named when the model has more than one)."""
    lines = []
    for key, what in (("ref", "INT8 reference"), ("device", f"device ({v.device})")):
        for out in v.outputs:
            if key not in out.values:
                continue
            agree, values = out.agreement(key), out.values[key]
            where = f" `{out.name}` {list(out.shape)}" if len(v.outputs) > 1 else ""
            metric = {
                CLASSIFIER: f"top-1 agreement {agree or 0:.0%}, logits ",
                CLASS_MAP: f"per-pixel argmax agreement {100 * (agree or 0):.2f}%, ",
            }.get(out.kind, "")
            if out.kind in (BOXES, KEYPOINTS) and agree is not None:
                metric = ag.KindScore(out.kind, agree, out.detail(key)).text() + ", "
            lines.append(
                f"{what}{where}: {metric}cosine {values.cosine:.4f}, SQNR {db(values.sqnr_db)} dB"
            )
    return lines
