"""Calibration's C kernels give the float interpreter's values bit for bit, and are used.

DEPTHWISE_CONV_2D (`mdla_quant.fast_kernels`, csrc/depthwise.c) against
`mdla_ir.interp.conv.depthwise_nhwc`: strides, dilations, kernel sizes, asymmetric padding,
a channel multiplier, a batch, with and without bias, and inputs holding -0.0, NaN, +-inf,
subnormals and values whose products round.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from mdla_ir import OpKind, evaluate
from mdla_ir.interp.conv import depthwise_nhwc
from mdla_quant import fast_kernels, native
from mdla_quant.quantize import calibrate
from tests.models import inputs_for, legalized

DEPTHWISE = OpKind.DEPTHWISE_CONV_2D

CASES = [
    # (n, h, w, c, mult, kh, kw, stride, dilation, padding)
    (1, 9, 11, 16, 1, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
    (2, 10, 7, 8, 1, 3, 3, (2, 2), (1, 1), (0, 1, 0, 1)),
    (1, 12, 12, 5, 1, 5, 5, (1, 2), (1, 1), (2, 2, 2, 2)),
    (1, 13, 9, 6, 1, 3, 3, (1, 1), (2, 2), (2, 2, 2, 2)),
    (1, 6, 6, 3, 2, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
    (1, 4, 4, 7, 1, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0)),
]


def operands(case: tuple, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n, h, w, c, mult, kh, kw = case[:7]
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, h, w, c)) * 3).astype(np.float32)
    flat = x.reshape(-1)
    flat[:6] = -0.0, np.nan, np.inf, -np.inf, 1e-42, -0.0
    wt = rng.standard_normal((1, kh, kw, c * mult)).astype(np.float32)
    wt.reshape(-1)[:2] = -0.0, 1e-30
    return x, wt, rng.standard_normal(c * mult).astype(np.float32)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_c_depthwise_is_the_interpreters(case: tuple, with_bias: bool) -> None:
    x, w, b = operands(case, len(CASES) + case[3])
    bias = b if with_bias else None
    stride, dilation, padding = case[7:]
    with np.errstate(invalid="ignore", over="ignore"):
        want = depthwise_nhwc(x, w, bias, stride, dilation, padding)
        got = fast_kernels.depthwise_f32(x, w, bias, stride, dilation, padding)
    assert got.shape == want.shape
    assert got.dtype == np.float32
    assert got.tobytes() == want.tobytes()


def test_calibration_uses_the_c_kernel_and_keeps_every_histogram(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mobilenet_v2's 17 depthwise layers through the C kernel: every activation's histogram,
    range and zero count the same as with the interpreter's kernels alone."""
    assert native.library() is not None
    graph, _ = legalized("mobilenet_v2")
    calib = inputs_for("mobilenet_v2", 2, seed=3)
    calls: list[str] = []
    real = fast_kernels.depthwise

    def spy(op, args, layout):  # type: ignore[no-untyped-def]
        calls.append(op.name)
        return real(op, args, layout)

    quantize_module = sys.modules["mdla_quant.quantize"]  # (mdla_quant.quantize: the function)
    monkeypatch.setattr(quantize_module, "calibration_kernels", lambda: {DEPTHWISE: spy})
    fast, _ = calibrate(graph, calib)
    monkeypatch.setattr(quantize_module, "calibration_kernels", dict)
    slow, _ = calibrate(graph, calib)
    assert len(calls) == 2 * sum(op.kind is DEPTHWISE for op in graph.ops) > 0
    assert fast.keys() == slow.keys()
    for name, h in slow.items():
        f = fast[name]
        assert (f.lo, f.hi, f.zeros, f.radius) == (h.lo, h.hi, h.zeros, h.radius), name
        assert f.counts.tobytes() == h.counts.tobytes(), name


def test_a_kernel_override_is_what_evaluate_runs() -> None:
    graph, _ = legalized("mobilenet_v2")
    x = inputs_for("mobilenet_v2", 1, seed=1)[0]
    seen: list[OpKind] = []

    def relu6(op, args, layout):  # type: ignore[no-untyped-def]
        seen.append(op.kind)
        return [np.clip(args[0], 0, 6)]

    evaluate(graph, x, kernels={OpKind.RELU6: relu6, OpKind.RELU: relu6})
    kinds = {op.kind for op in graph.ops} & {OpKind.RELU6, OpKind.RELU}
    assert len(seen) == sum(op.kind in kinds for op in graph.ops)


def test_without_the_library_calibration_keeps_the_interpreters_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fast_kernels, "library", lambda: None)
    assert fast_kernels.calibration_kernels() == {}
    x, w, b = operands(CASES[0], 1)
    with np.errstate(invalid="ignore", over="ignore"):
        got = fast_kernels.depthwise_f32(x, w, b, (1, 1), (1, 1), (1, 1, 1, 1))
        want = depthwise_nhwc(x, w, b, (1, 1), (1, 1), (1, 1, 1, 1))
    assert got.tobytes() == want.tobytes()
