"""The int8 reference's fast paths against the definitions they rearrange, bit for bit.

- `kernels/requant.py` (fused MBQM + offset + clamp) against `arith.mbqm`/`add_offset`/clamp on
  ties, signs, INT32 extremes, e = 0 / e > 0 / left shifts, mixed channels, both roundings;
- `kernels/plan.py` (float32 BLAS on raw codes, split tap ranges, float64, blocks, stride
  phases) against the int64 accumulator run through `conv.requantize`;
- `kernels/tables.py` (256 / 256 x 256 tables) against the formula kernels on every code;
- `kernels/memo.py`: a weight written in place between two runs is seen.
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

from mdla_ir.attrs import ConvAttrs
from mdla_ir.builders import act, as_floats, const, qp, single_op_qgraph
from mdla_ir.graph import Graph, QuantParams
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from mdla_quant.arith import INT32_MAX, add_offset, mbqm, quantize_multiplier
from mdla_quant.kernels.add import add_sub_formula
from mdla_quant.kernels.conv import requantize
from mdla_quant.kernels.hard_swish import hard_swish_formula
from mdla_quant.kernels.lut import lut_activation_formula
from mdla_quant.kernels.memo import SMALL_BYTES, cache_size, memo, words
from mdla_quant.kernels.mul import mul_formula
from mdla_quant.kernels.plan import FLOAT32_EXACT, MAX_SPLITS, build_plan, tap_ranges
from mdla_quant.kernels.registry import INT8_KERNELS, spatial_pad, windows
from mdla_quant.kernels.relu import relu_formula
from mdla_quant.kernels.requant import Requant
from mdla_quant.kernels.resize_bilinear import _axis
from mdla_quant.kernels.tables import CODES, MIN_BINARY_TABLE

Array = np.ndarray[Any, Any]


# --- the fused requantization ------------------------------------------------------------


Case = tuple[Array, Array, Array, str, str]  # acc, m, s, rounding, accumulator


def _definition(case: Case, z: int, lo: int, hi: int) -> Array:
    acc, m, s, rounding, accumulator = case
    out = add_offset(mbqm(acc, m, s, rounding, accumulator), z, accumulator)
    return np.clip(out, lo, hi).astype(np.int8)


def _fused(case: Case, z: int, lo: int, hi: int) -> Array:
    acc, m, s, rounding, accumulator = case
    c = acc.shape[-1]
    bound = np.abs(acc).max(axis=0)
    zeros = np.zeros(c, np.int64)
    rq = Requant.build(m, s, zeros, bound, bound, rounding, z, (lo, hi), accumulator)
    assert rq is not None
    out = np.empty(acc.shape, np.int8)
    rq.apply(acc.astype(np.float64), out, _scratch(acc.shape))
    return out


def _scratch(shape: tuple[int, ...]) -> tuple[Array, Array, Array]:
    return np.empty(shape, np.int64), np.empty(shape, np.int32), np.empty(shape, np.int32)


def _edge_accumulators(rng: np.random.Generator, channels: int) -> Array:
    """Ties of both roundings, both signs, small and int32-extreme values, per channel."""
    small = np.arange(-4100, 4100, dtype=np.int64)
    big = np.array([INT32_MAX, -INT32_MAX, INT32_MAX - 1, -(2**30), 2**30, -(2**30) - 1], np.int64)
    rand = rng.integers(-(2**31) + 1, 2**31, size=4000)
    col = np.concatenate([small, big, rand, -rand])
    return np.repeat(col[:, None], channels, axis=1)


@pytest.mark.parametrize("accumulator", ["saturate", "wrap"])
@pytest.mark.parametrize("rounding", ["double", "single"])
def test_fused_requant_is_mbqm_on_edge_values(rounding: str, accumulator: str) -> None:
    rng = np.random.default_rng(7)
    # M = 2^30 makes every tie exact: e = 0, 1, 2, 5, 12, 31; random M; left shifts s = 1, 3
    m = np.array([2**30] * 6 + [1518500250, 1073741824 + 12345, 2**31 - 1, 2**30], np.int64)
    s = np.array([0, -1, -2, -5, -12, -31, -7, -20, 1, 3], np.int64)
    acc = _edge_accumulators(rng, len(m))
    acc[:, 8] = np.clip(acc[:, 8], -(2**30) + 1, 2**30 - 1)  # x * 2^s must stay in int32
    acc[:, 9] = np.clip(acc[:, 9], -(2**28) + 1, 2**28 - 1)
    acc[:, 5] = np.clip(acc[:, 5], -(2**31) + 2, 2**31 - 2)  # v + 2^30 stays in int32
    if rounding == "single":  # s > 0 with a large M leaves int32 (then the fused form declines)
        m, s = m[:8], s[:8]
        acc = acc[:, :8]
    if accumulator == "wrap":  # |out + z| near 2^31 would wrap: the fused form declines
        acc = np.clip(acc, -(2**29), 2**29)
    for z, lo, hi in [(0, -128, 127), (-128, -128, 127), (127, -128, 127), (5, -3, 90)]:
        case = (acc, m, s, rounding, accumulator)
        assert np.array_equal(_fused(case, z, lo, hi), _definition(case, z, lo, hi)), (z, lo, hi)


def test_fused_requant_declines_what_it_cannot_prove() -> None:
    one = np.ones(1, np.int64)
    args = (np.array([2**30]), np.array([-3]), np.zeros(1, np.int64))
    assert Requant.build(*args, one * INT32_MAX, one, "double", 0, (-128, 127)) is not None
    # |acc| could reach 2^31: the int32 accumulator's wrap or saturation would decide
    assert Requant.build(*args, one * 2**31, one, "double", 0, (-128, 127)) is None
    # x * 2^s could leave int32
    shifted = (np.array([2**30]), np.array([2]), np.zeros(1, np.int64))
    assert Requant.build(*shifted, one * 2**30, one, "double", 0, (-128, 127)) is None
    assert Requant.build(*shifted, one * (2**29 - 1), one, "double", 0, (-128, 127)) is not None
    # RDBPOT's v + 2^(e-1) would leave int32 (e = 31, v = 2^30)
    e31 = (np.array([2**30]), np.array([-31]), np.zeros(1, np.int64))
    assert Requant.build(*e31, one * INT32_MAX, one, "double", 0, (-128, 127)) is None
    assert Requant.build(*e31, one * (INT32_MAX - 1), one, "double", 0, (-128, 127)) is not None


def test_quantize_multiplier_channels_agree_after_fusion() -> None:
    """Real multipliers of real layers (1e-5 .. 4), random accumulators, a random offset."""
    rng = np.random.default_rng(3)
    real = np.exp(rng.uniform(np.log(1e-5), np.log(4.0), size=64))
    m, s = quantize_multiplier(real)
    acc = rng.integers(-(2**20), 2**20, size=(3000, 64))
    off = rng.integers(-(2**24), 2**24, size=64)
    full = acc + off
    bound = np.abs(full).max(axis=0) + 1
    rq = Requant.build(m, s, off, bound, np.abs(acc).max(axis=0), "double", -7, (-128, 127))
    assert rq is not None
    out = np.empty(acc.shape, np.int8)
    rq.apply(acc.astype(np.float32), out, _scratch(acc.shape))
    assert np.array_equal(out, _definition((full, m, s, "double", "saturate"), -7, -128, 127))


# --- the blocked convolutions ------------------------------------------------------------


def _conv_graph(
    kind: OpKind,
    rng: np.random.Generator,
    n: int,
    hw: tuple[int, int],
    c: int,
    o: int,
    k: int,
    stride: tuple[int, int],
    dil: int,
    pad: tuple[int, int, int, int],
    w_max: int = 127,
    fuse: str = "NONE",
) -> Graph:
    h, w = hw
    in_q = qp(0.05, int(rng.integers(-128, 128)))
    if kind is OpKind.CONV_2D:
        shape, dim, channels, attrs = (o, k, k, c), 0, o, dict[str, Any](groups=1)
    else:
        shape, dim, channels, attrs = (1, k, k, c * (o // c)), 3, o, {"multiplier": o // c}
    wt = rng.integers(-w_max, w_max + 1, size=shape).astype(np.int8)
    ws = np.exp(rng.uniform(np.log(1e-3), np.log(0.05), size=channels)).astype(np.float32)
    bias = rng.integers(-50000, 50000, size=channels).astype(np.int32)
    oh = (h + pad[0] + pad[1] - dil * (k - 1) - 1) // stride[0] + 1
    ow = (w + pad[2] + pad[3] - dil * (k - 1) - 1) // stride[1] + 1
    taps = k * k * (c if kind is OpKind.CONV_2D else 1)
    out_q = qp(float(np.sqrt(taps) * 60 * w_max * 0.05 * np.median(ws)) / 40, 3)
    attrs |= {"stride": stride, "dilation": (dil, dil), "padding": pad, "fuse": fuse}
    ins = [
        act("x", (n, h, w, c), in_q),
        const("w", wt, qp(ws, 0, dim)),
        const("bias", bias, qp(np.float32(0.05) * ws, 0, 0)),
    ]
    return single_op_qgraph(kind, ins, (n, oh, ow, o), out_q, attrs)


def _definition_conv(g: Graph, x: Array, rounding: str, accumulator: str) -> Array:
    """The int64 accumulator sum w * (x - z_in), then `conv.requantize` (the definition)."""
    op = g.ops[0]
    a = ConvAttrs.of(op)
    w, q = g.tensors["w"].data, [g.tensors[n].quant for n in op.inputs]
    assert w is not None
    assert q[0] is not None
    z_in = q[0].zero_point[0]
    xp = spatial_pad(x, a.padding, z_in).astype(np.int64) - z_in
    if op.kind is OpKind.DEPTHWISE_CONV_2D:
        xp = np.repeat(xp, w.shape[3] // x.shape[3], axis=3)
        win = windows(xp, w.shape[1:3], a.stride, a.dilation)  # (N, OH, OW, C, KH, KW)
        acc = np.einsum("nyxcij,ijc->nyxc", win, w[0].astype(np.int64))
    else:
        win = windows(xp, w.shape[1:3], a.stride, a.dilation)
        acc = np.einsum("nyxcij,oijc->nyxo", win, w.astype(np.int64))
    args = [x, w, g.tensors["bias"].data]
    out_q = g.tensors["out"].quant
    assert out_q is not None
    return requantize(op, acc, args, q, out_q, rounding, accumulator)  # type: ignore[arg-type]


def _check_conv(g: Graph, rng: np.random.Generator) -> None:
    x = rng.integers(-128, 128, size=g.tensors["x"].shape).astype(np.int8)
    for rounding in ("double", "single"):
        for accumulator in ("saturate", "wrap"):
            (got,) = run_int8(
                g, as_floats(g, [x]), raw=True, rounding=rounding, accumulator=accumulator
            )
            want = _definition_conv(g, x, rounding, accumulator)
            assert np.array_equal(got, want), (g.ops[0].kind, rounding, accumulator)


CONV_CASES = [  # (n, hw, c, o, k, stride, dilation, padding)
    (1, (9, 23), 5, 7, 3, (1, 1), 1, (1, 1, 1, 1)),  # a 3x3 im2col
    (2, (12, 10), 16, 9, 1, (1, 1), 1, (0, 0, 0, 0)),  # 1x1, two images
    (1, (15, 14), 6, 4, 3, (2, 2), 2, (2, 0, 1, 2)),  # stride 2, dilation 2, asymmetric pad
    (1, (40, 70), 8, 12, 3, (2, 1), 1, (1, 1, 1, 1)),  # several blocks of rows
]


@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv_matches_the_int64_definition(case: tuple[Any, ...]) -> None:
    rng = np.random.default_rng(11)
    _check_conv(_conv_graph(OpKind.CONV_2D, rng, *case, fuse="RELU6"), rng)


@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_depthwise_matches_the_int64_definition(case: tuple[Any, ...]) -> None:
    rng = np.random.default_rng(12)
    n, hw, c, _, k, stride, dil, pad = case
    for mult in (1, 2):
        g = _conv_graph(OpKind.DEPTHWISE_CONV_2D, rng, n, hw, c, c * mult, k, stride, dil, pad)
        _check_conv(g, rng)


def test_large_filters_split_their_taps_or_use_float64() -> None:
    """128 * sum|w| above 2^24: float32 over tap ranges (exact each), or one float64 GEMM."""
    rng = np.random.default_rng(5)
    for c, splits in ((300, 2), (1200, None)):  # 2700 and 10800 taps of |w| ~ 64
        g = _conv_graph(OpKind.CONV_2D, rng, 1, (5, 6), c, 6, 3, (1, 1), 1, (1, 1, 1, 1))
        w = g.tensors["w"].data
        assert w is not None
        ranges = tap_ranges(np.abs(w.reshape(6, -1).T.astype(np.int64)), FLOAT32_EXACT // 128)
        if splits is None:
            assert ranges is None  # more than MAX_SPLITS: float64
        else:
            assert ranges is not None
            assert 1 < len(ranges) <= MAX_SPLITS
        _check_conv(g, rng)


def test_large_depthwise_filters_use_float64() -> None:
    """A depthwise conv sums every tap in one accumulator: past 2^24 it needs float64."""
    rng = np.random.default_rng(6)
    g = _conv_graph(OpKind.DEPTHWISE_CONV_2D, rng, 1, (48, 49), 2, 2, 47, (1, 1), 1, (0, 0, 0, 0))
    w = g.tensors["w"].data
    assert w is not None
    assert 128 * int(np.abs(w.astype(np.int64)).sum(axis=(0, 1, 2)).max()) > FLOAT32_EXACT
    m, s = quantize_multiplier(np.array([0.001, 0.001]))
    plan = build_plan(w[0], None, 0, (m, s), "double", 0, (-128, 127), splittable=False)
    assert plan.weights.dtype == np.float64
    _check_conv(g, rng)


def test_tap_ranges_bound_every_channel() -> None:
    abs_w = np.array([[100, 1], [100, 1], [1, 100], [1, 100], [50, 50]], np.int64)
    assert tap_ranges(abs_w, 200) == ((0, 2), (2, 4), (4, 5))
    assert tap_ranges(abs_w, 10_000) == ((0, 5),)
    assert tap_ranges(abs_w, 100) is None  # five ranges > MAX_SPLITS
    assert tap_ranges(np.full((4, 1), 100, np.int64), 100) == ((0, 1), (1, 2), (2, 3), (3, 4))
    assert tap_ranges(np.full((2, 1), 101, np.int64), 100) is None  # one tap alone is too big


def test_plan_falls_back_where_int32_could_overflow() -> None:
    """A bias near 2^31: the fused form declines; the definition (its error) decides."""
    w = np.full((9, 2), 127, np.int8)
    m, s = quantize_multiplier(np.array([0.01, 0.01]))
    plan = build_plan(w, np.array([2**31 - 100, 0], np.int32), 0, (m, s), "double", 0, (-128, 127))
    assert plan.requant is None
    plan = build_plan(w, np.array([1000, 0], np.int32), 0, (m, s), "double", 0, (-128, 127))
    assert plan.requant is not None
    assert plan.weights.dtype == np.float32


def test_weights_written_in_place_are_seen() -> None:
    rng = np.random.default_rng(9)
    g = _conv_graph(OpKind.CONV_2D, rng, 1, (6, 6), 4, 5, 3, (1, 1), 1, (1, 1, 1, 1))
    x = rng.integers(-128, 128, size=g.tensors["x"].shape).astype(np.int8)
    (before,) = run_int8(g, as_floats(g, [x]), raw=True)
    w = g.tensors["w"].data
    assert w is not None
    w[...] = -w
    (after,) = run_int8(g, as_floats(g, [x]), raw=True)
    assert np.array_equal(after, _definition_conv(g, x, "double", "saturate"))
    assert not np.array_equal(before, after)


# --- the tables ------------------------------------------------------------------------


def _binary_graph(kind: OpKind, rng: np.random.Generator, shapes: tuple[Any, Any]) -> Graph:
    q1, q2 = qp(float(rng.uniform(0.01, 0.2)), -20), qp(float(rng.uniform(0.01, 0.2)), 33)
    out_q = qp(float(rng.uniform(0.01, 0.3)), int(rng.integers(-50, 50)))
    out = np.broadcast_shapes(*shapes)
    ins = [act("a", shapes[0], q1), act("b", shapes[1], q2)]
    return single_op_qgraph(kind, ins, out, out_q, {"fuse": "RELU"})


@pytest.mark.parametrize("kind", [OpKind.ADD, OpKind.SUB, OpKind.MUL], ids=lambda k: k.name)
def test_binary_tables_are_the_formula(kind: OpKind) -> None:
    rng = np.random.default_rng(kind.value)
    formula = mul_formula if kind is OpKind.MUL else add_sub_formula
    # every code pair, then a broadcast (an SE block's per-channel scale) and a small output
    pairs = (CODES.repeat(256).reshape(1, 256, 256, 1), np.tile(CODES, 256).reshape(1, 256, 256, 1))
    cases = [
        (pairs, ((1, 256, 256, 1), (1, 256, 256, 1))),
        (None, ((1, 20, 30, 64), (1, 1, 1, 64))),
        (None, ((1, 4, 4, 8), (1, 4, 4, 8))),
    ]
    for given, shapes in cases:
        g = _binary_graph(kind, rng, shapes)
        xs = given or tuple(rng.integers(-128, 128, size=s).astype(np.int8) for s in shapes)
        q = [g.tensors[n].quant for n in g.ops[0].inputs]
        out_q = g.tensors["out"].quant
        assert out_q is not None
        for rounding in ("double", "single"):
            for accumulator in ("saturate", "wrap"):
                args = [np.asarray(x) for x in xs]
                got = INT8_KERNELS[kind](g.ops[0], args, q, out_q, rounding, accumulator)
                want = formula(g.ops[0], args, q, out_q, rounding, accumulator)
                assert np.array_equal(got, want), (shapes, rounding, accumulator)
    assert MIN_BINARY_TABLE <= 20 * 30 * 64  # the broadcast case took the table


UNARY = [
    (OpKind.RELU, relu_formula, (0.05, 10), (0.04, -128)),
    (OpKind.RELU6, relu_formula, (0.05, 10), (0.03, -128)),
    (OpKind.HARD_SWISH, hard_swish_formula, (0.05, 10), (0.03, -20)),
    (OpKind.LOGISTIC, lut_activation_formula, (0.07, -3), (1 / 256, -128)),
    (OpKind.TANH, lut_activation_formula, (0.02, 4), (1 / 128, 0)),
]


@pytest.mark.parametrize("case", UNARY, ids=lambda c: c[0].name)
def test_unary_tables_are_the_formula(case: tuple[Any, ...]) -> None:
    kind, formula, (s_in, z_in), (s_out, z_out) = case
    g = single_op_qgraph(
        kind, [act("x", (1, 2, 128, 1), qp(s_in, z_in))], (1, 2, 128, 1), qp(s_out, z_out)
    )
    x = CODES.reshape(1, 2, 128, 1)
    q: list[QuantParams | None] = [qp(s_in, z_in)]
    out_q = qp(s_out, z_out)
    for rounding in ("double", "single"):
        got = INT8_KERNELS[kind](g.ops[0], [x], q, out_q, rounding, "wrap")
        assert np.array_equal(got, formula(g.ops[0], [x], q, out_q, rounding, "wrap"))


@pytest.mark.parametrize("rounding", ["double", "single"])
def test_separable_resize_is_the_q20_sum(rounding: str) -> None:
    """RESIZE_BILINEAR's rows-then-columns int32 evaluation against the four-product Q20 sum."""
    rng = np.random.default_rng(4)
    q = qp(0.1, 3)
    # 2x upsampling puts fractions at exactly 1/2: ties of both signs
    for size, attrs in [((61, 47), {}), ((16, 40), {"align_corners": True}), ((18, 26), {})]:
        attrs = {"size": size, **attrs}
        x = rng.integers(-128, 128, size=(2, 9, 13, 5)).astype(np.int8)
        g = single_op_qgraph(
            OpKind.RESIZE_BILINEAR, [act("x", x.shape, q)], (2, *size, 5), q, attrs
        )
        got = INT8_KERNELS[OpKind.RESIZE_BILINEAR](g.ops[0], [x], [q], q, rounding, "saturate")
        y0, y1, dy = _axis(9, size[0], "align_corners" in attrs, False)
        x0, x1, dx = _axis(13, size[1], "align_corners" in attrs, False)
        v, dy, dx = x.astype(np.int64), dy[None, :, None, None], dx[None, None, :, None]
        q20 = (
            v[:, y0][:, :, x0] * (1024 - dy) * (1024 - dx)
            + v[:, y1][:, :, x0] * dy * (1024 - dx)
            + v[:, y0][:, :, x1] * (1024 - dy) * dx
            + v[:, y1][:, :, x1] * dy * dx
        )
        if rounding == "single":
            want = (q20 + 2**19) >> 20
        else:
            want = np.sign(q20) * ((np.abs(q20) + 2**19) >> 20)
        assert np.array_equal(got, np.clip(want, -128, 127).astype(np.int8)), size


