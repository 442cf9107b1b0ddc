"""`write_target`: a `Target` record as a target data file, the inverse of `load_target`.

    write_target(target, Path("probed.toml"), comments=["probed on ssh://phone ..."])
    load_target("probed.toml") == target       # every field round-trips (tests/target)

Only keys that differ from `load_target`'s defaults are written, in the order the shipped files
use; an op's `dtypes` are written when they differ from its device's. The file is written to a
temporary name in the same directory and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from mdla_target.errors import TargetDataError
from mdla_target.target import DeviceSpec, OpSpec, Target


def _s(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _strings(values: Iterable[str]) -> str:
    return "[" + ", ".join(_s(v) for v in values) + "]"


def _device_lines(dev: DeviceSpec) -> list[str]:
    return [
        f"[device.{dev.name}]",
        f"max_rank = {dev.max_rank}",
        f"max_dim = {dev.max_dim}",
        f"dtypes = {_strings(dev.dtypes)}",
        f"source = {_s(dev.source)}",
        "",
    ]


def _op_lines(spec: OpSpec, dev: DeviceSpec) -> list[str]:
    lines = [f"[op.{dev.name}.{spec.kind.name}]"]
    if not spec.supported:
        lines.append("supported = false")
    if spec.reason:
        lines.append(f"reason = {_s(spec.reason)}")
    if spec.dtypes != dev.dtypes:
        lines.append(f"dtypes = {_strings(spec.dtypes)}")
    flags = ("per_channel", "broadcast", "shared_scale", "keeps_input_scale")
    lines += [f"{flag} = true" for flag in flags if getattr(spec, flag)]
    if spec.padding != "any":
        lines.append(f"padding = {_s(spec.padding)}")
    if spec.fixed_output is not None:
        lines.append(f"fixed_output_scale = {float(spec.fixed_output[0])!r}")
        lines.append(f"fixed_output_zero_point = {int(spec.fixed_output[1])}")
    if not spec.dilation:
        lines.append("dilation = false")
    if spec.dilation_source:
        lines.append(f"dilation_source = {_s(spec.dilation_source)}")
    if spec.int16:
        lines.append("int16 = true")
    if spec.int16_source:
        lines.append(f"int16_source = {_s(spec.int16_source)}")
    return [*lines, f"source = {_s(spec.source)}", ""]


def render_target(target: Target, comments: Iterable[str] = ()) -> str:
    """The TOML text of `target`, with `comments` as `#` lines at the top."""
    lines = [f"# {line}" if line else "#" for c in comments for line in c.splitlines() or [""]]
    lines += ["", f"name = {_s(target.name)}", f"description = {_s(target.description)}"]
    if target.socs:
        soc = _s(target.socs[0]) if len(target.socs) == 1 else _strings(target.socs)
        lines.append(f"soc = {soc}")
    lines.append("")
    lines += [
        "[arith]",
        f"accumulator = {_s(target.accumulator)}",
        f"source = {_s(target.accumulator_source)}",
        "",
    ]
    for dev in target.devices.values():
        lines += _device_lines(dev)
    for dev in target.devices.values():
        for spec in dev.ops.values():
            if spec.device != dev.name:
                raise TargetDataError(
                    f"target `{target.name}`: op {spec.kind.name} filed under device "
                    f"`{dev.name}` says device `{spec.device}`",
                    [spec.kind.name],
                )
            lines += _op_lines(spec, dev)
    return "\n".join(lines)


def write_target(target: Target, path: Path, comments: Iterable[str] = ()) -> Path:
    """Write `target` to `path` atomically (temp file + rename in the same directory)."""
    text = render_target(target, comments)
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:  # a full disk names the file written, not the temporary one
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path
