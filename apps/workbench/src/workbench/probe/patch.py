"""Rewrite the operation header of a saved `.mdla` for probes that `save(qgraph)` cannot write.

`save()` lowers only `mdla_ir.OpKind` ops and only in the explicit-padding form. Two probe needs
fall outside that, and both touch the msgpack header alone (the data section, and so every
constant's slice, stays byte for byte the same):

    implicit(op)            CONV_2D / DEPTHWISE_CONV_2D / pools: pad l r t b -> one padding code
    recode(code, inputs)    another Neuron operation code over the same tensors (POW, MAXIMUM...)

The result is re-read with `mdla_runtime.load`, so a patch that breaks the format is a
`ManifestError` here, never a malformed file sent to a device.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack  # type: ignore[import-untyped]

from mdla_runtime.format import container as fmt
from mdla_runtime.format.manifest import load

Header = dict[str, Any]
HeaderPatch = Callable[[Header], None]
PADDING_SAME, PADDING_VALID = 1, 2
_FIRST_PAD = {3: 3, 4: 3, 1: 1, 17: 1}  # operation code -> index of pad_left among its inputs


def patch_file(path: Path, patch: HeaderPatch) -> Path:
    """Apply `patch` to the header of the manifest at `path` in place; validate the result."""
    buf = path.read_bytes()
    hlen = int.from_bytes(buf[12:20], "little")
    data = buf[fmt.align(fmt.PREAMBLE + hlen) :]
    header: Header = msgpack.unpackb(buf[fmt.PREAMBLE : fmt.PREAMBLE + hlen], raw=False)
    patch(header)
    header["model"]["probe_patched"] = True
    packed: bytes = msgpack.packb(header, use_bin_type=True)
    pre = fmt.MAGIC + struct.pack("<IQ", fmt.FORMAT_VERSION, len(packed))
    pad = fmt.align(fmt.PREAMBLE + len(packed)) - fmt.PREAMBLE - len(packed)
    path.write_bytes(pre + packed + bytes(pad) + data)
    load(path)  # ManifestError if the patch broke anything
    return path


def _scalar_i32(header: Header, value: int) -> int:
    header["operands"].append({"type": fmt.INT32, "dims": [], "value": int(value)})
    return len(header["operands"]) - 1


def implicit(code: int = PADDING_SAME) -> HeaderPatch:
    """Operation 0 in the implicit-padding form with padding `code` (1 SAME, 2 VALID)."""

    def apply(header: Header) -> None:
        op = header["operations"][0]
        first = _FIRST_PAD[op["code"]]
        ins = list(op["inputs"])
        op["inputs"] = [*ins[:first], _scalar_i32(header, code), *ins[first + 4 :]]

    return apply


def recode(code: int, keep: int, extra: tuple[int, ...] = ()) -> HeaderPatch:
    """Operation 0 as Neuron operation `code`: its first `keep` inputs plus INT32 scalars."""

    def apply(header: Header) -> None:
        op = header["operations"][0]
        op["code"] = code
        op["inputs"] = [*op["inputs"][:keep], *(_scalar_i32(header, v) for v in extra)]

    return apply
