"""`libneuron_emu.so`: build the host Neuron emulator from the C sources below `csrc/`.

    path = build_emulator()            # compiled once per source/target-data change, then cached
    lib = mdla_emu.load_emulator()     # ctypes.CDLL with the Neuron ABI's argument types set

The sources have wings: `csrc/kernels/` holds the int8 kernels and what they share (the engine's
cpu partitions link that folder whole), `csrc/abi/` the Neuron Adapter ABI (models,
compilations, executions, devices, compiled networks, memory and events, trace, the fake sysfs
node), `csrc/` itself the headers both use (`neuron_abi.h`, `emu.h`, `signature.h`). The device
table (`emu_targets.c`) is generated from the target's `mdla_target.Target` (`targets.py`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import subprocess
from pathlib import Path

from mdla_emu import build
from mdla_emu.build import BuildError
from mdla_emu.targets import EmulatorError, generate_targets, load

CSRC = Path(__file__).parent / "csrc"
KERNELS = CSRC / "kernels"
ABI = CSRC / "abi"
INCLUDES = (CSRC, KERNELS, ABI)
TARGET = "mdla3.5"
LIB_NAME = "libneuron_emu.so"
CFLAGS = (
    "-std=c11",
    "-O3",
    "-fPIC",
    "-shared",
    "-ffp-contract=off",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-pthread",
)


def kernel_sources() -> tuple[Path, ...]:
    """The int8 kernels and their support (`csrc/kernels/*.c`): what a cpu partition links."""
    return tuple(sorted(KERNELS.glob("*.c")))


def abi_sources() -> tuple[Path, ...]:
    """The Neuron Adapter ABI's implementation (`csrc/abi/*.c`)."""
    return tuple(sorted(ABI.glob("*.c")))


def generated_targets(target: str = TARGET) -> Path:
    """`emu_targets.c` generated from the target `target` (a shipped name or a .toml path),
    cached by its content."""
    return build.generated_file("emu_targets.c", generate_targets(load(target)))


def emulator_sources(target: str = TARGET) -> list[Path]:
    """Every C file of the emulator, the generated device table included (for cross builds)."""
    return [*kernel_sources(), *abi_sources(), generated_targets(target)]


CPU_KEYS = ("vendor_id", "model name", "cpu family", "model", "flags", "Features", "CPU part")


def cpu_fingerprint() -> str:
    """A short hash of this CPU's model and feature flags (Linux /proc/cpuinfo; else the
    platform's machine and processor strings)."""
    lines: list[str] = []
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key = line.split(":", 1)[0].strip()
        if key in CPU_KEYS and line not in lines:
            lines.append(line)
    if not lines:
        lines = [platform.machine(), platform.processor()]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


# On x86-64 the native build stops at AVX2: valgrind (the leak check) decodes no AVX-512,
# AVX-VNNI, GFNI or VAES instructions. The hot loops' AVX-512 twins are chosen at run time
# from cpuid instead (kernels.h, EMU_DISPATCHED), which valgrind's cpuid does not offer.
X86_CAPS = ("-mno-avx512f", "-mno-avxvnni", "-mno-gfni", "-mno-vaes", "-mno-vpclmulqdq")


@functools.cache
def native_flags() -> tuple[str, ...]:
    """`-march=native` plus the CPU fingerprint as a define, so the build cache key (which
    hashes the flags) never hands a binary tuned for one CPU to another. Empty when the
    compiler rejects the flags (then the portable build is used)."""
    flags = ["-march=native"]
    if platform.machine().lower() in ("x86_64", "amd64"):
        flags += X86_CAPS
    try:
        cc = build.find_compiler()
        proc = subprocess.run(
            [cc, *flags, "-x", "c", "-c", "-o", os.devnull, "-"],
            input=b"int emu_probe;\n",
            capture_output=True,
            timeout=60,
        )
    except (BuildError, OSError, subprocess.SubprocessError):
        return ()
    if proc.returncode != 0:
        return ()
    return (*flags, f"-DEMU_CPU_FINGERPRINT={cpu_fingerprint()}")


def build_emulator(target: str = TARGET) -> Path:
    """Build `libneuron_emu.so` with the cached C build (rebuilt when a source or the target
    data changes), tuned for this CPU when the compiler can (`native_flags`); the sources are
    portable C11 and CFLAGS alone build them anywhere (the aarch64 cross build)."""
    flags = [f for f in CFLAGS if f not in ("-shared", "-fPIC")] + list(native_flags())
    try:
        return build.compile_c(
            emulator_sources(target),
            LIB_NAME,
            shared=True,
            flags=flags,
            libs=["-lm"],
            include_dirs=INCLUDES,
        )
    except BuildError as exc:
        raise EmulatorError(str(exc)) from exc
