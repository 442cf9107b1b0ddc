"""MUL's pair table and MEAN's row loop (issue 19's emulator speed-ups) against run_int8, bit
for bit: MUL over every pair of int8 codes (the whole 256 x 256 table) in both roundings and
both accumulator modes, with a multiplier large enough to leave int32 (s > 15, where wrap and
saturate part); MEAN over the axis patterns the row loop treats apart (innermost axis reduced
or kept, every axis, rank 1, keep_dims)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mdla_ir.builders import as_floats, qp, single_op_qgraph
from mdla_ir.graph import Graph, Tensor
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from tests.runtime.test_emu_gemm import emulate

Array = np.ndarray[Any, Any]
CODES = np.arange(-128, 128, dtype=np.int8)


def act(name: str, shape: tuple[int, ...], scale: float, zp: int) -> Tensor:
    return Tensor(name, shape, "int8", None, qp(scale, zp))


def mul_graph(out_scale: float, fuse: str) -> Graph:
    """x (1,1,256,1) * y (1,1,1,256) -> (1,1,256,256): every pair of codes once."""
    x, y = act("x", (1, 1, 256, 1), 0.05, 3), act("y", (1, 1, 1, 256), 0.02, -7)
    return single_op_qgraph(OpKind.MUL, [x, y], (1, 1, 256, 256), qp(out_scale, 11), {"fuse": fuse})


@pytest.mark.parametrize("rounding", ["double", "single"])
@pytest.mark.parametrize("accumulator", ["saturate", "wrap"])
@pytest.mark.parametrize(
    ("out_scale", "fuse"),
    [(0.05 * 0.02 * 128, "NONE"), (0.05 * 0.02 * 40, "RELU6"), (0.05 * 0.02 / 2**17, "NONE")],
    ids=["typical", "relu6", "s_gt_15"],
)
def test_mul_table_is_the_formula_for_every_pair(
    rounding: str, accumulator: str, out_scale: float, fuse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDLA_EMU_ROUNDING", rounding)
    monkeypatch.setenv("MDLA_EMU_ACCUMULATOR", accumulator)
    g = mul_graph(out_scale, fuse)
    codes = [CODES.reshape(1, 1, 256, 1), CODES.reshape(1, 1, 1, 256)]
    (want,) = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding, accumulator=accumulator)
    np.testing.assert_array_equal(emulate(g, codes), want)
    # not one clamped value (past int32 most products clamp, wrapped or saturated)
    assert np.unique(want).size > (2 if out_scale < 1e-6 else 16)


MEANS = {  # shape, axes, keep_dims
    "spatial_nhwc": ((2, 5, 7, 9), (1, 2), True),
    "innermost_only": ((3, 4, 6), (2,), False),
    "every_axis": ((2, 3, 4, 5), (0, 1, 2, 3), True),
    "rank1": ((37,), (0,), True),
    "outer_and_inner": ((4, 3, 5, 6), (0, 3), True),
}


@pytest.mark.parametrize("name", MEANS)
def test_mean_rows_bit_exact(name: str) -> None:
    shape, axes, keep = MEANS[name]
    out = [1 if i in axes else d for i, d in enumerate(shape)] if keep else None
    if out is None:
        out = [d for i, d in enumerate(shape) if i not in axes]
    g = single_op_qgraph(
        OpKind.MEAN,
        [act("x", shape, 0.04, -20)],
        tuple(out),
        qp(0.01, 5),
        {"axes": axes, "keepdims": keep},
    )
    codes = [np.random.default_rng(len(name)).integers(-128, 128, shape).astype(np.int8)]
    (want,) = run_int8(g, as_floats(g, codes), raw=True)
    np.testing.assert_array_equal(emulate(g, codes).reshape(want.shape), want)
    assert np.unique(want).size > 1 or want.size == 1
