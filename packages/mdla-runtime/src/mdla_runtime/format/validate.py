"""Validation of a whole .mdla file, check by check in the order csrc/format/manifest.c makes them.

Every failure raises the `ManifestError` subclass for its kind, naming the header field
(`operands[3].data`) and the file offset of the offending bytes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from mdla_ir import schema
from mdla_runtime.errors import (
    BadHeaderError,
    BadIndexError,
    BadMagicError,
    BadPaddingError,
    CountMismatchError,
    DimsOverflowError,
    FutureVersionError,
    HeaderTooLargeError,
    MisalignedError,
    OffsetOutOfBoundsError,
    OperandCountMismatchError,
    OverlappingSlicesError,
    TruncatedDataError,
    TruncatedHeaderError,
    UnknownOpCodeError,
    UnknownTypeCodeError,
)
from mdla_runtime.format import container as fmt
from mdla_runtime.format.budget import DEFAULT, Budget
from mdla_runtime.format.finite import check_finite
from mdla_runtime.format.model import check_model
from mdla_runtime.format.msgpack_reader import child, decode_header, offset_of, segments
from mdla_runtime.format.semantic import check_semantics

TOP = ("model", "operands", "operations", "inputs", "outputs", "data_size", "partitions")
TOP_V2 = TOP[:-1]  # format 2: no partitions (read as one, `manifest.py`)
PARTITION_KEYS = ("device", "operations", "inputs", "outputs")
OPERAND_KEYS: tuple[str, ...] = (
    "type",
    "dims",
    "name",
    "scale",
    "zero_point",
    "channel_dim",
    "scales",
    "data",
)
OPERAND_KEYS += ("value",)
OPERATION_KEYS = ("code", "inputs", "outputs", "name")
IO_KEYS = ("operand", "name", "scale", "zero_point", "layout", "shape", "perm", "model_shape")
I32 = (-(2**31), 2**31 - 1)


def _sub(field: str, key: str) -> str:
    return child(field, key)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class _Checker:
    """The schema helpers; `at(field)` is the offset of a value, found (by decoding the header
    once more) only when an error needs it."""

    def __init__(self, buf: bytes, end: int, budget: Budget) -> None:
        self.buf, self.end, self.budget = buf, end, budget
        self.start = fmt.PREAMBLE

    def at(self, field: str) -> int:
        return offset_of(self.buf, self.start, self.end, field, self.budget)

    def keys(
        self, obj: Any, field: str, allowed: tuple[str, ...], required: tuple[str, ...]
    ) -> None:
        if not isinstance(obj, dict):
            raise BadHeaderError(field, self.at(field), "expected a map")
        for key in obj:
            if key not in allowed:
                at = offset_of(self.buf, self.start, self.end, [*segments(field), key], self.budget)
                raise BadHeaderError(_sub(field, key), at, "unknown key")
        for key in required:
            if key not in obj:
                raise BadHeaderError(_sub(field, key), self.at(field), "required key is missing")

    def uint_list(self, obj: Any, field: str, limit: int = 2**32 - 1) -> list[int]:
        if not isinstance(obj, list):
            raise BadHeaderError(field, self.at(field), "expected an array")
        for k, v in enumerate(obj):
            if not _is_int(v) or v < 0:
                raise BadHeaderError(
                    f"{field}[{k}]", self.at(f"{field}[{k}]"), "not an unsigned int"
                )
            if v > limit:
                raise DimsOverflowError(f"{field}[{k}]", self.at(f"{field}[{k}]"), f"{v} > {limit}")
        return obj

    def typed(self, obj: Mapping[str, Any], key: str, field: str, kind: str) -> None:
        if key not in obj:
            return
        v, f = obj[key], child(field, key)
        ok = {
            "int": _is_int(v) and I32[0] <= v <= I32[1],
            "uint": _is_int(v) and 0 <= v <= 2**32 - 1,
            "float": isinstance(v, float),
            "str": isinstance(v, str),
            "bool": isinstance(v, bool),
            "floats": isinstance(v, list) and all(isinstance(s, float) for s in v),
            "strs": isinstance(v, list) and all(isinstance(s, str) for s in v),
        }[kind]
        if not ok:
            raise BadHeaderError(f, self.at(f), f"expected {kind}, got {type(v).__name__}")


def _preamble(buf: bytes) -> tuple[int, int, int]:
    n = len(buf)
    head = min(n, len(fmt.MAGIC))
    if buf[:head] != fmt.MAGIC[:head]:
        raise BadMagicError("magic", 0, f"not a .mdla file (starts with {bytes(buf[:8])!r})")
    if n < fmt.PREAMBLE:
        raise TruncatedHeaderError(
            "preamble", n, f"file has {n} bytes, the preamble {fmt.PREAMBLE}"
        )
    version = int.from_bytes(buf[8:12], "little")
    if version not in fmt.READABLE_VERSIONS:
        raise FutureVersionError("version", 8, fmt.version_message(version))
    hlen = int.from_bytes(buf[12:20], "little")
    if hlen > fmt.MAX_HEADER:
        raise HeaderTooLargeError("header_length", 12, f"{hlen} bytes > {fmt.MAX_HEADER}")
    if fmt.PREAMBLE + hlen > n:
        raise TruncatedHeaderError("header", n, f"header of {hlen} bytes, file ends at {n}")
    return hlen, fmt.align(fmt.PREAMBLE + hlen), version


def _operand(c: _Checker, e: Any, i: int, data_size: int) -> tuple[int, int] | None:
    f = f"operands[{i}]"
    c.keys(e, f, OPERAND_KEYS, ("type", "dims"))
    if not _is_int(e["type"]) or e["type"] not in fmt.TYPE_NAMES:
        raise UnknownTypeCodeError(f"{f}.type", c.at(f"{f}.type"), f"type code {e['type']!r}")
    dims = c.uint_list(e["dims"], f"{f}.dims")
    if len(dims) > fmt.MAX_RANK:
        raise DimsOverflowError(
            f"{f}.dims", c.at(f"{f}.dims"), f"rank {len(dims)} > {fmt.MAX_RANK}"
        )
    count = math.prod(dims)
    if count > fmt.MAX_ELEMENTS:
        raise DimsOverflowError(f"{f}.dims", c.at(f"{f}.dims"), f"{count} elements")
    for key, kind in (("name", "str"), ("scale", "float"), ("zero_point", "int")):
        c.typed(e, key, f, kind)
    c.typed(e, "channel_dim", f, "uint")
    c.typed(e, "scales", f, "floats")
    t = e["type"]
    if t in fmt.SCALAR_TYPES:
        if dims or "data" in e or "value" not in e:
            raise BadHeaderError(f, c.at(f), "a scalar has dims [], an inline value and no data")
        c.typed(e, "value", f, {fmt.INT32: "int", fmt.FLOAT32: "float", fmt.BOOL: "bool"}[t])
    elif "value" in e:
        raise BadHeaderError(f"{f}.value", c.at(f"{f}.value"), "only scalars carry a value")
    per_channel = t == fmt.TENSOR_QUANT8_SYMM_PER_CHANNEL
    if per_channel != ("channel_dim" in e) or per_channel != ("scales" in e):
        raise BadHeaderError(f, c.at(f), "channel_dim and scales go with per-channel types only")
    if per_channel:
        if e["channel_dim"] >= len(dims):
            raise BadHeaderError(f"{f}.channel_dim", c.at(f"{f}.channel_dim"), "past the rank")
        if len(e["scales"]) != dims[e["channel_dim"]]:
            raise CountMismatchError(f"{f}.scales", c.at(f"{f}.scales"), "one scale per channel")
    if "data" not in e:
        return None
    fd = f"{f}.data"
    sl = c.uint_list(e["data"], fd, 2**64 - 1)
    if len(sl) != 2:
        raise BadHeaderError(fd, c.at(fd), "a slice is [offset, length]")
    if sl[0] % fmt.ALIGN:
        raise MisalignedError(fd, c.at(fd), f"offset {sl[0]} is not a multiple of {fmt.ALIGN}")
    if sl[0] + sl[1] > data_size:
        raise OffsetOutOfBoundsError(fd, c.at(fd), f"[{sl[0]}, +{sl[1]}) > data_size {data_size}")
    if sl[1] != count * fmt.ELEMENT_SIZE[t]:
        raise CountMismatchError(fd, c.at(fd), f"{sl[1]} bytes for {count} elements")
    return sl[0], sl[1]


def _operation(c: _Checker, e: Any, i: int, n_operands: int, hosts: bool) -> None:
    """`hosts`: the file's format has host operations (3 on; `schema.HOST_BY_CODE`)."""
    f = f"operations[{i}]"
    c.keys(e, f, OPERATION_KEYS, ("code", "inputs", "outputs"))
    code = e["code"]
    neuron = _is_int(code) and 0 <= code <= fmt.MAX_OP_CODE and code not in fmt.NOT_AVAILABLE
    if not neuron and not (hosts and _is_int(code) and code in schema.HOST_BY_CODE):
        raise UnknownOpCodeError(f"{f}.code", c.at(f"{f}.code"), f"operation code {code!r}")
    for key in ("inputs", "outputs"):
        for k, idx in enumerate(c.uint_list(e[key], f"{f}.{key}")):
            if idx >= n_operands:
                at = f"{f}.{key}[{k}]"
                raise BadIndexError(at, c.at(at), f"operand {idx} of {n_operands}")
    if not fmt.arity_ok(code, len(e["inputs"]), len(e["outputs"])):
        why = f"code {code} with {len(e['inputs'])} inputs, {len(e['outputs'])} outputs"
        entry = schema.BY_CODE.get(code) or schema.HOST_BY_CODE[code]
        forms = " | ".join(f.text for f in entry.forms)
        why += f" ({entry.name} takes {forms} -> {entry.outputs.text})"
        raise OperandCountMismatchError(f"{f}.inputs", c.at(f"{f}.inputs"), why)
    c.typed(e, "name", f, "str")


