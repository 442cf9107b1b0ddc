"""The emulator's NEON kernels (kernels/simd_neon.c: the narrow requantization, the multiplier-1
depthwise row, MUL's formula and the 256-entry table lookup; simd_dw4_neon.c: the depthwise
with four taps per sdot; gemm_rows_neon.c: CONV_2D's rows GEMM, the requantization in its tile;
simd_add_neon.c: ADD and SUB without their table),
which are what the engine's cpu partitions run on the phone's ARM cores: the aarch64 cross
build under qemu-aarch64, on the NEON path (the default there: qemu's `max` CPU, which has the
dot-product extension), the NEON path of a CPU without it (QEMU_CPU=cortex-a53: the sdot
depthwise falls back to the NEON row, the rows GEMM takes smull + sadalp) and the portable C
(MDLA_EMU_PORTABLE=1), bit for bit with mdla_quant.run_int8. The cases are test_emu_simd's
(lane tails, taps outside the image, extreme zero points, multipliers above one, both
roundings, MUL's gate broadcast, SiLU, the rows GEMM's shapes). qemu counts no time: these
check exactness only."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdla_ir import OpKind
from mdla_ir.builders import act, as_floats, qp, random_codes, random_qgraph, single_op_qgraph
from mdla_ir.graph import Graph, Tensor
from mdla_ir.testing import GraphBuilder
from mdla_legalize import place
from mdla_quant import run_int8
from mdla_quant.config import QuantConfig
from mdla_quant.quantize import quantize
from mdla_runtime import load, save
from mdla_runtime.engine.target import quantize as to_codes
from mdla_target import load_target
from tests.models import inputs_for, legalized
from tests.runtime.cross import CC, QEMU, SYSROOT, build_arm
from tests.runtime.test_emu_add import CASES as ADD_CASES
from tests.runtime.test_emu_add import add_graph, every_pair
from tests.runtime.test_emu_dw4 import tie_graph
from tests.runtime.test_emu_gemm import SHAPES, conv_graph
from tests.runtime.test_emu_simd import (
    DW_SHAPES,
    LEFT,
    MUL_OUT,
    MUL_SHAPES,
    ROWS,
    dw_graph,
    left_shift_graph,
    silu_graph,
)
from tests.runtime.test_emu_support import DEVICES

Array = np.ndarray[Any, Any]
PATHS = {"neon": {"MDLA_EMU_PORTABLE": "0"}, "portable": {"MDLA_EMU_PORTABLE": "1"}}
NO_DOT = {"MDLA_EMU_PORTABLE": "0", "QEMU_CPU": "cortex-a53"}  # ARMv8.0: no sdot
WITH_NO_DOT = {**PATHS, "neon_nodot": NO_DOT}
TWO_THREADS = {"MDLA_EMU_PORTABLE": "0", "MDLA_EMU_THREADS": "2", "MDLA_EMU_MIN_WORK": "1"}
ISA_NEON, ISA_PORTABLE = 3, 0  # simd.h


@pytest.fixture(scope="module")
def arm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_arm(tmp_path_factory.mktemp("neon"))


def qemu(arm: Path, args: Sequence[str], env: dict[str, str]) -> str:
    cmd = [QEMU, "-L", SYSROOT, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def run_arm(arm: Path, g: Graph, xs: Sequence[Array], tmp: Path, env: dict[str, str]) -> Array:
    """`g`'s first output (raw codes) on float inputs `xs` from the aarch64 engine and emulator
    under qemu."""
    tmp.mkdir(parents=True, exist_ok=True)
    path = save(g, tmp / "op.mdla")
    args = [str(arm / "mdla-engine"), str(path), "--lib", str(arm / "libneuron_emu.so")]
    args += ["--device", ",".join(DEVICES)]  # some shapes map only on the dsp or the gpu
    for k, (spec, x) in enumerate(zip(load(path).inputs, xs, strict=True)):
        (tmp / f"x{k}.bin").write_bytes(to_codes(x, spec).tobytes())
        args += ["--input", str(tmp / f"x{k}.bin")]
    qemu(arm, [*args, "--outdir", str(tmp), "--json"], env)
    out = g.tensors[g.outputs[0]]
    return np.fromfile(tmp / "output_0.bin", np.dtype(out.dtype)).reshape(out.shape)


def check(
    arm: Path,
    g: Graph,
    codes: Sequence[Array],
    tmp: Path,
    what: str,
    paths: dict[str, dict[str, str]] = PATHS,
    roundings: Sequence[str] = ("double", "single"),
) -> None:
    """`g` on each aarch64 path of `paths` and each rounding, bit for bit with run_int8."""
    for rounding in roundings:
        (want,) = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding)
        for path, path_env in paths.items():
            env = {**path_env, "MDLA_EMU_ROUNDING": rounding}
            got = run_arm(arm, g, as_floats(g, codes), tmp / f"{path}_{rounding}", env)
            np.testing.assert_array_equal(got, want, err_msg=f"{what}, {path}, {rounding}")


@pytest.fixture(scope="module")
def isa_driver(arm: Path) -> Path:
    """emu_isa_main.c linked against the aarch64 emulator: prints emu_isa(), whether the
    sdot depthwise runs for 16 and for 15 channels, whether CONV_2D takes the rows GEMM and
    whether FULLY_CONNECTED takes the 8-bit GEMM."""
    driver = arm / "isa"
    src = Path(__file__).with_name("emu_isa_main.c")
    cmd = [CC, str(src), "-o", str(driver), f"-L{arm}", "-lneuron_emu", f"-Wl,-rpath,{arm}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return driver


def isa_line(arm: Path, driver: Path, env: dict[str, str]) -> list[int]:
    base = {"MDLA_EMU_ISA": "", "MDLA_EMU_PORTABLE": "0"}
    return [int(v) for v in qemu(arm, [str(driver)], base | env).split()]


def test_the_isa_is_neon_on_aarch64(arm: Path, isa_driver: Path) -> None:
    """emu_isa() in the aarch64 build: NEON unless the environment asks for the C."""
    cases = [
        ({}, ISA_NEON),
        ({"MDLA_EMU_ISA": "avx512"}, ISA_NEON),
        ({"MDLA_EMU_ISA": "portable"}, ISA_PORTABLE),
        ({"MDLA_EMU_PORTABLE": "1"}, ISA_PORTABLE),
    ]
    for env, want in cases:
        assert isa_line(arm, isa_driver, env)[0] == want, env


def test_the_sdot_depthwise_and_the_gemms_follow_the_cpu(arm: Path, isa_driver: Path) -> None:
    """The four-tap sdot depthwise runs where the CPU has the dot-product extension (hwcap
    ASIMDDP: qemu's max CPU, not the ARMv8.0 cortex-a53), on any number of channels; CONV_2D's
    rows GEMM runs on both CPUs (its variant chosen by the same hwcap); FULLY_CONNECTED's 8-bit
    GEMM where the CPU has sdot; the portable C (either variable) turns all of them off."""
    cases = [
        ({}, [ISA_NEON, 1, 1, 1, 1]),
        ({"QEMU_CPU": "max"}, [ISA_NEON, 1, 1, 1, 1]),
        ({"QEMU_CPU": "cortex-a76"}, [ISA_NEON, 1, 1, 1, 1]),
        ({"QEMU_CPU": "cortex-a53"}, [ISA_NEON, 0, 0, 1, 0]),
        ({"MDLA_EMU_PORTABLE": "1"}, [ISA_PORTABLE, 0, 0, 0, 0]),
        ({"MDLA_EMU_ISA": "portable"}, [ISA_PORTABLE, 0, 0, 0, 0]),
    ]
    for env, want in cases:
        assert isa_line(arm, isa_driver, env) == want, env


@pytest.mark.parametrize("name", DW_SHAPES)
def test_aarch64_depthwise_bit_exact(arm: Path, tmp_path: Path, name: str) -> None:
    """The sdot depthwise (16-channel blocks, the last one overlapping when 16 does not divide
    c; below 16 channels 16 / c pixels per block where c divides 16 at stride 1, else a block per
    pixel, its rows staged near the image's end; taps in fours; rows of zero points outside the
    image), and without dotprod the NEON depthwise row (16- and 8-channel blocks, the scalar
    tail) requantized in registers (the tail through the NEON requantization)."""
    g = dw_graph(DW_SHAPES[name], seed=len(name))
    codes = random_codes(g, np.random.default_rng(11))
    codes[0][..., 0] = -128
    codes[0][..., -1] = 127
    check(arm, g, codes, tmp_path, name, WITH_NO_DOT)


@pytest.mark.parametrize("name", [*ROWS, *SHAPES])
def test_aarch64_conv_rows_bit_exact(arm: Path, tmp_path: Path, name: str) -> None:
    """CONV_2D on the NEON rows GEMM (gemm_rows_neon.c): the implicit GEMM (ci a multiple of 4:
    segment pointers into the input, a zero-point row outside the image) and the im2col rows of
    codes otherwise, 16-byte sdot-by-lane steps and the 4-byte tail of a segment (ci = 4, 12, 20),
    4-row tiles cut at the tile's end, odd column counts, the requantization in the tile (double
    rounding) or after it (single); with dotprod (4 x 16 tiles) and without (cortex-a53: smull
    and sadalp, 4 x 8 tiles), and the portable C; on two threads with every op cut, which cuts
    a conv of one tile by 16-column blocks of output channels (k_conv_2d.c conv_cols)."""
    g = conv_graph({**ROWS, **SHAPES}[name], seed=len(name))
    codes = random_codes(g, np.random.default_rng(9))
    codes[0][..., 0] = -128
    codes[0][..., -1] = 127
    check(arm, g, codes, tmp_path, name, {**WITH_NO_DOT, "neon_2t": TWO_THREADS})


def tie_conv_graph() -> Graph:
    """test_emu_dw4's rounding ties on a CONV_2D: multipliers 2^(2 - o % 9) by output channel
    (left shifts on channels 0-2, RDBPOT by r = 0..5 on the rest), weights in -1..1 and small
    sums of either sign; 70 channels: whole 16- and 8-column tiles and a 6-column tail."""
    rng = np.random.default_rng(12)
    c, o, s_in, s_out = 8, 70, 0.25, 0.5
    ws = np.array([2.0 ** (3 - j % 9) for j in range(o)], np.float32)
    wt = rng.integers(-1, 2, size=(o, 3, 3, c), dtype=np.int8)
    bias = rng.integers(-6, 7, size=o).astype(np.int32)
    tensors = [
        Tensor("x", (1, 5, 6, c), "int8", None, qp(s_in, 3)),
        Tensor("w", wt.shape, "int8", wt, qp(ws, 0, 0)),
        Tensor("bias", bias.shape, "int32", bias, qp(np.float32(s_in) * ws, 0, 0)),
    ]
    attrs = {"stride": (1, 1), "dilation": (1, 1), "padding": (1, 1, 1, 1), "groups": 1}
    return single_op_qgraph(OpKind.CONV_2D, tensors, (1, 5, 6, o), qp(s_out, -3), attrs)


@pytest.mark.parametrize("kind", ["depthwise", "conv"])
def test_aarch64_rounding_ties_bit_exact(arm: Path, tmp_path: Path, kind: str) -> None:
    """RDBPOT's ties of either sign and r = 0 in the NEON requantization (emu_neon_narrow4's
    rounding shift): in the sdot depthwise, in the NEON depthwise row (cortex-a53) and in the
    rows GEMM's tile, bit for bit with run_int8 (double rounding: the narrow lanes)."""
    g = tie_graph("NONE", -3) if kind == "depthwise" else tie_conv_graph()
    x = g.tensors[g.inputs[0]]
    codes = [np.clip(3 + np.random.default_rng(4).integers(-3, 4, size=x.shape), -128, 127)]
    codes = [codes[0].astype(np.int8)]
    (want,) = run_int8(g, as_floats(g, codes), raw=True)
    assert np.unique(want).size > 8, "outputs all clamped test nothing"
    check(arm, g, codes, tmp_path, kind, WITH_NO_DOT, ["double"])


