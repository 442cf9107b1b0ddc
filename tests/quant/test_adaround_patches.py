"""AdaRound's patch gather (`patch_rows.patches`): the rows it gathers equal, bit for bit, the
same rows read from the whole padded and dequantized maps through a window view, for strides,
dilations, uneven padding and several samples, and for a fully-connected layer's rows; a
depthwise layer's per-step gather from the padded maps (`patch_rows.TapMap`) equals them too,
with a channel multiplier, and the layer's forward on every row, gathered in chunks, equals
the forward on the whole patches."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_ir import QuantParams, Tensor
from mdla_ir.attrs import ConvAttrs
from mdla_ir.interp.conv import windows
from mdla_quant import adaround, soft_rounding
from mdla_quant.patch_rows import TapMap, maps_are_smaller, patches, reals
from mdla_quant.sequential import dequantize
from mdla_quant.soft_rounding import by_columns

Array = np.ndarray[Any, Any]


def _windows(xs: list[Array], a: ConvAttrs, k: int) -> Array:
    """Every window (KH, KW, C) of every padded sample, laid end to end (the whole maps)."""
    t, b, left, r = a.padding
    every = [
        windows(np.pad(x, ((0, 0), (t, b), (left, r), (0, 0))), (k, k), a.stride, a.dilation)
        for x in xs
    ]
    return np.concatenate(
        [v.transpose(0, 1, 2, 4, 5, 3).reshape(-1, k, k, v.shape[3]) for v in every]
    )


@pytest.mark.parametrize(
    ("k", "stride", "dilation", "padding"),
    [
        (3, 1, 1, (1, 1, 1, 1)),
        (3, 2, 1, (0, 1, 0, 1)),
        (5, 2, 1, (2, 2, 2, 2)),
        (3, 1, 2, (2, 2, 2, 2)),
        (1, 1, 1, (0, 0, 0, 0)),
        (3, 2, 1, (1, 0, 2, 1)),
    ],
)
def test_the_gathered_patches_are_the_windows_of_the_whole_maps(
    k: int, stride: int, dilation: int, padding: tuple[int, int, int, int]
) -> None:
    rng = np.random.default_rng(0)
    raw = [rng.integers(-128, 128, (n, 9, 11, 5), dtype=np.int8) for n in (1, 2, 1)]
    t = Tensor("x", (1, 9, 11, 5), "int8", quant=QuantParams((0.05,), (3,)))
    a = ConvAttrs(stride=(stride, stride), dilation=(dilation, dilation), padding=padding)
    whole = _windows([dequantize(t, r) for r in raw], a, k)
    rows = np.sort(rng.choice(len(whole), len(whole) // 2, replace=False))
    xs, real = reals(t, raw)
    got = patches(rows, xs, (a, k, k), real)
    want = np.asarray(whole[rows], np.float32)
    assert got.dtype == np.float32
    assert got.tobytes() == want.tobytes()  # bit for bit, the padding's +0.0 included


def test_the_fully_connected_rows_are_the_rows_of_the_maps() -> None:
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((n, 7)).astype(np.float32) for n in (3, 1, 4)]
    rows = np.array([0, 2, 3, 5, 7])
    got = patches(rows, xs, None, lambda x: x)
    assert got.tobytes() == np.concatenate(xs)[rows].tobytes()


CASES = [(3, 1, 1, (1, 1, 1, 1)), (5, 2, 1, (2, 2, 2, 2)), (3, 2, 2, (1, 0, 2, 1))]


@pytest.mark.parametrize(("k", "stride", "dilation", "padding"), CASES)
@pytest.mark.parametrize("mult", [1, 2])
def test_the_depthwise_taps_are_the_gathered_patches(
    k: int, stride: int, dilation: int, padding: tuple[int, int, int, int], mult: int
) -> None:
    rng = np.random.default_rng(2)
    raw = [rng.integers(-128, 128, (n, 9, 11, 5), dtype=np.int8) for n in (1, 2, 1)]
    t = Tensor("x", (1, 9, 11, 5), "int8", quant=QuantParams((0.05,), (3,)))
    a = ConvAttrs(stride=(stride, stride), dilation=(dilation, dilation), padding=padding)
    xs, real = reals(t, raw)
    count = len(_windows([dequantize(t, r) for r in raw], a, k))
    rows = np.sort(rng.choice(count, count // 2, replace=False))
    whole = np.repeat(patches(rows, xs, (a, k, k), real), mult, axis=3)
    whole = whole.reshape(len(rows), k * k, -1)
    taps = TapMap(rows, xs, (a, k, k), real, mult)
    idx = rng.integers(0, len(rows), 40)
    got = taps.take(idx)
    assert got.tobytes() == whole[idx].tobytes()  # bit for bit, the padding's +0.0 included
    assert taps.take(idx[::-1], out=got) is got  # a step's buffer is reused


def test_a_depthwise_layers_forward_on_every_row_is_the_whole_patches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Gathered in chunks of 7 rows, every output is the one of the whole patches' forward."""
    monkeypatch.setattr(adaround, "CHUNK", 7)
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((2, 10, 10, 24)).astype(np.float32) for _ in range(2)]
    a = ConvAttrs(stride=(1, 1), dilation=(1, 1), padding=(2, 2, 2, 2))
    rows = np.sort(rng.choice(400, 150, replace=False))
    layer = adaround._Layer.__new__(adaround._Layer)
    layer.taps, layer.groups, layer._taken = TapMap(rows, xs, (a, 5, 5), lambda x: x), 0, []
    w = rng.standard_normal((25, 24)).astype(np.float32)
    layer.w = w
    whole = patches(rows, xs, (a, 5, 5), lambda x: x).reshape(len(rows), 25, 24)
    assert layer.output(w).tobytes() == by_columns("mko,ko->mo", whole, w).tobytes()


