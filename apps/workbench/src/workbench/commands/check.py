"""`workbench check`: which ops map on the device, why not, and the fix.

The exit code answers "does this model map?" with the predicate `workbench compile` uses: 0
when every op maps after legalization (the imported graph's per-op table says which rule makes
each op map), 3 when some op cannot (one row per op: the op, the reason, what to do), 1 for a
model that cannot be read. Notes (the imported graph's NCHW layout) never change it.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Annotated, Any

import numpy as np
import typer

import mdla_legalize
import mdla_runtime
from mdla_ir import DEFAULT_PATH, Graph, UnsupportedError
from mdla_ir.devices import DEFAULT_TARGET, NPU
from mdla_ir.ops import OpKind
from mdla_legalize.constructs import help_text as constructs_help
from mdla_runtime.format.container import TENSOR_QUANT16_SYMM
from mdla_zoo.names import check_name
from workbench import contract as ct
from workbench import pipeline, placement
from workbench.commands.options import (
    Debug,
    Device,
    ImportPath,
    ImportPathName,
    JsonOut,
    On,
    TargetName,
    Weights,
    console,
)
from workbench.errors import UNSUPPORTED, reported
from workbench.output import json_output, open_target, steps

EPILOG = """Examples:

  workbench check efficientnet_b0             # as imported: each op's fix

  workbench check efficientnet_b0 --legalized # after the rules: all map

  workbench check convnext_tiny               # LayerNorm: exit 3, row per op

  workbench check lite0.mdla --on emu         # the device's support query

