"""The emulator's hand-vectorized kernels (kernels/simd.c: the narrow requantization, the
multiplier-1 depthwise row, MUL's formula, the table lookups and the AVX2 int16 GEMM of CONV_2D,
chosen at prepare by emu_isa()) against
mdla_quant.run_int8, bit for bit, on every path this CPU offers: the portable C
(MDLA_EMU_PORTABLE=1), AVX2 (MDLA_EMU_ISA=avx2) and the best (unset). Shapes aim at what the
vector code could get wrong: channel counts around the 8/16/32/64-lane blocks (masked and
copied tails), taps outside the image on every side, strides, dilations, the extreme input
zero points (x - z spans 255) and both roundings (single never takes the narrow path, so it
checks that the choice leaves it alone).
"""

from __future__ import annotations

import ctypes
import platform
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdla_emu import build_emulator
from mdla_ir.builders import (
    act,
    as_floats,
    out_size,
    qp,
    random_codes,
    random_qgraph,
    single_op_qgraph,
)
from mdla_ir.graph import Graph, Op, Tensor
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from mdla_runtime import load, open_target, save
from tests.runtime.test_emu_gemm import SHAPES, conv_graph
from tests.runtime.test_emu_support import run_single_op

PATHS = ("portable", "avx2", "best")
ISA = {"portable": 0, "avx2": 1, "avx512": 2}


def cpu_isa() -> int:
    """What simd.c's cpuid check should find, read independently from /proc/cpuinfo."""
    if platform.machine() != "x86_64":
        return ISA["portable"]
    flags = set(Path("/proc/cpuinfo").read_text().split())
    if "avx2" not in flags:
        return ISA["portable"]
    return ISA["avx512"] if {"avx512f", "avx512bw", "avx512vl"} <= flags else ISA["avx2"]