@pytest.mark.parametrize("c", [4, 8, 12, 24])
def test_aarch64_depthwise_ties_few_channels_bit_exact(arm: Path, tmp_path: Path, c: int) -> None:
    """The sdot depthwise's ties (test_emu_dw4's multipliers: left shifts, RDBPOT by 0..5 of
    either sign) below and just above 16 channels: 4 and 8 channels take 4 and 2 pixels per
    block inside a 13-pixel row and a block per pixel at its edges, 12 a block per pixel (16-byte
    stores into the row, the last pixel's through a copy; rows staged at the image's end), 24
    two overlapping 16-channel blocks; against run_int8, and the NEON row without dotprod."""
    g = tie_graph("NONE", -3, c=c, w=13)
    x = g.tensors[g.inputs[0]]
    codes = [np.clip(3 + np.random.default_rng(c).integers(-3, 4, size=x.shape), -128, 127)]
    codes = [codes[0].astype(np.int8)]
    (want,) = run_int8(g, as_floats(g, codes), raw=True)
    assert np.unique(want).size > 8, "outputs all clamped test nothing"
    check(arm, g, codes, tmp_path, f"c{c}", WITH_NO_DOT, ["double"])


@pytest.mark.parametrize("name", LEFT)
def test_aarch64_multipliers_above_one_bit_exact(arm: Path, tmp_path: Path, name: str) -> None:
    """The NEON requantization's left shift (after the sdot GEMM, the depthwise row)."""
    g = left_shift_graph(LEFT[name], seed=len(name))
    z_in = LEFT[name][-1]
    x = g.tensors[g.inputs[0]]
    noise = np.random.default_rng(3).integers(-6, 7, size=x.shape)
    check(arm, g, [np.clip(z_in + noise, -128, 127).astype(np.int8)], tmp_path, name)


