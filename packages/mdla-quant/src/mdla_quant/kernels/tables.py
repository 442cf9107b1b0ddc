"""Elementwise int8 ops run as tables of their own formula kernels.

Where an op's output element is a pure function of its input codes and the op's parameters
(scales, zero points, fused activation, rounding, accumulator), the formula kernel evaluated
once on every code (256 for one input, 256 x 256 for two) gives a table that reproduces it
exactly for any input: out = table[x] (one input) or table[x1, x2] (two, broadcast). Tables are
built on first use and kept per parameter set (`memo`), so a graph pays for each once. A binary
op whose output is under a quarter of its table runs the formula directly the first time its
parameter set is seen, and builds the table the second time (a table costs about one formula
evaluation of its 65536 entries, once; a lookup is ~40x cheaper than the formula per element,
and the formula's fixed cost, three QuantizeMultipliers and its int64 passes, is ~0.3 ms: a
graph run once pays no table for a small op, a graph run again pays it once).

Tables are indexed by the codes' unsigned bytes (u = q mod 256), so a binary lookup is one
`np.take` and a unary one is `bytes.translate` (`lookup_bytes`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np

from mdla_ir.graph import Op, QuantParams
from mdla_quant.arith import Array
from mdla_quant.kernels.memo import memo
from mdla_quant.kernels.registry import Kernel, binary_operands, unary_operands

CODES = np.arange(-128, 128, dtype=np.int8)
BINARY_TABLE_SIZE = 256 * 256
MIN_BINARY_TABLE = BINARY_TABLE_SIZE // 4  # smaller outputs: the formula, on a first sight
MAX_SEEN = 4096  # parameter sets of small binary ops seen once (oldest forgotten first)
_SEEN: dict[Hashable, None] = {}


def seen_before(key: Hashable) -> bool:
    """Whether `key` was passed here before (and not forgotten); remembers it."""
    if key in _SEEN:
        return True
    while len(_SEEN) >= MAX_SEEN:
        _SEEN.pop(next(iter(_SEEN)))
    _SEEN[key] = None
    return False


def by_byte(table: Array) -> Array:
    """Reorder a table indexed by q + 128 (on each axis) to one indexed by q mod 256."""
    return np.roll(table, -128, axis=tuple(range(table.ndim))).ravel()


def lookup_bytes(table: Array, x: Array) -> Array:
    """table[x mod 256] for int8 `x` and a 256-entry int8 `table`: np.take(table, x.view(uint8)).

    `bytes.translate` maps every byte b of a bytes object to table[b], which is that lookup on
    the codes' bytes (an int8 array's bytes are its codes mod 256, in C order; the table's bytes
    are its entries'). It reads each code once and writes one byte, where np.take first widens
    the 8-bit indices to 64-bit ones: a fifth of np.take's time. The codes are copied once into
    a bytearray (C order) whose own `translate` returns a new bytearray, so the result is a
    writable int8 array of x's shape without a further copy."""
    codes = bytearray(np.ascontiguousarray(x).data)
    mapped = codes.translate(table.astype(np.int8).tobytes())
    return np.frombuffer(mapped, np.int8).reshape(x.shape)


def unary_table(formula: Kernel) -> Kernel:
    """A kernel that looks up `formula`'s 256 outputs (one int8 input)."""

    def run(
        op: Op,
        args: list[Array],
        arg_q: list[QuantParams | None],
        out_q: QuantParams,
        rounding: str,
        accumulator: str,
    ) -> Array:
        x, _, _ = unary_operands(op, args, arg_q, out_q)
        params = (formula, op.kind, op.attrs, arg_q[0], out_q, rounding, accumulator)
        table = memo(
            [],
            params,
            lambda: by_byte(formula(op, [CODES], arg_q[:1], out_q, rounding, accumulator)),
        )
        return lookup_bytes(table, x)

    return _named(run, formula)


def binary_table(formula: Kernel) -> Kernel:
    """A kernel that looks up `formula`'s 256 x 256 outputs (two int8 inputs, broadcast)."""

    def run(
        op: Op,
        args: list[Array],
        arg_q: list[QuantParams | None],
        out_q: QuantParams,
        rounding: str,
        accumulator: str,
    ) -> Array:
        (x1, _, _), (x2, _, _), _ = binary_operands(op, args, arg_q, out_q)
        params = (formula, op.kind, op.attrs, arg_q[0], arg_q[1], out_q, rounding, accumulator)
        if np.broadcast(x1, x2).size < MIN_BINARY_TABLE and not seen_before(params):
            return formula(op, args, arg_q, out_q, rounding, accumulator)
        grid = [CODES[:, None], CODES[None, :]]
        table = memo(
            [],
            params,
            lambda: by_byte(formula(op, grid, arg_q[:2], out_q, rounding, accumulator)),
        )
        index = np.left_shift(x1.view(np.uint8), 8, dtype=np.uint16)
        return np.take(table, np.bitwise_or(index, x2.view(np.uint8)))

    return _named(run, formula)


def _named(run: Callable[..., Array], formula: Kernel) -> Kernel:
    run.__name__ = formula.__name__.removesuffix("_formula")
    run.__qualname__ = run.__name__
    run.__doc__ = f"`{formula.__name__}` as a table (mdla_quant.kernels.tables)."
    return run
