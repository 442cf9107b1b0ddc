"""Per-op constants computed once: a cache keyed by the constant arrays and hashable params.

Immutable records (frozen QuantParams with tuple fields: hashing a per-channel one costs more
than the lookup saves) may be keyed by identity instead: the entry holds them, so their ids
cannot be reused while it lives. An entry is valid only while every keyed array is the same
object *and* holds the same bytes as when the entry was built (a snapshot copy is compared:
as bytes objects up to SMALL_BYTES, else 8 bytes at a time where the layout allows;
`same_bytes`, `words`; an int8 weight compares at memory speed, far cheaper than re-deriving
float weights and bounds), so an in-place write to a weight between two runs is seen. Equal
bytes are equal values, so a build from them is the same. An entry dies with its arrays
(weak references) and the cache holds at most MAX_ENTRIES (least recently used dropped
first).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import numpy as np

from mdla_quant.arith import Array

T = TypeVar("T")
MAX_ENTRIES = 1024  # at most 64 MiB of 256 x 256 tables; plans die with their weights
SMALL_BYTES = 1 << 16  # arrays up to this size compare as bytes objects (`same_bytes`)

_Entry = tuple[
    tuple["weakref.ref[Array] | None", ...], tuple[Array | None, ...], tuple[object, ...], Any
]
_CACHE: dict[Hashable, _Entry] = {}


def _drop(key: Hashable) -> Callable[[Any], None]:
    def callback(_: Any) -> None:
        _CACHE.pop(key, None)

    return callback


def _valid(entry: _Entry, arrays: Sequence[Array | None], records: Sequence[object]) -> bool:
    refs, snaps, held, _ = entry
    if len(held) != len(records) or any(a is not b for a, b in zip(held, records, strict=True)):
        return False
    for ref, snap, a in zip(refs, snaps, arrays, strict=True):
        if a is None or ref is None or snap is None:
            if not (a is None and ref is None):
                return False
            continue
        if ref() is not a or snap.shape != a.shape or snap.dtype != a.dtype:
            return False
        if not same_bytes(snap, a):
            return False
    return True


def same_bytes(snap: Array, a: Array) -> bool:
    """Whether `a` holds the bytes of its snapshot (a C-order copy of the same shape and
    dtype). Up to SMALL_BYTES both are copied out with `tobytes` (C order) and compared as
    bytes objects: two memcpys and a memcmp cost less than the fixed overhead of a numpy
    comparison and reduction, and most weights and biases are that small. Larger arrays
    compare as `words`."""
    if a.nbytes <= SMALL_BYTES:
        return snap.tobytes() == a.tobytes()
    return bool(np.array_equal(*words(snap, a)))


def words(snap: Array, a: Array) -> tuple[Array, Array]:
    """The snapshot and the array as uint64 words where `a` is C-contiguous and a whole
    number of words (its snapshot, a C-order copy of the same shape, is then too; an 8-byte
    compare is half the passes of an int8 one); else both as they are (compared by value)."""
    if a.flags.c_contiguous and a.nbytes % 8 == 0 and a.nbytes > 0:
        return snap.reshape(-1).view(np.uint64), a.reshape(-1).view(np.uint64)
    return snap, a


def memo(
    arrays: Sequence[Array | None],
    params: Hashable,
    build: Callable[[], T],
    records: Sequence[object] = (),
) -> T:
    """build(), or the value an earlier call with the same arrays (identical objects, unchanged
    values), the same immutable `records` (identical objects) and equal `params` built."""
    key = (tuple(id(a) for a in arrays), tuple(id(r) for r in records), params)
    entry = _CACHE.get(key)
    if entry is not None and _valid(entry, arrays, records):
        _CACHE[key] = _CACHE.pop(key, entry)  # most recently used last
        value: T = entry[3]
        return value
    value = build()
    refs = tuple(None if a is None else weakref.ref(a, _drop(key)) for a in arrays)
    snaps = tuple(None if a is None else a.copy() for a in arrays)
    _CACHE.pop(key, None)
    while len(_CACHE) >= MAX_ENTRIES:  # drop the least recently used
        try:
            _CACHE.pop(next(iter(_CACHE)), None)
        except (StopIteration, RuntimeError):  # emptied, or a weakref callback ran meanwhile
            break
    _CACHE[key] = (refs, snaps, tuple(records), value)
    return value


def cache_size() -> int:
    """How many entries the cache holds now."""
    return len(_CACHE)
