"""Scale floors: the smallest activation scales TFLite's converter writes and LiteRT loads.

A calibrated range can be degenerate (a random-init layer whose outputs are all ~1e-7, a
residual branch that cancels): its scale (hi - lo) / 255 then breaks LiteRT's Prepare, which
refuses or aborts on three conditions (measured on ai-edge-litert 2.3.0, BUILTIN_REF):

    fused RELU6/RELU1   roundf(6 / s_out) must fit int32 (kernel_util.cc:
                        `no_integer_overflow_from_quantization`): s_out > 6 / 2^31 = 2.79e-9
    ADD, SUB            2 max(s1, s2) / (2^20 s_out) < 1 (QuantizeMultiplierSmallerThanOneExp;
                        a CHECK: the process aborts)
    SOFTMAX             beta s_in 2^26 > 1 (QuantizeMultiplierGreaterThanOne; aborts)

TFLite's converter widens every range narrower than kNearZeroTolerance = 1e-6 to at least
[-5e-7, 5e-7] (`expand_tiny_range`), so its scales are >= 1e-6 / 255 = 3.9e-9, which clears the
fused-activation bound (6 / 3.9e-9 = 1.5e9 < 2^31). The other two are bounds between tensors,
which the converter leaves alone; `scale_floors` gives them, and the quantizer raises the scale
of a tensor (with its tie group) to its floor. Raising a scale only widens a range: every value
the calibration saw stays representable, the op's int8 arithmetic is unchanged in form.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mdla_ir import Graph, OpKind
from mdla_ir.attrs import SoftmaxAttrs

NEAR_ZERO = 1.0e-6  # TFLite converter's kNearZeroTolerance
ADD_LEFT_SHIFT = 20  # TFLite's int8 ADD/SUB input shift
SOFTMAX_BITS = 26  # 31 - kScaledDiffIntegerBits (5): SOFTMAX's input multiplier scaling


def expand_tiny_range(lo: float, hi: float) -> tuple[float, float]:
    """The converter's rule for a (zero-containing) range: kept when hi - lo > 1e-6, else
    widened to [min(lo, -5e-7), max(hi, 5e-7)]. An empty range (hi == lo) is left to the
    caller (the quantizer gives it scale 1/255)."""
    if hi - lo > NEAR_ZERO or hi == lo:
        return lo, hi
    return min(lo, -NEAR_ZERO / 2), max(hi, NEAR_ZERO / 2)


def float32_above(ok: Callable[[float], bool], start: float) -> float:
    """The smallest float32 s >= float32(start) with ok(s) (ok is monotone in s)."""
    s = np.float32(start)
    while not ok(float(s)):
        s = np.nextafter(s, np.float32(np.inf))
    return float(s)


def add_output_floor(s1: float, s2: float) -> float:
    """The smallest float32 output scale of ADD/SUB whose output multiplier is < 1, computed
    as LiteRT's Prepare does: twice = 2 max(s1, s2) in double, twice / (2^20 s_out)."""
    twice = 2.0 * max(float(np.float32(s1)), float(np.float32(s2)))
    return float32_above(lambda s: twice / (2.0**ADD_LEFT_SHIFT * s) < 1.0, twice / 2**20)


def softmax_input_floor(beta: float) -> float:
    """The smallest float32 input scale of SOFTMAX with beta s_in 2^26 > 1 (in double)."""
    b = float(np.float32(beta))
    return float32_above(lambda s: b * s * 2.0**SOFTMAX_BITS > 1.0, 1.0 / (b * 2**SOFTMAX_BITS))


def scale_floors(graph: Graph, scale: Callable[[str], float]) -> dict[str, float]:
    """Tensor -> the smallest scale LiteRT accepts for it, given the current `scale(name)` of
    every activation: ADD/SUB outputs and SOFTMAX inputs (fused bounds: `expand_tiny_range`)."""
    floors: dict[str, float] = {}

    def need(name: str, floor: float) -> None:
        floors[name] = max(floors.get(name, 0.0), floor)

    for op in graph.ops:
        if op.kind in (OpKind.ADD, OpKind.SUB):
            s1, s2 = (scale(n) for n in op.inputs[:2])
            need(op.outputs[0], add_output_floor(s1, s2))
        elif op.kind is OpKind.SOFTMAX:
            need(op.inputs[0], softmax_input_floor(SoftmaxAttrs.of(op).beta))
    return floors