@pytest.fixture(params=PATHS)
def isa_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The path kernels prepared from here on take (both variables are read at prepare)."""
    monkeypatch.delenv("MDLA_EMU_PORTABLE", raising=False)
    monkeypatch.delenv("MDLA_EMU_ISA", raising=False)
    if request.param == "portable":
        monkeypatch.setenv("MDLA_EMU_PORTABLE", "1")
    elif request.param == "avx2":
        monkeypatch.setenv("MDLA_EMU_ISA", "avx2")
    return str(request.param)


@pytest.fixture(params=["double", "single"])
def rounding(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MDLA_EMU_ROUNDING", str(request.param))
    return str(request.param)


def test_the_isa_follows_the_cpu_and_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    isa = ctypes.CDLL(str(build_emulator())).emu_isa
    isa.restype = ctypes.c_int
    best = cpu_isa()
    monkeypatch.delenv("MDLA_EMU_PORTABLE", raising=False)
    monkeypatch.delenv("MDLA_EMU_ISA", raising=False)
    assert isa() == best
    for name, cap in ISA.items():
        monkeypatch.setenv("MDLA_EMU_ISA", name)
        assert isa() == min(best, cap), name
    monkeypatch.setenv("MDLA_EMU_ISA", "avx512")
    monkeypatch.setenv("MDLA_EMU_PORTABLE", "1")
    assert isa() == ISA["portable"]


# (n, h, w, c, k, stride, dilation, (top, bottom, left, right), z_in)
DW_SHAPES = {
    "c1_pad_zmin": (1, 6, 7, 1, 3, 1, 1, (1, 1, 1, 1), -128),
    "c7_s2": (2, 9, 8, 7, 3, 2, 1, (1, 0, 1, 0), 127),
    "c8_dil2": (1, 10, 9, 8, 3, 1, 2, (2, 2, 2, 2), -5),
    "c15_5x5": (1, 8, 8, 15, 5, 1, 1, (2, 2, 2, 2), 60),
    "c16_s2_edge": (1, 7, 7, 16, 3, 2, 1, (0, 1, 0, 1), -128),
    "c17": (1, 5, 6, 17, 3, 1, 1, (1, 1, 1, 1), 127),
    "c33_s2": (1, 9, 9, 33, 3, 2, 1, (1, 1, 1, 1), 3),
    "c64_valid": (1, 6, 5, 64, 3, 1, 1, (0, 0, 0, 0), -128),
    "c72": (1, 5, 5, 72, 3, 1, 1, (1, 1, 1, 1), 127),
    "c100_big_pad": (1, 4, 4, 100, 5, 1, 1, (4, 4, 4, 4), -77),
    # emu_dw2_row_avx2: blocks of 32, 16 and 8 channels, then 3 one at a time; 4 taps (even:
    # no pad tap), a stride and pads on every side
    "c59_blocks_2x2_s2": (1, 9, 8, 59, 2, 2, 1, (1, 1, 0, 1), -128),
    # emu_dw4_row (AVX-512 VNNI): 64-channel blocks and their masked tail, taps in fours (1, 4
    # and 49 taps: 3, 0 and 3 zero-weight taps), windows inside and across every edge
    "c96_s2_skew": (2, 9, 10, 96, 3, 2, 1, (0, 1, 2, 0), 10),
    "c128_1x1": (1, 4, 5, 128, 1, 1, 1, (0, 0, 0, 0), -128),
    "c130_2x2": (1, 6, 6, 130, 2, 1, 1, (1, 0, 0, 1), 127),
    "c65_7x7_dil2": (1, 16, 15, 65, 7, 1, 2, (5, 6, 6, 5), -1),
    # 64 / c output pixels per block where c divides 64 at column stride 1 (their windows all
    # interior), the row's other pixels one at a time: pairs, fours, eights and sixteens
    "c32_pairs": (1, 5, 13, 32, 3, 1, 1, (1, 1, 1, 1), -7),
    "c16_fours_dil2": (1, 8, 15, 16, 3, 1, 2, (2, 2, 2, 2), 20),
    "c8_eights_5x5": (2, 6, 20, 8, 5, 1, 1, (2, 2, 1, 3), -100),
    "c4_sixteens": (1, 4, 40, 4, 3, 1, 1, (0, 1, 1, 0), 127),
}


def dw_graph(shape: tuple[Any, ...], seed: int) -> Graph:
    """One multiplier-1 DEPTHWISE_CONV_2D with full-range weights (-127..127, per channel) and
    an output scale that keeps the sums' spread inside int8 (so outputs are not all clamped)."""
    n, h, w, c, k, stride, dil, pads, z_in = shape
    rng = np.random.default_rng(seed)
    wt = rng.integers(-127, 128, size=(1, k, k, c), dtype=np.int8)
    ws = np.exp(rng.uniform(np.log(1e-3), np.log(0.05), size=c)).astype(np.float32)
    s_in = 0.02
    bias = rng.integers(-5000, 5000, size=c).astype(np.int32)
    oh = out_size(h, k, stride, dil, pads[0], pads[1])
    ow = out_size(w, k, stride, dil, pads[2], pads[3])
    spread = float(k * 128 * 73 * s_in * np.median(ws))
    tensors = [
        Tensor("x", (n, h, w, c), "int8", None, qp(s_in, z_in)),
        Tensor("w", wt.shape, "int8", wt, qp(ws, 0, 3)),
        Tensor("bias", bias.shape, "int32", bias, qp(np.float32(s_in) * ws, 0, 0)),
    ]
    attrs = {"stride": (stride, stride), "dilation": (dil, dil), "padding": pads}
    return single_op_qgraph(
        OpKind.DEPTHWISE_CONV_2D,
        tensors,
        (n, oh, ow, c),
        qp(spread / 20, -3),
        attrs | {"multiplier": 1, "fuse": "NONE"},
    )


