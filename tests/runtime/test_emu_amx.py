"""CONV_2D on Intel AMX (kernels/gemm_amx.c, conv_amx.c: the x86-64 path before the VNNI rows
GEMM when the CPU has AMX-INT8), bit for bit with mdla_quant.run_int8 and with the VNNI rows
path (MDLA_EMU_AMX=0), in both roundings (double requantizes each finished 32 x 32 block, single
writes int32 sums first). Shapes aim at what the AMX layout could get wrong: depth around the
64-byte tile rows (one chunk, several, a padded last one), columns around the 32-column block
(masked stores, one output channel), rows around the 32-row block and the tile (a pointwise conv
reads whole blocks from the input while their rows' padded depth fits in it and stages the
rest), more than one
tile, taps outside the image, the stem's ci = 3, and the extreme zero points. On a CPU without
AMX the same cases run the best path there (the readiness test checks which one that is).
"""

from __future__ import annotations

import ctypes
import platform
from pathlib import Path

import numpy as np
import pytest

from mdla_emu import build_emulator
from mdla_ir.builders import as_floats, qp, random_codes, single_op_qgraph
from mdla_ir.graph import Graph, Tensor
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from tests.runtime.test_emu_gemm import SHAPES, conv_graph
from tests.runtime.test_emu_simd import ROWS
from tests.runtime.test_emu_support import run_single_op

# (n, h, w, c, o, k, stride, dilation, (top, bottom, left, right), z_in)
AMX = {
    # 45 pixels: one 32-row block read in place, 13 rows staged
    "pw_c64_o40_45px": (1, 5, 9, 64, 40, 1, 1, 1, (0, 0, 0, 0), -128),
    # 400 pixels: two tiles (256 + 144 rows), each with in-place blocks and a staged rest
    "pw_c64_o33_400px": (1, 20, 20, 64, 33, 1, 1, 1, (0, 0, 0, 0), 127),
    # ci = 128: two depth chunks in place; two images
    "pw_c128_o70_n2": (2, 9, 10, 128, 70, 1, 1, 1, (0, 0, 0, 0), 11),
    # ci = 96: depth padded to 128, read in place (bytes 96..127 are the next pixel's, met by
    # zero weights) except the last rows, whose 128 bytes would run past the input
    "pw_c96_o64_padded_depth": (1, 7, 9, 96, 64, 1, 1, 1, (0, 0, 0, 0), -3),
    # ci = 24 and ci = 3: 97 and 70 pixels, the in-place rows end where 64 bytes still fit
    "pw_c24_o20_97px": (1, 1, 97, 24, 20, 1, 1, 1, (0, 0, 0, 0), 127),
    "pw_c3_o8_70px": (1, 7, 10, 3, 8, 1, 1, 1, (0, 0, 0, 0), -128),
    # 3x3 over 64 channels: 9 chunks, 400 pixels in two tiles, 96 columns
    "3x3_c64_o96_two_tiles": (1, 20, 20, 64, 96, 3, 1, 1, (1, 1, 1, 1), -128),
    # 3x3 stride 2 over 72 channels: depth 648 -> 704, one output channel
    "3x3_s2_c72_o1": (1, 11, 12, 72, 1, 3, 2, 1, (1, 1, 1, 1), 100),
    # a resnet stem: depth 147 -> 192, 64 columns
    "stem_7x7_s2_c3_o64": (1, 30, 28, 3, 64, 7, 2, 1, (3, 3, 3, 3), -128),
    # stride 2 over 64 channels stays staged (the taps path is stride 1 only): TF-style
    # padding (bottom and right only), and resnet's 1x1 downsample with an odd width
    "3x3_s2_c64_o64_same": (1, 14, 35, 64, 64, 3, 2, 1, (0, 1, 0, 1), -128),
    "1x1_s2_c64_o48": (2, 9, 13, 64, 48, 1, 2, 1, (0, 0, 0, 0), 100),
}
# The taps path (conv_amx_taps.c: tile rows straight from a padded copy of the input rows, no
# im2col), taken at stride 1 when padding each tap's channels to 64 adds at most an eighth to
# the depth.
TAPS = {
    # stride 1: output rows run together (rows past ow dropped); 2 x 13 output rows in tiles
    # of 7 (the copy's budget), the second one crossing into the second image
    "taps_3x3_c128_o40_tiles_over_images": (2, 13, 80, 128, 40, 3, 1, 1, (1, 1, 1, 1), 127),
    # ci = 60 and 120: each tap padded to 64 and 128 (the next pixel's codes meet zero weights)
    "taps_3x3_c60_o33": (1, 9, 11, 60, 33, 3, 1, 1, (1, 1, 1, 1), -128),
    "taps_3x3_c120_o70": (1, 6, 7, 120, 70, 3, 1, 1, (1, 1, 1, 1), 5),
    # dilation 2, asymmetric padding; 5x5 with a wide right border
    "taps_3x3_d2_c64_o32": (1, 12, 10, 64, 32, 3, 1, 2, (2, 1, 0, 2), 3),
    "taps_5x5_c64_o16_pads": (1, 7, 7, 64, 16, 5, 1, 1, (2, 2, 1, 3), -77),
    # a late resnet layer: 7x7 pixels, 4 chunks per tap, 600 columns
    "taps_3x3_c256_o600_7x7": (1, 7, 7, 256, 600, 3, 1, 1, (1, 1, 1, 1), 0),
}
CASES = {**SHAPES, **ROWS, **AMX, **TAPS}


