"""BATCH_MATMUL of two int8 activations (TFLite reference_ops BatchMatMul, int8), as a CPU
partition runs it (the emulator's csrc/kernels/k_batch_matmul.c, which the engine's cpu
partitions also run, computes the same):

    acc[b, i, j] = sum_k (lhs[b, i, k] - z_l) * (rhs[b, k, j] - z_r)      (int32, checked)
    d = (double)((float)s_l * (float)s_r) / (double)(float)s_out;  (M, s) = QuantizeMultiplier(d)
    out = clamp(MBQM(acc, M, s) + z_out, -128, 127)          (the manifest's rounding)

adj_x / adj_y transpose the last two axes of lhs / rhs first; batch axes broadcast as
np.matmul's, where one side's batch is 1 or both are equal.
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import MatmulAttrs
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, add_offset, mbqm, quantize_multiplier, saturate
from mdla_quant.kernels.conv import check_int32
from mdla_quant.kernels.registry import fail, int8_arg, kernel, per_tensor


def matmul_multiplier(s_l: np.float32, s_r: np.float32, s_out: np.float32) -> float:
    """TFLite's real multiplier: the float32 product of the input scales over the output's."""
    return float(np.float64(np.float32(s_l) * np.float32(s_r)) / np.float64(np.float32(s_out)))


@kernel(OpKind.BATCH_MATMUL)
def batch_matmul(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    lhs, rhs = int8_arg(op, args, 0), int8_arg(op, args, 1)
    adj = MatmulAttrs.of(op)
    if lhs.ndim < 2 or rhs.ndim < 2:
        raise fail(op, f"operands of rank >= 2 expected, got {lhs.shape} and {rhs.shape}")
    a = np.swapaxes(lhs, -1, -2) if adj.adj_x else lhs
    b = np.swapaxes(rhs, -1, -2) if adj.adj_y else rhs
    if a.shape[-1] != b.shape[-2]:
        raise fail(op, f"inner sizes differ: {a.shape} @ {b.shape}")
    s_l, z_l = per_tensor(op, arg_q[0], "lhs")
    s_r, z_r = per_tensor(op, arg_q[1], "rhs")
    s_out, z_out = per_tensor(op, out_q, "output")
    # Exact: |a - z_l| * |b - z_r| <= 2^16 per product, far fewer than 2^37 terms.
    acc = np.matmul(a.astype(np.float64) - z_l, b.astype(np.float64) - z_r).astype(np.int64)
    acc = check_int32(op, acc)
    m, s = quantize_multiplier(matmul_multiplier(s_l, s_r, s_out), rounding)
    return saturate(add_offset(mbqm(acc, m, s, rounding, accumulator), z_out, accumulator))