@pytest.mark.parametrize("ready_fn", ["emu_dw4_ready", "emu_gemm_rows_ready"])
def test_the_vnni_paths_follow_the_cpu_and_the_environment(
    ready_fn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The four-tap depthwise and the rows GEMM run where the CPU has AVX-512 VNNI, and a cap
    below it (MDLA_EMU_ISA=avx2, MDLA_EMU_PORTABLE=1) turns each off."""
    ready = getattr(ctypes.CDLL(str(build_emulator())), ready_fn)
    ready.restype = ctypes.c_bool
    flags = set(Path("/proc/cpuinfo").read_text().split())
    vnni = (
        platform.machine() == "x86_64"
        and {
            "avx512f",
            "avx512bw",
            "avx512vl",
            "avx512_vnni",
        }
        <= flags
    )
    monkeypatch.delenv("MDLA_EMU_PORTABLE", raising=False)
    monkeypatch.delenv("MDLA_EMU_ISA", raising=False)
    assert ready() is vnni
    monkeypatch.setenv("MDLA_EMU_ISA", "avx2")
    assert ready() is False
    monkeypatch.delenv("MDLA_EMU_ISA")
    monkeypatch.setenv("MDLA_EMU_PORTABLE", "1")
    assert ready() is False


@pytest.mark.parametrize("name", DW_SHAPES)
def test_depthwise_shapes_bit_exact(name: str, isa_path: str, rounding: str) -> None:
    g = dw_graph(DW_SHAPES[name], seed=len(name))
    codes = random_codes(g, np.random.default_rng(11))
    codes[0][..., 0] = -128  # the extreme codes: the largest |x - z_in|
    codes[0][..., -1] = 127
    (want,) = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding)
    got = np.asarray(run_single_op(g, codes))
    assert np.unique(want).size > 4, "a case whose outputs are all clamped tests nothing"
    np.testing.assert_array_equal(got, want, err_msg=f"{name}, {isa_path}, {rounding}")


@pytest.mark.parametrize(
    "kind", [OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.FULLY_CONNECTED], ids=lambda k: k.name
)
def test_random_kernels_bit_exact(kind: OpKind, isa_path: str, rounding: str) -> None:
    """Random cases, small and model-sized (wide accumulators: the requantization's narrow and
    wide rows both occur), on each path."""
    for seed, large in [(s, False) for s in range(10)] + [(s, True) for s in range(3)]:
        rng = np.random.default_rng(5000 * kind.value + seed + (100 if large else 0))
        g = random_qgraph(kind, rng, large=large)
        codes = random_codes(g, rng)
        (want,) = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding)
        got = np.asarray(run_single_op(g, codes))
        np.testing.assert_array_equal(got, want, err_msg=f"seed {seed}, large={large}")


ELEMENTWISE = [OpKind.MUL, OpKind.LOGISTIC, OpKind.TANH, OpKind.HARD_SWISH, OpKind.RELU6]


@pytest.mark.parametrize("kind", ELEMENTWISE, ids=lambda k: k.name)
def test_elementwise_bit_exact(kind: OpKind, isa_path: str, rounding: str) -> None:
    """MUL's vector formula (broadcast rows: steps 0 and 1; lengths off the 8/16 lanes) and the
    table ops' 64-byte vpermi2b lookups (every code, then random shapes)."""
    if kind is not OpKind.MUL:  # every code, in a run of 300 (64-byte blocks and a tail)
        g = random_qgraph(kind, np.random.default_rng(1))
        x, y = g.tensors[g.inputs[0]], g.tensors[g.outputs[0]]
        assert x.quant is not None
        assert y.quant is not None
        g = single_op_qgraph(kind, [act("x", (3, 100), x.quant)], (3, 100), y.quant, g.ops[0].attrs)
        codes = [np.resize(np.arange(-128, 128), (3, 100)).astype(np.int8)]
        (want,) = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding)
        np.testing.assert_array_equal(np.asarray(run_single_op(g, codes)), want)
    for seed in range(25):
        rng = np.random.default_rng(7000 * kind.value + seed)
        g = random_qgraph(kind, rng)
        codes = random_codes(g, rng)
        (want,) = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding)
        got = np.asarray(run_single_op(g, codes))
        np.testing.assert_array_equal(got, want, err_msg=f"seed {seed}")


# Pointwise convolutions whose input rows the 8-bit GEMM reads in place (depth a multiple of 4,
# whole 8-row register blocks, the last < 8 rows copied): 24 pixels (no copy); 300 pixels = a
# 256-row tile, then 40 rows in place and 4 copied; two 7x7 images = 98 rows: 96 in place,
# 2 copied.
POINTWISE = {
    "pw_c8_24px": (1, 4, 6, 8, 20, 1, 1, 1, (0, 0, 0, 0), -128),
    "pw_c4_300px": (1, 15, 20, 4, 17, 1, 1, 1, (0, 0, 0, 0), 127),
    "pw_c12_n2": (2, 7, 7, 12, 33, 1, 1, 1, (0, 0, 0, 0), 5),
}