def cpu_has_amx() -> bool:
    """What gemm_amx.c's check should find, read independently from /proc/cpuinfo (Linux lists
    amx_tile only when it supports the tile state, so the permission is granted)."""
    if platform.machine() != "x86_64":
        return False
    flags = set(Path("/proc/cpuinfo").read_text().split())
    return {"avx512f", "avx512bw", "avx512vl", "avx512_vnni", "amx_tile", "amx_int8"} <= flags


def test_the_amx_gemm_follows_the_cpu_and_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ready = ctypes.CDLL(str(build_emulator())).emu_gemm_amx_ready
    ready.restype = ctypes.c_bool
    for var in ("MDLA_EMU_PORTABLE", "MDLA_EMU_ISA", "MDLA_EMU_AMX"):
        monkeypatch.delenv(var, raising=False)
    assert ready() is cpu_has_amx()
    monkeypatch.setenv("MDLA_EMU_ISA", "avx512")  # the cap leaves the 8-bit paths on
    assert ready() is cpu_has_amx()
    for var, value in (("MDLA_EMU_AMX", "0"), ("MDLA_EMU_ISA", "avx2"), ("MDLA_EMU_PORTABLE", "1")):
        monkeypatch.setenv(var, value)
        assert ready() is False, f"{var}={value}"
        monkeypatch.delenv(var)


