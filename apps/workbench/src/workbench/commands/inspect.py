"""`workbench inspect`: what a `.mdla` holds, without running it (torch-free)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

import mdla_runtime
from mdla_ir.schema import op_name
from mdla_runtime.format import container as fmt
from workbench.commands.options import Debug, console
from workbench.errors import reported
from workbench.output import dumps

EPILOG = """Examples:

  workbench inspect lite0.mdla

  workbench inspect lite0.mdla --json | jq .quant
"""


def _io(manifest: mdla_runtime.Manifest, spec: mdla_runtime.IOSpec) -> dict[str, Any]:
    operand = manifest.operands[spec.operand]
    return {
        "name": spec.name,
        "type": fmt.TYPE_NAMES.get(operand.type, str(operand.type)),
        "shape": list(spec.shape),
        "layout": spec.layout,
        "model_shape": list(spec.model_shape),
        "scale": spec.scale,
        "zero_point": spec.zero_point,
    }


def describe(path: Path) -> dict[str, Any]:
    """Everything `inspect` prints, as plain data (the `--json` output)."""
    manifest = mdla_runtime.load(path)
    blob = path.read_bytes()
    header_length = int.from_bytes(blob[12:20], "little")
    prov = manifest.provenance
    quant = prov.quant
    const_bytes = sum(len(o.data.tobytes()) for o in manifest.operands if o.data is not None)
    return {
        "file": str(path),
        "name": manifest.name,
        "format": int.from_bytes(blob[8:12], "little"),
        "bytes": {"file": len(blob), "header": header_length, "data": manifest.data_size},
        "constants_bytes": const_bytes,
        "operands": len(manifest.operands),
        "operations": len(manifest.operations),
        "ops": dict(Counter(op_name(op.code) for op in manifest.operations).most_common()),
        "partitions": [
            {"device": p.device, "operations": len(p.operations)} for p in manifest.partitions
        ],
        "inputs": [_io(manifest, s) for s in manifest.inputs],
        "outputs": [_io(manifest, s) for s in manifest.outputs],
        "compiled_from": {
            "spec": prov.spec,
            "module": prov.module,
            "source_hash": prov.source_hash,
            "target": prov.target,
            "device": prov.device,
        },
        "rounding": manifest.rounding,
        "quant": None
        if quant is None
        else {k: getattr(quant, k) for k in quant.__dataclass_fields__},
        "calibration_samples": prov.calibration_samples,
        "rules": dict(prov.rules),
        "labels": {"count": len(prov.labels), "first": list(prov.labels[:5])},
        "preprocess": None
        if prov.preprocess is None
        else {
            "mode": prov.preprocess.mode,
            "size": list(prov.preprocess.size),
            "mean": list(prov.preprocess.mean),
            "std": list(prov.preprocess.std),
            "channels": prov.preprocess.channels,
            "resize": prov.preprocess.resize,
        },
        "content_hash": manifest.model.get("content_hash", ""),
    }


def _short(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.4g}" for v in values) + "]"


def inspect_command(
    model: Annotated[Path, typer.Argument(help="The .mdla file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    debug: Debug = False,
) -> None:
    """Show what a compiled .mdla holds: its input/output contract (shapes, layouts, int8
    scales), op counts, the quantization config and calibration, the legalize rules that fired,
    labels, preprocessing, sizes and where it was compiled from. Reads the file through the
    same validating reader as `run`; needs no torch and runs nothing."""
    with reported(debug):
        info = describe(model)
    if as_json:
        typer.echo(dumps(info))
        return
    con = console()
    t = Table(title=f"{info['name']}  ({model})", show_header=False, box=None)
    sizes = info["bytes"]
    t.add_row(
        "size",
        f"{sizes['file'] / 1024:.1f} KiB (header {sizes['header'] / 1024:.1f} KiB, "
        f"data {sizes['data'] / 1024:.1f} KiB), format {info['format']}",
    )
    t.add_row(
        "ops", f"{info['operations']} ({', '.join(f'{k} {v}' for k, v in info['ops'].items())})"
    )
    parts = info["partitions"]
    t.add_row("partitions", ", ".join(f"{p['device']} ({p['operations']} ops)" for p in parts))
    for key in ("inputs", "outputs"):
        for io in info[key]:
            t.add_row(
                key[:-1],
                f"{io['name']}: {io['type']} {io['shape']} {io['layout']} (model "
                f"{io['model_shape']}), scale {io['scale']:.6g}, zero point {io['zero_point']}",
            )
    src = info["compiled_from"]
    t.add_row(
        "compiled from",
        f"{src['spec'] or '?'} ({src['module'] or '?'}) for {src['target']}/{src['device']}",
    )
    q = info["quant"]
    if q is not None:
        extras = [k for k in ("bias_correction", "equalize") if q.get(k)]
        extras += [f"adaround {q['adaround']}"] if q.get("adaround") else []
        t.add_row(
            "quantization",
            f"{q['method']}"
            + (f" p{q['percentile']:g}" if q["method"] == "percentile" else "")
            + f", {info['rounding']} rounding, {info['calibration_samples']} calibration inputs"
            + (f", {', '.join(extras)}" if extras else ""),
        )
    else:
        t.add_row("quantization", f"{info['rounding']} rounding (no quantization record)")
    rules = info["rules"]
    t.add_row("rules fired", ", ".join(f"{k} x{v}" for k, v in rules.items()) or "none")
    labels = info["labels"]
    t.add_row(
        "labels",
        f"{labels['count']} ({', '.join(labels['first'])}{', ...' if labels['count'] > 5 else ''})"
        if labels["count"]
        else "none",
    )
    pre = info["preprocess"]
    t.add_row(
        "preprocess",
        "none (raw tensors in)"
        if pre is None
        else f"{pre['mode']} {pre['size']}, mean {_short(pre['mean'])}, std {_short(pre['std'])}"
        + ("" if pre["channels"] == "rgb" else f", {pre['channels']}")
        + ("" if pre["resize"] is None else f", resize {pre['resize'] or 'whole photo, no crop'}"),
    )
    con.print(t)
