"""`workbench check`: which ops map on the device, why not, and the fix; exit 3 if any does not."""

from __future__ import annotations

from typing import Annotated

import typer

import mdla_legalize
import mdla_runtime
from mdla_ir.ops import OpKind
from workbench import pipeline
from workbench.commands.options import Debug, Device, On, TargetName, Weights, console
from workbench.errors import UNSUPPORTED, reported

EPILOG = """Examples:

  workbench check efficientnet_b0                 # the imported graph: 190 ops, what fails

  workbench check efficientnet_b0 --legalized     # after the rewrite rules: all map

  workbench check lite0.mdla --on emu             # the device's own support query
"""


def op_kind_name(code: int) -> str:
    try:
        return OpKind(code).name
    except ValueError:
        return f"op {code}"


def check_command(
    model: Annotated[str, typer.Argument(help="A model spec, or a compiled OUT.mdla.")],
    device: Device = "mtk-mdla",
    target: TargetName = "mdla3.5",
    legalized: Annotated[
        bool, typer.Option("--legalized", help="Check the graph after legalization.")
    ] = False,
    weights: Weights = None,
    on: On = "emu",
    debug: Debug = False,
) -> None:
    """Print the support report of MODEL (per op: maps? reason, fix) or of OUT.mdla (the
    device's getSupportedOperationsForDevices via --on). Exits 3 if anything is unsupported.
    """
    with reported(debug):
        con = console()
        manifest = pipeline.manifest_or_none(model)
        if manifest is not None:
            ok = _check_manifest(manifest, mdla_runtime.open_target(on), device)
        else:
            source = pipeline.load_source(model, str(weights) if weights else None)
            graph = source.graph
            if legalized:
                graph = pipeline.legalize_graph(graph, target, device)
            report = mdla_legalize.explain(graph, mdla_legalize.load_target(target), device)
            con.print(str(report), markup=False)
            ok = report.all_supported
            if not ok:
                con.print(
                    f"{len(report.unsupported)} op(s) do not map as imported; "
                    "`workbench compile` applies the rules named under fix",
                    markup=False,
                )
        if not ok:
            raise typer.Exit(UNSUPPORTED)


def _check_manifest(
    manifest: mdla_runtime.Manifest, target: mdla_runtime.Target, device: str
) -> bool:
    con = console()
    flags = target.supported(manifest, [device])[device]
    con.print(
        f"{manifest.name} ({manifest.path}) on {target.name}/{device}: "
        f"{sum(flags)}/{len(flags)} ops supported",
        markup=False,
    )
    for i, (op, ok) in enumerate(zip(manifest.operations, flags, strict=True)):
        con.print(f"  {i:>4}  {op.name:<40} {op_kind_name(op.code):<22} {'yes' if ok else 'NO'}")
    if not all(flags):
        con.print(
            "support is all-or-nothing on the MDLA: `workbench bisect` finds the first op "
            "that does not map",
            markup=False,
        )
    return all(flags)
