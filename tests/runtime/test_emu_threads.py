"""The emulator's worker threads (kernels/pool.c): every kernel that splits its work over
MDLA_EMU_THREADS gives the same bytes at 1, 2 and 3 threads, and those bytes are
mdla_quant.run_int8's. MDLA_EMU_MIN_WORK=1 makes every op with two or more rows split (cuts
inside broadcast runs' outer dims, mid-image pool and resize rows, uneven thread chunks); the
default minimum is also run, where the small cases stay on one thread.
"""

from __future__ import annotations

import ctypes
import platform
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdla_ir.builders import (
    act,
    as_floats,
    const,
    qp,
    random_codes,
    random_qgraph,
    single_op_qgraph,
)
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from tests.runtime.test_emu_gemm import conv_graph, cpu_has_8bit_gemm
from tests.runtime.test_emu_support import emu, run_single_op

SPLIT = [
    OpKind.ADD,
    OpKind.SUB,
    OpKind.MUL,
    OpKind.PRELU,
    OpKind.RELU,
    OpKind.RELU6,
    OpKind.LOGISTIC,
    OpKind.TANH,
    OpKind.HARD_SWISH,
    OpKind.SOFTMAX,
    OpKind.AVERAGE_POOL_2D,
    OpKind.MAX_POOL_2D,
    OpKind.MEAN,
    OpKind.CONCATENATION,
    OpKind.PAD,
    OpKind.RESIZE_BILINEAR,
    OpKind.RESIZE_NEAREST_NEIGHBOR,
    OpKind.CONV_2D,
    OpKind.DEPTHWISE_CONV_2D,
    OpKind.FULLY_CONNECTED,
]


def tokens_fc(rng: np.random.Generator) -> Graph:
    """A channels-last Linear over 2 x 37 tokens (random_qgraph's batches fit one 8-bit GEMM
    block, so they never split): the batch rows are what FULLY_CONNECTED cuts."""
    i, o = int(rng.integers(20, 200)), int(rng.integers(5, 60))
    wt = rng.integers(-127, 128, size=(o, i), dtype=np.int8)
    ws = np.exp(rng.uniform(np.log(1e-3), np.log(0.05), size=o)).astype(np.float32)
    bias = rng.integers(-5000, 5000, size=o).astype(np.int32)
    s_in = 0.02
    ins = [
        act("x", (2, 37, i), qp(s_in, int(rng.integers(-128, 128)))),
        const("w", wt, qp(ws, 0, 0)),
        const("bias", bias, qp(np.float32(s_in) * ws, 0, 0)),
    ]
    spread = float(np.sqrt(i) * 128 * 73 * s_in * np.median(ws))
    return single_op_qgraph(
        OpKind.FULLY_CONNECTED, ins, (2, 37, o), qp(spread / 20, -3), {"fuse": "NONE"}
    )


def assert_threads_keep_bytes(
    g: Graph,
    codes: Any,
    monkeypatch: pytest.MonkeyPatch,
    what: str = "",
    rounding: str | None = None,
    distinct: int = 0,
) -> None:
    """`g` on `codes` in the emulator at 1, 2 and 3 threads gives run_int8's bytes (in
    `rounding` when given); with `distinct`, run_int8's output holds more distinct codes than
    that (a case whose outputs are all clamped tests nothing)."""
    kw = {} if rounding is None else {"rounding": rounding}
    (want,) = run_int8(g, as_floats(g, codes), raw=True, **kw)
    if distinct:
        assert np.unique(want).size > distinct, "a case whose outputs are all clamped tests nothing"
    for threads in (1, 2, 3):
        monkeypatch.setenv("MDLA_EMU_THREADS", str(threads))
        got = np.asarray(run_single_op(g, codes))
        assert got.tobytes() == np.asarray(want).tobytes(), f"{what}{threads} threads"


