"""`workbench bisect`: op-prefix bisection on the device's own support query, or (`--outputs`)
on its results against the int8 reference. A model compiled with `--cpu` is cut across its
partitions (`mdla-engine --ops N`): only NPU ops are asked or can differ, cpu ones are the
engine's own kernels."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

import mdla_compile
import mdla_runtime
from mdla_ir import Graph
from mdla_ir.devices import DEFAULT_TARGET, NPU
from workbench import bisection, pipeline, placement
from workbench.commands.options import (
    Debug,
    Device,
    ImportPath,
    ImportPathName,
    JsonOut,
    On,
    SkipRule,
    TargetName,
    Weights,
    console,
)
from workbench.errors import DEVICE, USAGE, WorkbenchError, reported
from workbench.output import json_output, open_target, steps
from workbench.progress import compile_progress

EPILOG = """Examples:

  workbench bisect model.mdla --on ssh://u0_a123@phone:8022

  workbench bisect squeezenet1_1                      # compiles first (random calibration)

  workbench bisect efficientnet_b0 --skip-rule conv_pad_to_pad_valid

  workbench bisect convnext_tiny --cpu LAYER_NORM,GELU --outputs
"""


def bisect_command(
    model: Annotated[str, typer.Argument(help="A compiled OUT.mdla, or a model spec.")],
    on: On = "emu",
    device: Device = NPU,
    target: TargetName = DEFAULT_TARGET,
    skip_rule: SkipRule = None,
    weights: Weights = None,
    importer: ImportPath = ImportPathName.auto,
    cpu: placement.Cpu = None,
    outputs: Annotated[
        bool,
        typer.Option(
            "--outputs",
            help="Bisect on results instead: an op whose int8 output on the target "
            "differs from mdla_quant.run_int8 (bit for bit, on one random input) while its "
            "inputs agree. Needs a model spec (the reference is its compiled graph).",
        ),
    ] = False,
    as_json: JsonOut = False,
    debug: Debug = False,
) -> None:
    """Find the first op the device cannot run by op-prefix bisection (log2(N) support
    queries, each shown as it happens). Exits 0 when everything maps, 3 otherwise; with
    --outputs, 0 when every output is bit-exact with the int8 reference, 4 otherwise."""
    with reported(debug), json_output(as_json) as emit:
        con = console()
        tgt = open_target(on)  # an SSH phone: its connect on stderr
        graph: Graph | None = None
        manifest = pipeline.manifest_or_none(model)
        if manifest is not None and (outputs or cpu):
            flag = "--outputs" if outputs else "--cpu"
            raise WorkbenchError(
                f"{flag} needs a model spec, not the compiled {model}: "
                + (
                    "the int8 reference runs the graph it was compiled from"
                    if outputs
                    else "its placement is fixed in the file"
                ),
                USAGE,
            )
        with tempfile.TemporaryDirectory(prefix="workbench-bisect-") as tmp:
            if manifest is None:
                compiled, manifest = _compile(
                    model, weights, target, skip_rule or [], cpu or [], Path(tmp), importer.value
                )
                graph = compiled.device_graph
                con.print(f"compiled {model}: {len(manifest.operations)} ops", markup=False)
                if outputs:
                    _diverge(tgt, manifest, compiled, device, emit, model)
                    return
            total = len(manifest.operations)
            con.print(f"bisecting {total} ops on {tgt.name}/{device}", markup=False)
            doc: dict[str, Any] = {
                "model": model,
                "target": tgt.name,
                "device": device,
                "ops": total,
                "steps": [],
            }

            def show(step: bisection.Step) -> None:
                doc["steps"].append(dataclasses.asdict(step))
                con.print(f"  {step}", markup=False)

            index = bisection.bisect(tgt, manifest, device, show)
            if index is None:
                con.print(f"all {total} ops map on {device}", markup=False)
                emit({**doc, "maps": True, "first_unmapped": None})
                return
            found = bisection.culprit(manifest, index, device, graph, target)
            con.print(str(found), markup=False)
            emit({**doc, "maps": False, "first_unmapped": dataclasses.asdict(found)})
        raise typer.Exit(3)


def _diverge(
    tgt: mdla_runtime.Target,
    manifest: mdla_runtime.Manifest,
    compiled: mdla_compile.Compiled,
    device: str,
    emit: Any,
    model: str,
) -> None:
    """--outputs: bisection.diverge on one random input; exit 4 naming the op that differs."""
    con = console()
    (x,) = mdla_compile.calibration_inputs("random", compiled.source, 1, seed=1)
    total = len(manifest.operations)
    con.print(f"bisecting {total} ops on {tgt.name}/{device} against run_int8", markup=False)
    doc: dict[str, Any] = {"model": model, "target": tgt.name, "device": device, "ops": total}
    doc["steps"] = []

    def show(step: bisection.OutputStep) -> None:
        doc["steps"].append({**dataclasses.asdict(step), "agrees": step.agrees})
        verdict = "agree" if step.agrees else f"{step.differing} differ"
        con.print(f"  ops[:{step.ops}]: {step.outputs} live tensor(s), {verdict}", markup=False)

    index = bisection.diverge(tgt, manifest, compiled.qgraph, list(x), device, show)
    if index is None:
        con.print(f"all {total} ops agree with run_int8 bit for bit", markup=False)
        emit({**doc, "agrees": True, "first_differing": None})
        return
    op = manifest.operations[index]
    where = next((p.device for p in manifest.partitions if index in p.operations), device)
    kind = bisection.kind_name(op.code)
    found = {"index": index, "name": op.name, "kind": kind, "device": where}
    con.print(
        f"op whose output differs from run_int8: #{index} {op.name} ({kind}) on {where} "
        f"(its inputs agree: ops[:{index}] is bit-exact, ops[:{index + 1}] is not)",
        markup=False,
    )
    emit({**doc, "agrees": False, "first_differing": found})
    raise WorkbenchError(
        f"op #{index} `{op.name}` ({kind}) computes another result on {device}", DEVICE
    )


def _compile(
    model: str,
    weights: Path | None,
    target: str,
    skip: list[str],
    cpu: list[str],
    tmp: Path,
    import_path: str,
) -> tuple[mdla_compile.Compiled, mdla_runtime.Manifest]:
    """Import, legalize (placed with --cpu), quantize on 2 random inputs and save."""
    options = mdla_compile.CompileOptions(
        model,
        weights=str(weights) if weights else None,
        calib="random",
        count=2,
        cpu=tuple(cpu),
        target=target,
        skip_rules=tuple(skip),
        import_path=import_path,
    )
    with steps() as s:
        compiled = mdla_compile.compile(options, on_event=compile_progress(s, show_placement=False))
    return compiled, compiled.save(tmp / "model.mdla")
