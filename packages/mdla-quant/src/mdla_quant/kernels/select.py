"""SELECT (x, y, a, b), int8, as a CPU partition runs it (torch.where(x > y, a, b) of tensors
the model computes; the MDLA has no comparison or select). Every operand has its own scale and
zero point; the output has its own (calibrated). Per element:

    fx = float32(x - zx) * float32(sx),  fy likewise     (float32, as the engine computes)
    out = held(fx compare fy) ? ta[a + 128] : tb[b + 128]

where ta, the branch's requantization to the output, is a 256-entry table:

    v = float32(float32(c - za) * float32(sa)) / float32(s_out)     (float32 each step)
    ta[c + 128] = clamp(round_half_away(v) + z_out, -128, 127)

so a branch with the output's scale and zero point is copied unchanged. The engine's cpu
device computes the same (csrc/cpu/select.c).
"""

from __future__ import annotations

import numpy as np

from mdla_ir.attrs import COMPARES, SelectAttrs
from mdla_ir.functions import COMPARES as COMPARE_FNS
from mdla_ir.graph import Op, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant.arith import Array, saturate
from mdla_quant.kernels.registry import fail, int8_arg, kernel, per_tensor


def requantize_table(scale: np.float32, zero: int, s_out: np.float32, z_out: int) -> Array:
    """The 256 int8 codes of a branch at (scale, zero) as the output's (module docstring)."""
    codes = np.arange(-128, 128, dtype=np.int32)
    v = ((codes - zero).astype(np.float32) * scale) / s_out
    wide = v.astype(np.float64)  # exact: the rounding of a float32 value, as C's roundf
    rounded = np.sign(wide) * np.floor(np.abs(wide) + 0.5)
    return saturate(rounded.astype(np.int64) + z_out)


def _real(x: Array, q: tuple[np.float32, int]) -> Array:
    return (x.astype(np.int32) - q[1]).astype(np.float32) * q[0]


@kernel(OpKind.SELECT)
def select(
    op: Op,
    args: list[Array],
    arg_q: list[QuantParams | None],
    out_q: QuantParams,
    rounding: str,
    accumulator: str,
) -> Array:
    names = ("x", "y", "a", "b")
    xs = [int8_arg(op, args, i) for i in range(4)]
    if any(v.shape != xs[0].shape for v in xs):
        raise fail(op, f"x, y, a, b differ in shape: {[list(v.shape) for v in xs]}")
    qs = [per_tensor(op, arg_q[i], names[i]) for i in range(4)]
    s_out, z_out = per_tensor(op, out_q, "output")
    compare = SelectAttrs.of(op).compare
    if compare not in COMPARES:
        raise fail(op, f"compare {compare!r} is not one of {COMPARES}")
    held = COMPARE_FNS[compare](_real(xs[0], qs[0]), _real(xs[1], qs[1]))
    ta, tb = (requantize_table(*qs[i], s_out, z_out) for i in (2, 3))
    a, b = (xs[i].astype(np.int32) + 128 for i in (2, 3))
    return np.where(held, ta[a], tb[b]).astype(np.int8)
