"""What the TUI's screens share: the open model, its op rows, the target and the last results.

Opening a model spec imports, legalizes and quantizes it (2 calibration inputs, the Calibrate
screen re-quantizes with more); opening a .mdla reads its operations. Everything here is plain
Python called from worker threads; screens render the results.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mdla_legalize
import mdla_quant
import mdla_runtime
from mdla_ir import Graph
from workbench import pipeline, witnessing
from workbench.bisection import kind_name


@dataclass(frozen=True)
class OpRow:
    index: int
    name: str
    kind: str
    shape: tuple[int, ...]
    supported: bool | None  # None: not asked yet
    reason: str = ""
    fix: str = ""
    scale: float | None = None
    zero_point: int | None = None
    sqnr_db: float | None = None
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()


@dataclass
class Session:
    target_spec: str = "emu"
    spec: str | None = None
    pending: str | None = None  # a spec to open when the Graph screen mounts
    rows: list[OpRow] = field(default_factory=list)
    compiled: pipeline.Compiled | None = None
    manifest: mdla_runtime.Manifest | None = None
    note: str = ""
    selected: int | None = None
    sqnr: dict[str, float] = field(default_factory=dict)  # op name -> worst output SQNR
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="workbench-tui-")))
    _target: mdla_runtime.Target | None = None
    _counter: witnessing.Counter | None = None

    def counter(self) -> witnessing.Counter | None:
        """The runtime-PM counter the Witness screen watches (the emulator's, on emu)."""
        return self._counter

    def use_emulator_counter(self, node: str) -> None:
        self._counter = witnessing.Counter(
            node, "/sys", f"the emulator's fake runtime-PM node {node} (not a phone's APU)"
        )

    def target(self) -> mdla_runtime.Target:
        if self._target is None:
            self._target = mdla_runtime.open_target(self.target_spec)
        return self._target

    def open(self, spec: str, skip_rules: Sequence[str] = ()) -> None:
        """Load a model spec or a .mdla (called from a worker thread)."""
        self.spec, self.compiled, self.manifest, self.sqnr = spec, None, None, {}
        manifest = pipeline.manifest_or_none(spec)
        if manifest is not None:
            self.manifest = manifest
            flags = self.target().supported(manifest)["mtk-mdla"]
            self.rows = rows_from_manifest(manifest, flags)
            self.note = f"{manifest.name}: {sum(flags)}/{len(flags)} ops on mtk-mdla"
            return
        source = pipeline.load_source(spec)
        try:
            device = pipeline.legalize_graph(source.graph, skip_rules=skip_rules)
        except mdla_legalize.LegalizeError:
            self.rows = rows_from_graph(source.graph)
            self.note = f"{source.graph.name}: as imported (it does not legalize)"
            raise
        calib = pipeline.calibration_inputs("samples" if source.preprocess else "random", source, 2)
        self.install(pipeline.quantize_graph(source, device, calib, mdla_quant.QuantConfig()))

    def install(self, compiled: pipeline.Compiled) -> None:
        """Make `compiled` the open model: write its manifest, ask the device, rebuild rows."""
        self.compiled = compiled
        self.manifest = pipeline.save_manifest(compiled, self.workdir / "current.mdla")
        flags = self.target().supported(self.manifest)["mtk-mdla"]
        self.rows = rows_from_graph(compiled.device_graph, compiled.qgraph, flags, self.sqnr)
        name = compiled.device_graph.name
        self.note = f"{name}: {sum(flags)}/{len(flags)} ops on mtk-mdla ({self.target_spec})"


def rows_from_graph(
    graph: Graph,
    qgraph: Graph | None = None,
    flags: Sequence[bool] | None = None,
    sqnr: dict[str, float] | None = None,
) -> list[OpRow]:
    """One row per op, support and reason from `explain` (and the device's flags if given)."""
    target = mdla_legalize.load_target(graph.provenance.target or "mdla3.5")
    report = {r.index: r for r in mdla_legalize.explain(graph, target).ops}
    rows = []
    for i, op in enumerate(graph.ops):
        why = report[i]
        quant = qgraph.tensors[op.outputs[0]].quant if qgraph is not None else None
        ok = why.supported if flags is None else bool(flags[i]) and why.supported
        rows.append(
            OpRow(
                i,
                op.name,
                op.label,
                tuple(graph.tensors[op.outputs[0]].shape),
                ok,
                why.reason,
                why.fix,
                float(quant.scale[0]) if quant else None,
                int(quant.zero_point[0]) if quant else None,
                (sqnr or {}).get(op.name),
                op.inputs,
                op.outputs,
            )
        )
    return rows


def rows_from_manifest(manifest: mdla_runtime.Manifest, flags: Sequence[bool]) -> list[OpRow]:
    rows = []
    for i, op in enumerate(manifest.operations):
        out = manifest.operands[op.outputs[0]]
        rows.append(
            OpRow(
                i,
                op.name,
                kind_name(op.code),
                out.dims,
                bool(flags[i]),
                "" if flags[i] else "the device rejects the graph (all-or-nothing): bisect",
                scale=out.scale,
                zero_point=out.zero_point,
                inputs=tuple(manifest.operands[k].name for k in op.inputs),
                outputs=tuple(manifest.operands[k].name for k in op.outputs),
            )
        )
    return rows


def sqnr_by_op(report: mdla_quant.CompareReport) -> dict[str, float]:
    worst: dict[str, float] = {}
    for t in report.tensors:
        worst[t.op] = min(worst.get(t.op, float("inf")), t.sqnr_db)
    return worst


def describe(row: OpRow) -> str:
    lines: list[Any] = [
        f"#{row.index} {row.name} ({row.kind})",
        f"output {'×'.join(map(str, row.shape))}",
        f"maps on mtk-mdla: {'?' if row.supported is None else 'yes' if row.supported else 'NO'}",
    ]
    if row.reason:
        lines.append(f"reason: {row.reason}")
    if row.fix:
        lines.append(f"fix: {row.fix}")
    if row.scale is not None:
        lines.append(f"scale {row.scale:.6g}, zero point {row.zero_point}")
    if row.sqnr_db is not None:
        lines.append(f"SQNR {row.sqnr_db:.1f} dB")
    lines.append(f"in: {', '.join(row.inputs)}")
    lines.append(f"out: {', '.join(row.outputs)}")
    return "\n".join(lines)
