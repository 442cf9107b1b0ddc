"""rounding="single" (TFLITE_SINGLE_ROUNDING) against independent scalar re-statements.

LiteRT's reference kernels are built with double rounding, so the single-rounding mode is checked
against straightforward Python-integer implementations of the same equations written here:
QuantizeMultiplier with math.frexp, MBQM = (x*M + 2^(30-s)) >> (31-s), convolution by explicit
tap skipping (not padding), elementwise formulas one element at a time.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from mdla_ir.builders import as_floats, random_codes, random_qgraph
from mdla_ir.graph import Graph, QuantParams
from mdla_ir.ops import OpKind
from mdla_ir.provenance import QuantRecord
from mdla_quant import run_int8
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes

CASES = 120


def qm(d: float) -> tuple[int, int]:
    """QuantizeMultiplier of the single-rounding build, in Python integers."""
    if d == 0:
        return 0, 0
    q, s = math.frexp(d)
    m = math.floor(q * 2**31 + 0.5)
    if m == 2**31:
        m, s = 2**30, s + 1
    if s < -31:
        return 0, 0
    if s > 30:
        return 2**31 - 1, 30
    return m, s


def mbqm(x: int, m: int, s: int) -> int:
    return (x * m + (1 << (30 - s))) >> (31 - s)


def f32(v: float) -> float:
    return float(np.float32(v))


def sq(q: QuantParams | None) -> tuple[float, int]:
    assert q is not None
    return f32(q.scale[0]), int(q.zero_point[0])


def act_range(g: Graph, fuse: str | None = None) -> tuple[int, int]:
    s, z = sq(g.tensors["out"].quant)
    fuse = fuse or g.ops[0].fuse

    def q(v: float) -> int:
        r = float(np.float32(v) / np.float32(s))
        return z + int(math.copysign(math.floor(abs(r) + 0.5), r))

    lo, hi = {
        "NONE": (-128, 127),
        "RELU": (q(0), 127),
        "RELU6": (q(0), q(6)),
        "RELU1": (q(-1), q(1)),
    }[fuse]
    return max(lo, -128), min(hi, 127)


def clamp(v: int, lo: int = -128, hi: int = 127) -> int:
    return min(max(v, lo), hi)


def conv_like(g: Graph, x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED with per-channel single rounding."""
    op, t = g.ops[0], g.tensors
    w = t["w"].data
    assert w is not None
    s_in, z_in = sq(t["x"].quant)
    s_out, z_out = sq(t["out"].quant)
    w_q = t["w"].quant
    assert w_q is not None
    bias = t["bias"].data if "bias" in t else None
    out = np.zeros(t["out"].shape, np.int64)
    xi, wi = x.astype(np.int64) - z_in, w.astype(np.int64)
    if op.kind is OpKind.FULLY_CONNECTED:
        acc = xi @ wi.T
    else:
        (sh, sw), (dh, dw), (pt, _, pl, _) = (
            op.attrs.stride,
            op.attrs.dilation,
            op.attrs.padding,
        )
        _, oh, ow, oc = out.shape
        acc = np.zeros(out.shape, np.int64)
        kh, kw = w.shape[1:3]
        mult = oc // x.shape[3]
        for oy in range(oh):
            for ox in range(ow):
                for i in range(kh):
                    for j in range(kw):
                        iy, ix = oy * sh + i * dh - pt, ox * sw + j * dw - pl
                        if not (0 <= iy < x.shape[1] and 0 <= ix < x.shape[2]):
                            continue  # taps outside the image are skipped
                        if op.kind is OpKind.CONV_2D:
                            acc[:, oy, ox] += xi[:, iy, ix] @ wi[:, i, j].T
                        else:
                            acc[:, oy, ox] += np.repeat(xi[:, iy, ix], mult, -1) * wi[0, i, j]
    lo, hi = act_range(g)
    flat_acc, flat_out = acc.reshape(-1, acc.shape[-1]), out.reshape(-1, out.shape[-1])
    for c in range(acc.shape[-1]):
        ws = f32(w_q.scale[c] if len(w_q.scale) > 1 else w_q.scale[0])
        m, s = qm(s_in * ws / s_out)
        for r in range(flat_acc.shape[0]):
            a = int(flat_acc[r, c]) + (int(bias[c]) if bias is not None else 0)
            flat_out[r, c] = clamp(mbqm(a, m, s) + z_out, lo, hi)
    return out


