"""CONV_2D's two GEMM paths (kernels/gemm.h): the 8-bit one (AVX-512 VNNI / aarch64 dot
product, chosen at run time) and the portable int16 one (MDLA_EMU_PORTABLE=1), each bit for bit
with mdla_quant.run_int8, on the shapes where the 8-bit path's padding and zero-point folding
could go wrong: output channels around the 16-column panels, depth not a multiple of 4, extreme
input zero points (the correction init = -(z + offset) * sum w), taps outside the image, and
the largest accumulators. Also that the path is really chosen (so the tests exercise both), and
that the aarch64 build (under qemu) agrees on both of its paths.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdla_emu import build_emulator
from mdla_ir.builders import (
    as_floats,
    out_size,
    qp,
    random_codes,
    random_qgraph,
    single_op_qgraph,
)
from mdla_ir.graph import Graph, Tensor
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from mdla_runtime import load, save
from mdla_runtime.engine.target import quantize
from tests.runtime.cross import QEMU, SYSROOT, build_arm
from tests.runtime.test_emu_support import run_single_op

Array = np.ndarray[Any, Any]
PATHS = ("fast", "portable")

# (n, h, w, c, o, k, stride, dilation, (top, bottom, left, right), z_in)
SHAPES = {
    "pointwise_o1": (1, 5, 7, 3, 1, 1, 1, 1, (0, 0, 0, 0), 0),
    "pointwise_o15_zmin": (2, 4, 6, 9, 15, 1, 1, 1, (0, 0, 0, 0), -128),
    "pointwise_o16_zmax": (1, 6, 5, 16, 16, 1, 1, 1, (0, 0, 0, 0), 127),
    "pointwise_o17": (1, 3, 11, 5, 17, 1, 1, 1, (0, 0, 0, 0), 37),
    "3x3_pad_o33_zmin": (1, 9, 8, 7, 33, 3, 1, 1, (1, 1, 1, 1), -128),
    "3x3_s2_o48_zmax": (2, 10, 9, 6, 48, 3, 2, 1, (1, 0, 1, 0), 127),
    "5x5_dil2_o40": (1, 12, 12, 3, 40, 5, 1, 2, (4, 4, 3, 5), -5),
    "2x2_s2_odd_edge": (1, 7, 7, 13, 31, 2, 2, 1, (0, 1, 0, 1), 90),
    "deep_3x3_c512": (1, 4, 4, 512, 24, 3, 1, 1, (1, 1, 1, 1), -128),
}


def conv_graph(shape: tuple[Any, ...], seed: int, fuse: str = "NONE") -> Graph:
    """One CONV_2D with full-range int8 weights (-127..127, per channel) and `z_in`; the output
    scale keeps the sum's spread inside int8 so the requantized values are not all clamped;
    `fuse` the fused activation."""
    n, h, w, c, o, k, stride, dil, pads, z_in = shape
    rng = np.random.default_rng(seed)
    wt = rng.integers(-127, 128, size=(o, k, k, c), dtype=np.int8)
    ws = np.exp(rng.uniform(np.log(1e-3), np.log(0.05), size=o)).astype(np.float32)
    s_in = 0.02
    bias = rng.integers(-20000, 20000, size=o).astype(np.int32)
    oh = out_size(h, k, stride, dil, pads[0], pads[1])
    ow = out_size(w, k, stride, dil, pads[2], pads[3])
    spread = float(np.sqrt(k * k * c) * 128 * 73 * s_in * np.median(ws))
    tensors = [
        Tensor("x", (n, h, w, c), "int8", None, qp(s_in, z_in)),
        Tensor("w", wt.shape, "int8", wt, qp(ws, 0, 0)),
        Tensor("bias", bias.shape, "int32", bias, qp(np.float32(s_in) * ws, 0, 0)),
    ]
    attrs = {"stride": (stride, stride), "dilation": (dil, dil), "padding": pads, "groups": 1}
    return single_op_qgraph(
        OpKind.CONV_2D, tensors, (n, oh, ow, o), qp(spread / 40, -3), attrs | {"fuse": fuse}
    )


def emulate(g: Graph, codes: list[Array]) -> Array:
    return np.asarray(run_single_op(g, codes))


@pytest.fixture(params=PATHS)
def gemm_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The GEMM path kernels prepared from here on take (MDLA_EMU_PORTABLE, read at prepare)."""
    monkeypatch.setenv("MDLA_EMU_PORTABLE", "1" if request.param == "portable" else "0")
    return str(request.param)