def test_a_depthwise_layer_gathers_from_its_maps_only_when_they_are_smaller() -> None:
    xs = [np.zeros((1, 6, 6, 4), np.float32)] * 2  # padded 10x10: 200 positions
    a = ConvAttrs(stride=(1, 1), dilation=(1, 1), padding=(2, 2, 2, 2))
    assert maps_are_smaller(np.arange(9), xs, (a, 5, 5))  # 225 taps
    assert not maps_are_smaller(np.arange(8), xs, (a, 5, 5))  # 200 taps


@pytest.mark.parametrize(("k", "stride", "dilation", "padding"), CASES)
@pytest.mark.parametrize("threads", [1, 3])
def test_the_depthwise_sums_from_the_maps_are_einsums_of_the_taps(
    k: int,
    stride: int,
    dilation: int,
    padding: tuple[int, int, int, int],
    threads: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """csrc/taps.c's forward and gradient equal numpy's einsum on the gathered taps bit for
    bit (values spread over many magnitudes, so any other order of the sums would show),
    with the columns cut over `threads`."""
    monkeypatch.setattr(soft_rounding, "threads", lambda: threads)
    monkeypatch.setattr(soft_rounding, "MIN_CHUNK", 1)
    rng = np.random.default_rng(k + stride)
    spread = lambda *shape: (  # noqa: E731
        rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 6, shape)
    ).astype(np.float32)
    xs = [spread(n, 9, 11, 37) for n in (1, 2)]
    a = ConvAttrs(stride=(stride, stride), dilation=(dilation, dilation), padding=padding)
    count = len(_windows(xs, a, k))
    rows = np.sort(rng.choice(count, count // 2, replace=False))
    taps = TapMap(rows, xs, (a, k, k), lambda x: x, 2)
    idx = rng.integers(0, len(rows), 63)  # rows in fours (the C's register sums) and three
    w, dy = spread(k * k, 74), spread(63, 74)
    assert taps.direct(w, dy)
    gathered = taps.take(idx)
    forward = np.einsum("mko,ko->mo", gathered, w)
    grad = np.einsum("mko,mo->ko", gathered, dy)
    assert taps.forward(w, idx).tobytes() == forward.tobytes()
    assert taps.grad(dy, idx).tobytes() == grad.tobytes()
