"""GROUP_NORM (GroupNorm, InstanceNorm = groups of one channel) on the CPU: DEQUANTIZE, a
float32 kernel, QUANTIZE, as LAYER_NORM (`float_ops.py`), every float32 step in a fixed order
so that the C engine (cpu/float_ops.c, no fused multiply-add) computes the same bits.

The tensor is viewed as (N, A, C, B): C the channel axis `axis` (1 in NCHW, 3 in NHWC), A the
axes between the batch and it, B those after. Group g holds channels [g*C/G, (g+1)*C/G); its
n = A * C/G * B values of batch element i are visited in memory order (a, c, b):

    sum = 0; for each value: sum += x         mean = sum / (float)n
    acc = 0; for each value: d = x - mean; acc += d * d
    var = acc / (float)n;  inv = 1.0f / sqrtf(var + (float)eps)
    y = ((x - mean) * inv) * w[c] + b[c]      (w, b float32 [C]; the importer fills 1 and 0)
"""

from __future__ import annotations

import numpy as np

from mdla_ir.affine import dequantize_output, quantize_input
from mdla_ir.attrs import GroupNormAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array
from mdla_quant.kernels.float_ops import normalize_rows
from mdla_quant.kernels.registry import fail, kernel, unary_operands


def group_norm_f32(x: Array, groups: int, axis: int, eps: float, w: Array, b: Array) -> Array:
    """The float32 GroupNorm of the module docstring (each group's rows: `normalize_rows`)."""
    n, c = x.shape[0], x.shape[axis]
    a, rest = int(np.prod(x.shape[1:axis])), int(np.prod(x.shape[axis + 1 :]))
    cg = c // groups
    view = x.astype(np.float32).reshape(n, a, c, rest)
    y = np.empty_like(view)
    for g in range(groups):
        part = view[:, :, g * cg : (g + 1) * cg, :]
        normed = normalize_rows(part.reshape(n, -1), eps).reshape(part.shape)
        wg = w[g * cg : (g + 1) * cg].reshape(1, 1, cg, 1).astype(np.float32)
        bg = b[g * cg : (g + 1) * cg].reshape(1, 1, cg, 1).astype(np.float32)
        y[:, :, g * cg : (g + 1) * cg, :] = ((normed * wg).astype(np.float32) + bg).astype(
            np.float32
        )
    out: Array = y.reshape(x.shape)
    return out


@kernel(OpKind.GROUP_NORM)
def group_norm(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    q, (s_in, z_in), (s_out, z_out) = unary_operands(op, args, arg_q, out_q)
    attrs = GroupNormAttrs.of(op)
    axis = attrs.axis % q.ndim
    c = q.shape[axis]
    if attrs.groups < 1 or c % attrs.groups:
        raise fail(op, f"{c} channels do not split into {attrs.groups} groups")
    if len(args) != 3 or any(t.dtype != np.float32 or t.size != c for t in args[1:]):
        raise fail(op, f"weight and bias must be float32 [{c}] (a CPU float op's constants)")
    x = dequantize_output(q, float(s_in), z_in)
    y = group_norm_f32(x, attrs.groups, axis, attrs.eps, args[1], args[2])
    return quantize_input(y, s_out, z_out)
