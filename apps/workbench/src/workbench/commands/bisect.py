"""`workbench bisect`: op-prefix bisection on the device's own support query."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

import mdla_quant
import mdla_runtime
from mdla_ir import Graph
from workbench import bisection, pipeline
from workbench.commands.options import (
    Debug,
    Device,
    JsonOut,
    On,
    SkipRule,
    TargetName,
    Weights,
    console,
)
from workbench.errors import reported
from workbench.output import json_output, steps

EPILOG = """Examples:

  workbench bisect model.mdla --on ssh://u0_a123@phone:8022

  workbench bisect squeezenet1_1                      # compiles first (random calibration)

  workbench bisect efficientnet_b0 --skip-rule conv_pad_to_pad_valid
"""


def bisect_command(
    model: Annotated[str, typer.Argument(help="A compiled OUT.mdla, or a model spec.")],
    on: On = "emu",
    device: Device = "mtk-mdla",
    target: TargetName = "mdla3.5",
    skip_rule: SkipRule = None,
    weights: Weights = None,
    as_json: JsonOut = False,
    debug: Debug = False,
) -> None:
    """Find the first op the device cannot run by op-prefix bisection (log2(N) support
    queries, each shown as it happens). Exits 0 when everything maps, 3 otherwise."""
    with reported(debug), json_output(as_json) as emit:
        con = console()
        tgt = mdla_runtime.open_target(on)
        graph: Graph | None = None
        manifest = pipeline.manifest_or_none(model)
        with tempfile.TemporaryDirectory(prefix="workbench-bisect-") as tmp:
            if manifest is None:
                manifest, graph = _compile(model, weights, target, skip_rule or [], Path(tmp))
                con.print(f"compiled {model}: {len(manifest.operations)} ops", markup=False)
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
                verdict = "maps" if step.maps else "does not map"
                con.print(
                    f"  ops[:{step.ops}]: {step.supported}/{step.ops} supported -> {verdict}",
                    markup=False,
                )

            index = bisection.bisect(tgt, manifest, device, show)
            if index is None:
                con.print(f"all {total} ops map on {device}", markup=False)
                emit({**doc, "maps": True, "first_unmapped": None})
                return
            found = bisection.culprit(manifest, index, device, graph, target)
            con.print(str(found), markup=False)
            emit({**doc, "maps": False, "first_unmapped": dataclasses.asdict(found)})
        raise typer.Exit(3)


def _compile(
    model: str, weights: Path | None, target: str, skip: list[str], tmp: Path
) -> tuple[mdla_runtime.Manifest, Graph]:
    with steps() as s:
        with s.step(f"importing {model}"):
            source = pipeline.load_source(model, str(weights) if weights else None)
        with s.step("legalizing"):
            device_graph = pipeline.legalize_graph(source.graph, target, skip_rules=skip)
        calib = pipeline.calibration_inputs("random", source, 2)
        config = mdla_quant.QuantConfig(target=target)
        tick = s.bar("calibrating (random)", total=len(calib))
        compiled = pipeline.quantize_graph(
            source, device_graph, calib, config, progress=lambda n, _s: tick(n)
        )
    return pipeline.save_manifest(compiled, tmp / "model.mdla"), device_graph
