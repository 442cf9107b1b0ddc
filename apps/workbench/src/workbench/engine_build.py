"""`workbench engine --build`: `mdla-engine` built with a compiler you name, into a file you
name, for a shell, a script or `adb push`:

    workbench engine --build -o mdla-engine                                   # this machine
    workbench engine --build --cc $NDK/.../aarch64-linux-android30-clang -o mdla-engine

The recipe is the one a phone builds by itself over SSH (`mdla_runtime.build.flat_build_commands`,
which `mdla_runtime.engine.ssh.remote.BUILD` runs as shell):
every engine source and header, the ones generated from the op schema included
(`mdla_runtime.build.engine_sources`), written flat into a temporary directory, each .c file
compiled with the host build's flags (side by side, `mdla_emu.build.jobs()` at once) and linked
with its libraries. So a cross-build needs nothing from this
checkout but the command, and cannot miss a file the source list gained.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mdla_runtime.atomic import write_atomic
from mdla_runtime.build import COMPILERS, engine_sources, flat_build_commands, run_build
from mdla_runtime.errors import BuildError
from workbench.errors import BAD_INPUT, USAGE, WorkbenchError

MACHINES = {3: "x86 (32-bit)", 40: "arm (32-bit)", 62: "x86-64", 183: "aarch64", 243: "riscv"}


@dataclass(frozen=True, slots=True)
class Built:
    path: Path
    compiler: str
    machine: str  # the ELF e_machine's name ("aarch64", "x86-64"), or "?" when not ELF


def default_compiler() -> str:
    """$CC, else the first of `COMPILERS` on PATH (every build's order, the phone's included)."""
    found = os.environ.get("CC") or next((c for c in COMPILERS if shutil.which(c)), "")
    if not found:
        names = "/".join(COMPILERS)
        raise WorkbenchError(f"no C compiler: install {names} or give --cc PATH", USAGE)
    return found


def machine_of(path: Path) -> str:
    """The architecture an ELF executable is for (its e_machine), or "?"."""
    head = path.read_bytes()[:20]
    if head[:4] != b"\x7fELF" or len(head) < 20:
        return "?"
    code = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")  # EI_DATA
    return MACHINES.get(code, f"ELF machine {code}")


def build_engine(out: Path, cc: str | None = None) -> Built:
    """Compile mdla-engine with `cc` (default: `default_compiler()`) into `out`, atomically
    (an interrupted or failed build leaves the old `out`, or none)."""
    compiler = cc or default_compiler()
    if shutil.which(compiler) is None:
        named = f"--cc {compiler}" if cc else f"$CC={compiler!r} (the environment's)"
        raise WorkbenchError(f"{named}: no such compiler (not a file, not on PATH)", USAGE)
    out = out.expanduser().resolve()
    if out.is_dir():
        raise WorkbenchError(f"-o {out}: is a directory; name the file to write", USAGE)
    with tempfile.TemporaryDirectory(prefix="mdla-engine-build-") as tmp:
        for name, blob in engine_sources().items():
            (Path(tmp) / name).write_bytes(blob)
        built = Path(tmp) / "mdla-engine"
        try:
            run_build(*flat_build_commands(compiler, built.name), "mdla-engine", cwd=tmp)
        except BuildError as exc:
            detail = str(exc).strip().splitlines()[1:][-3:] or ["no message"]
            raise WorkbenchError(
                f"{compiler} could not build mdla-engine (exit {exc.returncode}): "
                + " | ".join(detail),
                BAD_INPUT,
            ) from None
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, built.read_bytes(), mode=0o777)
    return Built(out, compiler, machine_of(out))
