"""A structure-aware mutator of .mdla files: decode, mutate the header's structure, re-encode.

    blob = mutate(valid_blob, rng)          # one mutant (1-3 mutations), deterministic per rng
    names = MUTATIONS.keys()                # the mutation families, one small function each

Byte mutation mostly breaks the msgpack framing, so it rarely gets past the first checks of a
reader. These mutations keep the container valid and change what the semantic checks are
about: operand types, dims and ranks, operand/operation/io counts, cross-references (operand
indices in operations, inputs, outputs), scales and zero points (NaN, inf, 0, negative, tiny,
huge, off-range), per-channel scale lists, permutations and shapes of the io records, data
slices and data bytes, scalar values and op codes, partitions (format 3).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from mdla_runtime.testing import pack, split

Header = dict[str, Any]
Rng = np.random.Generator

FLT_MIN = float(np.finfo(np.float32).tiny)
FLT_MAX = float(np.finfo(np.float32).max)
SCALES = [math.nan, math.inf, -math.inf, 0.0, -0.0, -1.0, 1e-38, FLT_MIN, 1e-45, 1e-30, 1e30,
          FLT_MAX, 3.5e38, 1e300, 1.0, 2.0**-8, 2.0**31]  # fmt: skip
ZERO_POINTS = [-129, -128, 127, 128, 255, 256, -(2**31), 2**31 - 1, 2**31, -1, 0, 1]
INTS = [0, 1, 2, 3, -1, 7, 255, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32, -(2**31)]
TYPES = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, -1, 99, 2**31]
OP_CODES = [0, 1, 2, 3, 4, 5, 9, 17, 19, 21, 22, 25, 28, 31, 38, 74, 90, 95, -1, 500, 2**31]


def _pick(rng: Rng, seq: list[Any]) -> Any:
    return seq[int(rng.integers(len(seq)))]


def _index(rng: Rng, n: int) -> int:
    """Mostly a valid index below n, sometimes n itself, a far one or a negative one."""
    r = rng.random()
    if r < 0.7 and n > 0:
        return int(rng.integers(n))
    return int(_pick(rng, [n, n + 1, -1, 2**31, 2**32 - 1, 65536]))


def _some(rng: Rng, items: list[Any]) -> Any | None:
    return _pick(rng, items) if items else None


def _tensors(h: Header) -> list[dict[str, Any]]:
    return [o for o in h.get("operands", []) if isinstance(o, dict)]


def operand_type(h: Header, data: bytearray, rng: Rng) -> None:
    o = _some(rng, _tensors(h))
    if o is not None:
        o["type"] = _pick(rng, TYPES)


def dims(h: Header, data: bytearray, rng: Rng) -> None:
    o = _some(rng, _tensors(h))
    if o is None or not isinstance(o.get("dims"), list):
        return
    d = o["dims"]
    r = rng.random()
    if r < 0.4 and d:
        d[int(rng.integers(len(d)))] = _pick(rng, INTS)
    elif r < 0.6 and d:
        del d[int(rng.integers(len(d)))]
    elif r < 0.8:
        d.insert(int(rng.integers(len(d) + 1)), _pick(rng, [1, 2, 3, 0, 65535]))
    elif d:  # a swap keeps the element count: only the shape checks can object
        i, j = int(rng.integers(len(d))), int(rng.integers(len(d)))
        d[i], d[j] = d[j], d[i]


def scale_zero_point(h: Header, data: bytearray, rng: Rng) -> None:
    records = _tensors(h) + [r for k in ("inputs", "outputs") for r in h.get(k, [])]
    rec = _some(rng, [r for r in records if isinstance(r, dict)])
    if rec is None:
        return
    if rng.random() < 0.6:
        rec["scale"] = _pick(rng, SCALES)
    else:
        rec["zero_point"] = _pick(rng, ZERO_POINTS)
    if rng.random() < 0.5 and "operand" in rec:  # keep the operand in step with its io record
        ops = h.get("operands", [])
        i = rec["operand"]
        if isinstance(i, int) and 0 <= i < len(ops) and isinstance(ops[i], dict):
            ops[i]["scale"], ops[i]["zero_point"] = rec.get("scale"), rec.get("zero_point")


def per_channel(h: Header, data: bytearray, rng: Rng) -> None:
    chans = [o for o in _tensors(h) if "scales" in o]
    o = _some(rng, chans) or _some(rng, _tensors(h))
    if o is None:
        return
    r = rng.random()
    scales = o.get("scales")
    if r < 0.3 and isinstance(scales, list) and scales:
        scales[int(rng.integers(len(scales)))] = _pick(rng, SCALES)
    elif r < 0.5 and isinstance(scales, list):
        if scales and rng.random() < 0.5:
            scales.pop()
        else:
            scales.append(_pick(rng, SCALES))
    elif r < 0.7:
        o["channel_dim"] = _pick(rng, INTS)
    elif r < 0.85:
        o["scales"] = [_pick(rng, SCALES)] * int(rng.integers(0, 5))
    else:
        o.pop(_pick(rng, ["scales", "channel_dim"]), None)


def cross_reference(h: Header, data: bytearray, rng: Rng) -> None:
    n = len(h.get("operands", []))
    r = rng.random()
    if r < 0.6:
        op = _some(rng, h.get("operations", []))
        if isinstance(op, dict):
            key = "inputs" if rng.random() < 0.7 else "outputs"
            refs = op.get(key)
            if isinstance(refs, list) and refs:
                refs[int(rng.integers(len(refs)))] = _index(rng, n)
    else:
        rec = _some(rng, h.get("inputs", []) + h.get("outputs", []))
        if isinstance(rec, dict):
            rec["operand"] = _index(rng, n)


def counts(h: Header, data: bytearray, rng: Rng) -> None:
    """Duplicate or drop one entry of a top-level list or an operation's operand list."""
    op = _some(rng, h.get("operations", []))
    lists: list[Any] = [h.get(k) for k in ("operands", "operations", "inputs", "outputs")]
    if isinstance(op, dict):
        lists += [op.get("inputs", []), op.get("outputs", [])]
    target = _pick(rng, [x for x in lists if isinstance(x, list)])
    if not target:
        return
    i = int(rng.integers(len(target)))
    if rng.random() < 0.5:
        target.insert(int(rng.integers(len(target) + 1)), copy.deepcopy(target[i]))
    else:
        del target[i]


