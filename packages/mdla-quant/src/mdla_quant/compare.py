"""`compare(graph, qgraph, inputs)`: how far each int8 tensor is from its float twin.

Per activation tensor, accumulated over all inputs:
    cosine   = <f, q> / (|f| |q|)
    SQNR dB  = 10 log10( sum f^2 / sum (f - q)^2 )      (inf when equal)
    max |err| = max |f - q|
where f is the float interpreter's value and q the int8 reference's, dequantized:
q = scale * (int8 - zero_point). `str(report)` is a table, worst SQNR first.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mdla_ir import Graph, OpKind, evaluate
from mdla_quant.errors import QuantError
from mdla_quant.reference import run_int8

Array = np.ndarray[Any, Any]


@dataclass
class TensorStats:
    name: str
    op: str
    kind: str
    dot: float = 0.0
    ff: float = 0.0
    qq: float = 0.0
    err2: float = 0.0
    max_abs: float = 0.0

    def add(self, f: Array, q: Array) -> None:
        f64, q64 = f.astype(np.float64).ravel(), q.astype(np.float64).ravel()
        d = f64 - q64
        self.dot += float(f64 @ q64)
        self.ff += float(f64 @ f64)
        self.qq += float(q64 @ q64)
        self.err2 += float(d @ d)
        self.max_abs = max(self.max_abs, float(np.abs(d).max(initial=0.0)))

    @property
    def cosine(self) -> float:
        if self.ff == 0.0 or self.qq == 0.0:
            return 1.0 if self.ff == self.qq else 0.0
        return self.dot / math.sqrt(self.ff * self.qq)

    @property
    def sqnr_db(self) -> float:
        if self.err2 == 0.0:
            return math.inf
        if self.ff == 0.0:
            return -math.inf
        return 10.0 * math.log10(self.ff / self.err2)


@dataclass
class CompareReport:
    tensors: list[TensorStats] = field(default_factory=list)
    samples: int = 0

    def worst(self, n: int = 5) -> list[TensorStats]:
        return sorted(self.tensors, key=lambda t: t.sqnr_db)[:n]

    def stat(self, name: str) -> TensorStats:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def __str__(self) -> str:
        rows = [("tensor", "op", "cosine", "SQNR dB", "max |err|")]
        rows += [
            (
                t.name,
                f"{t.op} ({t.kind})",
                f"{t.cosine:.5f}",
                f"{t.sqnr_db:.1f}",
                f"{t.max_abs:.4g}",
            )
            for t in self.worst(len(self.tensors))
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines = [
            f"int8 vs float32 over {self.samples} input(s), {len(self.tensors)} tensors, "
            "worst first"
        ]
        lines += [
            "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in rows
        ]
        return "\n".join(lines)


def compare(graph: Graph, qgraph: Graph, inputs: Iterable[Sequence[Any] | Array]) -> CompareReport:
    """Per-tensor agreement of `qgraph` (int8) with `graph` (float) over `inputs`."""
    # the quantizer's own: a float region's DEQUANTIZE, a16's int8 <-> int16 QUANTIZE
    mine = (OpKind.DEQUANTIZE, OpKind.QUANTIZE)
    inserted = {op.name for op in qgraph.ops if op.kind in mine} - {op.name for op in graph.ops}
    if [op.name for op in graph.ops] != [op.name for op in qgraph.ops if op.name not in inserted]:
        raise QuantError(
            f"`{qgraph.name}` is not the quantized form of `{graph.name}`: their "
            "ops differ (compare the legalized float graph with its quantization)"
        )
    producers = {o: op for op in graph.ops for o in op.outputs}
    stats = {n: TensorStats(n, producers[n].name, producers[n].kind.name) for n in producers}
    report = CompareReport(list(stats.values()))
    for sample in inputs:
        xs = sample if isinstance(sample, list | tuple) else [sample]
        floats = evaluate(graph, xs, keep=list(stats))

        def observe(name: str, q: Array, floats: dict[str, Array] = floats) -> None:
            if name in stats:
                params = qgraph.tensors[name].quant
                if qgraph.tensors[name].dtype == "float32":  # a float region's: as it is
                    stats[name].add(floats[name], q.astype(np.float32))
                    return
                if params is None:
                    raise QuantError(f"tensor `{name}` of `{qgraph.name}` has no quant params")
                real = np.float32(params.scale[0]) * (
                    q.astype(np.float32) - np.float32(params.zero_point[0])
                )
                stats[name].add(floats[name], real)

        run_int8(qgraph, xs, raw=True, observe=observe)
        report.samples += 1
    return report