def test_memo_entries_follow_their_arrays_and_records() -> None:
    calls: list[int] = []

    def build() -> int:
        calls.append(1)
        return len(calls)

    w = np.arange(6, dtype=np.int8)
    rec, same_values = qp(0.5, 1), qp(0.5, 1)
    assert memo([w], "p", build, (rec,)) == 1
    assert memo([w], "p", build, (rec,)) == 1  # cached
    assert memo([w.copy()], "p", build, (rec,)) == 2  # another array object
    assert memo([w], "p", build, (same_values,)) == 3  # another record object
    assert memo([w], "q", build, (rec,)) == 4  # other params
    before = cache_size()
    del w
    gc.collect()
    assert cache_size() < before  # the entries keyed by the dead array are gone


def test_memo_compares_words_and_sees_a_write_to_any_byte() -> None:
    calls: list[int] = []

    def build() -> int:
        calls.append(1)
        return len(calls)

    whole, odd = np.zeros((4, 6), np.int8), np.zeros(13, np.int8)  # 24 bytes, 13 bytes
    assert [w.size for w in words(whole.copy(), whole)] == [3, 3]  # uint64 words
    assert words(odd.copy(), odd)[1] is odd  # not a whole number of words: by value
    view = whole[:, 1:5]  # 16 bytes, strided: by value (its contiguous snapshot too)
    assert [w.shape for w in words(view.copy(), view)] == [(4, 4), (4, 4)]
    big = np.zeros((2, SMALL_BYTES // 2 + 8), np.int8)  # past SMALL_BYTES: compared as words
    wide = big[:, 1:]  # and strided: by value
    for w in (whole, odd, view, big, wide):
        first = memo([w], "words", build)
        assert memo([w], "words", build) == first
        w[-1, ...] += 1  # the last row (of a 1-D array, the last byte) only
        assert memo([w], "words", build) == first + 1
