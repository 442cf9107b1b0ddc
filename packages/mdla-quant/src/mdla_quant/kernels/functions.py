"""The table group: unary functions a CPU partition runs as 256-entry int8 tables (issue 31).

An int8 -> int8 unary function is exactly a table over the 256 input codes. For an op of the
group (`mdla_ir.schema.group("table")`: ELU, Mish, Softplus, ..., EXP, LOG, SQRT, RSQRT; GELU
builds its own in float_ops.py) with input (s_in, z_in) and output (s_out, z_out):

    x[c] = DEQUANTIZE(c) = (float)s_in * (float)(c - z_in)             c = -128..127 (float32)
    y[c] = mdla_ir.functions.evaluate(kind, x[c])      float64, rounded to float32, NaN -> 0
    table[c + 128] = QUANTIZE(y[c]) = clamp((int)roundf(y / s_out) + z_out, -128, 127)

`with_tables` attaches each op's table as a constant second input (`<op>.table`, int8, scale
1), so the manifest carries it and the engine only indexes it: y[i] = table[x[i] + 128], the
same in run_int8, the engine's CPU partition and the exported .tflite (GATHER).
"""

from __future__ import annotations

import functools

import numpy as np

from mdla_ir.affine import dequantize_output, quantize_input
from mdla_ir.attrs import Attrs
from mdla_ir.functions import FUNCTIONS, evaluate
from mdla_ir.graph import Graph, Op, QuantParams, Tensor
from mdla_ir.ops import OpKind
from mdla_ir.schema import group
from mdla_quant.arith import Array
from mdla_quant.kernels.float_ops import gelu_table
from mdla_quant.kernels.registry import fail, kernel, unary_operands

TABLES = group("table")
TABLE_Q = QuantParams((1.0,), (0,))  # a table holds int8 codes: scale 1, zero point 0


@functools.cache
def function_table(
    kind: OpKind, attrs: Attrs, s_in: np.float32, z_in: int, s_out: np.float32, z_out: int
) -> Array:
    """The 256 int8 outputs of `kind` for the inputs -128..127 (index q + 128)."""
    xs = dequantize_output(np.arange(-128, 128), float(s_in), z_in)
    return quantize_input(evaluate(kind, xs, attrs), s_out, z_out)


def table_of(op: Op, x: QuantParams, y: QuantParams) -> Array:
    """The table of `op` (of the group) for its input and output parameters."""
    s_in, s_out = np.float32(x.scale[0]), np.float32(y.scale[0])
    if op.kind is OpKind.GELU:
        return gelu_table(s_in, x.zero_point[0], s_out, y.zero_point[0])
    return function_table(op.kind, op.attrs, s_in, x.zero_point[0], s_out, y.zero_point[0])


@kernel(*FUNCTIONS)
def function(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    """y = table[q + 128]; the table is the op's second input when the graph carries one
    (`with_tables`), which must be the one the parameters give."""
    q, (s_in, z_in), (s_out, z_out) = unary_operands(op, args[:1], arg_q[:1], out_q)
    table = function_table(op.kind, op.attrs, s_in, z_in, s_out, z_out)
    if len(args) > 1 and not np.array_equal(args[1], table):
        raise fail(op, f"its table is not the {op.kind.name} of its input and output parameters")
    out: Array = table[q.astype(np.int64) + 128]
    return out


def with_tables(qgraph: Graph) -> Graph:
    """`qgraph` with each op of the table group reading its 256-entry table as a constant
    second input (`<op>.table`, int8), so that a manifest carries the table."""
    tensors, ops, changed = dict(qgraph.tensors), [], False
    for op in qgraph.ops:
        if op.kind not in TABLES or len(op.inputs) != 1:
            ops.append(op)
            continue
        x, y = (qgraph.tensors[n].quant for n in (op.inputs[0], op.outputs[0]))
        if x is None or y is None:
            raise fail(op, f"{op.kind.name}'s input and output need quantization parameters")
        name = f"{op.name}.table"
        table = table_of(op, x, y).copy()
        tensors[name] = Tensor(name, (256,), "int8", data=table, quant=TABLE_Q)
        ops.append(op.with_(inputs=(op.inputs[0], name)))
        changed = True
    return qgraph.with_(tensors=tensors, ops=tuple(ops)) if changed else qgraph
