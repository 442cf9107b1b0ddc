"""A binary op over a tensor and an elementwise function of that same tensor, as one table.

SiLU is MUL(x, LOGISTIC(x)) and hard-sigmoid gates are MUL(x, f(x)): where a binary table op
(MUL, ADD, SUB) reads, elementwise (same shapes, no broadcast), a tensor `a` and the output
`b` of a unary table op (LOGISTIC, TANH, HARD_SWISH, RELU, RELU6) whose input is `a`, every
output element is a function of its element of `a` alone:

    out = bin(a, un(a)) = U[a],    U[c] = bin(c, un(c)) for each of the 256 codes c

U is computed by the two ops' own registered kernels on the 256 codes (`un` on CODES, then
`bin` on the pairs (CODES, un(CODES)), in the op's operand order), so U[a] is, code for code,
what the two kernels give elementwise; the lookup is `bytes.translate` (`lookup_bytes`), one
read and one write per value where the binary table needs a 16-bit index and a gather.

The unary op still runs where its output `b` is observed, is a graph output or is read by
any other op; otherwise nothing reads `b` (`unread_unaries`) and `run_int8` skips the unary
op: every other value is the same with or without it. The unary op is found among the two
ops before the binary one (where the importer puts it), and only while neither `a` nor `b`
is written again in between.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mdla_ir.graph import Graph, Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.memo import memo
from mdla_quant.kernels.registry import INT8_KERNELS, fail
from mdla_quant.kernels.tables import CODES, by_byte, lookup_bytes

BINARY = frozenset({OpKind.MUL, OpKind.ADD, OpKind.SUB})
UNARY = frozenset({OpKind.LOGISTIC, OpKind.TANH, OpKind.HARD_SWISH, OpKind.RELU, OpKind.RELU6})
LOOK_BACK = 2  # ops before the binary one searched for the unary one


def _int8(graph: Graph, names: Sequence[str]) -> bool:
    return all(graph.tensors[n].dtype == "int8" and graph.tensors[n].quant for n in names)


def unary_partner(graph: Graph, i: int) -> tuple[int, int] | None:
    """(j, k) where op #i is bin(a, b) (or bin(b, a)) with b = un(a) from op #j and `a` its
    operand k (0 or 1); None where op #i is no such pair."""
    op = graph.ops[i]
    if op.kind not in BINARY or len(op.inputs) != 2 or len(op.outputs) != 1:
        return None
    if not _int8(graph, [*op.inputs, *op.outputs]):
        return None
    shapes = {tuple(graph.tensors[n].shape) for n in (*op.inputs, *op.outputs)}
    if len(shapes) != 1:
        return None
    written: set[str] = set()
    for j in range(i - 1, max(-1, i - 1 - LOOK_BACK), -1):
        un = graph.ops[j]
        for k, (a, b) in enumerate([op.inputs, op.inputs[::-1]]):
            if un.outputs == (b,) and un.inputs == (a,) and a != b and not written & {a, b}:
                return (j, k) if _is_unary(graph, un) else None
        written.update(un.outputs)
    return None


def unread_unaries(
    graph: Graph, partner: Callable[[Graph, int], tuple[int, int] | None] | None = None
) -> frozenset[int]:
    """The unary ops of pairs whose output the paired binary op alone reads (and is no graph
    output): the pair's table reads `a` only, so no op reads their outputs. `partner`: the
    pairing the caller runs by (`unary_partner` by default)."""
    partner = partner or unary_partner
    readers: dict[str, set[int]] = {}
    for i, op in enumerate(graph.ops):
        for name in op.inputs:
            readers.setdefault(name, set()).add(i)
    unread = set()
    for i in range(len(graph.ops)):
        pair = partner(graph, i)
        if pair is None:
            continue
        b = graph.ops[pair[0]].outputs[0]
        if readers.get(b) == {i} and b not in graph.outputs:
            unread.add(pair[0])
    return frozenset(unread)


def _is_unary(graph: Graph, un: Op) -> bool:
    return un.kind in UNARY and _int8(graph, [*un.inputs, *un.outputs])


def _quant(graph: Graph, op: Op, name: str) -> QuantParams:
    q = graph.tensors[name].quant
    if q is None:  # `unary_partner` pairs only quantized tensors
        raise fail(op, f"tensor `{name}` has no quantization parameters")
    return q


def pair_lookup(
    graph: Graph, i: int, pair: tuple[int, int], a: Array, mode: str, acc: str
) -> Array:
    """Op #i's output for operand `a` through the 256-entry table U of the module docstring."""
    op, un = graph.ops[i], graph.ops[pair[0]]
    qa, qb, out_q = (_quant(graph, op, n) for n in (un.inputs[0], un.outputs[0], op.outputs[0]))
    params = ("pair", op.kind, op.attrs, un.kind, un.attrs, qa, qb, out_q, pair[1], mode, acc)

    def build() -> Array:
        mapped = INT8_KERNELS[un.kind](un, [CODES], [qa], qb, mode, acc)
        args, arg_q = [CODES, mapped], [qa, qb]
        if pair[1] == 1:  # bin(b, a)
            args, arg_q = args[::-1], arg_q[::-1]
        return by_byte(INT8_KERNELS[op.kind](op, args, list(arg_q), out_q, mode, acc))

    return lookup_bytes(memo([], params, build), a)