def _io(c: _Checker, e: Any, f: str, n_operands: int) -> None:
    c.keys(e, f, IO_KEYS, ("operand",))
    c.typed(e, "operand", f, "uint")
    if e["operand"] >= n_operands:
        raise BadIndexError(f"{f}.operand", c.at(f"{f}.operand"), f"operand of {n_operands}")
    for key, kind in (("name", "str"), ("scale", "float"), ("zero_point", "int")):
        c.typed(e, key, f, kind)
    c.typed(e, "layout", f, "str")
    for key in ("shape", "perm", "model_shape"):
        if key in e:
            c.uint_list(e[key], f"{f}.{key}")


def _partition(c: _Checker, e: Any, p: int, n_operations: int, n_operands: int) -> None:
    f = f"partitions[{p}]"
    c.keys(e, f, PARTITION_KEYS, PARTITION_KEYS)
    c.typed(e, "device", f, "str")
    for key, n, what in (
        ("operations", n_operations, "operation"),
        ("inputs", n_operands, "operand"),
        ("outputs", n_operands, "operand"),
    ):
        for k, idx in enumerate(c.uint_list(e[key], f"{f}.{key}")):
            if idx >= n:
                at = f"{f}.{key}[{k}]"
                raise BadIndexError(at, c.at(at), f"{what} {idx} of {n}")


