"""A small, strict msgpack decoder that can say where every value starts.

Only the msgpack types a manifest header uses are accepted: nil, bool, ints, float32/64, str,
array and map (string keys, no duplicates). bin, ext and timestamps are rejected, nesting is
bounded by MAX_DEPTH, the number of values by the budget's `max_header_values` (map keys count,
as in C; checked before each value is read, so a reader never holds more than that many), and
lengths are checked against the bytes left before anything is allocated. It mirrors
csrc/format/mdla_msgpack.c, so both readers report a malformed header at the same byte offset.

Field paths: `operands[3].dims[0]`; a map key is written with `escape_key`, so a key that spells a
path (`dims[0]`) or holds a control character (a newline, a NUL) gives a distinct, one-line path
(`dims\\[0\\]`, `a\\nb`, `a\\x00b`), the same in both readers, and the path names one value.
No offset is recorded while decoding: a valid file pays for its values alone, and a checker
that must report an error finds the offset of its field by a second pass (`offset_of`) that
builds nothing and stops at that value.
"""

from __future__ import annotations

import struct
from typing import Any

from mdla_runtime.errors import BadHeaderError, OverBudgetError
from mdla_runtime.format.budget import DEFAULT, Budget
from mdla_runtime.format.container import MAX_DEPTH

_ESCAPES = {ord(c): "\\" + c for c in "\\.[]<"}
_ESCAPES |= {i: f"\\x{i:02x}" for i in (*range(0x20), 0x7F)}
_ESCAPES |= {ord("\n"): "\\n", ord("\t"): "\\t", ord("\r"): "\\r"}
_FIXED = {0xC0: None, 0xC2: False, 0xC3: True}
_UINTS = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}
_SINTS = {0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8}
_LENGTHS = {0xD9: 1, 0xDA: 2, 0xDB: 4, 0xDC: 2, 0xDD: 4, 0xDE: 2, 0xDF: 4}


def escape_key(key: str) -> str:
    """A map key as it appears in a field path: `\\ . [ ] <` backslashed, control characters as
    `\\n`, `\\t`, `\\r` or `\\xHH` (csrc/format/mdla_msgpack.c: mdla_escape_key does the same)."""
    return key.translate(_ESCAPES)


def child(field: str, key: str) -> str:
    """The path of `key` in the map at `field` (under the root, the key alone)."""
    return escape_key(key) if field == "header" else f"{field}.{escape_key(key)}"


_KEY = object()  # the path segment of a map key being read: `field.<key>`
_UNESCAPE = {"n": "\n", "t": "\t", "r": "\r"}


def _key(field: str, i: int) -> tuple[str, int]:
    """The escaped key starting at field[i] (up to an unescaped `.` or `[`), unescaped."""
    out = []
    while i < len(field) and field[i] not in ".[":
        if field[i] == "\\" and field[i + 1 : i + 2] == "x":
            out.append(chr(int(field[i + 2 : i + 4], 16)))
            i += 4
        elif field[i] == "\\":
            out.append(_UNESCAPE.get(field[i + 1 : i + 2], field[i + 1 : i + 2]))
            i += 2
        else:
            out.append(field[i])
            i += 1
    return "".join(out), i


def segments(field: str) -> list[object]:
    """The path segments (keys, indices) a field names: `operands[3].dims` -> operands, 3, dims;
    the inverse of the rendering, unambiguous because keys are escaped."""
    segs: list[object] = []
    i = 6 if field == "header" or field.startswith(("header[", "header.")) else 0
    if i == 0:
        key, i = _key(field, 0)
        segs.append(key)
    while i < len(field):
        if field[i] == "[":
            j = field.index("]", i)
            segs.append(int(field[i + 1 : j]))
            i = j + 1
        elif field.startswith(".<key>", i):
            segs.append(_KEY)
            i += 6
        else:
            key, i = _key(field, i + 1)
            segs.append(key)
    return segs


class _FoundError(Exception):
    """The value sought is reached (an internal signal)."""


