"""The host side of a run, bounded: what `Target.run` holds in this process for a manifest's
inputs and outputs, counted against the resource budget before anything is allocated, and the
conversions that hold no more than that.

Per input element: the caller's float32 model-layout array (4 bytes), its int8 quantization in
the model's layout (1) and, with a boundary perm, in the device's (1). Per output element: the
raw bytes the device wrote (1, or 4 for a float32 output), with a perm their model-layout copy
(the same again), and for an int8 output the float32 dequantized array (4). Quantization runs
over CHUNK elements at a time (its float temporaries are bounded, not per element), the layout
changes move int8, not float32, and dequantization works in place on its one float32 array.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mdla_ir.affine import quantize_input
from mdla_runtime.errors import OverBudgetError
from mdla_runtime.format.budget import MIB, Budget
from mdla_runtime.format.container import TENSOR_FLOAT32
from mdla_runtime.format.manifest import IOSpec, Manifest

Array = np.ndarray[Any, Any]
CHUNK = 1 << 18  # elements quantized at once: a few MiB of float temporaries


def host_bytes(m: Manifest) -> int:
    """The bytes a run of `m` holds on the host (the module docstring)."""
    total = 0
    for s in m.inputs:
        total += math.prod(s.shape) * (4 + 1 + (1 if s.perm else 0))
    for s in m.outputs:
        real = m.operands[s.operand].type == TENSOR_FLOAT32
        raw = 4 if real else 1
        total += math.prod(s.shape) * (raw * (2 if s.perm else 1) + (0 if real else 4))
    return total


def check_host(m: Manifest, budget: Budget) -> None:
    """OverBudgetError (naming the file) when a run of `m` would hold more than the budget's
    total on the host."""
    need = host_bytes(m)
    if need > budget.max_total_bytes:
        why = (
            f"a run holds {need} bytes on the host for the inputs and outputs (float32 and int8 "
            f"copies) > the total limit of {budget.max_total_bytes // MIB} MiB (raise it with "
            "--max-total-mb)"
        )
        raise OverBudgetError("inputs", None, why).in_file(m.path or m.name)


def quantize_chunked(x: Array, scale: np.float32, zero_point: int) -> Array:
    """`quantize_input` (bit for bit: it is elementwise) of float32 `x`, CHUNK elements at a
    time into one int8 array of x's shape."""
    flat = x.reshape(-1)
    out = np.empty(flat.size, np.int8)
    for k in range(0, flat.size, CHUNK):
        out[k : k + CHUNK] = quantize_input(flat[k : k + CHUNK], scale, zero_point)
    return out.reshape(x.shape)


def to_device(q: Array, spec: IOSpec) -> Array:
    """Model-layout int8 -> device layout (the boundary perm, on one byte per element)."""
    if not spec.perm:
        return q.reshape(spec.shape)
    return np.ascontiguousarray(q.transpose(spec.perm)).reshape(spec.shape)


def dequantize_in_place(raw: Array, scale: float, zero_point: int) -> Array:
    """int8 or int16 -> float32 s * (q - z) in one array (`dequantize_output`'s operations,
    in place)."""
    out = raw.astype(np.float32)
    out -= np.float32(zero_point)
    out *= np.float32(scale)
    return out
