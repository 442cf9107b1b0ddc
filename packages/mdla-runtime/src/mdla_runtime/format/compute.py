"""The compute budget of a manifest: what one operation, and all of them, may make the emulator,
the engine's CPU device or the phone compute, from the shapes alone. Check 7 of the semantic
validation (`semantic.py`), made by both readers (csrc/format/manifest_compute.c: chk_compute, the
same rule, kind, field, offset and figures), after checks 1-6.

An operation's work is the elements of its tensor inputs and outputs (every op reads and writes
them), plus its multiply-adds or compares:

    CONV_2D, FULLY_CONNECTED,    out x (filter elements / filter dims[0])    (kh kw Cin, or K)
    FULLY_CONNECTED_F32
    DEPTHWISE_CONV_2D            out x (filter elements / filter dims[-1])   (kh kw)
    TRANSPOSE_CONV_2D            in x (filter elements / filter dims[-1])    (each input element
                                                                              fans out kh kw Cout)
    AVERAGE_POOL_2D, MAX_POOL_2D out x filter_w x filter_h                   (the INT32 scalars;
                                                                              1 when not one)
    BATCH_MATMUL                 out x max(lhs dims[-2:])                    (K, either layout)
    GRU                          (w_ih + w_hh elements) x (x elements / I)   (steps x 3H (I + H))

with `out` the first output's elements, `in` the first input's. Sums and products are exact,
then capped at 2^64 - 1 (C saturates). OverBudget at `operations[i]` when one operation's work
is over `max_op_ops` or the running sum over `max_total_ops` (`--max-op-gops`,
`--max-total-gops`, in billions).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from mdla_ir.kinds import OpKind
from mdla_ir.schema import HOST_CODES, SCHEMA
from mdla_runtime.errors import OverBudgetError
from mdla_runtime.format import container as fmt
from mdla_runtime.format.budget import GIGA, Budget

CAP = 2**64 - 1
Entry = Mapping[str, Any]


def _code(kind: OpKind) -> int:
    code = SCHEMA[kind].code
    assert code is not None
    return code


BY_FILTER_ROWS = {_code(OpKind.CONV_2D), _code(OpKind.FULLY_CONNECTED)}
BY_FILTER_ROWS.add(HOST_CODES[OpKind.FULLY_CONNECTED_F32])
DEPTHWISE, TRANSPOSE_CONV = _code(OpKind.DEPTHWISE_CONV_2D), _code(OpKind.TRANSPOSE_CONV_2D)
POOLS = {_code(OpKind.AVERAGE_POOL_2D), _code(OpKind.MAX_POOL_2D)}
MATMUL, GRU = _code(OpKind.BATCH_MATMUL), HOST_CODES[OpKind.GRU]


def _elements(o: Entry) -> int:
    return math.prod(o["dims"])


def _int_scalar(o: Entry) -> int:
    """An INT32 scalar's value when it is at least 1, else 1."""
    v = o.get("value") if o["type"] == fmt.INT32 else None
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else 1


def _reduction(code: int, ins: Sequence[Entry], outs: Sequence[Entry]) -> int:
    """The multiply-adds or compares beyond reading and writing (the module docstring)."""
    out = _elements(outs[0]) if outs and outs[0]["type"] not in fmt.SCALAR_TYPES else 0
    if code in BY_FILTER_ROWS:
        w = ins[1]
        return out * (_elements(w) // (w["dims"][0] if w["dims"] else 1))
    if code in (DEPTHWISE, TRANSPOSE_CONV):
        w = ins[1]
        per = _elements(w) // (w["dims"][-1] if w["dims"] else 1)
        return (_elements(ins[0]) if code == TRANSPOSE_CONV else out) * per
    if code in POOLS:
        fw, fh = (ins[7], ins[8]) if len(ins) >= 10 else (ins[4], ins[5])
        return out * _int_scalar(fw) * _int_scalar(fh)
    if code == MATMUL:
        dims = ins[0]["dims"]
        return out * (max(dims[-2:]) if len(dims) >= 2 else 1)
    if code == GRU:
        w_ih, w_hh = ins[1], ins[2]
        i = w_ih["dims"][-1] if w_ih["dims"] else 1
        return (_elements(w_ih) + _elements(w_hh)) * (_elements(ins[0]) // i)
    return 0


def op_work(header: Mapping[str, Any], op: Entry) -> int:
    """One operation's work (the module docstring), capped at 2^64 - 1."""
    operands = header["operands"]
    ins = [operands[x] for x in op["inputs"]]
    outs = [operands[x] for x in op["outputs"]]
    touched = sum(_elements(o) for o in (*ins, *outs) if o["type"] not in fmt.SCALAR_TYPES)
    return min(touched + _reduction(op["code"], ins, outs), CAP)


def check_compute(c: Any, header: Mapping[str, Any], budget: Budget) -> None:
    """Raise OverBudgetError at the first operation over the per-op or the total limit."""
    total = 0
    for i, op in enumerate(header["operations"]):
        work, f = op_work(header, op), f"operations[{i}]"
        if work > budget.max_op_ops:
            why = (
                f"{work} multiply-adds or compares > the per-operation limit of "
                f"{budget.max_op_ops // GIGA} G (raise it with --max-op-gops)"
            )
            raise OverBudgetError(f, c.at(f), why)
        total = min(total + work, CAP)
        if total > budget.max_total_ops:
            why = (
                f"operations[0..{i}] need {total} multiply-adds or compares > the total limit "
                f"of {budget.max_total_ops // GIGA} G (raise it with --max-total-gops)"
            )
            raise OverBudgetError(f, c.at(f), why)
