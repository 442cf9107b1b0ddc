"""The emulator's NEON kernels (kernels/simd_neon.c: the narrow requantization, the multiplier-1
depthwise row, MUL's formula and the 256-entry table lookup), which are what the engine's cpu
partitions run on the phone's ARM cores: the aarch64 cross build under qemu-aarch64, on the
NEON path (the default there) and the portable C (MDLA_EMU_PORTABLE=1), bit for bit with
mdla_quant.run_int8. The cases are test_emu_simd's (lane tails, taps outside the image,
extreme zero points, multipliers above one, both roundings). qemu counts no time: these
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
from mdla_ir.builders import act, as_floats, random_codes, random_qgraph, single_op_qgraph
from mdla_ir.graph import Graph
from mdla_ir.testing import GraphBuilder
from mdla_legalize import place
from mdla_quant import run_int8
from mdla_quant.config import QuantConfig
from mdla_quant.quantize import quantize
from mdla_runtime import load, save
from mdla_runtime.engine.target import quantize as to_codes
from mdla_target import load_target
from tests.runtime.cross import CC, QEMU, SYSROOT, build_arm
from tests.runtime.test_emu_simd import DW_SHAPES, LEFT, dw_graph, left_shift_graph
from tests.runtime.test_emu_support import DEVICES

Array = np.ndarray[Any, Any]
PATHS = {"neon": "0", "portable": "1"}  # MDLA_EMU_PORTABLE
ISA_NEON, ISA_PORTABLE = 3, 0  # simd.h


@pytest.fixture(scope="module")
def arm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_arm(tmp_path_factory.mktemp("neon"))


def qemu(arm: Path, args: Sequence[str], env: dict[str, str]) -> str:
    cmd = [QEMU, "-L", SYSROOT, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def run_arm(arm: Path, g: Graph, codes: Sequence[Array], tmp: Path, env: dict[str, str]) -> Array:
    """Single-op `g`'s int8 output from the aarch64 engine and emulator under qemu."""
    tmp.mkdir(parents=True, exist_ok=True)
    path = save(g, tmp / "op.mdla")
    args = [str(arm / "mdla-engine"), str(path), "--lib", str(arm / "libneuron_emu.so")]
    args += ["--device", ",".join(DEVICES)]  # some shapes map only on the dsp or the gpu
    for k, (spec, x) in enumerate(zip(load(path).inputs, as_floats(g, codes), strict=True)):
        (tmp / f"x{k}.bin").write_bytes(to_codes(x, spec).tobytes())
        args += ["--input", str(tmp / f"x{k}.bin")]
    qemu(arm, [*args, "--outdir", str(tmp), "--json"], env)
    out = g.tensors[g.outputs[0]]
    return np.fromfile(tmp / "output_0.bin", np.dtype(out.dtype)).reshape(out.shape)


def check(arm: Path, g: Graph, codes: Sequence[Array], tmp: Path, what: str) -> None:
    """`g` on both aarch64 paths and both roundings, each bit for bit with run_int8."""
    for rounding in ("double", "single"):
        (want,) = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding)
        for path, portable in PATHS.items():
            env = {"MDLA_EMU_PORTABLE": portable, "MDLA_EMU_ROUNDING": rounding}
            got = run_arm(arm, g, codes, tmp / f"{path}_{rounding}", env)
            np.testing.assert_array_equal(got, want, err_msg=f"{what}, {path}, {rounding}")


def test_the_isa_is_neon_on_aarch64(arm: Path, tmp_path: Path) -> None:
    """emu_isa() in the aarch64 build: NEON unless the environment asks for the C."""
    driver = tmp_path / "isa"
    src = Path(__file__).with_name("emu_isa_main.c")
    cmd = [CC, str(src), "-o", str(driver), f"-L{arm}", "-lneuron_emu", f"-Wl,-rpath,{arm}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    cases = [
        ({}, ISA_NEON),
        ({"MDLA_EMU_ISA": "avx512"}, ISA_NEON),
        ({"MDLA_EMU_ISA": "portable"}, ISA_PORTABLE),
        ({"MDLA_EMU_PORTABLE": "1"}, ISA_PORTABLE),
    ]
    for env, want in cases:
        base = {"MDLA_EMU_ISA": "", "MDLA_EMU_PORTABLE": "0"}
        assert int(qemu(arm, [str(driver)], base | env)) == want, env


@pytest.mark.parametrize("name", DW_SHAPES)
def test_aarch64_depthwise_bit_exact(arm: Path, tmp_path: Path, name: str) -> None:
    """The NEON depthwise row (16- and 8-channel blocks, the scalar tail) and the NEON
    requantization of its sums."""
    g = dw_graph(DW_SHAPES[name], seed=len(name))
    codes = random_codes(g, np.random.default_rng(11))
    codes[0][..., 0] = -128
    codes[0][..., -1] = 127
    check(arm, g, codes, tmp_path, name)


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


def test_aarch64_16x8_depthwise_takes_the_c_rows(arm: Path, tmp_path: Path) -> None:
    """The 16x8 depthwise's row sums (conv16.c) have an AVX2 twin only: on aarch64, where
    emu_isa() is NEON, they run the portable C (and equal run_int8)."""
    h, w, c, k = 8, 7, 33, 5
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
