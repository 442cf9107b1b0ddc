"""`workbench inspect`: what a `.mdla` holds, without running it (torch-free)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

import mdla_runtime
from mdla_compile.kinds import of_manifest
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
        "outputs": [
            _io(manifest, s) | {"kind": kind}
            for s, kind in zip(manifest.outputs, of_manifest(manifest), strict=True)
        ],
        "output_kinds_recorded": bool(prov.output_kinds),
        "compiled_from": {
            "spec": prov.spec,
            "module": prov.module,
            "source_hash": prov.source_hash,
            "import_path": prov.import_path or None,
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


IMPORTERS = {"export": "torch.export", "fx": "torch.fx"}  # model.import_path


def _int16_rows(t: Table, q: dict[str, Any]) -> None:
    """The int16 activations, the request that chose them, and why each one: its measured gain
    (a name without a gain was named, not chosen)."""
    names, gains = list(q["a16"]), list(q.get("a16_gain_db") or ())
    how = f", by --a16 {q['a16_mode']}" if q.get("a16_mode") else ""
    if not gains:
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        _row(t, "int16", f"{len(names)} activations (16x8){how}: {shown}")
        return
    _row(t, "int16", f"{len(names)} activations (16x8){how}, each for its gain:")
    for name, gain in zip(names, gains, strict=True):
        _row(t, "", f"{name}  {gain:+.2f} dB output SQNR")


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
    t = Table(title=Text(printable(f"{info['name']}  ({model})")), show_header=False, box=None)
    sizes = info["bytes"]
    _row(
        t,
        "size",
        f"{sizes['file'] / 1024:.1f} KiB (header {sizes['header'] / 1024:.1f} KiB, "
        f"data {sizes['data'] / 1024:.1f} KiB), format {info['format']}",
    )
    _row(
        t, "ops", f"{info['operations']} ({', '.join(f'{k} {v}' for k, v in info['ops'].items())})"
    )
    parts = info["partitions"]
    _row(t, "partitions", ", ".join(f"{p['device']} ({p['operations']} ops)" for p in parts))
    guessed = "" if info["output_kinds_recorded"] else " (guessed: not recorded in this file)"
    for key in ("inputs", "outputs"):
        for io in info[key]:
            kind = f", kind {io['kind']}{guessed}" if "kind" in io else ""
            _row(
                t,
                key[:-1],
                f"{io['name']}: {io['type']} {io['shape']} {io['layout']} (model "
                f"{io['model_shape']}), scale {io['scale']:.6g}, zero point {io['zero_point']}"
                f"{kind}",
            )
    src = info["compiled_from"]
    _row(
        t,
        "compiled from",
        f"{src['spec'] or '?'} ({src['module'] or '?'}) for {src['target']}/{src['device']}"
        + (f", imported via {IMPORTERS[src['import_path']]}" if src["import_path"] else ""),
    )
    q = info["quant"]
    if q is not None:
        extras = [k for k in ("bias_correction", "equalize") if q.get(k)]
        extras += [f"adaround {q['adaround']}"] if q.get("adaround") else []
        _row(
            t,
            "quantization",
            f"{q['method']}"
            + (f" p{q['percentile']:g}" if q["method"] == "percentile" else "")
            + f", {info['rounding']} rounding, {info['calibration_samples']} calibration inputs"
            + (f", {', '.join(extras)}" if extras else ""),
        )
        if q.get("a16"):
            _int16_rows(t, q)
    else:
        _row(t, "quantization", f"{info['rounding']} rounding (no quantization record)")
    rules = info["rules"]
    _row(t, "rules fired", ", ".join(f"{k} x{v}" for k, v in rules.items()) or "none")
    labels = info["labels"]
    _row(
        t,
        "labels",
        f"{labels['count']} ({', '.join(labels['first'])}{', ...' if labels['count'] > 5 else ''})"
        if labels["count"]
        else "none",
    )
    pre = info["preprocess"]
    _row(
        t,
        "preprocess",
        "none (raw tensors in)"
        if pre is None
        else f"{pre['mode']} {pre['size']}, mean {_short(pre['mean'])}, std {_short(pre['std'])}"
        + ("" if pre["channels"] == "rgb" else f", {pre['channels']}")
        + ("" if pre["resize"] is None else f", resize {pre['resize'] or 'whole photo, no crop'}"),
    )
    con.print(t)


# Control characters (C0, DEL, C1) as \xNN: the table shows text from the file, which must not
# reach the terminal as escape sequences (a title, a cleared screen) nor as rich markup.
CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}


def printable(text: str) -> str:
    """`text` with every control character escaped."""
    return text.translate(CONTROLS)


def _row(t: Table, key: str, value: str) -> None:
    t.add_row(key, Text(printable(value)))