def cpu_has_8bit_gemm() -> bool:
    """What gemm.c's run-time check should find, read independently from /proc/cpuinfo."""
    text = Path("/proc/cpuinfo").read_text()
    flags = set(text.split())
    if platform.machine() == "x86_64":
        return {"avx512f", "avx512bw", "avx512vl", "avx512_vnni"} <= flags
    return "asimddp" in flags


def test_the_path_follows_the_cpu_and_the_override(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = ctypes.CDLL(str(build_emulator()))
    ready = lib.emu_gemm_u8_ready
    ready.restype = ctypes.c_bool
    monkeypatch.delenv("MDLA_EMU_PORTABLE", raising=False)
    assert ready() is cpu_has_8bit_gemm()
    monkeypatch.setenv("MDLA_EMU_PORTABLE", "1")
    assert ready() is False
    monkeypatch.setenv("MDLA_EMU_PORTABLE", "0")
    assert ready() is cpu_has_8bit_gemm()


@pytest.mark.parametrize("name", SHAPES)
def test_conv_shapes_bit_exact(name: str, gemm_path: str) -> None:
    g = conv_graph(SHAPES[name], seed=len(name))
    rng = np.random.default_rng(7)
    codes = random_codes(g, rng)
    codes[0][..., 0] = -128  # the extreme codes in every pixel: the largest |x - z_in|
    codes[0][..., -1] = 127
    (want,) = run_int8(g, as_floats(g, codes), raw=True)
    got = emulate(g, codes)
    assert np.unique(want).size > 8, "a case whose outputs are all clamped tests nothing"
    np.testing.assert_array_equal(got, want, err_msg=f"{name} on the {gemm_path} path")


@pytest.mark.parametrize("large", [False, True], ids=["small", "model_sized"])
def test_random_convs_bit_exact(large: bool, gemm_path: str) -> None:
    for seed in range(12):
        rng = np.random.default_rng(1000 + seed)
        g = random_qgraph(OpKind.CONV_2D, rng, large=large)
        codes = random_codes(g, rng)
        (want,) = run_int8(g, as_floats(g, codes), raw=True)
        np.testing.assert_array_equal(emulate(g, codes), want, err_msg=f"seed {seed}")


def test_aarch64_both_paths_bit_exact(tmp_path: Path) -> None:
    """The cross-built engine and emulator under qemu (whose default CPU has the dot product:
    the 8-bit path), on each path, bit for bit with run_int8."""
    arm = build_arm(tmp_path / "arm")
    g = conv_graph(SHAPES["3x3_pad_o33_zmin"], seed=3)
    path = save(g, tmp_path / "conv.mdla")
    (spec,) = load(path).inputs
    codes = random_codes(g, np.random.default_rng(5))
    (x,) = as_floats(g, codes)
    (tmp_path / "x.bin").write_bytes(quantize(x, spec).tobytes())
    (want,) = run_int8(g, [x], raw=True)
    for portable in ("0", "1"):
        out = tmp_path / f"out{portable}"
        out.mkdir()
        cmd = [QEMU, "-L", SYSROOT, str(arm / "mdla-engine"), str(path)]
        cmd += ["--lib", str(arm / "libneuron_emu.so"), "--input", str(tmp_path / "x.bin")]
        env = dict(os.environ, MDLA_EMU_PORTABLE=portable)
        proc = subprocess.run(
            [*cmd, "--outdir", str(out), "--json"], capture_output=True, text=True, env=env
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert json.loads(proc.stdout)["selected"] == "mtk-mdla"
        got = np.fromfile(out / "output_0.bin", np.int8).reshape(want.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"aarch64, MDLA_EMU_PORTABLE={portable}")