@pytest.mark.parametrize("name", [*SHAPES, *POINTWISE])
def test_conv_gemm_shapes_bit_exact(name: str, isa_path: str) -> None:
    """test_emu_gemm's CONV_2D shapes (columns around the 8/16-lane panels, extreme zero points,
    deep filters) and the in-place pointwise ones on each path: under MDLA_EMU_ISA=avx2 the AVX2
    int16 GEMM."""
    g = conv_graph({**SHAPES, **POINTWISE}[name], seed=len(name))
    codes = random_codes(g, np.random.default_rng(7))
    codes[0][..., 0] = -128
    codes[0][..., -1] = 127
    (want,) = run_int8(g, as_floats(g, codes), raw=True)
    np.testing.assert_array_equal(np.asarray(run_single_op(g, codes)), want, err_msg=name)


# CONV_2D on the rows GEMM (gemm_rows.c, conv_rows.c: x86-64 with AVX-512 VNNI): the implicit
# GEMM (ci a multiple of 4: taps read in place, outside taps from a zero-point row), the im2col
# rows of codes otherwise (whole kernel rows copied as one run, edges tap by tap), the row sums
# of the w + 128 operand swap, register blocks cut at the tile's end, more than one tile, odd
# column counts (masked stores) and the requantization in the tile (double rounding) or after
# it (single rounding: the wide pipeline).
# (n, h, w, c, o, k, stride, dilation, (top, bottom, left, right), z_in)
ROWS = {
    "imp_3x3_c4_o33_zmin": (1, 9, 8, 4, 33, 3, 1, 1, (1, 1, 1, 1), -128),
    "imp_3x3_s2_c8_o48_zmax": (2, 10, 9, 8, 48, 3, 2, 1, (1, 0, 1, 0), 127),
    "imp_5x5_dil2_c12_o17": (1, 12, 12, 12, 17, 5, 1, 2, (4, 4, 3, 5), -5),
    "imp_2x2_s2_c20_o31_edge": (1, 7, 7, 20, 31, 2, 2, 1, (0, 1, 0, 1), 90),
    "imp_3x3_c64_o1_skew_pad": (1, 6, 5, 64, 1, 3, 1, 1, (2, 0, 0, 2), 3),
    "imp_3x3_c16_o40_two_tiles": (1, 20, 20, 16, 40, 3, 1, 1, (1, 1, 1, 1), 0),
    "pw_c4_o17_299px": (1, 13, 23, 4, 17, 1, 1, 1, (0, 0, 0, 0), 127),
    "col_7x7_s2_c3_stem": (1, 23, 21, 3, 16, 7, 2, 1, (3, 3, 3, 3), -128),
    "col_3x3_dil2_c5_o9": (1, 9, 10, 5, 9, 3, 1, 2, (2, 1, 2, 1), 64),
}


@pytest.mark.parametrize("name", ROWS)
def test_conv_rows_shapes_bit_exact(
    name: str, isa_path: str, rounding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDLA_EMU_AMX", "0")  # the rows path even on a CPU with AMX
    g = conv_graph(ROWS[name], seed=len(name))
    codes = random_codes(g, np.random.default_rng(9))
    codes[0][..., 0] = -128
    codes[0][..., -1] = 127
    (want,) = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding)
    assert np.unique(want).size > 4, "a case whose outputs are all clamped tests nothing"
    got = np.asarray(run_single_op(g, codes))
    np.testing.assert_array_equal(got, want, err_msg=f"{name}, {isa_path}, {rounding}")


# Requantization multipliers above 1 (shift s > 0: x * 2^s before SRDHM), which the narrow
# lanes take when (depth * 255 * 128 + max|bias|) * 2^s < 2^31: weights in {-1, 0, 1} and codes
# near z_in keep the sums small enough that outputs 1.5-6x the sums are not all clamped.
# (kind, n, h, w, c, o, k, stride, pads, z_in)
LEFT = {
    "conv_3x3_c8_o20": (OpKind.CONV_2D, 1, 7, 6, 8, 20, 3, 1, (1, 1, 1, 1), -100),
    "conv_pw_c12_o17": (OpKind.CONV_2D, 2, 5, 5, 12, 17, 1, 1, (0, 0, 0, 0), 100),
    "conv_col_c3_o9_s2": (OpKind.CONV_2D, 1, 9, 9, 3, 9, 3, 2, (1, 1, 1, 1), 0),
    "dw_3x3_c37": (OpKind.DEPTHWISE_CONV_2D, 1, 6, 7, 37, 37, 3, 1, (1, 1, 1, 1), -100),
    "dw_5x5_s2_c16": (OpKind.DEPTHWISE_CONV_2D, 1, 9, 9, 16, 16, 5, 2, (2, 2, 2, 2), 50),
}


