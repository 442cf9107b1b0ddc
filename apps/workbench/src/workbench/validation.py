"""FP32 vs INT8 (numpy reference and device): per image top-1, logits agreement, worst layers.

v = validate(compiled, [("chelsea", x)], target)
v.agreement("ref"), v.agreement("device")     # top-1 agreement with FP32, 0..1
v.logits["device"].cosine, .sqnr_db           # over all images
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
from workbench.images import top_k
from workbench.pipeline import Compiled

Array = np.ndarray[Any, Any]


@dataclass
class Agreement:
    """Accumulated cosine and SQNR of one set of logits against FP32."""

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


@dataclass
class ImageRow:
    name: str
    top1: dict[str, tuple[int, str, float]]  # "fp32" / "ref" / "device" -> (index, label, p)


@dataclass
class Validation:
    rows: list[ImageRow] = field(default_factory=list)
    logits: dict[str, Agreement] = field(default_factory=dict)
    worst: list[Any] = field(default_factory=list)  # mdla_quant TensorStats
    device: str = ""
    latency_ms: tuple[float, float] = (0.0, 0.0)

    def agreement(self, key: str) -> float:
        same = sum(r.top1[key][0] == r.top1["fp32"][0] for r in self.rows if key in r.top1)
        return same / max(len(self.rows), 1)


def validate(
    compiled: Compiled,
    images: Sequence[tuple[str, Array]],
    target: mdla_runtime.Target | None,
    manifest: mdla_runtime.Manifest | None = None,
    worst: int = 5,
) -> Validation:
    """Compare FP32 (the imported graph), the int8 reference and (with a target) the device."""
    labels = compiled.source.labels
    result = Validation(logits={k: Agreement() for k in ("ref", "device")})
    latencies: list[float] = []
    for name, x in images:
        (fp32,) = mdla_ir.run_float(compiled.source.graph, [x])
        (ref,) = mdla_quant.run_int8(compiled.qgraph, [x])
        top1 = {"fp32": top_k(fp32, labels, 1)[0], "ref": top_k(ref, labels, 1)[0]}
        result.logits["ref"].add(fp32, ref)
        if target is not None and manifest is not None:
            run = target.run(manifest, [x])
            top1["device"] = top_k(run.outputs[0], labels, 1)[0]
            result.logits["device"].add(fp32, run.outputs[0])
            result.device = run.device
            latencies.append(run.latency_ms[0])
        result.rows.append(ImageRow(name, top1))
    if latencies:
        result.latency_ms = (float(np.median(latencies)), min(latencies))
    if target is None:
        del result.logits["device"]
    inputs = [[x] for _, x in images]
    report = mdla_quant.compare(compiled.device_graph, compiled.qgraph, inputs)
    result.worst = report.worst(worst)
    return result