def validate(buf: bytes, budget: Budget = DEFAULT) -> tuple[dict[str, Any], int]:
    """The decoded header and the data section's start, or a `ManifestError`: the structure
    (this module), then the meaning (`semantic.check_semantics`: cross references, shapes,
    quantization, the budget), before anything is allocated from the header's sizes."""
    hlen, data_start, version = _preamble(buf)
    header = decode_header(buf, fmt.PREAMBLE, fmt.PREAMBLE + hlen, budget)
    if data_start > len(buf):
        raise TruncatedDataError("data", len(buf), f"data section starts at {data_start}")
    for k in range(fmt.PREAMBLE + hlen, data_start):
        if buf[k]:
            raise BadPaddingError("padding", k, "padding before the data section must be zero")
    c = _Checker(buf, fmt.PREAMBLE + hlen, budget)
    top = TOP if version >= 3 else TOP_V2
    c.keys(header, "header", top, top)
    for key, kind in (("model", dict), ("operands", list), ("operations", list)):
        if not isinstance(header[key], kind):
            raise BadHeaderError(key, c.at(key), f"expected {kind.__name__}")
    for key in ("inputs", "outputs", *top[len(TOP_V2) :]):
        if not isinstance(header[key], list):
            raise BadHeaderError(key, c.at(key), "expected list")
    check_model(c, header["model"])
    size = header["data_size"]
    if not _is_int(size) or size < 0:
        raise BadHeaderError("data_size", c.at("data_size"), "expected an unsigned int")
    have = len(buf) - data_start
    if size > have:
        raise TruncatedDataError("data_size", c.at("data_size"), f"{size} bytes, file has {have}")
    if size < have:
        raise CountMismatchError("data_size", c.at("data_size"), f"{have - size} trailing bytes")
    slices = []
    for i, e in enumerate(header["operands"]):
        sl = _operand(c, e, i, size)
        if sl is not None and sl[1] > 0:
            slices.append((sl[0], sl[1], i))
    slices.sort()
    for (off0, len0, _), (off1, _, i) in itertools.pairwise(slices):
        if off0 + len0 > off1:
            at = f"operands[{i}].data"
            raise OverlappingSlicesError(
                at, c.at(at), f"starts at {off1}, inside [{off0}, +{len0})"
            )
    n = len(header["operands"])
    for i, e in enumerate(header["operations"]):
        _operation(c, e, i, n, version >= 3)
    for key in ("inputs", "outputs"):
        for i, e in enumerate(header[key]):
            _io(c, e, f"{key}[{i}]", n)
    for p, e in enumerate(header.get("partitions", ())):
        _partition(c, e, p, len(header["operations"]), n)
    check_semantics(c, header, budget)
    check_finite(c, header, buf, data_start)
    return header, data_start
