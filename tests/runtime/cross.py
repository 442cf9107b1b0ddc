"""The aarch64 cross-build the portability tests share (test_engine_cross, test_emu_gemm):
mdla-engine, the host emulator (libneuron_emu.so) and optionally the fake adapter, built with
Debian's gcc-aarch64-linux-gnu and the host builds' own flags, to run under qemu-aarch64."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mdla_emu.build import BuildError, build_commands, run_build
from mdla_emu.emulator import CFLAGS as EMU_FLAGS
from mdla_emu.emulator import INCLUDES as EMU_INCLUDES
from mdla_emu.emulator import emulator_sources
from mdla_runtime.build import (
    BASE_FLAGS,
    ENGINE_FLAGS,
    ENGINE_INCLUDES,
    ENGINE_LIBS,
    ENGINE_SOURCES,
    generated_dir,
)

CC, QEMU, SYSROOT = "aarch64-linux-gnu-gcc", "qemu-aarch64", "/usr/aarch64-linux-gnu"
EM_AARCH64 = 183  # ELF e_machine of an aarch64 binary


# The engine and emulator cross-built once per test process: three test modules need the same
# aarch64 build (~35 s each on two cores, one file at a time), and later ones copy the first's.
_BUILT: list[Path] = []


def build_arm(out: Path, fake_adapter: Path | None = None) -> Path:
    """Cross-build into `out` (made here): mdla-engine and libneuron_emu.so, plus libfake.so
    from `fake_adapter` when given; fails naming the packages when the tools are missing, and
    checks the engine is an aarch64 ELF. The files compile side by side (`run_build`); the engine
    and emulator this process built before are copied instead of built again."""
    missing = [t for t in (CC, QEMU) if shutil.which(t) is None]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} missing: apt-get install -y gcc-aarch64-linux-gnu qemu-user"
        )
    out.mkdir(parents=True, exist_ok=True)
    inc = [f"-I{d}" for d in (*ENGINE_INCLUDES, generated_dir())]
    if _BUILT and all((_BUILT[0] / f).is_file() for f in ("mdla-engine", "libneuron_emu.so")):
        for f in ("mdla-engine", "libneuron_emu.so"):
            shutil.copy2(_BUILT[0] / f, out / f)
    else:
        _build_engine_and_emulator(out, inc)
        _BUILT[:] = [out]
    if fake_adapter is not None:
        fake = [CC, *BASE_FLAGS, "-Werror", *inc, "-shared"]
        cmd = [*fake, "-fPIC", str(fake_adapter), "-o", str(out / "libfake.so")]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
    elf = (out / "mdla-engine").read_bytes()[:20]
    assert elf[:4] == b"\x7fELF"
    assert int.from_bytes(elf[18:20], "little") == EM_AARCH64
    return out


def _build_engine_and_emulator(out: Path, inc: list[str]) -> None:
    engine = build_commands(
        CC,
        [*BASE_FLAGS, "-Werror", *ENGINE_FLAGS],
        list(map(str, ENGINE_SOURCES)),
        str(out / "mdla-engine"),
        ENGINE_LIBS,
        str(out / "obj-engine"),
        inc,
    )
    emu = build_commands(
        CC,
        list(EMU_FLAGS),
        list(map(str, emulator_sources())),
        str(out / "libneuron_emu.so"),
        ["-lm"],
        str(out / "obj-emu"),
        [f"-I{d}" for d in (*EMU_INCLUDES, generated_dir())],
    )
    for what, (compiles, link) in (("mdla-engine", engine), ("libneuron_emu.so", emu)):
        Path(compiles[0][-1]).parent.mkdir(exist_ok=True)
        try:
            run_build(compiles, link, f"the aarch64 {what}")
        except BuildError as exc:
            pytest.fail(str(exc))
        shutil.rmtree(Path(compiles[0][-1]).parent)