def elementwise(g: Graph, xs: list[np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    """ADD, SUB, MUL, RELU, RELU6 element by element."""
    op, t = g.ops[0], g.tensors
    s_out, z_out = sq(t["out"].quant)
    lo, hi = act_range(g)
    if op.kind in (OpKind.RELU, OpKind.RELU6):
        s_in, z_in = sq(t["x"].quant)
        m, s = qm(f32(s_in / s_out))
        lo = max(-128, z_out)
        hi = 127 if op.kind is OpKind.RELU else min(127, act_range(g, "RELU6")[1])
        return np.vectorize(lambda v: clamp(z_out + mbqm(int(v) - z_in, m, s), lo, hi))(xs[0])
    (s1, z1), (s2, z2) = sq(t["x"].quant), sq(t["y"].quant)
    a, b = np.broadcast_arrays(xs[0], xs[1] if len(xs) > 1 else t["y"].data)
    if op.kind is OpKind.MUL:
        m, s = qm(s1 * s2 / s_out)

        def fn(u: int, v: int) -> int:
            return clamp(mbqm((u - z1) * (v - z2), m, s) + z_out, lo, hi)

    else:
        twice = 2 * max(s1, s2)
        (m1, e1), (m2, e2) = qm(s1 / twice), qm(s2 / twice)
        mo, eo = qm(twice / (2**20 * s_out))
        sign = 1 if op.kind is OpKind.ADD else -1

        def fn(u: int, v: int) -> int:
            a = mbqm((u - z1) << 20, m1, e1)
            b = mbqm((v - z2) << 20, m2, e2)
            return clamp(mbqm(a + sign * b, mo, eo) + z_out, lo, hi)

    return np.vectorize(lambda u, v: fn(int(u), int(v)))(a, b)


def mean(g: Graph, x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    op, t = g.ops[0], g.tensors
    (s_in, z_in), (s_out, z_out) = sq(t["x"].quant), sq(t["out"].quant)
    axes = tuple(op.attrs.axes)
    n = math.prod(x.shape[a] for a in axes)
    m, s = qm(s_in / s_out)
    k = min(n.bit_length() - 1, 32, 31 + s)
    m, s = (m << k) // n, s - k
    sums = x.astype(np.int64).sum(axis=axes, keepdims=op.attrs.keepdims)
    return np.vectorize(lambda v: clamp(mbqm(int(v) - z_in * n, m, s) + z_out))(sums)


REFERENCES = {
    OpKind.CONV_2D: conv_like,
    OpKind.DEPTHWISE_CONV_2D: conv_like,
    OpKind.FULLY_CONNECTED: conv_like,
    OpKind.MEAN: mean,
}


@pytest.mark.parametrize(
    "kind",
    [
        OpKind.CONV_2D,
        OpKind.DEPTHWISE_CONV_2D,
        OpKind.FULLY_CONNECTED,
        OpKind.ADD,
        OpKind.SUB,
        OpKind.MUL,
        OpKind.RELU,
        OpKind.RELU6,
        OpKind.MEAN,
    ],
    ids=lambda k: k.name,
)
def test_single_rounding_matches_scalar_formula(kind: OpKind) -> None:
    rng = np.random.default_rng(3000 + kind.value)
    bad = total = 0
    for _ in range(CASES):
        g = random_qgraph(kind, rng)
        codes = random_codes(g, rng)
        ours = run_int8(g, as_floats(g, codes), raw=True, rounding="single")[0]
        fn = REFERENCES.get(kind)
        want = fn(g, codes[0]) if fn is not None else elementwise(g, codes)
        assert ours.shape == want.shape
        bad += int(np.count_nonzero(ours != want))
        total += ours.size
    assert total > 5 * CASES
    assert bad == 0, f"{kind.name}: {bad} of {total} elements differ"


def test_graph_provenance_selects_single_rounding() -> None:
    rng = np.random.default_rng(5)
    g = random_qgraph(OpKind.MUL, rng)
    codes = random_codes(g, rng)
    floats = as_floats(g, codes)
    prov = dataclasses.replace(g.provenance, quant=QuantRecord(rounding="single"))
    single = g.with_(provenance=prov)
    assert np.array_equal(
        run_int8(single, floats, raw=True)[0], run_int8(g, floats, raw=True, rounding="single")[0]
    )


@pytest.mark.parametrize("kind", [OpKind.CONV_2D, OpKind.MUL, OpKind.MEAN], ids=lambda k: k.name)
def test_litert_reference_tells_the_roundings_apart(kind: OpKind) -> None:
    """The oracle is sensitive: single rounding disagrees with LiteRT's double somewhere."""
    rng = np.random.default_rng(4000 + kind.value)
    single_bad = double_bad = 0
    for _ in range(300):
        g = random_qgraph(kind, rng)
        codes = random_codes(g, rng)
        theirs = run_tflite_reference(tflite_bytes(g), codes)[0]
        floats = as_floats(g, codes)
        single_bad += int(
            np.count_nonzero(run_int8(g, floats, raw=True, rounding="single")[0] != theirs)
        )
        double_bad += int(np.count_nonzero(run_int8(g, floats, raw=True)[0] != theirs))
    assert double_bad == 0
    assert single_bad > 0
