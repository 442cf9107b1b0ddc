"""The four-tap depthwise's requantization (simd_dw4.c) on its rounding ties, against run_int8.

Multipliers that are exact powers of two, 2^2 down to 2^-6 by channel, make SRDHM a halving and
RDBPOT a shift by r = 0..5, so small sums of either sign land on RDBPOT's ties (rem = 2^(r-1))
again and again: a positive tie rounds up, a negative one down (away from zero), and r = 0 has no
rounding at all. Channels 0-2 have multipliers 4, 2, 1 (left shifts 3, 2, 1), the rest none; 70
channels put the ties in a full 64-channel block and in a masked tail.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdla_ir.builders import as_floats, out_size, qp, single_op_qgraph
from mdla_ir.graph import Graph, Tensor
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from tests.runtime.test_emu_simd import isa_path  # noqa: F401  (the fixture)
from tests.runtime.test_emu_support import run_single_op

C, K = 70, 3


def tie_graph(fuse: str, z_out: int, c: int = C, w: int = 7) -> Graph:
    """The module's ties on `c` channels (multipliers by channel index modulo 9) and an input
    `w` pixels wide."""
    rng = np.random.default_rng(11)
    s_in, s_out = 0.25, 0.5
    # s_in * ws / s_out = 2^(2 - c % 9)
    ws = np.array([2.0 ** (3 - j % 9) for j in range(c)], np.float32)
    wt = rng.integers(-2, 3, size=(1, K, K, c), dtype=np.int8)
    bias = rng.integers(-6, 7, size=c).astype(np.int32)
    pads = (1, 1, 1, 1)
    tensors = [
        Tensor("x", (2, 6, w, c), "int8", None, qp(s_in, 3)),
        Tensor("w", wt.shape, "int8", wt, qp(ws, 0, 3)),
        Tensor("bias", bias.shape, "int32", bias, qp(np.float32(s_in) * ws, 0, 0)),
    ]
    oh, ow = out_size(6, K, 1, 1, 1, 1), out_size(w, K, 1, 1, 1, 1)
    attrs = {"stride": (1, 1), "dilation": (1, 1), "padding": pads, "multiplier": 1}
    return single_op_qgraph(
        OpKind.DEPTHWISE_CONV_2D, tensors, (2, oh, ow, c), qp(s_out, z_out), attrs | {"fuse": fuse}
    )


@pytest.mark.parametrize(("fuse", "z_out"), [("NONE", -3), ("RELU6", -128), ("NONE", 120)])
def test_depthwise_rounding_ties_of_either_sign_bit_exact(
    fuse: str,
    z_out: int,
    isa_path: str,  # noqa: F811
) -> None:
    g = tie_graph(fuse, z_out)
    rng = np.random.default_rng(4)
    x = g.tensors[g.inputs[0]]
    codes = [np.clip(3 + rng.integers(-3, 4, size=x.shape), -128, 127).astype(np.int8)]
    (want,) = run_int8(g, as_floats(g, codes), raw=True)
    assert np.unique(want).size > 8, "outputs all clamped test nothing"
    got = np.asarray(run_single_op(g, codes))
    np.testing.assert_array_equal(got, want, err_msg=f"{fuse}, {isa_path}")
