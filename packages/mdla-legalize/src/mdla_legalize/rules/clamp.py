"""CLAMP(x, lo, hi) with any bounds as ops the MDLA maps: a fused RELU, RELU6 or RELU1 clips at
0, [0, 6] or [-1, 1]; MUL and ADD by constants move the bounds there and back.

    lo = 0:        MUL(MUL(x, 6/hi) fused RELU6, hi/6)
    lo = -hi:      MUL(MUL(x, 1/hi) fused RELU1, hi)           (hi = 1: the one fused MUL)
    lo, hi:        ADD(MUL(ADD(MUL(x, 1/h), -m/h) fused RELU1, h), m),  m, h = mid, half-width
    lo only:       ADD(ADD(x, -lo) fused RELU, lo)
    hi only:       ADD(MUL(ADD(MUL(x, -1), hi) fused RELU, -1), hi)

Exact in float up to the rounding of the constants (a few ulp). In int8 each op requantizes to
its calibrated output, and the fused activation saturates at the bound the calibration saw,
bit-exact across the reference, the emulator and LiteRT like any fused MUL/ADD.
(RELU and RELU6 bounds themselves never reach here: the importer emits those ops.)
"""

from __future__ import annotations

import math

import numpy as np

from mdla_ir import Op, OpKind
from mdla_ir.attrs import ClampAttrs
from mdla_legalize.rules.base import Ctx, Rule, derive, pat

Step = tuple[OpKind, float, str]  # MUL or ADD by a constant, with a fused activation


def _steps(lo: float, hi: float) -> list[Step]:
    mul, add = OpKind.MUL, OpKind.ADD
    if math.isinf(lo) and math.isinf(hi):
        return [(mul, 1.0, "NONE")]
    if math.isinf(hi):
        return [(add, -lo, "RELU"), (add, lo, "NONE")]
    if math.isinf(lo):
        return [(mul, -1.0, "NONE"), (add, hi, "RELU"), (mul, -1.0, "NONE"), (add, hi, "NONE")]
    if lo == 0.0:
        return [(mul, 6.0 / hi, "RELU6"), (mul, hi / 6.0, "NONE")]
    if lo == -hi:
        return [(mul, 1.0 / hi, "RELU1")] + ([] if hi == 1.0 else [(mul, hi, "NONE")])
    m, h = (hi + lo) / 2.0, (hi - lo) / 2.0
    return [(mul, 1.0 / h, "NONE"), (add, -m / h, "RELU1"), (mul, h, "NONE"), (add, m, "NONE")]


def clamp_to_relus(op: Op, ctx: Ctx) -> list[Op] | None:
    """CLAMP(x, lo, hi) -> MUL/ADD by constants around a fused RELU, RELU6 or RELU1."""
    a = ClampAttrs.of(op)
    if a.hi == a.lo:  # a constant: x * 0 + lo
        steps: list[Step] = [(OpKind.MUL, 0.0, "NONE"), (OpKind.ADD, a.lo, "NONE")]
    else:
        steps = _steps(a.lo, a.hi)
    x, (y,) = op.inputs[0], op.outputs
    ops: list[Op] = []
    for i, (kind, value, fuse) in enumerate(steps):
        c = ctx.add_const(f"{op.name}.c{i}", np.array([value], np.float32))
        last = i == len(steps) - 1
        out = y if last else ctx.tensor(f"{y}.{i}", ctx.shape(x))
        ops.append(derive(op, "" if last else f"s{i}", kind, [x, c], [out], fuse=fuse))
        x = out
    return ops


CLAMP: list[Rule] = [
    (pat(OpKind.CLAMP), clamp_to_relus),  # CLAMP(x, lo, hi) -> MUL/ADD around a fused RELU*
]
