"""`--cpu`: explicit CPU partitions (issue 17), shared by `check` and `compile`.

    placement = place_graph(source.graph, "mdla3.5", "mtk-mdla", ["LAYER_NORM,GELU"])
    print(placement)            # per op: device, partition, why; partitions; device switches

A `--cpu` token that selects nothing is a usage error (exit 2); an op left on the NPU that does
not map is exit 3, as without `--cpu` (no automatic fallback); an op that maps but was named is
placed on the CPU with a warning.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
import typer

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_ir import Graph
from mdla_legalize import Placement
from workbench import pipeline
from workbench.errors import USAGE, WorkbenchError

Cpu = Annotated[
    list[str] | None,
    typer.Option(
        "--cpu",
        help="Run these ops on the phone's CPU, the rest on the NPU: op kinds "
        "(LAYER_NORM,GELU) or fnmatch patterns over op names ('features.7.*'); "
        "comma-separated, repeatable. Never automatic: an op that does not map and is not "
        "named here is still an error.",
    ),
]


def place_graph(
    graph: Graph, target: str, device: str, cpu: Sequence[str], skip_rules: Sequence[str] = ()
) -> Placement:
    """Legalize and place `graph` (mdla_legalize.place); a bad `--cpu` is a usage error."""
    tgt = mdla_legalize.load_target(target)
    try:
        return mdla_legalize.place(graph, tgt, device, cpu, skip_rules)
    except (mdla_legalize.PlacementSpecError, mdla_legalize.UnknownRuleError) as exc:
        raise WorkbenchError(str(exc), USAGE) from None


def report(placement: Placement) -> None:
    """The placement table on stdout, its warnings on stderr."""
    typer.echo(str(placement))
    for line in placement.warnings:
        sys.stderr.write(line + "\n")


def device_graph(
    graph: Graph, target: str, device: str, cpu: Sequence[str] | None, skip_rules: Sequence[str]
) -> Graph:
    """`compile`'s device graph: legalized as always, or with --cpu placed (table printed)."""
    if not cpu:
        return pipeline.legalize_graph(graph, target, device, skip_rules)
    placed = place_graph(graph, target, device, cpu, skip_rules)
    report(placed)
    return placed.graph


def output_cosine(compiled: pipeline.Compiled) -> float:
    """Cosine of the int8 reference's first output against the float graph's, on the first
    calibration input (what `compile --cpu` reports for the partitioned model)."""
    sample = compiled.calibration[0]
    want: Any = mdla_ir.run_float(compiled.device_graph, sample)[0]
    got: Any = mdla_quant.run_int8(compiled.qgraph, sample)[0]
    a, b = np.ravel(want).astype(np.float64), np.ravel(got).astype(np.float64)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b / norm) if norm > 0 else float(np.array_equal(a, b))