@pytest.mark.parametrize(
    "kind", [OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.FULLY_CONNECTED], ids=lambda k: k.name
)
def test_aarch64_random_kernels_bit_exact(arm: Path, tmp_path: Path, kind: OpKind) -> None:
    """Random cases, small and model-sized (narrow and wide requantization rows)."""
    for seed, large in [(s, False) for s in range(6)] + [(s, True) for s in range(2)]:
        rng = np.random.default_rng(5000 * kind.value + seed + (100 if large else 0))
        g = random_qgraph(kind, rng, large=large)
        check(arm, g, random_codes(g, rng), tmp_path / f"{seed}_{large}", f"seed {seed}")


TABLES = [OpKind.LOGISTIC, OpKind.TANH, OpKind.HARD_SWISH, OpKind.RELU6]


@pytest.mark.parametrize("kind", [OpKind.MUL, *TABLES], ids=lambda k: k.name)
def test_aarch64_elementwise_bit_exact(arm: Path, tmp_path: Path, kind: OpKind) -> None:
    """MUL's NEON formula (broadcast rows: steps 0 and 1, lengths off the 8 lanes) and the table
    ops' tbl lookups (every code in a run of 300: 16-byte blocks and a tail; random shapes)."""
    if kind is not OpKind.MUL:
        g = random_qgraph(kind, np.random.default_rng(1))
        x, y = g.tensors[g.inputs[0]], g.tensors[g.outputs[0]]
        assert x.quant is not None
        assert y.quant is not None
        g = single_op_qgraph(kind, [act("x", (3, 100), x.quant)], (3, 100), y.quant, g.ops[0].attrs)
        codes = [np.resize(np.arange(-128, 128), (3, 100)).astype(np.int8)]
        check(arm, g, codes, tmp_path / "every", "every code")
    for seed in range(12):
        rng = np.random.default_rng(7000 * kind.value + seed)
        g = random_qgraph(kind, rng)
        check(arm, g, random_codes(g, rng), tmp_path / str(seed), f"seed {seed}")