def left_shift_graph(shape: tuple[Any, ...], seed: int) -> Graph:
    kind, n, h, w, c, o, k, stride, pads, z_in = shape
    rng = np.random.default_rng(seed)
    dw = kind is OpKind.DEPTHWISE_CONV_2D
    wshape = (1, k, k, o) if dw else (o, k, k, c)
    wt = rng.integers(-1, 2, size=wshape, dtype=np.int8)
    s_in, s_out = 0.02, 0.01
    ws = (s_out / s_in * rng.uniform(1.5, 6.0, size=o)).astype(np.float32)  # M * 2^s: 1.5-6
    bias = rng.integers(-8, 9, size=o).astype(np.int32)
    oh = out_size(h, k, stride, 1, pads[0], pads[1])
    ow = out_size(w, k, stride, 1, pads[2], pads[3])
    tensors = [
        Tensor("x", (n, h, w, c), "int8", None, qp(s_in, z_in)),
        Tensor("w", wt.shape, "int8", wt, qp(ws, 0, 3 if dw else 0)),
        Tensor("bias", bias.shape, "int32", bias, qp(np.float32(s_in) * ws, 0, 0)),
    ]
    attrs: dict[str, Any] = {"stride": (stride, stride), "dilation": (1, 1), "padding": pads}
    attrs |= {"multiplier": 1} if dw else {"groups": 1}
    return single_op_qgraph(kind, tensors, (n, oh, ow, o), qp(s_out, 3), attrs | {"fuse": "NONE"})


@pytest.mark.parametrize("name", LEFT)
def test_multipliers_above_one_bit_exact(name: str, isa_path: str, rounding: str) -> None:
    g = left_shift_graph(LEFT[name], seed=len(name))
    z_in = LEFT[name][-1]
    rng = np.random.default_rng(3)
    x = g.tensors[g.inputs[0]]
    codes = [np.clip(z_in + rng.integers(-6, 7, size=x.shape), -128, 127).astype(np.int8)]
    (want,) = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding)
    assert np.unique(want).size > 8, "a case whose outputs are all clamped tests nothing"
    got = np.asarray(run_single_op(g, codes))
    np.testing.assert_array_equal(got, want, err_msg=f"{name}, {isa_path}, {rounding}")


# The AVX2 requantization's short form (simd.h emu_requant_nudge_avx2: RDBPOT and the output
# zero point as one add and an arithmetic shift, the clamp in int8 after the packs), per
# channel: multipliers above 1 (a left shift), in [0.5, 1) (no right shift: [h < 0] masked off)
# and 2^-1 .. 2^-14 (right shifts), so a layer has all three or only right shifts (no mask);
# output zero points at both ends and clamps inside [-128, 127] (RELU6 at z = -100: [-100, 20]);
# channel counts with 32-, 8- and < 8-lane pieces. "capped_dead": two channels of one output
# code whatever the sum, as the form's constant lanes: a right shift of 25-26 against z = 127
# (127 * 2^26 overflows int32; RDBPOT is 0 for every sum) and a dead channel (a bias near 2^30
# that always clamps). "no_room": 600
# input channels, one channel's weights all +-127 (|sum| up to 2^24) at a right shift of 24
# against z = 127, so the layer keeps the long form. Sums span int32 lanes' low 20 bits (random
# int8 weights and codes).
# (kind, c, o, k, z_out, s_out, fuse, multipliers: "mixed" | "right" | "capped_dead" | "no_room")
NUDGE = {
    "pw_o45_mixed_z127": (OpKind.CONV_2D, 16, 45, 1, 127, 1.0, "NONE", "mixed"),
    "pw_o70_right_zm128": (OpKind.CONV_2D, 24, 70, 1, -128, 1.0, "NONE", "right"),
    "pw_o37_mixed_relu6": (OpKind.CONV_2D, 9, 37, 1, -100, 0.05, "RELU6", "mixed"),
    "conv3_o16_right_relu6": (OpKind.CONV_2D, 5, 16, 3, -100, 0.05, "RELU6", "right"),
    "dw_c43_mixed_z5": (OpKind.DEPTHWISE_CONV_2D, 43, 43, 3, 5, 1.0, "NONE", "mixed"),
    "dw_c32_right_relu6": (OpKind.DEPTHWISE_CONV_2D, 32, 32, 5, -100, 0.05, "RELU6", "right"),
    "pw_o21_capped_dead": (OpKind.CONV_2D, 16, 21, 1, 127, 1.0, "NONE", "capped_dead"),
    "pw_c600_o11_no_room": (OpKind.CONV_2D, 600, 11, 1, 127, 1.0, "NONE", "no_room"),
}


