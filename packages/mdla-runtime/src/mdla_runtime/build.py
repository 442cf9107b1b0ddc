"""Building the engine's C code with the machine's C compiler, cached by content.

    exe = compile_c([csrc / "engine.c", ...], "mdla-engine", libs=("-ldl",))
    path = engine_path()      # builds (once) and returns `mdla-engine`

The compiler, the cache and the atomic writes are the emulator's (`mdla_emu.build`: one compiler
search order for every build); this module adds the engine's sources, flags and generated headers
(`mdla_model_keys.h` besides the emulator's `mdla_ops.h`, see `codegen.py`). `generated_dir()`
is on every engine build's include path and in its cache key; `engine_sources()` gives the
engine's files, the generated headers included (what a remote build ships).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from mdla_emu import build as emu_build
from mdla_emu.build import BASE_FLAGS as BASE_FLAGS
from mdla_emu.build import COMPILERS as COMPILERS
from mdla_emu.build import cache_dir as cache_dir
from mdla_emu.build import find_compiler as find_compiler
from mdla_emu.build import generated_file as generated_file
from mdla_emu.build import run_build as run_build
from mdla_emu.emulator import CSRC as EMU_CSRC
from mdla_emu.emulator import KERNELS, kernel_sources
from mdla_runtime.codegen import headers
from mdla_runtime.errors import BuildError

CSRC = Path(__file__).parent / "csrc"
# The C has the Python's wings: `format/` the manifest reader (the twin of mdla_runtime.format),
# `engine/` the command line, adapter loading, model building, runs and partitions, `cpu/` the
# in-process cpu device (cpu partitions run the float kernels and the emulator's int8 kernels:
# every file of mdla_emu's `csrc/kernels/`, without the emulator's Neuron ABI). Each wing is
# linked by folder, so a new file joins by itself (its fuzz_*.c drivers excepted). Absolute
# paths; every build puts the wings on the include path (ENGINE_INCLUDES) and links
# ENGINE_LIBS; a remote build gets them flat (`engine_sources`, `engine_source_names`: no two
# share a file name).
FORMAT, ENGINE, CPU = CSRC / "format", CSRC / "engine", CSRC / "cpu"


def wing_sources(folder: Path) -> tuple[Path, ...]:
    """The .c files of one wing, its fuzz drivers (`fuzz_*.c`, which define main) left out."""
    return tuple(p for p in sorted(folder.glob("*.c")) if not p.name.startswith("fuzz_"))


READER_SOURCES = wing_sources(FORMAT)
CPU_SOURCES = (*wing_sources(CPU), *kernel_sources())
ENGINE_SOURCES = (*wing_sources(ENGINE), *READER_SOURCES, *CPU_SOURCES)
ENGINE_INCLUDES = (FORMAT, ENGINE, CPU, EMU_CSRC, KERNELS)
# -O3: the cpu partitions' int8 GEMM (emu_gemm_s16) vectorizes (ConvNeXt-Tiny at 64x64: 296 ->
# ~100 ms per run on this host); exact all the same (integer C, and float_ops.c is ISO C with
# no contraction: tests/runtime/test_cpu_float_ops.py builds it at -O3 too). -pthread: the
# emulator's worker pool (pool.c), linked but run with one thread.
ENGINE_FLAGS = ("-O3", "-pthread")
ENGINE_LIBS = ("-ldl", "-lm")


def generated_dir() -> Path:
    """The directory holding every header the engine's build generates."""
    return emu_build.generated_dir(headers())


def engine_sources() -> dict[str, bytes]:
    """{file name: bytes} of every file the engine builds from, the generated headers included,
    flat (a remote build compiles them in one directory)."""
    found = {h for d in ENGINE_INCLUDES for h in d.glob("*.h")}
    files = sorted({*ENGINE_SOURCES, *found})
    out = {f.name: f.read_bytes() for f in files} | {n: t.encode() for n, t in headers().items()}
    if len(out) != len(files) + len(headers()):
        raise BuildError("two engine files share a name; a remote build ships them flat")
    return out


def engine_source_names() -> tuple[str, ...]:
    """The engine's .c files as a flat build names them (see `engine_sources`)."""
    return tuple(s.name for s in ENGINE_SOURCES)


def flat_build_commands(cc: str, out: str = "mdla-engine") -> tuple[list[list[str]], list[str]]:
    """The engine's build recipe in a directory holding `engine_sources()` flat, as (one compile
    per .c file, the link) to run with `mdla_emu.build.run_build`: what `workbench engine
    --build` runs, and (as `shell_build_script`) what a phone runs over SSH; the local build
    (`engine_path`) passes the same flags and libraries."""
    return emu_build.build_commands(
        cc, (*BASE_FLAGS, *ENGINE_FLAGS), engine_source_names(), out, ENGINE_LIBS, includes=("-I.",)
    )


def shell_build_script() -> str:
    """`flat_build_commands` as POSIX sh for a phone: the compiler is $CC, else the first of
    `COMPILERS` found (the local build's order); the source names come as the script's "$@",
    compiled `nproc` at a time (`$MDLA_BUILD_JOBS` overrides), then linked. Prints
    MDLA_NO_COMPILER and exits 3 when there is none; exits 1 when a file does not compile (the
    compiler's messages on stderr)."""
    names = " ".join(f'"{c}"' for c in ("${CC:-cc}", *COMPILERS))
    flags = " ".join(shlex.quote(f) for f in (*BASE_FLAGS, *ENGINE_FLAGS))
    libs = " ".join(shlex.quote(f) for f in ENGINE_LIBS)
    return (
        f"CC_=; for c in {names}; do\n"
        '  if command -v "$c" >/dev/null 2>&1; then CC_=$c; break; fi\ndone\n'
        '[ -n "$CC_" ] || { echo MDLA_NO_COMPILER >&2; exit 3; }\n'
        "n=${MDLA_BUILD_JOBS:-$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null)}\n"
        "case $n in '' | *[!0-9]* | 0) n=1;; esac\n"
        "i=0; objs=; pids=; bad=0\n"
        'for s in "$@"; do\n'
        '  o=$(printf %03d "$i")-${s%.c}.o; objs="$objs $o"; i=$((i + 1))\n'
        f'  "$CC_" {flags} -I. -c "$s" -o "$o" & pids="$pids $!"\n'
        '  if [ $((i % n)) -eq 0 ]; then for q in $pids; do wait "$q" || bad=1; done; pids=; fi\n'
        "done\n"
        'for q in $pids; do wait "$q" || bad=1; done\n'
        '[ "$bad" -eq 0 ] || exit 1\n'
        f'"$CC_" {flags} $objs -o mdla-engine {libs}; chmod 700 mdla-engine\n'
    )


def compile_c(
    sources: Sequence[str | os.PathLike[str]],
    output_name: str,
    shared: bool = False,
    flags: Sequence[str] = (),
    libs: Sequence[str] = (),
    include_dirs: Sequence[Path] = (),
) -> Path:
    """`mdla_emu.build.compile_c` with the engine's include directories (then `include_dirs`)
    and generated headers."""
    return emu_build.compile_c(
        sources, output_name, shared, flags, libs, [*ENGINE_INCLUDES, *include_dirs], headers()
    )


def engine_path() -> Path:
    """The `mdla-engine` executable for this machine, built on first use."""
    return compile_c(ENGINE_SOURCES, "mdla-engine", flags=ENGINE_FLAGS, libs=ENGINE_LIBS)