@pytest.mark.parametrize("shapes", MUL_SHAPES, ids=lambda s: "x".join(map(str, s[0] + s[1])))
def test_aarch64_mul_gate_broadcast_bit_exact(arm: Path, tmp_path: Path, shapes: Any) -> None:
    """MUL's NEON lanes (16 codes a step in int16, the tail block) on the squeeze-excite gate
    broadcast, with RDBPOT shifts 0, small and 16-18 (the cap at 17), extreme zero points and
    RELU6 (double rounding: the lanes path; single rounding takes the table)."""
    sa, sb = shapes
    rng = np.random.default_rng(len(sa) * 131 + sa[-1])
    y_shape = tuple(np.broadcast_shapes(sa, sb))
    for out, (scale, zo) in MUL_OUT.items():
        for fuse in ("NONE", "RELU6"):
            x1, x2 = act("a", sa, qp(0.05, 127)), act("b", sb, qp(1 / 256, -128))
            g = single_op_qgraph(OpKind.MUL, [x1, x2], y_shape, qp(scale, zo), {"fuse": fuse})
            codes = random_codes(g, rng)
            codes[0].flat[0], codes[1].flat[0] = -128, 127  # the largest |product|: 255 * 255
            what = f"{out}, {fuse}"
            check(
                arm, g, codes, tmp_path / f"{out}_{fuse}", what, {"neon": PATHS["neon"]}, ["double"]
            )