def io_record(h: Header, data: bytearray, rng: Rng) -> None:
    rec = _some(rng, h.get("inputs", []) + h.get("outputs", []))
    if not isinstance(rec, dict):
        return
    key = _pick(rng, ["perm", "shape", "model_shape", "layout", "name"])
    value = rec.get(key)
    if key == "perm":
        rank = len(rec.get("shape", []) or [])
        perm = list(rng.permutation(max(rank, 1)).tolist())
        choice = rng.random()
        if choice < 0.3 and perm:
            perm[int(rng.integers(len(perm)))] = _pick(rng, [rank, rank + 1, -1, 0])
        elif choice < 0.5:
            perm = perm[:-1] if rng.random() < 0.5 else [*perm, len(perm)]
        rec["perm"] = perm
    elif key in ("shape", "model_shape") and isinstance(value, list):
        if value and rng.random() < 0.5:
            value[int(rng.integers(len(value)))] = _pick(rng, INTS)
        else:
            rec[key] = list(reversed(value)) if rng.random() < 0.5 else value[:-1]
    elif key == "layout":
        rec["layout"] = _pick(rng, ["NCHW", "NHWC", "", "nhwc", 3])
    else:
        rec["name"] = _pick(rng, ["", "x\ny", "a" * 300, None])


def data_slice(h: Header, data: bytearray, rng: Rng) -> None:
    consts = [o for o in _tensors(h) if isinstance(o.get("data"), list)]
    o = _some(rng, consts)
    if o is None:
        return
    off, length = (o["data"] + [0, 0])[:2]
    if not isinstance(off, int) or not isinstance(length, int):
        return
    r = rng.random()
    if r < 0.3:
        o["data"] = [_pick(rng, [off + 1, off + 64, off - 64, 0, len(data), 2**40]), length]
    elif r < 0.6:
        o["data"] = [off, _pick(rng, [length - 1, length + 1, 0, 2 * length, 2**32])]
    elif r < 0.8:
        o["data"] = _pick(rng, [[off], [off, length, 0], [], None, "x"])
    else:
        other = _some(rng, consts)  # two operands over the same bytes
        if other is not None:
            o["data"] = list(other["data"])


