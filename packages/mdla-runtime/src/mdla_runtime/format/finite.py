"""Check 8 of the semantic validation, made by both readers after checks 1-7 (csrc/
manifest_compute.c: chk_finite, the same kind, field and offset): every float32 constant is
finite. A FLOAT32 scalar's `value` (a double in the header) is neither NaN nor +-inf nor beyond
FLT_MAX, where C would round it to +-inf; every element of a TENSOR_FLOAT32 constant's data is
neither NaN nor +-inf (NonFinite at `operands[i].value` or `operands[i].data`). NaN and the
infinities have no meaning in a model's weights, and the kernels that would read them differ
by platform on them (a NaN's payload, its conversion to int).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from mdla_runtime.errors import NonFiniteError
from mdla_runtime.format import container as fmt

FLT_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
EXPONENT = 0x7F800000  # all ones: +-inf or NaN


def check_finite(c: Any, header: Mapping[str, Any], buf: bytes, data_start: int) -> None:
    """Raise NonFiniteError at the first float32 constant that is not finite."""
    for i, o in enumerate(header["operands"]):
        if o["type"] == fmt.FLOAT32:
            v = o["value"]
            if not math.isfinite(v) or abs(v) > FLT_MAX:
                f = f"operands[{i}].value"
                raise NonFiniteError(f, c.at(f), f"float32 value {v!r} is not a finite float32")
        elif o["type"] == fmt.TENSOR_FLOAT32 and "data" in o:
            off, length = o["data"]
            bits = np.frombuffer(buf, "<u4", length // 4, data_start + off)
            bad = np.flatnonzero((bits & EXPONENT) == EXPONENT)
            if bad.size:
                k = int(bad[0])
                value = float(bits[k : k + 1].view("<f4")[0])
                f = f"operands[{i}].data"
                why = f"element {k} is {value}; float32 constants must be finite"
                raise NonFiniteError(f, c.at(f), why)