class Decoder:
    """Decode `buf[start:end]`; offsets are file offsets. The path of the value being read is a
    stack of segments (index, key or _KEY), rendered to a field only for an error. With `find`
    (a header that decoded before) it builds nothing and stops at the value with that path,
    setting `found` to its offset."""

    def __init__(
        self,
        buf: bytes,
        start: int,
        end: int,
        budget: Budget = DEFAULT,
        find: list[object] | None = None,
    ) -> None:
        self.buf, self.pos, self.end = buf, start, end
        self.limit, self.count = budget.max_header_values, 0
        self.find, self.found = find, -1
        self.stack: list[object] = []

    def field(self) -> str:
        out = "header"
        for seg in self.stack:
            if isinstance(seg, int):
                out += f"[{seg}]"
            elif isinstance(seg, str):
                out = child(out, seg)
            else:
                out += ".<key>"
        return out

    def _take(self, n: int) -> bytes:
        if n > self.end - self.pos:
            raise BadHeaderError(
                self.field(), self.pos, f"msgpack value needs {n} bytes, header ends first"
            )
        chunk = self.buf[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def decode(self) -> Any:
        if len(self.stack) > MAX_DEPTH:
            raise BadHeaderError(self.field(), self.pos, f"nesting deeper than {MAX_DEPTH}")
        if self.count >= self.limit:
            raise OverBudgetError(
                self.field(),
                self.pos,
                f"more than {self.limit} header values (raise the limit with --max-header-values)",
            )
        self.count += 1
        start = self.pos
        if self.find is not None and self.stack == self.find:
            self.found = start
            raise _FoundError
        if start >= self.end:
            self._take(1)
        b = self.buf[start]
        self.pos = start + 1
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if b <= 0x8F:
            return self._map(b & 0x0F)
        if b <= 0x9F:
            return self._array(b & 0x0F)
        if b <= 0xBF:
            return self._str(b & 0x1F)
        if b in _FIXED:
            return _FIXED[b]
        if b in _UINTS:
            return int.from_bytes(self._take(_UINTS[b]), "big")
        if b in _SINTS:
            return int.from_bytes(self._take(_SINTS[b]), "big", signed=True)
        if b == 0xCA:
            return float(struct.unpack(">f", self._take(4))[0])
        if b == 0xCB:
            return float(struct.unpack(">d", self._take(8))[0])
        if b in _LENGTHS:
            n = int.from_bytes(self._take(_LENGTHS[b]), "big")
            if b <= 0xDB:
                return self._str(n)
            if b <= 0xDD:
                return self._array(n)
            return self._map(n)
        raise BadHeaderError(
            self.field(), start, f"msgpack type byte 0x{b:02x} is not allowed in a header"
        )

    def _str(self, n: int) -> str:
        start = self.pos
        raw = self._take(n)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BadHeaderError(self.field(), start, "string is not valid UTF-8") from None

    def _array(self, n: int) -> list[Any]:
        if n > self.end - self.pos:  # every element takes at least one byte
            raise BadHeaderError(
                self.field(), self.pos, f"array of {n} elements is longer than the header"
            )
        out: list[Any] = []
        stack = self.stack
        stack.append(0)
        build = self.find is None
        for i in range(n):
            stack[-1] = i
            value = self.decode()
            if build:
                out.append(value)
        stack.pop()
        return out

    def _map(self, n: int) -> dict[str, Any]:
        if 2 * n > self.end - self.pos:
            raise BadHeaderError(
                self.field(), self.pos, f"map of {n} entries is longer than the header"
            )
        out: dict[str, Any] = {}
        stack = self.stack
        stack.append(_KEY)
        for _ in range(n):
            key_at = self.pos
            stack[-1] = _KEY
            key = self.decode()
            if not isinstance(key, str):
                stack.pop()
                raise BadHeaderError(self.field(), key_at, f"map key {key!r} is not a string")
            if key in out:
                stack.pop()
                field = f"{self.field()}.{escape_key(key)}"
                raise BadHeaderError(field, key_at, "duplicate map key")
            stack[-1] = key
            value = self.decode()
            out[key] = value if self.find is None else None
        stack.pop()
        return out


def decode_header(buf: bytes, start: int, end: int, budget: Budget = DEFAULT) -> dict[str, Any]:
    """The header map in `buf[start:end]` (an error's offset: see `offset_of`)."""
    dec = Decoder(buf, start, end, budget)
    value = dec.decode()
    if dec.pos != end:
        raise BadHeaderError(
            "header", dec.pos, f"{end - dec.pos} bytes after the header's msgpack map"
        )
    if not isinstance(value, dict):
        raise BadHeaderError("header", start, "header is not a msgpack map")
    return value


def offset_of(
    buf: bytes, start: int, end: int, field: str | list[object], budget: Budget = DEFAULT
) -> int:
    """The offset of the value at `field` (or at these segments) in a header that decodes, else
    `start` (a second, cheap pass for an error: nothing is built, and it stops at the value)."""
    find = segments(field) if isinstance(field, str) else field
    dec = Decoder(buf, start, end, budget, find=find)
    try:
        dec.decode()
    except _FoundError:
        return dec.found
    return start