def nudge_graph(name: str) -> Graph:
    kind, c, o, k, z_out, s_out, fuse, mults = NUDGE[name]
    rng = np.random.default_rng(len(name))
    dw = kind is OpKind.DEPTHWISE_CONV_2D
    wt = rng.integers(-127, 128, size=(1, k, k, o) if dw else (o, k, k, c), dtype=np.int8)
    bias = rng.integers(-3000, 3001, size=o).astype(np.int32)
    exp = rng.integers(7, 20, size=o).astype(np.float64)  # output / sum = 2^-exp * [1, 2)
    if mults != "right":  # 1-2 (a left shift of 1) and 0.5-1 (no shift) on every 4th channel
        exp[::4], exp[1::4] = 0, 1
        small = np.zeros(o, bool)
        small[::4] = small[1::4] = True
        one = np.zeros_like(wt[..., small] if dw else wt[small])  # one tap of +-1: |sum| <= 255
        one.reshape(-1, one.shape[-1] if dw else one[0].size)[..., 0] = 1
        if dw:
            wt[..., small] = one * rng.choice([-1, 1], size=small.sum()).astype(np.int8)
        else:
            wt[small] = one * rng.choice([-1, 1], size=(small.sum(), 1, 1, 1)).astype(np.int8)
        bias[small] = rng.integers(-20, 21, size=small.sum())
    if mults == "capped_dead":  # channel 3 reaches its bound at a pixel of -128 (z_in 127)
        exp[3], exp[5], bias[5] = 26, 24, 2**30 - 2**20
        wt[3], bias[3] = np.maximum(np.abs(wt[3]), 1), -abs(bias[3])
    if mults == "no_room":
        exp[3] = 24
        wt[3] = rng.choice(np.array([-127, 127], np.int8), size=wt[3].shape)
    real = 2.0**-exp * rng.uniform(1.0, 1.99, size=o)
    s_in = 0.05
    ws = (s_out / s_in * real).astype(np.float32)
    pad = k // 2
    tensors = [
        Tensor("x", (1, 6, 5, c), "int8", None, qp(s_in, 127 if mults == "capped_dead" else -3)),
        Tensor("w", wt.shape, "int8", wt, qp(ws, 0, 3 if dw else 0)),
        Tensor("bias", bias.shape, "int32", bias, qp(np.float32(s_in) * ws, 0, 0)),
    ]
    attrs: dict[str, Any] = {"stride": (1, 1), "dilation": (1, 1), "padding": (pad,) * 4}
    attrs |= {"multiplier": 1} if dw else {"groups": 1}
    return single_op_qgraph(kind, tensors, (1, 6, 5, o), qp(s_out, z_out), attrs | {"fuse": fuse})


@pytest.mark.parametrize("name", NUDGE)
def test_requant_short_form_bit_exact(name: str, isa_path: str) -> None:
    g = nudge_graph(name)
    x = g.tensors[g.inputs[0]]
    codes = [np.random.default_rng(9).integers(-128, 128, size=x.shape).astype(np.int8)]
    codes[0][0, 0, 0] = -128
    (want,) = run_int8(g, as_floats(g, codes), raw=True)
    assert np.unique(want).size > 50, "a case whose outputs are all clamped tests nothing"
    got = np.asarray(run_single_op(g, codes))
    np.testing.assert_array_equal(got, want, err_msg=f"{name}, {isa_path}")


