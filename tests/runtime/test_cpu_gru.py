"""csrc/cpu/gru.c, the engine's float32 region (DEQUANTIZE, GRU, FULLY_CONNECTED_F32), against
its definition mdla_quant/kernels/gru.py: bit for bit, built natively (portable, and tuned with
-march=native -O3, gcc and clang) and for aarch64 under qemu; and the definition against the
float64 GRU (torch.nn.GRU's equations) it stands for."""

from __future__ import annotations

import math
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdla_ir.affine import dequantize_output
from mdla_ir.interp.recurrent import gru_direction
from mdla_quant.kernels.gru import fc_f32, gru_f32, sigmoid_f32, tanh_f32
from mdla_runtime.build import CSRC, compile_c

Array = np.ndarray[Any, Any]
SOURCES = [CSRC / "cpu" / "gru.c", Path(__file__).with_name("cpu_gru_main.c")]
FLAGS = ("-Werror", f"-I{CSRC / 'cpu'}")
CROSS, QEMU, SYSROOT = "aarch64-linux-gnu-gcc", "qemu-aarch64", "/usr/aarch64-linux-gnu"
SPECIAL = [0.0, -0.0, 1e-30, -1e-30, 1e-8, -1e-8, 0.5, -0.5, 9.0, -9.0, 17.0, -17.0, 88.0, -88.0]
SPECIAL += [100.0, -100.0, 1e4, -1e4, 3.4e38, -3.4e38]
# NaN (both signs, a payload, a signalling one) and the infinities: EXP is total on them
NONFINITE = np.array(
    [0x7FC00000, 0xFFC00000, 0x7FC12345, 0x7F800001, 0x7F800000, 0xFF800000], "<u4"
)