@pytest.mark.parametrize("min_work", ["1", ""], ids=["split_all", "default"])
@pytest.mark.parametrize("kind", SPLIT, ids=lambda k: k.name)
def test_thread_count_never_changes_a_byte(
    kind: OpKind, min_work: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", min_work)
    for seed in range(6):
        rng = np.random.default_rng(9100 * kind.value + seed)
        g = (
            tokens_fc(rng)
            if kind is OpKind.FULLY_CONNECTED and seed < 3
            else random_qgraph(kind, rng, large=seed == 0)
        )
        codes = random_codes(g, rng)
        assert_threads_keep_bytes(g, codes, monkeypatch, f"seed {seed}, ")


def binary(kind: OpKind, a: tuple[int, ...], b: tuple[int, ...], rng: np.random.Generator) -> Graph:
    """`kind` of an a-shaped and a b-shaped activation (numpy broadcasting)."""
    q1, q2 = qp(0.03, int(rng.integers(-128, 128))), qp(0.05, int(rng.integers(-128, 128)))
    out = np.broadcast_shapes(a, b)
    scale = 0.03 * 0.05 * 128 * 128 / 100 if kind is OpKind.MUL else 0.12
    return single_op_qgraph(
        kind, [act("x", a, q1), act("y", b, q2)], out, qp(scale, -5), {"fuse": "NONE"}
    )


RUNS = [  # shapes whose broadcast merges into few long runs (a chunk then starts mid-run)
    ((1, 1, 1, 1001), (1, 1, 1, 1001)),  # one run
    ((2, 7, 9, 13), (2, 7, 9, 13)),  # one run of every element
    ((3, 5, 7, 11), (1, 1, 1, 11)),  # 105 runs of 11
    ((3, 1, 1, 33), (3, 6, 10, 33)),  # h and w merge: 3 runs of 60 broadcast x 33
    ((4, 6, 1), (1, 6, 25)),  # both ways
]


@pytest.mark.parametrize("kind", [OpKind.ADD, OpKind.SUB, OpKind.MUL], ids=lambda k: k.name)
def test_elementwise_chunks_cut_inside_runs(kind: OpKind, monkeypatch: pytest.MonkeyPatch) -> None:
    """The elements, not the runs, are what the threads share: with every op cut
    (MDLA_EMU_MIN_WORK=1) a thread's chunk starts and ends inside a run, and the bytes stay the
    one-thread ones and run_int8's."""
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", "1")
    rng = np.random.default_rng(4400 + kind.value)
    for a, b in RUNS:
        g = binary(kind, a, b, rng)
        codes = random_codes(g, rng)
        assert_threads_keep_bytes(g, codes, monkeypatch, f"{a} {b}, ")


def splits(g: Graph, rng: np.random.Generator) -> int:
    """How many jobs the emulator cut over two threads while it ran single-op `g` once."""
    before = emu().emu_split_jobs()
    run_single_op(g, random_codes(g, rng))
    return int(emu().emu_split_jobs() - before)


def test_elementwise_ops_with_enough_work_split_at_the_default_minimum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An ADD of 14 x 14 x 64 (a 256 x 256 table lookup per element: four units of work each)
    and a same-shape ADD of 20000 elements in one run split at two threads; a 1000-element ADD
    does not (the hand-off would cost more than half of it)."""
    emu().emu_split_jobs.restype = ctypes.c_uint64
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", "")
    monkeypatch.setenv("MDLA_EMU_THREADS", "2")
    rng = np.random.default_rng(17)
    assert splits(binary(OpKind.ADD, (1, 14, 14, 64), (1, 14, 14, 64), rng), rng) == 1
    assert splits(binary(OpKind.ADD, (1, 20000), (1, 20000), rng), rng) == 1
    assert splits(binary(OpKind.ADD, (1, 10, 100), (1, 10, 100), rng), rng) == 0
    monkeypatch.setenv("MDLA_EMU_THREADS", "1")
    assert splits(binary(OpKind.ADD, (1, 20000), (1, 20000), rng), rng) == 0


PADS = [  # (shape, pads): rows merge where the dims inside them are not padded
    ((1, 9, 11, 24), ((0, 0), (0, 1), (0, 1), (0, 0))),  # a stride-2 conv's pad: rows of w * c
    ((2, 5, 7, 3), ((0, 0), (1, 1), (2, 1), (0, 0))),
    ((3, 4, 5), ((1, 2), (0, 0), (0, 0))),  # one row per outer index: 20 elements each
    ((2, 3, 5, 6), ((0, 1), (1, 0), (0, 0), (2, 3))),  # the last dim padded: nothing merges
    ((40,), ((3, 5),)),
]


@pytest.mark.parametrize(("shape", "pads"), PADS, ids=[str(s) for s, _ in PADS])
def test_pad_writes_every_row_once_at_any_thread_count(
    shape: tuple[int, ...], pads: tuple[tuple[int, int], ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PAD's fill is written row by row with the copies (no whole-output fill first), over
    merged rows: at 1, 2 and 3 threads, every row cut, the bytes are run_int8's."""
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", "1")
    rng = np.random.default_rng(len(shape) * 100 + sum(map(sum, pads)))
    q = qp(0.04, int(rng.integers(-128, 128)))
    out = [d + a + b for d, (a, b) in zip(shape, pads, strict=True)]
    g = single_op_qgraph(OpKind.PAD, [act("x", shape, q)], out, q, {"pads": pads})
    codes = random_codes(g, rng)
    assert_threads_keep_bytes(g, codes, monkeypatch)


# (n, h, w, c, o, k, stride, dilation, (top, bottom, left, right), z_in): pixels of one tile
ONE_TILE = {
    "se_squeeze_1152_48": (1, 1, 1, 1152, 48, 1, 1, 1, (0, 0, 0, 0), -3),
    "se_expand_48_200": (1, 1, 1, 48, 200, 1, 1, 1, (0, 0, 0, 0), 11),
    "two_images_64_97": (2, 1, 1, 64, 97, 1, 1, 1, (0, 0, 0, 0), -128),
    "3x3_s2_four_pixels": (1, 3, 3, 16, 70, 3, 2, 1, (1, 1, 1, 1), 127),
    # ci a multiple of 64, rows in one tile: stride 1 takes the AMX taps path, stride 2 the
    # staged one (the taps path is stride 1 only)
    "taps_3x3_7x7_c64_o200": (1, 7, 7, 64, 200, 3, 1, 1, (1, 1, 1, 1), 5),
    "taps_3x3_s2_c128_o96": (1, 9, 9, 128, 96, 3, 2, 1, (1, 1, 1, 1), -7),
}


@pytest.mark.parametrize("amx", ["", "0"], ids=["best", "rows"])
@pytest.mark.parametrize("rounding", ["double", "single"])
@pytest.mark.parametrize("name", ONE_TILE)
def test_conv_of_one_tile_cuts_its_output_channels(
    name: str, rounding: str, amx: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conv whose pixels make one tile (squeeze-excite, classifier; a 7 x 7 layer on the AMX
    taps path, whose rows make one tile) is cut by output channels (whole panels of the packed
    filter; a short last block) on the AMX and the VNNI rows paths
    when they requantize in the tile (double rounding): at 1, 2 and 3 threads, every block cut,
    the bytes are run_int8's in both roundings."""
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", "1")
    monkeypatch.setenv("MDLA_EMU_AMX", amx)
    monkeypatch.setenv("MDLA_EMU_ROUNDING", rounding)
    g = conv_graph(ONE_TILE[name], seed=len(name))
    codes = random_codes(g, np.random.default_rng(5))
    assert_threads_keep_bytes(g, codes, monkeypatch, rounding=rounding, distinct=4)


def test_one_pixel_convs_split_at_the_default_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """At two threads and the default minimum work a squeeze-excite's one-pixel 1152 -> 48
    conv and 48 -> 1152 conv split (on a CPU with the 8-bit rows or AMX GEMM; before, one tile
    of pixels never did); an 8 -> 16 one-pixel conv does not."""
    emu().emu_split_jobs.restype = ctypes.c_uint64
    for var in ("MDLA_EMU_MIN_WORK", "MDLA_EMU_AMX", "MDLA_EMU_PORTABLE", "MDLA_EMU_ISA"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MDLA_EMU_ROUNDING", "double")
    monkeypatch.setenv("MDLA_EMU_THREADS", "2")
    rng = np.random.default_rng(3)
    small = (1, 1, 1, 8, 16, 1, 1, 1, (0, 0, 0, 0), 0)
    assert splits(conv_graph(small, seed=1), rng) == 0
    if not cpu_has_8bit_gemm() or platform.machine() != "x86_64":
        return  # the portable and aarch64 convs cut pixels only
    for shape in (ONE_TILE["se_squeeze_1152_48"], (1, 1, 1, 48, 1152, 1, 1, 1, (0,) * 4, 0)):
        assert splits(conv_graph(shape, seed=2), rng) == 1


def cpu_has_avx2() -> bool:
    return platform.machine() == "x86_64" and "avx2" in Path("/proc/cpuinfo").read_text().split()


# (n, h, w, c, o, k, stride, dilation, pads, z_in): more output channels than pixels, so the
# int16 AVX2 tiles cut the filter's channels over the threads (co not a multiple of 16 in most)
WIDE = {
    "classifier_640_1000": (1, 1, 1, 640, 1000, 1, 1, 1, (0, 0, 0, 0), -3),
    "se_expand_48_200": ONE_TILE["se_expand_48_200"],
    "two_images_64_97": ONE_TILE["two_images_64_97"],
    "7x7_1x1_96_200": (1, 7, 7, 96, 200, 1, 1, 1, (0, 0, 0, 0), 9),
    "7x7_3x3_64_120": (1, 7, 7, 64, 120, 3, 1, 1, (1, 1, 1, 1), -7),
    "3x3_s2_four_pixels": ONE_TILE["3x3_s2_four_pixels"],
}


@pytest.mark.skipif(not cpu_has_avx2(), reason="the int16 AVX2 tiles need AVX2")
@pytest.mark.parametrize("rounding", ["double", "single"])
@pytest.mark.parametrize("name", WIDE)
def test_avx2_conv_cut_by_channels_keeps_every_byte(
    name: str, rounding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The int16 AVX2 tiles (MDLA_EMU_ISA=avx2: no 8-bit GEMM) cut a conv with more output
    channels than pixels into blocks of output channels, each requantized with its channels'
    own constants (both roundings: the narrow and the wide pipeline): at 1, 2 and 3 threads,
    every block cut, the bytes are run_int8's."""
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", "1")
    monkeypatch.setenv("MDLA_EMU_ISA", "avx2")
    monkeypatch.setenv("MDLA_EMU_ROUNDING", rounding)
    g = conv_graph(WIDE[name], seed=len(name) + 3)
    codes = random_codes(g, np.random.default_rng(11))
    assert_threads_keep_bytes(g, codes, monkeypatch, rounding=rounding, distinct=4)


@pytest.mark.skipif(not cpu_has_avx2(), reason="the int16 AVX2 tiles need AVX2")
def test_avx2_one_pixel_convs_split_at_the_default_minimum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On the int16 AVX2 tiles a squeeze-excite's one-pixel 1152 -> 48 and 48 -> 1152 convs
    split over two threads at the default minimum work (their one tile of pixels never did:
    a classifier or squeeze-excite conv ran on one thread while the other waited); an
    8 -> 16 one does not."""
    emu().emu_split_jobs.restype = ctypes.c_uint64
    for var in ("MDLA_EMU_MIN_WORK", "MDLA_EMU_AMX", "MDLA_EMU_PORTABLE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MDLA_EMU_ISA", "avx2")
    monkeypatch.setenv("MDLA_EMU_THREADS", "2")
    rng = np.random.default_rng(3)
    assert splits(conv_graph((1, 1, 1, 8, 16, 1, 1, 1, (0,) * 4, 0), seed=1), rng) == 0
    for shape in (ONE_TILE["se_squeeze_1152_48"], (1, 1, 1, 48, 1152, 1, 1, 1, (0,) * 4, 0)):
        assert splits(conv_graph(shape, seed=2), rng) == 1
