"""csrc/cpu/float_ops.c, the engine's float32 kernels for CPU partitions (issue 17), against
their reference mdla_quant/kernels/float_ops.py: LAYER_NORM and the GELU table bit for bit,
built natively (portable, and tuned with -march=native -O3) and for aarch64 under qemu; and
LAYER_NORM's AVX2 kernel (csrc/cpu/layer_norm_x86.c) against the same reference natively, its
NEON twin (csrc/cpu/layer_norm_neon.c) under qemu."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdla_emu.emulator import KERNELS
from mdla_ir.affine import dequantize_output, quantize_input
from mdla_quant.kernels.float_ops import gelu_table, layer_norm_f32
from mdla_runtime.build import CSRC, compile_c

Array = np.ndarray[Any, Any]
SOURCES = [
    CSRC / "cpu" / "float_ops.c",
    Path(__file__).with_name("cpu_float_main.c"),
    CSRC / "cpu" / "layer_norm_x86.c",  # empty off x86-64
    CSRC / "cpu" / "layer_norm_neon.c",  # empty off aarch64
]
FLAGS = ("-Werror", f"-I{KERNELS}")
CROSS, QEMU, SYSROOT = "aarch64-linux-gnu-gcc", "qemu-aarch64", "/usr/aarch64-linux-gnu"
NEON = {"MDLA_LN_NEON": "1"}


def cases() -> tuple[bytes, bytes]:
    """Driver records and the reference's expected output bytes."""
    rng = np.random.default_rng(17)
    records, expected = bytearray(), bytearray()
    for k in range(24):  # 8 rows at a time side by side (vector lanes), then the last ones
        n = int(rng.choice([1, 2, 7, 12, 96, 100, 384, 768]))  # AVX2: 8 columns at a time
        rows = int(rng.integers(1, 26))
        s_in, s_out = (np.float32(rng.uniform(1e-3, 0.5)) for _ in range(2))
        z_in, z_out = (int(rng.integers(-128, 128)) for _ in range(2))
        eps = np.float32(rng.choice([1e-6, 1e-5, 1e-3]))
        has_w, has_b = k % 3 != 1, k % 4 != 2
        w = rng.standard_normal(n).astype(np.float32)
        w *= np.float32(1e36 if k == 5 else 1.0)  # y / s_out past 2^24 and inf: the clamps
        b = rng.standard_normal(n).astype(np.float32)
        q = rng.integers(-128, 128, (rows, n)).astype(np.int8)
        records += struct.pack("<iIIfifif", 0, rows, n, s_in, z_in, s_out, z_out, eps)
        records += struct.pack("<II", has_w, has_b)
        records += (w.tobytes() if has_w else b"") + (b.tobytes() if has_b else b"") + q.tobytes()
        x = dequantize_output(q, float(s_in), z_in)
        y = layer_norm_f32(x, n, float(eps), w if has_w else None, b if has_b else None)
        expected += quantize_input(y, s_out, z_out).tobytes()
    for k in range(32):  # the float32 core, compared bit for bit before any rounding to int8:
        n = int(rng.choice([3, 96, 768]))  # one row at a time (2), 8 rows in lanes (3)
        op = 2 + k % 2
        rows, eps = (int(rng.integers(1, 5)) if op == 2 else 8), np.float32(1e-6)
        x = (rng.standard_normal((rows, n)) * rng.uniform(0.1, 50)).astype(np.float32)
        w = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        has_w = has_b = k % 4 < 2
        records += struct.pack("<iIIfII", op, rows, n, eps, has_w, has_b)
        records += (w.tobytes() + b.tobytes() if has_w else b"") + x.tobytes()
        y = layer_norm_f32(x, n, float(eps), w if has_w else None, b if has_b else None)
        expected += y.astype("<f4").tobytes()
    for _ in range(64):
        s_in, s_out = (np.float32(rng.uniform(1e-3, 0.2)) for _ in range(2))
        z_in, z_out = (int(rng.integers(-128, 128)) for _ in range(2))
        records += struct.pack("<ififi", 1, s_in, z_in, s_out, z_out)
        expected += gelu_table(s_in, z_in, s_out, z_out).tobytes()
    return bytes(records), bytes(expected)


