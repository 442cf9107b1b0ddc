"""What the TUI's screens share: the open model, its op rows, the target and the last results.

Opening a model spec runs the CLI's own compile (`mdla_compile.compile`, then `save`) with the
compile form's `CompileOptions`, reporting each stage to a progress callback; opening a
.mdla reads its operations. Everything here is plain Python called from worker threads; screens
render the results. `close()` removes the session's temp dir and closes its target (an SSH
connection), and is safe to call twice (on unmount and again after Ctrl-C).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import mdla_compile
import mdla_legalize
import mdla_quant
import mdla_runtime
from mdla_compile import (
    CalibrationTick,
    CompileOptions,
    Imported,
    Note,
    Placed,
    Stage,
    StageStarted,
)
from mdla_ir import Graph
from mdla_ir.devices import DEFAULT_TARGET
from mdla_ir.errors import IRError
from workbench import pipeline, witnessing
from workbench.bisection import kind_name
from workbench.errors import USAGE, WorkbenchError
from workbench.tui import restore

Progress = Callable[[str, int, int], None]  # (stage, steps done, steps in all)


@dataclass(frozen=True)
class OpRow:
    index: int
    name: str
    kind: str
    shape: tuple[int, ...]
    supported: bool | None  # None: not asked yet (or placed on the CPU)
    reason: str = ""
    fix: str = ""
    scale: float | None = None
    zero_point: int | None = None
    sqnr_db: float | None = None
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    on_cpu: bool = False
    int16: str = ""  # why the op's output is int16 (`mdla_legalize.int16_reasons`)


def tui_options(spec: str = "", **changes: Any) -> CompileOptions:
    """The record `workbench compile` takes, with the TUI's own defaults: `auto` calibration
    (`samples` for a model with image preprocessing, else `random`) on 2 inputs."""
    return CompileOptions(spec, **{"calib": "auto", "count": 2, **changes})


def steps(options: CompileOptions) -> int:
    """Progress steps: import, legalize, one per calibration input, write, ask the device."""
    return 4 + options.count


@dataclass
class Session:
    target_spec: str = "emu"
    spec: str | None = None
    pending: CompileOptions | None = None  # what to open when the Graph screen mounts
    rows: list[OpRow] = field(default_factory=list)
    compiled: mdla_compile.Compiled | None = None
    manifest: mdla_runtime.Manifest | None = None
    note: str = ""
    selected: int | None = None  # the Graph cursor's op index, kept across screens
    search: str = ""  # the Graph filter, kept across screens
    sqnr: dict[str, float] = field(default_factory=dict)  # op name -> worst output SQNR
    options: CompileOptions = field(default_factory=tui_options)
    recorded: CompileOptions | None = None  # an open .mdla's compile, as it records it
    generation: int = 0  # bumped whenever another manifest is opened or installed
    warnings: tuple[str, ...] = ()  # what the last compile warned about (--cpu placement)
    _workdir: Path | None = None
    _target: mdla_runtime.Target | None = None
    _counter: witnessing.Counter | None = None

    @property
    def device(self) -> str:
        return self.options.device

    @property
    def target_name(self) -> str:
        return self.options.target

    @property
    def workdir(self) -> Path:
        """A private temp dir for the open model's manifest, made on first use."""
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="workbench-tui-"))
        return self._workdir

    def close(self) -> None:
        """Remove the temp dir and close the target (an SSH target's connection)."""
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        target, self._target = self._target, None
        close = getattr(target, "close", None)
        if callable(close):
            close()

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
        """Open `spec` with the current options (and these skip rules), from a worker thread."""
        self.compile(replace(self.options, model=spec, skip_rules=tuple(skip_rules)))

    def compile(self, options: CompileOptions, progress: Progress | None = None) -> None:
        """Load a model spec or a .mdla with `options` (called from a worker thread)."""
        step = progress or (lambda _stage, _done, _total: None)
        total = steps(options)
        self.spec, self.compiled, self.manifest, self.sqnr = options.spec, None, None, {}
        self.options, self.generation, self.selected = options, self.generation + 1, None
        self.warnings, self.recorded = (), None
        manifest = pipeline.manifest_or_none(options.spec)
        if manifest is not None:
            step("asking the device", total - 1, total)
            self.manifest, self.generation = manifest, self.generation + 1
            self.recorded = restore.recorded_options(manifest, options)
            flags = self.target().supported(manifest, [self.device]).get(self.device, [])
            self.rows = rows_from_manifest(manifest, flags)
            self.note = f"{manifest.name}: {sum(flags)}/{len(flags)} ops on {self.device}"
            if manifest.provenance.random_weights:
                self.note += " (random weights)"
            return
        seen: list[mdla_compile.Source] = []
        try:
            compiled = mdla_compile.compile(options, on_event=self._on_event(step, total, seen))
        except mdla_legalize.LegalizeError:
            if seen:
                self.rows = rows_from_graph(seen[0].graph, target=options.target)
                self.note = f"{seen[0].graph.name}: as imported (it does not legalize)"
            raise
        except (RuntimeError, IRError) as exc:  # torch's, while importing (the importer's
            # IRError when torch cannot run the model says so from torch's RuntimeError): the
            # input shape, most likely
            said = None if seen else restore.shape_error(options, exc)
            if said is None:
                raise
            raise WorkbenchError(said, USAGE) from exc
        step("writing the manifest", total - 2, total)
        self.install(compiled, lambda: step("asking the device", total - 1, total))
        found = (restore.shape_warning(options, compiled), restore.random_warning(compiled))
        self.warnings += tuple(w for w in found if w)

    def _on_event(
        self, step: Progress, total: int, seen: list[mdla_compile.Source]
    ) -> mdla_compile.OnEvent:
        """The compile's events as the loading row's (stage, done, total); the imported
        source into `seen`, the --cpu placement's warnings into `warnings`."""

        def on_event(event: mdla_compile.Event) -> None:
            match event:
                case StageStarted(Stage.IMPORT):
                    step("importing", 0, total)
                case StageStarted(Stage.LEGALIZE):
                    step("legalizing", 1, total)
                case Imported(source):
                    seen.append(source)
                case CalibrationTick(n):
                    step("calibrating", 2 + n, total)
                case Placed(placed):
                    self.warnings += placed.warnings
                case Note(text):
                    self.warnings += (text,)

        return on_event

    def install(
        self, compiled: mdla_compile.Compiled, asking: Callable[[], None] = lambda: None
    ) -> None:
        """Make `compiled` the open model: write its manifest, ask the device, rebuild rows
        (another manifest: results about the old one, such as a bisection, no longer hold)."""
        self.compiled, self.generation = compiled, self.generation + 1
        self.manifest = compiled.save(self.workdir / "current.mdla")
        asking()
        flags = self.target().supported(self.manifest, [self.device]).get(self.device, [])
        graph = compiled.device_graph
        self.rows = rows_from_graph(graph, compiled.qgraph, flags, self.sqnr, self.target_name)
        on = sum(r.supported is True for r in self.rows)
        cpu = sum(r.on_cpu for r in self.rows)
        npu = len(self.rows) - cpu
        self.note = f"{graph.name}: {on}/{npu} ops on {self.device} ({self.target_spec})"
        if cpu:
            self.note += f", {cpu} on cpu"
        if compiled.source.random_weights:
            self.note += " (random weights)"


