"""The int8 reference's cheaper forms against the ones they replace, bit for bit.

- `tables.lookup_bytes` (bytes.translate) against np.take on every code and any layout;
- `plan.gemm_rows`: a deep, small conv is one GEMM block (BLAS packs its weights once);
- `plan.depthwise`: one einsum per block of rows and column phase, exact at the float32
  plan's limit; the phases cover every filter column once, at the column it reads;
- `Requant`'s float64 stage against `arith.mbqm` on ties and at its 2^53 limit;
- a small binary op: the formula on a first sight, its table from the second.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_ir.builders import act, as_floats, qp, single_op_qgraph
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from mdla_quant.arith import add_offset, mbqm, quantize_multiplier
from mdla_quant.kernels import plan, resize_bilinear, tables
from mdla_quant.kernels.add import add_sub_formula
from mdla_quant.kernels.memo import memo
from mdla_quant.kernels.plan import FLOAT32_EXACT, MIN_GEMM_ROWS, column_groups, gemm_rows
from mdla_quant.kernels.registry import INT8_KERNELS, windows
from mdla_quant.kernels.requant import Requant
from mdla_quant.kernels.tables import CODES, lookup_bytes
from tests.quant.test_fast_kernels import _check_conv, _conv_graph, _definition_conv

Array = np.ndarray[Any, Any]


def _views(rng: np.random.Generator) -> list[Array]:
    """Every code; a strided, a transposed and a 0-d view; an empty array."""
    big = rng.integers(-128, 128, size=(2, 9, 11, 6), dtype=np.int8)
    return [
        CODES.reshape(4, 64),
        big[:, ::2, 1::3, ::-1],
        big.transpose(0, 3, 1, 2),
        big[0, 0, 0, 0, ...],
        big[:, :0],
    ]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_byte_lookup_is_take(seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.integers(-128, 128, size=256).astype(np.int8)
    for x in _views(rng):
        got = lookup_bytes(table, x)
        want = np.take(table, x.view(np.uint8))
        assert got.dtype == np.int8
        assert got.shape == x.shape
        assert np.array_equal(got, want)
        assert got.flags.writeable  # the caller's to write, as np.take's result is


def test_a_deep_small_conv_is_one_gemm_block() -> None:
    # resnet18's last 3x3 convs: 7x7 pixels, K = 4608 taps, 512 channels
    assert gemm_rows(7, 7, 4608, 512) == 7
    # a large, shallow output still blocks at about 2^16 values, and never below MIN_GEMM_ROWS
    rows = gemm_rows(112, 112, 27, 32)
    assert rows * 112 >= MIN_GEMM_ROWS
    assert rows * 112 * 32 <= 2**17
    assert gemm_rows(56, 56, 576, 64) * 56 >= MIN_GEMM_ROWS


def test_depthwise_sums_a_block_in_one_einsum_exact_at_the_float32_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 32x32 depthwise filter of -128s: 128 * sum|w| = 2^24 exactly, the largest float32
    plan; inputs of -128 make every partial sum of einsum's (any) order as large as allowed."""
    rng = np.random.default_rng(3)
    g = _conv_graph(OpKind.DEPTHWISE_CONV_2D, rng, 1, (40, 33), 2, 2, 32, (1, 1), 1, (0,) * 4)
    w = g.tensors["w"].data
    assert w is not None
    w[..., 0] = -128
    assert 128 * int(np.abs(w[..., 0].astype(np.int64)).sum()) == FLOAT32_EXACT
    calls = []
    einsum = np.einsum

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return einsum(*args, **kwargs)

    monkeypatch.setattr(np, "einsum", counted)
    x = np.full(g.tensors["x"].shape, -128, np.int8)
    (got,) = run_int8(g, as_floats(g, [x]), raw=True)
    monkeypatch.undo()
    assert calls == ["hpij,ijp->hp"]  # 9 x 2 outputs of 2 channels, stride 1: one block
    assert np.array_equal(got, _definition_conv(g, x, "double", "saturate"))


@pytest.mark.parametrize("sw", [1, 2, 3, 4])
@pytest.mark.parametrize("dw", [1, 2, 3, 6])
@pytest.mark.parametrize("kw", [1, 2, 3, 5, 7])
def test_column_groups_read_each_filter_column_at_its_input_column(
    kw: int, sw: int, dw: int
) -> None:
    seen = []
    for g in column_groups(kw, sw, dw):
        for k in range(g.count):
            j = g.first + k * g.step
            seen.append(j)
            for x in range(4):  # phase column x + offset + k * shift is input column x*sw + j*dw
                assert (x + g.offset + k * g.shift) * sw + g.phase == x * sw + j * dw
    assert sorted(seen) == list(range(kw))


