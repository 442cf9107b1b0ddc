"""The int8 reference's cheaper forms against the ones they replace, bit for bit.

- `tables.lookup_bytes` (bytes.translate) against np.take on every code and any layout;
- `plan.gemm_rows`: a deep, small conv is one GEMM block (BLAS packs its weights once);
- `plan.depthwise`: one einsum per block of rows, exact at the float32 plan's limit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_ir.builders import as_floats
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from mdla_quant.kernels.plan import FLOAT32_EXACT, MIN_GEMM_ROWS, gemm_rows
from mdla_quant.kernels.tables import CODES, lookup_bytes
from tests.quant.test_fast_kernels import _conv_graph, _definition_conv

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
    assert calls == ["hwcij,ijc->hwc"]  # 9 x 2 outputs of 2 channels: one block
    assert np.array_equal(got, _definition_conv(g, x, "double", "saturate"))
