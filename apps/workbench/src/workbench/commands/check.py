"""`workbench check`: which ops map on the device, why not, and the fix.

The exit code answers "does this model map?" with the predicate `workbench compile` uses: 0
when every op maps after legalization (the imported graph's per-op table says which rule makes
each op map), 3 when some op cannot (one row per op: the op, the reason, what to do), 1 for a
model that cannot be read. Notes (the imported graph's NCHW layout) never change it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

import mdla_legalize
import mdla_runtime
from mdla_ir import Graph, UnsupportedError
from mdla_ir.ops import OpKind
from workbench import pipeline
from workbench.commands.options import Debug, Device, On, TargetName, Weights, console
from workbench.errors import UNSUPPORTED, reported

EPILOG = """Examples:

  workbench check efficientnet_b0                 # the imported graph: 190 ops, each op's fix

  workbench check efficientnet_b0 --legalized     # after the rewrite rules: all map

  workbench check convnext_tiny                   # LayerNorm: exit 3, one row per op

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
    device's getSupportedOperationsForDevices via --on).

    Exit 0 when every op maps after the rules `workbench compile` applies (those it applies
    are named under fix), 3 when some op cannot map (one row per op: reason and what to do:
    e.g. LayerNorm and attention need RSQRT/EXP, which the MDLA lacks), 1 for a model that
    does not load. Mapped by exact rewrites: grouped convs (block-diagonal, G x the MACs),
    chunk/split/slices/channel shuffles (selection convs), Conv1d and 1-D pools, flatten ->
    Linear, ceil-mode pools whose end padding is the device's SAME padding.
    """
    with reported(debug):
        manifest = pipeline.manifest_or_none(model)
        if manifest is not None:
            ok = _check_manifest(manifest, mdla_runtime.open_target(on), device)
        else:
            ok = _check_model(model, weights, target, device, legalized)
        if not ok:
            raise typer.Exit(UNSUPPORTED)


def _check_model(
    model: str, weights: Path | None, target: str, device: str, legalized: bool
) -> bool:
    con = console()
    tgt = mdla_legalize.load_target(target)
    try:
        source = pipeline.load_source(model, str(weights) if weights else None)
    except UnsupportedError as exc:
        _rows(
            f"{pipeline.model_name(model)}: {len(exc.items)} construct(s) do not import", exc.items
        )
        _fail(f"`{model}` does not import: {len(exc.items)} unsupported construct(s), listed above")
        return False
    try:
        device_graph = pipeline.legalize_graph(source.graph, target, device)
    except mdla_legalize.UnknownRuleError:
        raise
    except mdla_legalize.LegalizeError as exc:
        if not legalized:
            con.print(str(mdla_legalize.explain(source.graph, tgt, device)), markup=False)
        _rows(
            f"after legalization, {len(exc.items)} op(s) do not map on {tgt.name}/{device}",
            exc.items,
        )
        _fail(f"`{model}` does not map on {device}: {len(exc.items)} op(s), listed above")
        return False
    report = mdla_legalize.explain(device_graph if legalized else source.graph, tgt, device)
    con.print(str(report), markup=False)
    fired = device_graph.provenance.rule_counts
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


def _fail(message: str) -> None:
    sys.stderr.write(f"error: {message}\n")


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