def run(cmd: list[str], tmp: Path, records: bytes, env: dict[str, str] | None = None) -> bytes:
    (tmp / "in.bin").write_bytes(records)
    args = [*cmd, str(tmp / "in.bin"), str(tmp / "out.bin")]
    proc = subprocess.run(args, capture_output=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return (tmp / "out.bin").read_bytes()


def first_difference(got: bytes, want: bytes) -> str:
    diff = np.flatnonzero(np.frombuffer(got, np.int8) != np.frombuffer(want, np.int8))
    return f"{diff.size} of {len(want)} bytes differ, first at {diff[:5]}"


@pytest.mark.parametrize(
    ("cc", "tuned"),
    [("cc", False), ("cc", True), ("clang", True)],
    ids=["portable", "native-O3", "clang-native-O3"],
)
def test_native_build_is_bit_exact(
    cc: str, tuned: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """-march=native gives the compilers FMA instructions; neither may fuse a * b + c here
    (ISO C mode for gcc, the FP_CONTRACT pragma and one operation per statement for clang)."""
    if shutil.which(cc) is None:
        pytest.fail(f"{cc} missing: apt-get install {cc}")
    monkeypatch.setenv("CC", cc)
    flags = (*FLAGS, "-O3", "-march=native") if tuned else FLAGS
    exe = compile_c(SOURCES, "cpu-float-check", flags=flags, libs=("-lm",))
    records, want = cases()
    got = run([str(exe)], tmp_path, records)
    assert len(got) == len(want)
    assert got == want, first_difference(got, want)


def test_aarch64_build_is_bit_exact(tmp_path: Path) -> None:
    missing = [t for t in (CROSS, QEMU) if shutil.which(t) is None]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} missing: apt-get install gcc-aarch64-linux-gnu qemu-user"
        )
    exe = tmp_path / "cpu-float-check"
    cmd = [CROSS, "-std=c11", "-O2", "-Wall", "-Wextra", *FLAGS, f"-I{CSRC / 'cpu'}"]
    proc = subprocess.run([*cmd, *map(str, SOURCES), "-o", str(exe), "-lm"], capture_output=True)
    assert proc.returncode == 0, proc.stderr
    records, want = cases()
    got = run([QEMU, "-L", SYSROOT, str(exe)], tmp_path, records)
    assert got == want, first_difference(got, want)
    # LAYER_NORM's NEON kernel (layer_norm_neon.c, what the engine runs on aarch64)
    got = run([QEMU, "-L", SYSROOT, str(exe)], tmp_path, records, {**os.environ, **NEON})
    assert got == want, "NEON: " + first_difference(got, want)


def test_a_changed_summation_order_is_caught(tmp_path: Path) -> None:
    """The check can fail: the same kernel summing right to left differs from the reference
    (in the float32 records; an int8 result seldom moves with the last bit of a mean)."""
    src = (CSRC / "cpu" / "float_ops.c").read_text()
    loop = "for (size_t i = 0; i < n; i++) sum += xr[i];"
    assert loop in src
    flipped = src.replace(loop, "for (size_t i = n; i-- > 0;) sum += xr[i];")
    (tmp_path / "float_ops.c").write_text(flipped)
    shutil.copy(CSRC / "cpu" / "float_ops.h", tmp_path / "float_ops.h")
    exe = compile_c([tmp_path / "float_ops.c", *SOURCES[1:]], "cpu-float-flipped", flags=FLAGS,
                    libs=("-lm",))  # fmt: skip
    records, want = cases()
    assert run([str(exe)], tmp_path, records) != want


