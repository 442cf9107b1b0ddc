"""A small, strict msgpack decoder that remembers where every value starts.

Only the msgpack types a manifest header uses are accepted: nil, bool, ints, float32/64, str,
array and map (string keys, no duplicates). bin, ext and timestamps are rejected, nesting is
bounded by MAX_DEPTH, and lengths are checked against the bytes left before anything is
allocated, so no input can make the decoder allocate more than the header's own size. It mirrors
csrc/mdla_msgpack.c, so both readers report a malformed header at the same byte offset.
"""

from __future__ import annotations

import struct
from typing import Any

from mdla_runtime.errors import BadHeaderError
from mdla_runtime.format.container import MAX_DEPTH

Offsets = dict[str, int]


class Decoder:
    """Decode `buf[start:end]`; `base` is added to offsets so they are file offsets."""

    def __init__(self, buf: bytes, start: int, end: int) -> None:
        self.buf, self.pos, self.end = buf, start, end
        self.offsets: Offsets = {}

    def _take(self, n: int, field: str) -> bytes:
        if n > self.end - self.pos:
            raise BadHeaderError(
                field, self.pos, f"msgpack value needs {n} bytes, header ends first"
            )
        chunk = self.buf[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def _uint(self, n: int, field: str) -> int:
        return int.from_bytes(self._take(n, field), "big")

    def decode(self, field: str = "header", depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise BadHeaderError(field, self.pos, f"nesting deeper than {MAX_DEPTH}")
        start = self.pos
        self.offsets[field] = start
        b = self._take(1, field)[0]
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0x80 <= b <= 0x8F:
            return self._map(b & 0x0F, field, depth)
        if 0x90 <= b <= 0x9F:
            return self._array(b & 0x0F, field, depth)
        if 0xA0 <= b <= 0xBF:
            return self._str(b & 0x1F, field)
        simple = {0xC0: None, 0xC2: False, 0xC3: True}
        if b in simple:
            return simple[b]
        sizes = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}
        if b in sizes:
            return self._uint(sizes[b], field)
        ssizes = {0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8}
        if b in ssizes:
            return int.from_bytes(self._take(ssizes[b], field), "big", signed=True)
        if b == 0xCA:
            return float(struct.unpack(">f", self._take(4, field))[0])
        if b == 0xCB:
            return float(struct.unpack(">d", self._take(8, field))[0])
        lengths = {0xD9: 1, 0xDA: 2, 0xDB: 4, 0xDC: 2, 0xDD: 4, 0xDE: 2, 0xDF: 4}
        if b in lengths:
            n = self._uint(lengths[b], field)
            if b <= 0xDB:
                return self._str(n, field)
            if b <= 0xDD:
                return self._array(n, field, depth)
            return self._map(n, field, depth)
        raise BadHeaderError(
            field, start, f"msgpack type byte 0x{b:02x} is not allowed in a header"
        )

    def _str(self, n: int, field: str) -> str:
        start = self.pos
        raw = self._take(n, field)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BadHeaderError(field, start, "string is not valid UTF-8") from None

    def _array(self, n: int, field: str, depth: int) -> list[Any]:
        if n > self.end - self.pos:  # every element takes at least one byte
            raise BadHeaderError(
                field, self.pos, f"array of {n} elements is longer than the header"
            )
        return [self.decode(f"{field}[{i}]", depth + 1) for i in range(n)]

    def _map(self, n: int, field: str, depth: int) -> dict[str, Any]:
        if 2 * n > self.end - self.pos:
            raise BadHeaderError(field, self.pos, f"map of {n} entries is longer than the header")
        out: dict[str, Any] = {}
        for _ in range(n):
            key_at = self.pos
            key = self.decode(f"{field}.<key>", depth + 1)
            if not isinstance(key, str):
                raise BadHeaderError(field, key_at, f"map key {key!r} is not a string")
            if key in out:
                raise BadHeaderError(f"{field}.{key}", key_at, "duplicate map key")
            out[key] = self.decode(f"{field}.{key}" if field != "header" else key, depth + 1)
        return out


def decode_header(buf: bytes, start: int, end: int) -> tuple[dict[str, Any], Offsets]:
    """The header map in `buf[start:end]` and the file offset of every value by field path."""
    dec = Decoder(buf, start, end)
    value = dec.decode()
    if dec.pos != end:
        raise BadHeaderError(
            "header", dec.pos, f"{end - dec.pos} bytes after the header's msgpack map"
        )
    if not isinstance(value, dict):
        raise BadHeaderError("header", start, "header is not a msgpack map")
    return value, dec.offsets