# The narrow lanes' bound is per channel, from the channel's own weights: |acc + bias| <=
# 255 * sum |w| + |bias|. Channel 0's bias puts that bound at 2^31 - 1 exactly ("at") or 2 past it
# ("past": the sum can leave int32, so the layer stays on the int64 rows, which saturate it), with
# a tiny weight scale, as BatchNorm folding leaves a dead channel; the other channels have
# multipliers of 1.5-6 (s > 0), which the old bound (taps * 255 * 128 + max|bias|, shifted by the
# largest s) sent to the int64 rows whatever channel 0's weights. Inputs of -128 against
# z_in = 127 and weights of 127 reach the bound.
def edge_graph(kind: OpKind, past: int) -> Graph:
    rng = np.random.default_rng(7)
    dw = kind is OpKind.DEPTHWISE_CONV_2D
    c, o, k = (6, 6, 3) if dw else (16, 6, 1)
    wt = rng.integers(-1, 2, size=(1, k, k, o) if dw else (o, k, k, c), dtype=np.int8)
    if dw:
        wt[..., 0] = 127
    else:
        wt[0] = 127
    s_in, s_out = 0.02, 0.01
    ws = (s_out / s_in * rng.uniform(1.5, 6.0, size=o)).astype(np.float32)
    ws[0] = s_out / s_in * 2.0**-26  # M * 2^s of 2^-26: -2^31 gives -29, a wrapped +2^31 35
    bias = rng.integers(-8, 9, size=o).astype(np.int64)
    bias[0] = -(2**31 - 1 - 255 * int(np.abs(wt[..., 0] if dw else wt[0]).sum()) + past)
    pads = (1, 1, 1, 1) if dw else (0, 0, 0, 0)
    tensors = [
        Tensor("x", (1, 5, 5, c), "int8", None, qp(s_in, 127)),
        Tensor("w", wt.shape, "int8", wt, qp(ws, 0, 3 if dw else 0)),
        Tensor("bias", bias.shape, "int32", bias.astype(np.int32), qp(np.float32(s_in) * ws, 0, 0)),
    ]
    attrs: dict[str, Any] = {"stride": (1, 1), "dilation": (1, 1), "padding": pads}
    attrs |= {"multiplier": 1} if dw else {"groups": 1}
    return single_op_qgraph(kind, tensors, (1, 5, 5, o), qp(s_out, 3), attrs | {"fuse": "NONE"})


@pytest.mark.parametrize("kind", [OpKind.DEPTHWISE_CONV_2D, OpKind.CONV_2D], ids=lambda k: k.name)
def test_the_narrow_bound_is_each_channels_own(kind: OpKind, isa_path: str) -> None:
    """ "at" is run_int8's, bit for bit; "past" overflows int32 at the inner pixels, which
    run_int8 refuses: saturated there (-2^31, not -(2^31 - 1)), it gives "at"'s bytes too."""
    at = edge_graph(kind, 0)
    rng = np.random.default_rng(5)
    x = at.tensors[at.inputs[0]]
    codes = [np.clip(127 + rng.integers(-6, 1, size=x.shape), -128, 127).astype(np.int8)]
    codes[0][:, 1:4, 1:4, :] = -128  # x - z_in = -255 under every tap of the inner pixels
    (want,) = run_int8(at, as_floats(at, codes), raw=True)
    assert np.unique(want[..., 1:]).size > 8, "outputs all clamped test nothing"
    np.testing.assert_array_equal(np.asarray(run_single_op(at, codes)), want, err_msg="at")
    got = np.asarray(run_single_op(edge_graph(kind, 2), codes))
    np.testing.assert_array_equal(got, want, err_msg=f"past, {isa_path}")


# MUL's lanes (64 codes a step, the last block masked) on the squeeze-excite broadcast: a map
# [n, h, w, c] times a per-channel gate [n, 1, 1, c] (runs of c, both steps 1), channel counts
# around the 32 / 64-code blocks, batch 2, the gate on either side, a scalar (step 0); with
# output scales that give RDBPOT shifts 0, small, 16-18 (the cap at 17) and extreme zero points.
MUL_SHAPES = [
    ((2, 3, 5, 1), (2, 1, 1, 1)),
    ((2, 3, 5, 31), (2, 1, 1, 31)),
    ((1, 4, 4, 33), (1, 1, 1, 33)),
    ((2, 2, 3, 64), (2, 1, 1, 64)),
    ((1, 1, 1, 97), (1, 3, 2, 97)),
    ((2, 2, 2, 130), (1,)),
    # k_mul.c's gate pieces: a batch's map longer than a piece, c not dividing it, the gate on
    # either side (the second also broadcast over the batch)
    ((2, 9, 9, 97), (2, 1, 1, 97)),
    ((1, 1, 1, 33), (2, 16, 17, 33)),
]
MUL_OUT = {
    "right0": (0.0002, 7),
    "small": (0.01, -3),
    "r16": (18.0, 0),
    "r17": (36.0, -128),
    "r18": (72.0, 127),
}


