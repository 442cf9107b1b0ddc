"""int8 ADD and SUB in vector lanes (kernels/simd_add.c: the 256 x 256 table's integers without
the table, on AVX-512 VBMI) against run_int8 on every pair of codes, in both roundings and on
each instruction-set path (the portable and AVX2 paths keep the table).

Each case runs a [256, 256] operand of every code against every code of the other: the same
shape (both steps 1), a [256, 1] column (the second operand's step 0) and a [1, 256] row.
Scales and zero points vary the rounding shift r of the output multiplier, its ties and the
clamp.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdla_ir.builders import act, as_floats, qp, single_op_qgraph
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from tests.runtime.test_emu_simd import isa_path, rounding  # noqa: F401  (the fixtures)
from tests.runtime.test_emu_support import run_single_op

# (s1, z1, s2, z2, s_out, z_out, fuse, the second operand's shape)
CASES = {
    "same_shape_relu": (0.05, -3, 0.04, 10, 0.08, -5, "RELU", (256, 256)),
    "column_step0": (0.02, 127, 0.5, -128, 0.9, 0, "NONE", (256, 1)),
    "row_relu6": (0.1, 0, 0.1, 0, 0.05, -100, "RELU6", (1, 256)),
    # equal input scales make each side (x - z) 2^19 exactly; an output scale 2 or 4 times
    # theirs then rounds d / 2 or d / 4 (d = the codes' difference or sum): RDBPOT ties of
    # either sign at half or a quarter of the pairs
    "ties_halves_z_extremes": (0.25, -128, 0.25, 127, 0.5, 0, "NONE", (256, 256)),
    "ties_quarters_row": (0.1, 3, 0.1, -3, 0.4, 7, "NONE", (1, 256)),
    "far_scales": (0.001, 5, 0.3, -7, 0.2, -128, "NONE", (256, 256)),
}


def add_graph(kind: OpKind, case: str) -> Graph:
    s1, z1, s2, z2, s_out, z_out, fuse, shape2 = CASES[case]
    ins = [act("x", (256, 256), qp(s1, z1)), act("y", shape2, qp(s2, z2))]
    return single_op_qgraph(kind, ins, (256, 256), qp(s_out, z_out), {"fuse": fuse})


def every_pair(shape2: tuple[int, int]) -> list[np.ndarray]:
    codes = np.arange(-128, 128, dtype=np.int8)
    x = np.repeat(codes[:, None], 256, axis=1)  # x[i, j] = code i
    y = np.broadcast_to(codes[None, :], (256, 256))  # y[i, j] = code j
    if shape2 == (256, 1):
        return [x.T.copy(), codes[:, None].copy()]  # x[i, j] = code j against code i
    if shape2 == (1, 256):
        return [x, codes[None, :].copy()]
    return [x, y.copy()]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind", [OpKind.ADD, OpKind.SUB], ids=lambda k: k.name)
def test_add_sub_every_code_pair_bit_exact(
    kind: OpKind,
    case: str,
    isa_path: str,  # noqa: F811
    rounding: str,  # noqa: F811
) -> None:
    g = add_graph(kind, case)
    codes = every_pair(CASES[case][7])
    (want,) = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding)
    assert np.unique(want).size > 16, "a case whose outputs are all clamped tests nothing"
    got = np.asarray(run_single_op(g, codes))
    np.testing.assert_array_equal(got, want, err_msg=f"{kind.name} {case}, {isa_path}, {rounding}")
