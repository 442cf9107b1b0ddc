"""A probe matrix as a target data file in the schema of `mdla_target/targets/mdla3.5.toml`.

Facts come from the probe variants (model.ROLES); "maps" means the model compiled
(createForDevices + finish) and an execution ran on that device alone:

    supported          the base variant maps
    per_channel        the per-channel variant (and the classifier-sized one, if probed) maps
    padding            symmetric explicit pads map -> "explicit"; else "same-valid"
    broadcast          the broadcast variant maps
    shared_scale       the unequal-scales variant does not map
    keeps_input_scale  the rescaled-output variant does not map
    fixed_output_*     the free-output-scale variant does not map: the base variant's output
    dilation           every dilation variant maps, bit-exact (`dilation_source`: probed)
    int16              every 16x8 variant maps, bit-exact (`int16_source`: probed)
    QUANTIZE's int16   some 16x8 variant maps: each has a QUANTIZE int8 -> int16 and one back
                       (its int8 <-> int16 form; its float <-> int8 form is not probed)
    [arith] accumulator  the reference ("wrap" or "saturate") the accumulator probe's output
                       equals on the first device that ran it (else "saturate", assumed)

Only `mdla_ir.OpKind` names can be entries (the schema's keys); other probed operations and the
ones the manifest cannot carry are listed as comments. The matrix becomes a `mdla_target.Target`
record, written by `mdla_target.write_target`; `mdla_target.load_target(path)` reads it back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path

import mdla_target
from mdla_ir.ops import OpKind
from mdla_target import DeviceSpec, OpSpec, Target, render_target
from workbench.probe.model import Cell, Matrix, ProbeResult

WINDOWED = ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D")
DTYPES = ("int8",)  # the probe builds int8 models only


def maps(cell: Cell | None) -> bool:
    return bool(cell is not None and cell.compiles and cell.runs)


def _role(results: list[ProbeResult], role: str, device: str) -> bool | None:
    """Whether some probe of `role` maps on `device`; None when no such probe ran."""
    cells = [r.cells.get(device) for r in results if r.probe.role == role and not r.skipped]
    return None if not cells else any(maps(c) for c in cells)


def _every(results: list[ProbeResult], role: str, device: str) -> bool | None:
    """Whether every probe of `role` maps on `device` bit-exact (where it has a reference)."""
    cells = [r.cells.get(device) for r in results if r.probe.role == role and not r.skipped]
    return (
        None
        if not cells
        else all(c is not None and maps(c) and c.exact is not False for c in cells)
    )


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


def op_entry(op: str, results: list[ProbeResult], device: str, source: str) -> OpSpec | None:
    """The target entry of `op` on `device` from its probes (None: nothing known)."""
    base = _role(results, "base", device)
    if base is None:
        return None
    kind = OpKind[op]
    if not base:
        return OpSpec(kind, device, False, source, reason=_why_not(results, device), dtypes=DTYPES)
    extra = ""
    per_channel = False
    pc = _role(results, "per_channel", device)
    if pc is not None:
        big = _role(results, "size_per_channel", device)
        per_channel = bool(pc and big is not False)
        if pc and big is False:
            extra += "; per-channel maps small but not classifier-sized (1280->1000)"
    padding = "any"
    if op in WINDOWED:
        sym = _role(results, "pad_symmetric", device)
        padding = "explicit" if sym else "same-valid"
        if not sym and not _role(results, "pad_same", device):
            extra += "; only VALID padding maps"
        extra += _same_verdict(results, device)
    dilated = _every(results, "dilation", device)
    dilation_source = (
        ""
        if dilated is None
        else f"{source}: dilated variants {'map bit-exact' if dilated else 'fail or differ'}"
    )
    wide = _every(results, "int16", device)
    int16_source = (
        ""
        if wide is None
        else f"{source}: 16x8 variants {'map bit-exact' if wide else 'fail or differ'}"
    )
    fixed = None
    if _role(results, "free_output", device) is False:
        q = next(r for r in results if r.probe.role == "base").probe.build().graph
        out = q.tensors[q.outputs[0]].quant
        if out is not None:
            fixed = (float(out.scale[0]), int(out.zero_point[0]))
    return OpSpec(
        kind,
        device,
        True,
        source + extra,
        dtypes=DTYPES,
        per_channel=per_channel,
        padding=padding,
        broadcast=bool(_role(results, "broadcast", device)),
        shared_scale=_role(results, "unequal_scales", device) is False,
        keeps_input_scale=_role(results, "rescale", device) is False,
        fixed_output=fixed,
        dilation=dilated is not False,
        dilation_source=dilation_source,
        int16=bool(wide),
        int16_source=int16_source,
    )


def _comments(matrix: Matrix) -> Iterator[str]:
    seen: set[str] = set()
    for r in matrix.results:
        if r.probe.op in seen:
            continue
        seen.add(r.probe.op)
        if r.skipped:
            yield f"  {r.probe.op}: {r.skipped}"
        elif r.probe.op not in OpKind.__members__:
            where = [d for d in matrix.devices if maps(r.cells.get(d))]
            yield f"  {r.probe.op}: maps on {', '.join(where) or 'no device'} (not an OpKind)"


def to_target(matrix: Matrix, name: str, description: str = "") -> Target:
    """The `Target` record of `matrix` (the entries `mdla_target.load_target` would read)."""
    ops = list(
        dict.fromkeys(r.probe.op for r in matrix.results if r.probe.op in OpKind.__members__)
    )
    devices = {}
    for dev in matrix.devices:
        source = matrix.source(dev)
        entries = ((op, op_entry(op, matrix.by_op(op), dev, source)) for op in ops)
        specs = {OpKind[op]: spec for op, spec in entries if spec is not None}
        requant = requantize_entry(matrix.results, dev, source, specs.get(OpKind.QUANTIZE))
        if requant is not None:
            specs[OpKind.QUANTIZE] = requant
        devices[dev] = DeviceSpec(
            dev, 4, 65535, DTYPES, source + "; only int8 probed; rank/dim limits not probed", specs
        )
    accumulator, acc_source = accumulator_fact(matrix)
    return Target(
        name,
        description or f"probed on {matrix.target}",
        devices,
        accumulator=accumulator,
        accumulator_source=acc_source,
    )


def requantize_entry(
    results: Sequence[ProbeResult], device: str, source: str, old: OpSpec | None
) -> OpSpec | None:
    """QUANTIZE's int16 fact from the 16x8 probes (None: none ran): an int16 probe that ran on
    `device` alone ran its two QUANTIZEs (int8 -> int16, int16 -> int8) there."""
    cells = [r.cells.get(device) for r in results if r.probe.role == "int16" and not r.skipped]
    if not cells:
        return old
    ran = sum(maps(c) for c in cells)
    why = (
        f"{ran} of {len(cells)} 16x8 variants ran on {device} alone, each with a QUANTIZE "
        "int8 -> int16 and one back"
        if ran
        else f"no 16x8 variant ran on {device} (its QUANTIZEs or its op do not map)"
    )
    base = old or OpSpec(
        OpKind.QUANTIZE,
        device,
        False,
        source,
        reason="the float <-> int8 form is not probed (the manifest's I/O is int8)",
        dtypes=DTYPES,
    )
    return dataclasses.replace(base, int16=ran > 0, int16_source=f"{source}: {why}")


def accumulator_fact(matrix: Matrix) -> tuple[str, str]:
    """(accumulator, source) from the "accumulator" probe: the reference the output equals on
    the first device (in matrix order) where it ran; ("saturate", "assumed: ...") otherwise."""
    for dev in matrix.devices:
        for r in matrix.results:
            cell = r.cells.get(dev)
            if r.probe.role != "accumulator" or cell is None or not cell.runs:
                continue
            found = [m for m in cell.matches if m in mdla_target.ACCUMULATORS]
            if len(found) == 1:
                (fact,) = found
                return fact, f"{matrix.source(dev)}: {r.probe.key} equals the {fact} reference"
    return "saturate", "assumed: the accumulator probe did not settle it on any device"


def render(matrix: Matrix, name: str, description: str = "") -> str:
    """The target data file of `matrix` as TOML text."""
    return render_target(to_target(matrix, name, description), _header(matrix))


def _header(matrix: Matrix) -> list[str]:
    return [
        f"Probed by `workbench probe --on {matrix.target}` on {matrix.date}, Neuron "
        f"{matrix.version}: int8 single-op models, one per op and variant.",
        "Not target entries (no mdla_ir.OpKind of that name, or not expressible):",
        *_comments(matrix),
    ]


def write_target(matrix: Matrix, path: Path, name: str = "", description: str = "") -> Path:
    """Write `matrix` as a target data file through `mdla_target.write_target` (atomic)."""
    target = to_target(matrix, name or path.stem, description)
    return mdla_target.write_target(target, path, _header(matrix))