def data_bytes(h: Header, data: bytearray, rng: Rng) -> None:
    """Change constant bytes (weights, bias, shapes, paddings, axes) without framing changes."""
    if not data:
        return
    for _ in range(int(rng.integers(1, 9))):
        i = int(rng.integers(len(data)))
        data[i] = _pick(rng, [0x00, 0x7F, 0x80, 0xFF, int(rng.integers(256))])


def scalar_value(h: Header, data: bytearray, rng: Rng) -> None:
    scalars = [o for o in _tensors(h) if "value" in o]
    o = _some(rng, scalars)
    if o is not None:
        o["value"] = _pick(rng, [*INTS, True, False, math.nan, 1.5, -3.0, None, "x"])


def op_code(h: Header, data: bytearray, rng: Rng) -> None:
    op = _some(rng, h.get("operations", []))
    if isinstance(op, dict):
        op["code"] = _pick(rng, OP_CODES)


def model_field(h: Header, data: bytearray, rng: Rng) -> None:
    model = h.get("model")
    if isinstance(model, dict) and model:
        key = _pick(rng, sorted(model))
        model[key] = _pick(rng, ["single", "double", "", 0, True, [], {}, None, "x" * 70])


def partition(h: Header, data: bytearray, rng: Rng) -> None:
    """Partitions (format 3): move an operation or an operand between them, swap two, change a
    device, drop or duplicate a list entry, point an index anywhere."""
    parts = [p for p in h.get("partitions", []) if isinstance(p, dict)]
    p = _some(rng, parts)
    if p is None:
        return
    key = _pick(rng, ["operations", "inputs", "outputs"])
    refs = p.get(key)
    n = len(h.get("operations" if key == "operations" else "operands", []))
    r = rng.random()
    if r < 0.3 and isinstance(refs, list):
        if refs and rng.random() < 0.5:
            refs[int(rng.integers(len(refs)))] = _index(rng, n)
        elif refs:
            other = _some(rng, parts)  # the entry moves (or is copied) to another partition
            if other is not None and isinstance(other.get(key), list):
                other[key].append(refs.pop(int(rng.integers(len(refs)))) if refs else 0)
    elif r < 0.5 and len(parts) > 1:
        i, j = int(rng.integers(len(parts))), int(rng.integers(len(parts)))
        h["partitions"][i], h["partitions"][j] = h["partitions"][j], h["partitions"][i]
    elif r < 0.7:
        p["device"] = _pick(rng, ["cpu", "mtk-mdla", "mtk-gpu", "", 3, None])
    elif r < 0.85 and isinstance(refs, list):
        if refs and rng.random() < 0.5:
            del refs[int(rng.integers(len(refs)))]
        elif refs:
            refs.insert(int(rng.integers(len(refs) + 1)), refs[int(rng.integers(len(refs)))])
    else:
        p[key] = _pick(rng, [[], None, "x", [-1], {}])


Mutation = Callable[[Header, bytearray, Rng], None]
TABLE: list[tuple[Mutation, int]] = [  # (mutation, relative weight)
    (operand_type, 2),
    (dims, 3),
    (scale_zero_point, 4),
    (per_channel, 2),
    (cross_reference, 4),
    (counts, 3),
    (io_record, 2),
    (data_slice, 2),
    (data_bytes, 2),
    (scalar_value, 1),
    (op_code, 1),
    (model_field, 1),
    (partition, 2),
]
MUTATIONS: dict[str, Mutation] = {f.__name__: f for f, _ in TABLE}
WEIGHTS = np.array([w for _, w in TABLE], dtype=np.float64) / sum(w for _, w in TABLE)


def mutate(blob: bytes, rng: Rng, mutations: int | None = None) -> bytes:
    """`blob` (a valid .mdla file) with 1-3 structural mutations, re-encoded."""
    header, body = split(blob)
    data = bytearray(body)
    names = list(MUTATIONS)
    for _ in range(mutations or int(rng.integers(1, 4))):
        name = names[int(rng.choice(len(names), p=WEIGHTS))]
        MUTATIONS[name](header, data, rng)
    return pack(header, bytes(data))