def f32(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> Array:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def cases() -> tuple[bytes, bytes]:
    """Driver records and the reference's expected output bytes."""
    rng = np.random.default_rng(1717)
    records, expected = bytearray(), bytearray()
    for steps, n_in, hidden, dirs in [(1, 1, 1, 1), (5, 7, 3, 2), (12, 48, 16, 2), (9, 33, 8, 1)]:
        x = f32(rng, steps, n_in, scale=2.0)
        w_ih, w_hh = f32(rng, dirs, 3 * hidden, n_in, scale=0.4), f32(rng, dirs, 3 * hidden, hidden)
        b_ih, b_hh = f32(rng, dirs, 3 * hidden), f32(rng, dirs, 3 * hidden)
        records += struct.pack("<iIIII", 0, steps, n_in, hidden, dirs)
        for a in (x, w_ih, w_hh, b_ih, b_hh):
            records += a.tobytes()
        expected += gru_f32(x, w_ih, w_hh, b_ih, b_hh).astype("<f4").tobytes()
    for rows, n_in, units in [(1, 1, 1), (7, 64, 28), (3, 129, 5)]:
        x, w, b = f32(rng, rows, n_in, scale=3.0), f32(rng, units, n_in), f32(rng, units)
        records += struct.pack("<iIII", 1, rows, n_in, units) + x.tobytes() + w.tobytes()
        records += b.tobytes()
        expected += fc_f32(x, w, b).astype("<f4").tobytes()
    special = np.concatenate([np.array(SPECIAL, np.float32), NONFINITE.view(np.float32)])
    v = np.concatenate([special, f32(rng, 4000, scale=6.0)])
    records += struct.pack("<iI", 2, v.size) + v.tobytes()
    expected += sigmoid_f32(v).tobytes() + tanh_f32(v).tobytes()
    q = rng.integers(-128, 128, 300).astype(np.int8)
    records += struct.pack("<iIfi", 3, q.size, np.float32(0.0312), -7) + q.tobytes()
    expected += dequantize_output(q, 0.0312, -7).astype("<f4").tobytes()
    return bytes(records), bytes(expected)


def run(cmd: list[str], tmp: Path, records: bytes) -> bytes:
    (tmp / "in.bin").write_bytes(records)
    proc = subprocess.run([*cmd, str(tmp / "in.bin"), str(tmp / "out.bin")], capture_output=True)
    assert proc.returncode == 0, proc.stderr
    return (tmp / "out.bin").read_bytes()


def first_difference(got: bytes, want: bytes) -> str:
    a, b = np.frombuffer(got, np.uint32), np.frombuffer(want, np.uint32)
    diff = np.flatnonzero(a != b)
    return f"{diff.size} of {b.size} float32 values differ, first at {diff[:5]}"


@pytest.fixture(scope="module")
def reference() -> tuple[bytes, bytes]:
    return cases()


@pytest.mark.parametrize(
    ("cc", "tuned"),
    [("cc", False), ("cc", True), ("clang", True)],
    ids=["portable", "native-O3", "clang-native-O3"],
)
def test_native_build_is_bit_exact(
    cc: str,
    tuned: bool,
    reference: tuple[bytes, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if shutil.which(cc) is None:
        pytest.fail(f"{cc} missing: apt-get install {cc}")
    monkeypatch.setenv("CC", cc)
    flags = (*FLAGS, "-O3", "-march=native") if tuned else FLAGS
    exe = compile_c(SOURCES, "cpu-gru-check", flags=flags, libs=("-lm",))
    records, want = reference
    got = run([str(exe)], tmp_path, records)
    assert len(got) == len(want)
    assert got == want, first_difference(got, want)


def test_aarch64_build_is_bit_exact(reference: tuple[bytes, bytes], tmp_path: Path) -> None:
    missing = [t for t in (CROSS, QEMU) if shutil.which(t) is None]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} missing: apt-get install gcc-aarch64-linux-gnu qemu-user"
        )
    exe = tmp_path / "cpu-gru-check"
    cmd = [CROSS, "-std=c11", "-O2", "-Wall", "-Wextra", *FLAGS]
    proc = subprocess.run([*cmd, *map(str, SOURCES), "-o", str(exe), "-lm"], capture_output=True)
    assert proc.returncode == 0, proc.stderr
    records, want = reference
    got = run([QEMU, "-L", SYSROOT, str(exe)], tmp_path, records)
    assert got == want, first_difference(got, want)


@pytest.mark.parametrize("cc", ["cc", "clang"])
def test_nonfinite_inputs_are_defined_behaviour(
    cc: str, reference: tuple[bytes, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under UBSan (float-cast-overflow named: GCC leaves it out of `undefined`), NaN and the
    infinities reach EXP's conversion of k to int nowhere; the bits are the definition's."""
    if shutil.which(cc) is None:
        pytest.fail(f"{cc} missing: apt-get install {cc}")
    monkeypatch.setenv("CC", cc)
    ub = "-fsanitize=undefined,float-cast-overflow"
    flags = (*FLAGS, "-O1", ub, "-fno-sanitize-recover=all")
    exe = compile_c(SOURCES, "cpu-gru-ubsan", flags=flags, libs=("-lm", ub))
    records, want = reference
    got = run([str(exe)], tmp_path, records)
    assert got == want, first_difference(got, want)
    sig = sigmoid_f32(NONFINITE.view(np.float32)).view("<u4")
    assert [hex(b) for b in sig[:4]] == ["0xffc00000", "0x7fc00000", "0xffc12345", "0xffc00001"]


def test_fused_multiply_add_is_caught(
    reference: tuple[bytes, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check can fail: -ffp-contract=fast fuses the dot products' w * v + acc."""
    monkeypatch.setenv("CC", "clang" if shutil.which("clang") else "cc")
    flags = (*FLAGS, "-O3", "-march=native", "-ffp-contract=fast")
    exe = compile_c(SOURCES, "cpu-gru-fused", flags=flags, libs=("-lm",))
    records, want = reference
    assert run([str(exe)], tmp_path, records) != want


def test_sigmoid_and_tanh_are_within_one_ulp() -> None:
    """The libm-free EXP gives float32 SIGMOID and TANH within 1 ulp of the true functions."""
    rng = np.random.default_rng(3)
    v = np.concatenate([np.array(SPECIAL, np.float32), f32(rng, 20000, scale=8.0)])
    for got, fn in ((sigmoid_f32(v), lambda x: 1 / (1 + math.exp(-x)) if x > -700 else 0.0),
                    (tanh_f32(v), math.tanh)):  # fmt: skip
        want = np.array([fn(float(x)) for x in v], np.float32)
        ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
        assert ulps.max() <= 1, v[np.argmax(ulps)]
    assert tanh_f32(np.array([-0.0], np.float32)).tobytes() == np.float32(-0.0).tobytes()


def test_gru_definition_matches_float64_gru() -> None:
    """gru.py's float32 GRU is torch.nn.GRU's equations (mdla_ir's float64 kernel) to float32
    accuracy; the reverse direction reads time backwards."""
    rng = np.random.default_rng(5)
    x, h = f32(rng, 20, 24), 10
    w_ih, w_hh = f32(rng, 2, 3 * h, 24, scale=0.3), f32(rng, 2, 3 * h, h, scale=0.3)
    b_ih, b_hh = f32(rng, 2, 3 * h), f32(rng, 2, 3 * h)
    got = gru_f32(x, w_ih, w_hh, b_ih, b_hh)
    fwd = gru_direction(x, w_ih[0], w_hh[0], b_ih[0], b_hh[0])
    bwd = gru_direction(x[::-1], w_ih[1], w_hh[1], b_ih[1], b_hh[1])[::-1]
    want = np.concatenate([fwd, bwd], axis=1)
    assert np.abs(got - want).max() < 2e-6
    flipped = gru_f32(x, w_ih[::-1], w_hh[::-1], b_ih[::-1], b_hh[::-1])
    assert np.abs(flipped - want).max() > 1e-2  # directions are not interchangeable