""" + constructs_help()


def op_kind_name(code: int) -> str:
    try:
        return OpKind(code).name
    except ValueError:
        return f"op {code}"


def check_command(
    model: Annotated[str, typer.Argument(help="A model spec, or a compiled OUT.mdla.")],
    device: Device = NPU,
    target: TargetName = DEFAULT_TARGET,
    legalized: Annotated[
        bool, typer.Option("--legalized", help="Check the graph after legalization.")
    ] = False,
    weights: Weights = None,
    importer: ImportPath = ImportPathName.auto,
    on: On = "emu",
    cpu: placement.Cpu = None,
    arg: ct.ArgOpt = None,
    input_shape: ct.InputShape = None,
    as_json: JsonOut = False,
    debug: Debug = False,
) -> None:
    """Print the support report of MODEL (per op: maps? reason, fix) or of OUT.mdla (the
    device's getSupportedOperationsForDevices via --on).

    Exit 0 when every op maps after the rules `workbench compile` applies (those it applies
    are named under fix), 3 when some op cannot map (one row per op: reason and what to do:
    e.g. LayerNorm and attention need RSQRT/EXP, which the MDLA lacks), 1 for a model that
    does not load. Which constructs map (exact rewrites), which rest on an assumption and
    which never will: the list below. With --cpu: the placement table (per op: device,
    partition, why) and the device switches; exit 2 when a --cpu token selects nothing.
    --arg and --input-shape load the model as `workbench compile` does with them.
    """
    with reported(debug), json_output(as_json) as emit:
        manifest = pipeline.manifest_or_none(model)
        doc: dict[str, Any] = {"model": model, "device": device}
        spec = Spec(
            model, str(weights) if weights else None, _contract(input_shape), arg or [], importer
        )
        if manifest is not None:
            ok = _check_manifest(manifest, open_target(on), device, doc)
        elif cpu:
            ok = _check_placed(spec, target, device, cpu, doc)
        else:
            ok = _check_model(spec, target, device, legalized, doc)
        emit({**doc, "maps": ok})
        if not ok:
            raise typer.Exit(UNSUPPORTED)


@dataclasses.dataclass(frozen=True)
class Spec:
    """A model spec and what loads it as `compile` does: --weights, --input-shape, --arg."""

    model: str
    weights: str | None
    contract: ct.Contract
    args: list[str]
    importer: str = DEFAULT_PATH  # --import: mdla_ir's import path

    def __post_init__(self) -> None:
        check_name(self.model)  # a typo: at once, not after torch's import

    def load(self) -> pipeline.Source:
        """The imported model; what loading it did (notes) goes to stderr, as compile says it."""
        source = pipeline.load_source(
            self.model, self.weights, self.contract, self.args, self.importer
        )
        for note in source.notes:
            typer.echo(note, err=True)
        return source


def import_record(source: pipeline.Source) -> dict[str, str | None]:
    """--json's `import`: the path that imported the model and, when auto chose it, why."""
    return {"path": source.import_path or None, "note": source.import_note or None}


def _contract(input_shape: str | None) -> ct.Contract:
    """The input contract check needs: the shape (normalization does not change the graph)."""
    return ct.contract_from(input_shape)


def _check_model(
    spec: Spec, target: str, device: str, legalized: bool, doc: dict[str, Any]
) -> bool:
    """The support report; `doc` receives what --json prints: the stage that failed
    (import, legalize) or passed (mapped), the per-op rows and the problems."""
    con = console()
    model = spec.model
    tgt = mdla_legalize.load_target(target)
    doc.update(target=tgt.name, legalized=legalized)
    try:
        with steps() as s, s.step(f"importing {model}"):
            source = spec.load()
        doc["import"] = import_record(source)
    except UnsupportedError as exc:
        _report_refusal(exc, model, (target, tgt.name), device, doc)
        return False
    try:
        with steps() as s, s.step("legalizing"):
            device_graph = pipeline.legalize_graph(source.graph, target, device)
    except mdla_legalize.UnknownRuleError:
        raise
    except mdla_legalize.LegalizeError as exc:
        doc.update(stage="legalize", problems=list(exc.items))
        if not legalized:
            imported = mdla_legalize.explain(source.graph, tgt, device)
            doc["ops"] = [dataclasses.asdict(o) for o in imported.ops]
            con.print(str(imported), markup=False)
        _rows(
            f"after legalization, {len(exc.items)} op(s) do not map on {tgt.name}/{device}",
            exc.items,
        )
        doc["advice"] = list(exc.advice)
        for line in exc.advice:
            con.print(f"fix: {line}", markup=False)
        _fail(f"`{model}` does not map on {device}: {len(exc.items)} op(s), listed above")
        return False
    report = mdla_legalize.explain(device_graph if legalized else source.graph, tgt, device)
    con.print(str(report), markup=False)
    fired = device_graph.provenance.rule_counts
    doc.update(
        stage="mapped",
        ops=[dataclasses.asdict(o) for o in report.ops],
        device_ops=len(device_graph.ops),
        rules=dict(sorted(fired.items())),
        conv_macs={"imported": conv_macs(source.graph), "device": conv_macs(device_graph)},
    )
    rules = ", ".join(f"{name} x{n}" for name, n in sorted(fired.items()))
    con.print(
        f"all {len(device_graph.ops)} ops of the device graph map on {device}"
        + (f" (`workbench compile` applies: {rules})" if rules else ""),
        markup=False,
    )
    before, after = conv_macs(source.graph), conv_macs(device_graph)
    if after > before * 1.01:  # a rewrite that costs compute says so (grouped -> dense)
        con.print(
            f"conv MACs: {before / 1e6:.1f} M as imported -> {after / 1e6:.1f} M on the device "
            f"({after / before:.2f}x: block-diagonal grouped convs, selection convs)",
            markup=False,
        )
    return True


def _check_placed(
    spec: Spec, target: str, device: str, cpu: list[str], doc: dict[str, Any]
) -> bool:
    """`--cpu`: the placement table, or one row per op that neither maps nor is placed."""
    model = spec.model
    with steps() as s, s.step(f"importing {model}"):
        source = spec.load()
    doc.update(target=target, cpu=cpu, **{"import": import_record(source)})
    try:
        with steps() as s, s.step("legalizing and placing"):
            placed = placement.place_graph(source.graph, target, device, cpu)
    except mdla_legalize.LegalizeError as exc:
        doc.update(stage="legalize", problems=list(exc.items))
        _rows(f"with --cpu {','.join(cpu)}, {len(exc.items)} op(s) cannot be placed", exc.items)
        _fail(f"`{model}` cannot be placed: {len(exc.items)} op(s), listed above")
        return False
    placement.report(placed)
    doc.update(
        stage="placed",
        ops=[dataclasses.asdict(o) for o in placed.ops],
        partitions=len(placed.partitions),
        switches=placed.switches,
        warnings=list(placed.warnings),
    )
    return True


def conv_macs(graph: Graph) -> int:
    """Multiply-accumulates of the graph's CONV_2D / DEPTHWISE_CONV_2D ops."""
    total = 0
    for op in graph.ops:
        if op.kind not in (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D):
            continue
        w, y = (graph.tensors[n].shape for n in (op.inputs[1], op.outputs[0]))
        depthwise_nhwc = op.kind is OpKind.DEPTHWISE_CONV_2D and graph.layout == "NHWC"
        channels = w[-1] if depthwise_nhwc else w[0]  # (1, KH, KW, C) or (O, I/g, KH, KW)...
        total += int(np.prod(y)) * (int(np.prod(w)) // channels)
    return total


def _rows(title: str, items: list[str]) -> None:
    """One row per op or construct, with what to do about it."""
    con = console()
    con.print(title + ":", markup=False)
    for item in items:
        head, sep, tail = item.partition("; fix: not mappable on this device: ")
        if sep and tail in head:  # the fix restates the reason: say it once
            item = f"{head}; no rule makes it map"
        con.print(f"  {item}", markup=False)
        hint = _hint(item)
        if hint:
            con.print(f"      what to do: {hint}", markup=False)


HINTS = (  # (substring of the row, what to do), first match wins
    (
        "MultiheadAttention",
        "attention is a transformer block: transformers are out on the MDLA "
        "(their LayerNorm needs RSQRT, silicon fact 2); run this part on the CPU",
    ),
    (
        "LAYER_NORM",
        "no RSQRT on the MDLA (silicon fact 2): use BatchNorm (it folds into the conv) "
        "or run this part on the CPU",
    ),
    ("layer_norm", "no RSQRT on the MDLA (silicon fact 2): use BatchNorm or run it on the CPU"),
    ("GELU", "GELU needs erf: use ReLU/ReLU6/Hardswish/SiLU, which map"),
    (
        "TRANSPOSE",
        "a permute the MDLA cannot do (no TRANSPOSE): keep the model channels-first "
        "around it, or run it on the CPU",
    ),
)


def _hint(item: str) -> str:
    return next((what for key, what in HINTS if key in item), "")


def _report_refusal(
    exc: UnsupportedError, model: str, target: tuple[str, str], device: str, doc: dict[str, Any]
) -> None:
    """The import refusals and, at once, the legalize problems of what did import (`target`:
    as given, and its name)."""
    doc.update(stage="import", problems=list(exc.items))
    _rows(f"{pipeline.model_name(model)}: {len(exc.items)} construct(s) do not import", exc.items)
    rest = _legalize_rest(exc.partial, target[0], device)
    doc["legalize_problems"] = rest
    if rest:
        _rows(f"of what imports, {len(rest)} op(s) do not map on {target[1]}/{device}", rest)
    _fail(
        f"`{model}` does not import: {len(exc.items)} unsupported construct(s)"
        + (f", and {len(rest)} op(s) of the rest do not map" if rest else "")
        + ", listed above"
    )


def _legalize_rest(partial: Graph | None, target: str, device: str) -> list[str]:
    """The legalize stage's problems with the part of the model that imports (every refused
    construct's result taken as an input), so one check lists both stages' problems."""
    if partial is None:
        return []
    try:
        pipeline.legalize_graph(partial, target, device)
    except mdla_legalize.LegalizeError as exc:
        return list(exc.items)
    return []


def _fail(message: str) -> None:
    sys.stderr.write(f"error: {message}\n")


def _check_manifest(
    manifest: mdla_runtime.Manifest, target: mdla_runtime.Target, device: str, doc: dict[str, Any]
) -> bool:
    """The device's support query of OUT.mdla, one row per op; a partitioned manifest (compile
    --cpu) is asked per NPU partition on the partition's own device, its cpu ops are not asked."""
    if len(manifest.partitions) > 1 or any(p.on_cpu for p in manifest.partitions):
        return _check_partitions(manifest, target, doc)
    con = console()
    flags = target.supported(manifest, [device])[device]
    wide = manifest_int16(manifest)
    doc.update(
        model=manifest.name,
        path=str(manifest.path),
        target=target.name,
        supported=sum(flags),
        ops=[
            {"index": i, "name": op.name, "kind": op_kind_name(op.code), "supported": ok}
            | ({"int16": wide[op.name]} if op.name in wide else {})
            for i, (op, ok) in enumerate(zip(manifest.operations, flags, strict=True))
        ],
    )
    con.print(
        f"{manifest.name} ({manifest.path}) on {target.name}/{device}: "
        f"{sum(flags)}/{len(flags)} ops supported",
        markup=False,
    )
    for i, (op, ok) in enumerate(zip(manifest.operations, flags, strict=True)):
        why = f"  int16: {wide[op.name]}" if op.name in wide else ""
        row = f"  {i:>4}  {op.name:<40} {op_kind_name(op.code):<22} {'yes' if ok else 'NO'}"
        con.print(row + why, markup=False)
    _all_or_nothing(all(flags))
    return all(flags)


def manifest_int16(manifest: mdla_runtime.Manifest) -> dict[str, str]:
    """{op name: why its output is int16} from the file's quant record (`explain`'s words)."""
    ops = manifest.operands
    wide = [
        (op.name, ops[op.outputs[0]].name)
        for op in manifest.operations
        if ops[op.outputs[0]].type == TENSOR_QUANT16_SYMM
    ]
    return mdla_legalize.int16_why(manifest.provenance.quant, wide)


def _check_partitions(
    manifest: mdla_runtime.Manifest, target: mdla_runtime.Target, doc: dict[str, Any]
) -> bool:
    """Per partition: its device and op count, then its ops (NPU: the device's answer)."""
    con = console()
    parts = manifest.partitions
    devices = list(dict.fromkeys(p.device for p in parts if not p.on_cpu))
    flags = {d: iter(f) for d, f in target.supported(manifest, devices).items()} if devices else {}
    rows: list[dict[str, Any]] = []
    con.print(
        f"{manifest.name} ({manifest.path}) on {target.name}: {len(parts)} partition(s)",
        markup=False,
    )
    for k, part in enumerate(parts):
        answers = [None if part.on_cpu else next(flags[part.device]) for _ in part.operations]
        asked = [ok for ok in answers if ok is not None]
        con.print(
            f"  partition {k} on {part.device}: {len(part.operations)} op(s)"
            + (", not asked (the engine's own kernels)" if part.on_cpu else "")
            + ("" if part.on_cpu else f", {sum(asked)}/{len(asked)} supported"),
            markup=False,
        )
        for i, ok in zip(part.operations, answers, strict=True):
            op = manifest.operations[i]
            said = "cpu" if ok is None else ("yes" if ok else "NO")
            con.print(f"    {i:>4}  {op.name:<38} {op_kind_name(op.code):<22} {said}")
            rows.append(
                {
                    "index": i,
                    "name": op.name,
                    "kind": op_kind_name(op.code),
                    "partition": k,
                    "device": part.device,
                    "supported": ok,
                }
            )
    npu = [r["supported"] for r in rows if r["supported"] is not None]
    doc.update(
        model=manifest.name,
        path=str(manifest.path),
        target=target.name,
        supported=sum(npu),
        partitions=[{"device": p.device, "operations": len(p.operations)} for p in parts],
        ops=sorted(rows, key=lambda r: int(r["index"])),
    )
    _all_or_nothing(all(npu))
    return all(npu)


def _all_or_nothing(ok: bool) -> None:
    if not ok:
        console().print(
            "support is all-or-nothing on the MDLA: `workbench bisect` finds the first op "
            "that does not map",
            markup=False,
        )