def rows_from_graph(
    graph: Graph,
    qgraph: Graph | None = None,
    flags: Sequence[bool] | None = None,
    sqnr: dict[str, float] | None = None,
    target: str | None = None,
) -> list[OpRow]:
    """One row per op, support and reason from `explain` (and the device's flags if given:
    one per op left on the NPU, in op order, as `Target.supported` answers a placed model)."""
    tgt = mdla_legalize.load_target(target or graph.provenance.target or DEFAULT_TARGET)
    report = {r.index: r for r in mdla_legalize.explain(graph, tgt).ops}
    wide = mdla_legalize.int16_reasons(qgraph) if qgraph is not None else {}
    cpu = set(graph.provenance.cpu_ops)
    npu_flags = iter(flags or ())
    rows = []
    for i, op in enumerate(graph.ops):
        why = report[i]
        quant = qgraph.tensors[op.outputs[0]].quant if qgraph is not None else None
        on_cpu = op.name in cpu
        ok: bool | None = why.supported
        if on_cpu:
            ok = None
        elif flags is not None:
            ok = bool(next(npu_flags, False)) and why.supported
        rows.append(
            OpRow(
                i,
                op.name,
                op.label,
                tuple(graph.tensors[op.outputs[0]].shape),
                ok,
                "" if on_cpu else why.reason,
                "" if on_cpu else why.fix,
                float(quant.scale[0]) if quant else None,
                int(quant.zero_point[0]) if quant else None,
                (sqnr or {}).get(op.name),
                op.inputs,
                op.outputs,
                on_cpu,
                wide.get(op.name, ""),
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


def support_text(row: OpRow) -> str:
    if row.on_cpu:
        return "cpu"
    return "?" if row.supported is None else "yes" if row.supported else "NO"


def describe(row: OpRow) -> str:
    lines: list[Any] = [
        f"#{row.index} {row.name} ({row.kind})",
        f"output {'×'.join(map(str, row.shape))}",
        f"maps on the NPU: {support_text(row)}",
    ]
    if row.reason:
        lines.append(f"reason: {row.reason}")
    if row.fix:
        lines.append(f"fix: {row.fix}")
    if row.scale is not None:
        lines.append(f"scale {row.scale:.6g}, zero point {row.zero_point}")
    if row.sqnr_db is not None:
        lines.append(f"SQNR {row.sqnr_db:.1f} dB")
    if row.int16:
        lines.append(f"int16 (16x8): {row.int16}")
    lines.append(f"in: {', '.join(row.inputs)}")
    lines.append(f"out: {', '.join(row.outputs)}")
    return "\n".join(lines)
