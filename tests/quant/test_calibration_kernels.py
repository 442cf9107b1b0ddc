"""Calibration's C kernels give the float interpreter's values bit for bit, and are used.

DEPTHWISE_CONV_2D (`mdla_quant.fast_kernels`, csrc/depthwise.c) against
`mdla_ir.interp.conv.depthwise_nhwc`: strides, dilations, kernel sizes, asymmetric padding,
a channel multiplier, a batch, with and without bias, and inputs holding -0.0, NaN, +-inf,
subnormals and values whose products round. LOGISTIC and HARD_SWISH (csrc/elementwise.c)
against the interpreter's on the whole float32 range, NaN payloads included.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from mdla_ir import OpKind, evaluate
from mdla_ir.interp.conv import depthwise_nhwc
from mdla_ir.interp.elementwise import sigmoid
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


def elementwise_operand(seed: int) -> np.ndarray:
    """Random values over the whole float32 range and near the kernels' bends, with -0.0,
    +-inf, subnormals, and quiet and signalling NaNs of both signs with payloads."""
    rng = np.random.default_rng(seed)
    specials = [0.0, -0.0, np.inf, -np.inf, 88.7, -88.7, 104.0, -104.0, 1e-40, -1e-40]
    bends = [-3.0, 3.0, -6.0, 6.0, np.nextafter(-3.0, 0), np.nextafter(3.0, 0)]
    nans = np.array([0x7FC01234, 0xFFC00042, 0x7F800001, 0xFF812345], np.uint32).view(np.float32)
    bits = rng.integers(0, 2**32, 20_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near = rng.standard_normal(200_001).astype(np.float32) * 6
    return np.concatenate([np.array(specials + bends, np.float32), nans, bits, near])


def hard_swish_definition(x: np.ndarray) -> np.ndarray:
    return np.asarray(x * np.clip(x + 3.0, 0.0, 6.0) / 6.0, dtype=np.float32)


ELEMENTWISE = [
    (fast_kernels.sigmoid_f32, sigmoid),
    (fast_kernels.hard_swish_f32, hard_swish_definition),
]


@pytest.mark.parametrize(("fast", "interpreter"), ELEMENTWISE)
def test_c_elementwise_is_the_interpreters(fast, interpreter) -> None:  # type: ignore[no-untyped-def]
    """Every value's bits (NaN payloads and signs too), on a strided view as a kernel may be
    given, on a 4-d tensor and on a 0-d one; the input is left as it was."""
    x = elementwise_operand(5)
    before = x.copy()
    with np.errstate(all="ignore"):
        for v in (x, x[::-3], x[:120_000].reshape(2, 20, 50, 60), np.asarray(x[-1])):
            got, want = fast(v), np.asarray(interpreter(v), dtype=np.float32)
            assert got.shape == want.shape
            assert got.dtype == np.float32
            assert got.tobytes() == want.tobytes()
    assert x.tobytes() == before.tobytes()


def tiny_activations() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.Hardswish(),
        torch.nn.Conv2d(8, 8, 3, padding=1, groups=8),
        torch.nn.SiLU(),
        torch.nn.Conv2d(8, 8, 1),
        torch.nn.Sigmoid(),
    ).eval()


def test_calibration_through_every_c_kernel_keeps_every_histogram(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model with HARD_SWISH, a depthwise conv, SiLU and a sigmoid (LOGISTIC): every kernel
    of `calibration_kernels()` runs, and every histogram is the interpreter's alone."""
    import mdla_ir
    import mdla_legalize

    graph = mdla_ir.from_torch(tiny_activations(), (torch.zeros(1, 3, 12, 12),), name="tiny")
    graph = mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5"))
    rng = np.random.default_rng(2)
    calib = [[rng.standard_normal((1, 3, 12, 12)).astype(np.float32) * 4] for _ in range(2)]
    kernels = fast_kernels.calibration_kernels()
    calls: set[OpKind] = set()

    def spying(kind, real):  # type: ignore[no-untyped-def]
        def spy(op, args, layout):  # type: ignore[no-untyped-def]
            calls.add(kind)
            return real(op, args, layout)

        return spy

    quantize_module = sys.modules["mdla_quant.quantize"]
    spies = {kind: spying(kind, fn) for kind, fn in kernels.items()}
    monkeypatch.setattr(quantize_module, "calibration_kernels", lambda: spies)
    fast, _ = calibrate(graph, calib)
    monkeypatch.setattr(quantize_module, "calibration_kernels", dict)
    slow, _ = calibrate(graph, calib)
    assert fast.keys() == slow.keys()
    for name, h in slow.items():
        f = fast[name]
        assert (f.lo, f.hi, f.zeros, f.radius) == (h.lo, h.hi, h.zeros, h.radius), name
        assert f.counts.tobytes() == h.counts.tobytes(), name
    assert calls == set(kernels) == {DEPTHWISE, OpKind.LOGISTIC, OpKind.HARD_SWISH}
