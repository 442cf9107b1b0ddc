"""The aarch64 cross-build the portability tests share (test_engine_cross, test_emu_gemm):
mdla-engine, the host emulator (libneuron_emu.so) and optionally the fake adapter, built with
Debian's gcc-aarch64-linux-gnu and the host builds' own flags, to run under qemu-aarch64."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mdla_emu import build as emu_build
from mdla_emu.emulator import CFLAGS as EMU_FLAGS
from mdla_emu.emulator import INCLUDES as EMU_INCLUDES
from mdla_emu.emulator import LIB_NAME, emulator_sources
from mdla_runtime.build import (
    BASE_FLAGS,
    ENGINE_FLAGS,
    ENGINE_INCLUDES,
    ENGINE_LIBS,
    ENGINE_SOURCES,
    compile_c,
    generated_dir,
)

CC, QEMU, SYSROOT = "aarch64-linux-gnu-gcc", "qemu-aarch64", "/usr/aarch64-linux-gnu"
EM_AARCH64 = 183  # ELF e_machine of an aarch64 binary


def build_arm(out: Path, fake_adapter: Path | None = None) -> Path:
    """Cross-build into `out` (made here): mdla-engine and libneuron_emu.so, plus libfake.so
    from `fake_adapter` when given; fails naming the packages when the tools are missing, and
    checks the engine is an aarch64 ELF. The engine and emulator come from the cached C build
    (`compile_c` with the cross compiler: built once, files side by side, rebuilt on an edit)
    and are copied into `out`."""
    missing = [t for t in (CC, QEMU) if shutil.which(t) is None]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} missing: apt-get install -y gcc-aarch64-linux-gnu qemu-user"
        )
    out.mkdir(parents=True, exist_ok=True)
    portable = [f for f in EMU_FLAGS if f not in ("-shared", "-fPIC")]
    try:
        with emu_build.using_compiler(CC):
            engine = compile_c(
                ENGINE_SOURCES, "mdla-engine", flags=("-Werror", *ENGINE_FLAGS), libs=ENGINE_LIBS
            )
            emu = emu_build.compile_c(
                emulator_sources(),
                LIB_NAME,
                shared=True,
                flags=portable,
                libs=["-lm"],
                include_dirs=EMU_INCLUDES,
            )
    except emu_build.BuildError as exc:
        pytest.fail(str(exc))
    shutil.copy2(engine, out / "mdla-engine")
    shutil.copy2(emu, out / "libneuron_emu.so")
    if fake_adapter is not None:
        inc = [f"-I{d}" for d in (*ENGINE_INCLUDES, generated_dir())]
        fake = [CC, *BASE_FLAGS, "-Werror", *inc, "-shared"]
        cmd = [*fake, "-fPIC", str(fake_adapter), "-o", str(out / "libfake.so")]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
    elf = (out / "mdla-engine").read_bytes()[:20]
    assert elf[:4] == b"\x7fELF"
    assert int.from_bytes(elf[18:20], "little") == EM_AARCH64
    return out