@pytest.mark.parametrize("case", ADD_CASES)
@pytest.mark.parametrize("kind", [OpKind.ADD, OpKind.SUB], ids=lambda k: k.name)
def test_aarch64_add_sub_every_code_pair_bit_exact(
    arm: Path, tmp_path: Path, kind: OpKind, case: str
) -> None:
    """ADD and SUB in NEON lanes (simd_add_neon.c: each side's MBQM computed, no table) on every
    pair of codes, both steps 1, the second operand's step 0 and a broadcast row (the 16-code
    steps and no tail: 256 per run), in both roundings (sqrdmulh and a rounding shift, or one
    rounding shift of the int64 product), with RDBPOT ties of either sign (test_emu_add's
    cases)."""
    g = add_graph(kind, case)
    codes = every_pair(ADD_CASES[case][7])
    check(arm, g, codes, tmp_path, f"{kind.name} {case}", {"neon": PATHS["neon"]})


def test_aarch64_add_tails_bit_exact(arm: Path, tmp_path: Path) -> None:
    """ADD's NEON lanes on runs that are not a multiple of 16 (the zero-filled tail block):
    rows of 37 codes broadcast against a column, and elementwise, in both roundings."""
    for k, shape2 in enumerate([(5, 37), (5, 1), (1, 37)]):
        ins = [act("x", (5, 37), qp(0.07, -9)), act("y", shape2, qp(0.03, 20))]
        g = single_op_qgraph(OpKind.ADD, ins, (5, 37), qp(0.1, 4), {"fuse": "NONE"})
        codes = random_codes(g, np.random.default_rng(k))
        check(arm, g, codes, tmp_path / str(k), f"tail {shape2}", {"neon": PATHS["neon"]})


@pytest.mark.parametrize("x_first", [True, False], ids=["x_sig", "sig_x"])
def test_aarch64_silu_bit_exact(arm: Path, tmp_path: Path, x_first: bool) -> None:
    """SiLU as a model writes it, MUL(x, LOGISTIC(x)) in one saved model: on aarch64 the MUL
    reads x through its 256-entry table with the NEON lookup (k_mul.c), every code of x."""
    for fuse in ("NONE", "RELU"):
        g = silu_graph(x_first, fuse)
        codes = [np.resize(np.arange(-128, 128), g.tensors["x"].shape).astype(np.int8)]
        check(arm, g, codes, tmp_path / fuse, f"silu {fuse}")


def test_aarch64_efficientnet_b0_bit_exact(arm: Path, tmp_path: Path) -> None:
    """A whole model on aarch64: efficientnet_b0's SiLUs (the NEON table), squeeze-excite gates
    (MUL's lanes), 3x3 and 5x5 depthwise (sdot; without dotprod the NEON row), pointwise convs
    and the classifier (the sdot GEMM; without dotprod the C), bit for bit with run_int8."""
    graph, _ = legalized("efficientnet_b0")
    g = quantize(graph, inputs_for("efficientnet_b0", 2, 0), QuantConfig())
    (xs,) = inputs_for("efficientnet_b0", 1, 5)
    (want,) = run_int8(g, xs, raw=True, rounding="double")
    for path, env in WITH_NO_DOT.items():
        got = run_arm(arm, g, xs, tmp_path / path, {**env, "MDLA_EMU_ROUNDING": "double"})
        np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=path)


def test_aarch64_16x8_depthwise_bit_exact(arm: Path, tmp_path: Path) -> None:
    """The 16x8 depthwise's row sums (conv16.c) on aarch64: the NEON row (16- and 8-channel
    blocks, the scalar tail: 41 = 16 + 16 + 8 + 1 channels), and the portable C."""
    h, w, c, k = 8, 7, 41, 5
    b = GraphBuilder("dw16", layout="NHWC", seed=5)
    x = b.input("x", (1, h, w, c))
    attrs = {"stride": (1, 1), "dilation": (1, 1), "padding": (2,) * 4, "multiplier": 1}
    wgt, bias = b.const("w", (1, k, k, c)), b.const("bias", (c,))
    y = b.op(OpKind.DEPTHWISE_CONV_2D, [x, wgt, bias], name="y", **attrs)
    tail = b.op(OpKind.RESHAPE, [y], name="tail", shape=(1, h * w * c))  # an int8 output
    graph = place(b.build(tail), load_target("mdla3.5"), "mtk-mdla", ["auto"]).graph
    rng = np.random.default_rng(5)
    samples = [[rng.uniform(-2 - j, 2 + j, (1, h, w, c)).astype(np.float32)] for j in range(3)]
    g = quantize(graph, samples, QuantConfig(a16=("y",), method="minmax"))
    assert g.tensors["y"].dtype == "int16"
    check(arm, g, random_codes(g, rng), tmp_path, "16x8 depthwise")