DEPTHWISE_PHASES = [  # (hw, c, mult, k, stride, dilation, padding)
    ((17, 29), 3, 1, 5, (1, 2), 1, (2, 2, 2, 2)),  # 5 columns in 2 phases
    ((16, 31), 4, 2, 3, (2, 3), 2, (1, 0, 2, 1)),  # gcd(3, 2) = 1: 3 phases, offsets 0, 0, 1
    ((13, 40), 2, 1, 3, (1, 4), 2, (0, 1, 3, 0)),  # gcd(4, 2) = 2: 2 phases of 2 and 1
    ((9, 12), 5, 1, 1, (3, 3), 1, (0, 0, 0, 0)),  # a 1x1 filter, stride 3
    ((11, 14), 3, 1, 3, (1, 1), 2, (2, 2, 2, 2)),  # one phase, its columns 2 apart
    ((19, 23), 2, 1, 5, (2, 2), 3, (1, 2, 6, 0)),  # gcd(2, 3) = 1: columns 0, 2, 4 3 apart
]


@pytest.mark.parametrize("rows", [True, False], ids=["rows", "pixels"])
@pytest.mark.parametrize("case", DEPTHWISE_PHASES, ids=str)
def test_depthwise_by_column_phase_is_the_int64_definition(
    case: tuple[Any, ...], rows: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both forms of `plan.depthwise` (the channel count that picks one set either way)."""
    hw, c, mult, k, stride, dil, pad = case
    monkeypatch.setattr(plan, "ROW_MAX_CHANNELS", 10**6 if rows else 0)
    forms = []
    for name in ("depthwise_rows", "depthwise_pixels"):
        form = getattr(plan, name)
        monkeypatch.setattr(plan, name, lambda *a, f=form, n=name: forms.append(n) or f(*a))
    rng = np.random.default_rng(17)
    g = _conv_graph(OpKind.DEPTHWISE_CONV_2D, rng, 2, hw, c, c * mult, k, stride, dil, pad)
    _check_conv(g, rng)
    assert set(forms) == {"depthwise_rows" if rows else "depthwise_pixels"}


REALS = [0.0003, 0.011, 0.07, 0.49, 0.5, 1.7]  # e = 11 .. 1, e = 0 with a left shift of 1


def _float_bounds(real: list[float], rounding: str, past: int) -> tuple[Array, Array, Array]:
    """(M, s, bound): the largest |acc| per channel whose |a| = |acc * M' + rounding term|
    stays below 2^53, plus `past`."""
    m, s = quantize_multiplier(np.array(real), rounding)
    if rounding == "single":
        m2, rnd = m, [1 << (30 - int(k)) for k in s]
    else:
        m2, rnd = m << np.maximum(s, 0), [1 << 30] * len(real)
    bound = [(2**53 - 1 - r) // int(v) + past for v, r in zip(m2, rnd, strict=True)]
    return m, s, np.array(bound, np.int64)


@pytest.mark.parametrize("accumulator", ["saturate", "wrap"])
@pytest.mark.parametrize("rounding", ["double", "single"])
def test_the_float64_requant_stage_is_mbqm_up_to_its_limit(rounding: str, accumulator: str) -> None:
    m, s, bound = _float_bounds(REALS, rounding, 0)
    rng = np.random.default_rng(7)
    dense = np.arange(-6000, 6000, dtype=np.int64)[:, None].repeat(len(REALS), axis=1)
    edges = np.stack([bound, bound - 1, -bound, 1 - bound])
    rand = rng.integers(-bound, bound + 1, size=(4000, len(REALS)))
    acc = np.concatenate([dense, edges, rand])
    zeros = np.zeros(len(REALS), np.int64)
    rq = Requant.build(m, s, zeros, bound, bound, rounding, 5, (-128, 127), accumulator)
    assert rq is not None
    assert rq.fmult is not None  # the float64 passes are taken
    out = np.empty(acc.shape, np.int8)
    scratch = (np.empty(acc.shape, np.int64), *(np.empty(acc.shape, np.int32) for _ in "vt"))
    rq.apply(acc.astype(np.float64), out, scratch)
    want = add_offset(mbqm(acc, m, s, rounding, accumulator), 5, accumulator)
    assert np.array_equal(out, np.clip(want, -128, 127).astype(np.int8))
    # one more |acc| on any channel and the int64 passes are taken
    m, s, past = _float_bounds(REALS, rounding, 1)
    rq = Requant.build(m, s, zeros, past, past, rounding, 5, (-128, 127), accumulator)
    assert rq is not None
    assert rq.fmult is None


def test_a_small_binary_op_builds_its_table_the_second_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(9)
    q1, q2, out_q = qp(0.07, -20), qp(0.05, 33), qp(0.1, int(rng.integers(-50, 50)))
    g = single_op_qgraph(
        OpKind.ADD, [act("a", (1, 5, 5, 8), q1), act("b", (1, 5, 5, 8), q2)], (1, 5, 5, 8), out_q
    )
    xs = [rng.integers(-128, 128, size=(1, 5, 5, 8)).astype(np.int8) for _ in "ab"]
    want = add_sub_formula(g.ops[0], xs, [q1, q2], out_q, "double", "saturate")
    lookups = []

    def counted(*args: Any) -> Any:
        lookups.append(args[1])
        return memo(*args)

    monkeypatch.setattr(tables, "memo", counted)
    first = INT8_KERNELS[OpKind.ADD](g.ops[0], xs, [q1, q2], out_q, "double", "saturate")
    assert not lookups  # a first sight: the formula, no table
    second = INT8_KERNELS[OpKind.ADD](g.ops[0], xs, [q1, q2], out_q, "double", "saturate")
    assert len(lookups) == 1  # the second: the table
    assert np.array_equal(first, want)
    assert np.array_equal(second, want)


@pytest.mark.parametrize("seed", range(4))
def test_windows_is_the_sliced_sliding_window_view(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(seed)
    sliding_window_view = np.lib.stride_tricks.sliding_window_view
    calls: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return sliding_window_view(*args, **kwargs)

    monkeypatch.setattr(np.lib.stride_tricks, "sliding_window_view", counted)
    for _ in range(40):
        k, s, d = rng.integers(1, 4, 2), rng.integers(1, 3, 2), rng.integers(1, 3, 2)
        span = d * (k - 1) + 1
        x = rng.integers(-128, 128, (2, *(span + rng.integers(0, 6, 2)), 5), dtype=np.int8)
        if rng.random() < 0.5:  # a strided, non-contiguous view
            x = np.repeat(x, 2, axis=3)[..., ::2]
        sliding = sliding_window_view(x, tuple(span), axis=(1, 2))
        want = sliding[:, :: s[0], :: s[1], :, :: d[0], :: d[1]]
        got = windows(x, tuple(k), tuple(s), tuple(d))
        assert got.shape == want.shape
        assert np.array_equal(got, want)
        assert not got.flags.writeable
    assert not calls  # the view is built from the strides
    with pytest.raises(ValueError, match="window shape"):  # a window larger than the input
        windows(np.zeros((1, 2, 2, 1), np.int8), (3, 3), (1, 1))


@pytest.mark.parametrize("rounding", ["double", "single"])
@pytest.mark.parametrize(("wide", "narrow"), [(np.int32, np.int8), (np.int64, None)])
def test_bilinear_in_blocks_of_rows_is_the_whole_sum(
    rounding: str, wide: type, narrow: type | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(11)
    lo, hi = (-128, 128) if narrow else (-32768, 32768)
    x = rng.integers(lo, hi, (2, 7, 5, 3)).astype(np.int8 if narrow else np.int16)
    for size, align, half in [
        ((29, 13), False, True),
        ((3, 40), True, False),
        ((7, 5), False, False),
    ]:
        monkeypatch.setattr(resize_bilinear, "BLOCK", 1 << 40)  # one block
        whole = resize_bilinear.bilinear(x, size, align, half, rounding, wide, narrow)
        monkeypatch.setattr(resize_bilinear, "BLOCK", 1)  # one row per block
        rows = resize_bilinear.bilinear(x, size, align, half, rounding, wide, narrow)
        assert rows.dtype == (narrow or wide)
        assert np.array_equal(rows, whole)
        if narrow is not None:  # the clamp to int8 is `saturate` of the wide sum
            wide_sum = resize_bilinear.bilinear(x, size, align, half, rounding, wide)
            assert np.array_equal(rows, np.clip(wide_sum, -128, 127).astype(np.int8))