@pytest.mark.parametrize("out", MUL_OUT, ids=str)
@pytest.mark.parametrize("shapes", MUL_SHAPES, ids=lambda s: "x".join(map(str, s[0] + s[1])))
def test_mul_gate_broadcast_bit_exact(shapes: Any, out: str, isa_path: str) -> None:
    """MUL on the gate broadcast against run_int8 (double rounding: the lanes path)."""
    (sa, sb), (scale, zo) = shapes, MUL_OUT[out]
    rng = np.random.default_rng(len(sa) * 131 + sa[-1])
    y_shape = tuple(np.broadcast_shapes(sa, sb))
    for fuse in ("NONE", "RELU6"):
        x1, x2 = act("a", sa, qp(0.05, 127)), act("b", sb, qp(1 / 256, -128))
        g = single_op_qgraph(OpKind.MUL, [x1, x2], y_shape, qp(scale, zo), {"fuse": fuse})
        codes = random_codes(g, rng)
        codes[0].flat[0], codes[1].flat[0] = -128, 127  # the largest |product|: 255 * 255
        (want,) = run_int8(g, as_floats(g, codes), raw=True)
        np.testing.assert_array_equal(np.asarray(run_single_op(g, codes)), want, err_msg=fuse)


def silu_graph(x_first: bool, fuse: str) -> Graph:
    """SiLU as a model writes it: LOGISTIC(x), then MUL of x and it (either operand order)."""
    x = act("x", (2, 5, 7, 37), qp(0.06, 9))
    sig = act("sig", x.shape, qp(1 / 256, -128))
    out = act("out", x.shape, qp(0.03, -60))
    pair = ("x", "sig") if x_first else ("sig", "x")
    ops = (
        Op(OpKind.LOGISTIC, "sigmoid", ("x",), ("sig",), None),
        Op(OpKind.MUL, "silu", pair, ("out",), {"fuse": fuse}),
    )
    return Graph("silu", {t.name: t for t in (x, sig, out)}, ops, ("x",), ("out",), layout="NHWC")


@pytest.mark.parametrize("x_first", [True, False], ids=["x_sig", "sig_x"])
@pytest.mark.parametrize("fuse", ["NONE", "RELU"])
def test_silu_mul_of_its_logistic_bit_exact(x_first: bool, fuse: str, tmp_path: Path) -> None:
    """SiLU as MUL(x, LOGISTIC(x)), either operand order, through a saved model: the MUL reads
    x alone through its 256-entry table (k_mul.c), every code of x against run_int8."""
    g = silu_graph(x_first, fuse)
    x = g.tensors["x"]
    codes = [np.resize(np.arange(-128, 128), x.shape).astype(np.int8)]
    xs = as_floats(g, codes)
    manifest = load(save(g, tmp_path / "silu.mdla"))
    (got,) = open_target("emu").run(manifest, xs).raw_outputs
    (want,) = run_int8(g, xs, raw=True)
    np.testing.assert_array_equal(np.asarray(got).reshape(want.shape), want)


@pytest.mark.skipif(cpu_isa() < ISA["avx2"], reason="needs an x86-64 CPU with AVX2")
def test_lut_avx2_every_code_and_tail() -> None:
    """emu_lut_avx2 (16 vpshufb rows of the 256-entry table) is table[x + 128] for every code,
    random tables, every length from 0 to 99 (whole 32-code steps, copied tails), 256, 300."""
    lut = ctypes.CDLL(str(build_emulator())).emu_lut_avx2
    lut.restype = None
    ptr = ctypes.c_void_p
    lut.argtypes = [ptr, ptr, ptr, ctypes.c_uint64]
    rng = np.random.default_rng(3)
    for n in [*range(100), 256, 300]:  # 256 and 300: every code
        table = rng.integers(-128, 128, 256).astype(np.int8)
        x = np.resize(rng.permutation(np.arange(-128, 128)), n + 2).astype(np.int8)
        y = np.full(n + 2, 77, np.int8)  # the two bytes past n must stay
        lut(table.ctypes.data, x.ctypes.data, y.ctypes.data, n)
        want = np.concatenate([table[x[:n].astype(np.int32) + 128], [77, 77]]).astype(np.int8)
        np.testing.assert_array_equal(y, want, err_msg=f"n {n}")
