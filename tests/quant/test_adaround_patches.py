"""AdaRound's patch gather (`adaround._patches`): the rows it gathers equal, bit for bit, the
same rows read from the whole padded and dequantized maps through a window view, for strides,
dilations, uneven padding and several samples, and for a fully-connected layer's rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_ir import QuantParams, Tensor
from mdla_ir.attrs import ConvAttrs
from mdla_ir.interp.conv import windows
from mdla_quant.adaround import _patches, _reals
from mdla_quant.sequential import dequantize

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
    xs, real = _reals(t, raw)
    got = _patches(rows, xs, (a, k, k), real)
    want = np.asarray(whole[rows], np.float32)
    assert got.dtype == np.float32
    assert got.tobytes() == want.tobytes()  # bit for bit, the padding's +0.0 included


def test_the_fully_connected_rows_are_the_rows_of_the_maps() -> None:
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((n, 7)).astype(np.float32) for n in (3, 1, 4)]
    rows = np.array([0, 2, 3, 5, 7])
    got = _patches(rows, xs, None, lambda x: x)
    assert got.tobytes() == np.concatenate(xs)[rows].tobytes()