@pytest.fixture(params=["double", "single"])
def rounding(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MDLA_EMU_ROUNDING", str(request.param))
    return str(request.param)


@pytest.mark.parametrize("name", CASES)
def test_conv_amx_bit_exact(name: str, rounding: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("MDLA_EMU_PORTABLE", "MDLA_EMU_ISA", "MDLA_EMU_AMX"):
        monkeypatch.delenv(var, raising=False)
    g = conv_graph(CASES[name], seed=len(name))
    codes = random_codes(g, np.random.default_rng(13))
    codes[0][..., 0] = -128  # the extreme codes in every pixel: the largest |x - z_in|
    codes[0][..., -1] = 127
    (want,) = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding)
    assert np.unique(want).size > 4, "a case whose outputs are all clamped tests nothing"
    got = np.asarray(run_single_op(g, codes))
    np.testing.assert_array_equal(got, want, err_msg=f"{name}, AMX, {rounding}")
    monkeypatch.setenv("MDLA_EMU_AMX", "0")
    vnni = np.asarray(run_single_op(g, codes))
    np.testing.assert_array_equal(vnni, want, err_msg=f"{name}, MDLA_EMU_AMX=0, {rounding}")


@pytest.mark.parametrize("fuse", ["RELU", "RELU6"])
@pytest.mark.parametrize("name", ["taps_3x3_c60_o33", "pw_c64_o33_400px"])
def test_conv_amx_clamps_a_fused_activation(
    name: str, fuse: str, rounding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The block requantization clamps to the activation's range in bytes after the packs."""
    for var in ("MDLA_EMU_PORTABLE", "MDLA_EMU_ISA", "MDLA_EMU_AMX"):
        monkeypatch.delenv(var, raising=False)
    g = conv_graph(CASES[name], seed=7, fuse=fuse)
    codes = random_codes(g, np.random.default_rng(3))
    (want,) = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding)
    assert (want == want.min()).mean() > 0.2, "the activation's floor is reached"
    np.testing.assert_array_equal(np.asarray(run_single_op(g, codes)), want)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("name", ["taps_3x3_c128_o40_tiles_over_images", "taps_3x3_d2_c64_o32"])
def test_conv_amx_taps_threads(name: str, threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiles of whole output rows split over threads give the same bytes."""
    for var in ("MDLA_EMU_PORTABLE", "MDLA_EMU_ISA", "MDLA_EMU_AMX"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MDLA_EMU_THREADS", str(threads))
    g = conv_graph(CASES[name], seed=5)
    codes = random_codes(g, np.random.default_rng(11))
    (want,) = run_int8(g, as_floats(g, codes), raw=True)
    np.testing.assert_array_equal(np.asarray(run_single_op(g, codes)), want)


def tie_conv_graph(fuse: str, z_out: int) -> Graph:
    """A pointwise conv over 64 channels to 72 whose requantization lands on RDBPOT's ties of
    either sign: power-of-two multipliers by channel (test_emu_dw4's idea) from 2^2 (left
    shift 3) down to 2^-6 in the first 32-column block, only 2^-1..2^-6 (no left shift; r = 0
    for 2^-1) in the second block and the 8-column third, small weights and codes near z_in."""
    rng = np.random.default_rng(17)
    co, ci, s_in, s_out = 72, 64, 0.25, 0.5
    exps = [2 - o % 9 if o < 32 else -1 - o % 6 for o in range(co)]
    ws = np.array([2.0 ** (e + 1) for e in exps], np.float32)  # s_in * ws / s_out = 2^e
    wt = rng.integers(-2, 3, size=(co, 1, 1, ci), dtype=np.int8)
    bias = rng.integers(-6, 7, size=co).astype(np.int32)
    tensors = [
        Tensor("x", (2, 5, 9, ci), "int8", None, qp(s_in, 3)),
        Tensor("w", wt.shape, "int8", wt, qp(ws, 0, 0)),
        Tensor("bias", bias.shape, "int32", bias, qp(np.float32(s_in) * ws, 0, 0)),
    ]
    attrs = {"stride": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "groups": 1}
    return single_op_qgraph(
        OpKind.CONV_2D, tensors, (2, 5, 9, co), qp(s_out, z_out), attrs | {"fuse": fuse}
    )


@pytest.mark.parametrize(("fuse", "z_out"), [("NONE", -3), ("RELU6", -128), ("NONE", 120)])
def test_conv_amx_requantization_ties_bit_exact(
    fuse: str, z_out: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The block epilogue's int64 rounding (gemm_amx.c store_codes) on ties of either sign,
    with and without a left shift in the block, against run_int8."""
    for var in ("MDLA_EMU_PORTABLE", "MDLA_EMU_ISA", "MDLA_EMU_AMX", "MDLA_EMU_ROUNDING"):
        monkeypatch.delenv(var, raising=False)
    g = tie_conv_graph(fuse, z_out)
    rng = np.random.default_rng(4)
    x = g.tensors[g.inputs[0]]
    codes = [np.clip(3 + rng.integers(-2, 3, size=x.shape), -128, 127).astype(np.int8)]
    (want,) = run_int8(g, as_floats(g, codes), raw=True)
    assert np.unique(want).size > 8, "outputs all clamped test nothing"
    np.testing.assert_array_equal(np.asarray(run_single_op(g, codes)), want, err_msg=fuse)