def test_fused_multiply_add_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Why the build flags matter: -ffp-contract=fast (gcc's default outside ISO C mode) fuses
    d * d + acc into FMAs, and the float32 records stop matching."""
    monkeypatch.setenv("CC", "clang" if shutil.which("clang") else "cc")
    flags = (*FLAGS, "-O3", "-march=native", "-ffp-contract=fast")
    exe = compile_c(SOURCES, "cpu-float-fused", flags=flags, libs=("-lm",))
    records, want = cases()
    assert run([str(exe)], tmp_path, records) != want


def has_avx2() -> bool:
    flags = next(
        (
            line
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("flags")
        ),
        "",
    )
    return " avx2" in flags


AVX2 = {"MDLA_LN_AVX2": "1"}


@pytest.mark.skipif(not has_avx2(), reason="the CPU has no AVX2 (the engine runs the C there)")
@pytest.mark.parametrize("tuned", [False, True], ids=["O0", "native-O3"])
def test_avx2_layer_norm_is_bit_exact(tmp_path: Path, tuned: bool) -> None:
    """The engine's LAYER_NORM on x86-64 with AVX2 (emu_isa() AVX2 or AVX-512): 8 columns of 8
    rows transposed in registers, the last n % 8 columns and rows % 8 rows apart (n from 1 to
    768 with 12 and 100, rows 1 to 25), against the reference's bytes."""
    flags = (*FLAGS, "-O3", "-march=native") if tuned else FLAGS
    exe = compile_c(SOURCES, "cpu-float-check", flags=flags, libs=("-lm",))
    records, want = cases()
    got = run([str(exe)], tmp_path, records, env={**os.environ, **AVX2})
    assert got == want, first_difference(got, want)


@pytest.mark.skipif(not has_avx2(), reason="the CPU has no AVX2 (the engine runs the C there)")
def test_avx2_layer_norm_rounding_is_checked(tmp_path: Path) -> None:
    """The check can fail: QUANTIZE's round half away from zero (a = |q| + 0.5, truncated) made
    to round at 0.51 instead moves codes."""
    src = (CSRC / "cpu" / "layer_norm_x86.c").read_text()
    half = "_mm256_set1_ps(0.5f)"
    assert src.count(half) == 1
    (tmp_path / "layer_norm_x86.c").write_text(src.replace(half, "_mm256_set1_ps(0.49f)"))
    sources = [*SOURCES[:2], tmp_path / "layer_norm_x86.c"]
    exe = compile_c(sources, "cpu-float-half", flags=FLAGS, libs=("-lm",))
    records, want = cases()
    assert run([str(exe)], tmp_path, records, env={**os.environ, **AVX2}) != want


def test_neon_layer_norm_rounding_is_checked(tmp_path: Path) -> None:
    """The aarch64 check can fail: the NEON kernel rounding at 0.51 instead of half moves codes."""
    missing = [t for t in (CROSS, QEMU) if shutil.which(t) is None]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} missing: apt-get install gcc-aarch64-linux-gnu qemu-user"
        )
    src = (CSRC / "cpu" / "layer_norm_neon.c").read_text()
    half = "vdupq_n_f32(0.5f)"
    assert src.count(half) == 1
    (tmp_path / "layer_norm_neon.c").write_text(src.replace(half, "vdupq_n_f32(0.49f)"))
    exe = tmp_path / "cpu-float-neon-half"
    cmd = [CROSS, "-std=c11", "-O2", "-Wall", "-Wextra", *FLAGS, f"-I{CSRC / 'cpu'}"]
    sources = [*map(str, SOURCES[:3]), str(tmp_path / "layer_norm_neon.c")]
    proc = subprocess.run([*cmd, *sources, "-o", str(exe), "-lm"], capture_output=True)
    assert proc.returncode == 0, proc.stderr
    records, want = cases()
    assert run([QEMU, "-L", SYSROOT, str(exe)], tmp_path, records, {**os.environ, **NEON}) != want
