"""A probe matrix as a target data file in the schema of `mdla_legalize/targets/mdla3.5.toml`.

Facts come from the probe variants (model.ROLES); "maps" means the model compiled
(createForDevices + finish) and an execution ran on that device alone:

    supported          the base variant maps
    per_channel        the per-channel variant (and the classifier-sized one, if probed) maps
    padding            symmetric explicit pads map -> "explicit"; else "same-valid"
    broadcast          the broadcast variant maps
    shared_scale       the unequal-scales variant does not map
    keeps_input_scale  the rescaled-output variant does not map
    fixed_output_*     the free-output-scale variant does not map: the base variant's output

Only `mdla_ir.OpKind` names can be entries (the schema's keys); other probed operations and the
ones the manifest cannot carry are listed as comments. Written without mdla_legalize (this
package does not import it); `mdla_legalize.load_target(path)` reads the result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from mdla_ir.ops import OpKind
from mdla_runtime.probe.model import Cell, Matrix, ProbeResult

WINDOWED = ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D")


def _s(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def maps(cell: Cell | None) -> bool:
    return bool(cell is not None and cell.compiles and cell.runs)


def _role(results: list[ProbeResult], role: str, device: str) -> bool | None:
    """Whether some probe of `role` maps on `device`; None when no such probe ran."""
    cells = [r.cells.get(device) for r in results if r.probe.role == role and not r.skipped]
    return None if not cells else any(maps(c) for c in cells)


def _why_not(results: list[ProbeResult], device: str) -> str:
    for r in results:
        cell = r.cells.get(device)
        if r.probe.role == "base" and cell is not None:
            report = {True: "true", False: "false", None: "no answer"}[cell.supported]
            return (
                f"{r.probe.op} does not map on {device}: getSupportedOperationsForDevices "
                f"{report}, createForDevices/finish/run {cell.error or 'failed'}"
            )
    return f"{results[0].probe.op} does not map on {device}"


def _same_verdict(results: list[ProbeResult], device: str) -> str:
    for r in results:
        cell = r.cells.get(device)
        if r.probe.role == "same_form" and cell is not None and cell.runs:
            return f"; implicit SAME pads as {' = '.join(cell.matches) or 'none of the readings'}"
    return ""


def op_entry(op: str, results: list[ProbeResult], device: str, source: str) -> list[str]:
    """The TOML lines of `[op.<device>.<op>]` from the probes of `op` (empty: nothing known)."""
    base = _role(results, "base", device)
    if base is None:
        return []
    lines = [f"[op.{device}.{op}]"]
    if not base:
        lines += ["supported = false", f"reason = {_s(_why_not(results, device))}"]
        return [*lines, f"source = {_s(source)}", ""]
    extra = ""
    pc = _role(results, "per_channel", device)
    if pc is not None:
        big = _role(results, "size_per_channel", device)
        lines.append(f"per_channel = {str(bool(pc and big is not False)).lower()}")
        if pc and big is False:
            extra += "; per-channel maps small but not classifier-sized (1280->1000)"
    if op in WINDOWED:
        sym = _role(results, "pad_symmetric", device)
        lines.append(f'padding = "{"explicit" if sym else "same-valid"}"')
        if not sym and not _role(results, "pad_same", device):
            extra += "; only VALID padding maps"
        extra += _same_verdict(results, device)
    if _role(results, "broadcast", device):
        lines.append("broadcast = true")
    if _role(results, "unequal_scales", device) is False:
        lines.append("shared_scale = true")
    if _role(results, "rescale", device) is False:
        lines.append("keeps_input_scale = true")
    if _role(results, "free_output", device) is False:
        q = next(r for r in results if r.probe.role == "base").probe.build().graph
        out = q.tensors[q.outputs[0]].quant
        if out is not None:
            lines.append(f"fixed_output_scale = {out.scale[0]!r}")
            lines.append(f"fixed_output_zero_point = {out.zero_point[0]}")
    return [*lines, f"source = {_s(source + extra)}", ""]


def _comments(matrix: Matrix) -> Iterator[str]:
    seen: set[str] = set()
    for r in matrix.results:
        if r.probe.op in seen:
            continue
        seen.add(r.probe.op)
        if r.skipped:
            yield f"#   {r.probe.op}: {r.skipped}"
        elif r.probe.op not in OpKind.__members__:
            where = [d for d in matrix.devices if maps(r.cells.get(d))]
            yield f"#   {r.probe.op}: maps on {', '.join(where) or 'no device'} (not an OpKind)"


def render(matrix: Matrix, name: str, description: str = "") -> str:
    """The target data file of `matrix` as TOML text."""
    lines = [
        f"# Probed by `workbench probe --on {matrix.target}` on {matrix.date}, Neuron "
        f"{matrix.version}: int8 single-op models, one per op and variant.",
        "# Not target entries (no mdla_ir.OpKind of that name, or not expressible):",
        *_comments(matrix),
        "",
        f"name = {_s(name)}",
        f"description = {_s(description or f'probed on {matrix.target}')}",
        "",
    ]
    for dev in matrix.devices:
        lines += [
            f"[device.{dev}]",
            "max_rank = 4",
            "max_dim = 65535",
            'dtypes = ["int8"]',
            f"source = {_s(matrix.source(dev) + '; only int8 probed; rank/dim limits not probed')}",
            "",
        ]
    ops = list(dict.fromkeys(r.probe.op for r in matrix.results))
    for dev in matrix.devices:
        for op in ops:
            if op in OpKind.__members__:
                lines += op_entry(op, matrix.by_op(op), dev, matrix.source(dev))
    return "\n".join(lines)


def write_target(matrix: Matrix, path: Path, name: str = "", description: str = "") -> Path:
    path.write_text(render(matrix, name or path.stem, description), encoding="utf-8")
    return path
