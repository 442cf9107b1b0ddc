"""Building the package's C code with the machine's C compiler, cached by content.

    exe = compile_c([csrc / "engine.c", ...], "mdla-engine", libs=("-ldl",))
    lib = compile_c([...], "libneuron_emu.so", shared=True, flags=("-O3",))

The compiler is `$CC`, else the first of cc, gcc, clang on PATH. Outputs go to
`$MDLA_CACHE_DIR` (else ~/.cache/mdla) under a key hashing the compiler (path and version), the
flags and every source and header of the source directories, so an edit rebuilds and an
unchanged tree never does. Writes are atomic, so concurrent builds cannot leave a half-written
binary. `engine_path()` builds (once) and returns `mdla-engine`.

Every build also sees the headers generated from their Python definitions (`mdla_ops.h`,
`mdla_model_keys.h`, see `codegen.py`): `generated_dir()` writes them into the cache and is on
every include path and in every cache key; `engine_sources()` gives the engine's files, the
generated headers included (what a remote build ships). `generated_file` is the one way a
generated file reaches the cache (content-keyed, written atomically).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from mdla_runtime.codegen import headers
from mdla_runtime.errors import BuildError

CSRC = Path(__file__).parent / "csrc"
BASE_FLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra")
# The engine's own files, then its in-process cpu device (issue 17: cpu/cpu_part.c runs cpu
# partitions with the float kernels and the emulator's int8 kernels, linked in without the
# emulator's Neuron ABI). Paths under `csrc/`; every build puts each one's directory on the
# include path (ENGINE_INCLUDES) and links ENGINE_LIBS; a remote build gets them flat
# (`engine_sources`, `engine_source_names`: no two share a file name).
# The emulator's files that are its Neuron ABI, devices and runtime, not its kernels: the engine
# links every other one (a new kernel file joins by itself).
EMU_NOT_KERNELS = frozenset(
    {"model.c", "model_ext.c", "compilation.c", "compilation_ext.c", "execution.c"}
    | {"execution_ext.c", "device.c", "network.c", "sysfs.c", "trace.c"}
)
CPU_SOURCES = (
    "cpu/cpu_part.c",
    "cpu/float_ops.c",
    "cpu/gru.c",
    *(f"emu/{p.name}" for p in sorted((CSRC / "emu").glob("*.c")) if p.name not in EMU_NOT_KERNELS),
)
ENGINE_SOURCES = (
    "engine.c",
    "engine_run.c",
    "engine_parts.c",
    "model.c",
    "adapter.c",
    "manifest.c",
    "manifest_check.c",
    "mdla_msgpack.c",
    "report.c",
    *CPU_SOURCES,
)
ENGINE_INCLUDES = (CSRC, CSRC / "cpu", CSRC / "emu")
# -O3: the cpu partitions' int8 GEMM (emu_gemm_s16) vectorizes (ConvNeXt-Tiny at 64x64: 296 ->
# ~100 ms per run on this host); exact all the same (integer C, and float_ops.c is ISO C with
# no contraction: tests/runtime/test_cpu_float_ops.py builds it at -O3 too). -pthread: the
# emulator's worker pool (pool.c), linked but run with one thread.
ENGINE_FLAGS = ("-O3", "-pthread")
ENGINE_LIBS = ("-ldl", "-lm")


def cache_dir() -> Path:
    env = os.environ.get("MDLA_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "mdla"


def find_compiler() -> str:
    """`$CC`, else cc, gcc or clang; a `BuildError` saying what to install when none exists."""
    env = os.environ.get("CC")
    candidates = [env] if env else ["cc", "gcc", "clang"]
    for name in candidates:
        path = shutil.which(name.split()[0]) if name else None
        if path:
            return path
    raise BuildError(
        f"no C compiler found (tried {', '.join(c for c in candidates if c)}): mdla-runtime builds "
        "its engine with one. Install one (Debian/Ubuntu: apt-get install gcc; Termux: pkg "
        "install clang) or point $CC at it."
    )


def _version(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"C compiler {cc} does not run: {exc}") from exc
    return out.stdout


def _write_once(path: Path, text: str) -> Path:
    """`text` at `path` unless already there; atomic, so a concurrent build never reads half."""
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return path


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def generated_file(name: str, text: str) -> Path:
    """`text` as file `name` in the cache, in a directory keyed by the text."""
    return _write_once(cache_dir() / f"{Path(name).stem}-{_digest(text)}" / name, text)


def generated_dir() -> Path:
    """The directory holding every generated header (keyed by all of their texts)."""
    texts = headers()
    out_dir = cache_dir() / f"generated-{_digest(repr(sorted(texts.items())))}"
    for name, text in texts.items():
        _write_once(out_dir / name, text)
    return out_dir


def engine_sources() -> dict[str, bytes]:
    """{file name: bytes} of every file the engine builds from, the generated headers included,
    flat (a remote build compiles them in one directory)."""
    found = {h for d in ENGINE_INCLUDES for h in d.glob("*.h")}
    files = sorted({*(CSRC / s for s in ENGINE_SOURCES), *found})
    out = {f.name: f.read_bytes() for f in files} | {n: t.encode() for n, t in headers().items()}
    if len(out) != len(files) + len(headers()):
        raise BuildError("two engine files share a name; a remote build ships them flat")
    return out


def engine_source_names() -> tuple[str, ...]:
    """The engine's .c files as a flat build names them (see `engine_sources`)."""
    return tuple(Path(s).name for s in ENGINE_SOURCES)


def _key(cc: str, sources: Sequence[Path], args: Iterable[str]) -> str:
    h = hashlib.sha256()
    h.update(cc.encode() + b"\0" + _version(cc).encode() + b"\0")
    h.update("\0".join(args).encode() + b"\0")
    found = sorted({p for s in sources for p in s.parent.glob("*.h")})
    for path in [*sources, *found]:
        h.update(str(path.name).encode() + b"\0" + path.read_bytes() + b"\0")
    for name, text in sorted(headers().items()):  # the generated ones
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()[:20]


def compile_c(
    sources: Sequence[str | os.PathLike[str]],
    output_name: str,
    shared: bool = False,
    flags: Sequence[str] = (),
    libs: Sequence[str] = (),
) -> Path:
    """Compile `sources` into `output_name` (an executable, or a .so with `shared`); cached."""
    cc = find_compiler()
    srcs = [Path(s).resolve() for s in sources]
    for s in srcs:
        if not s.is_file():
            raise BuildError(f"C source {s} does not exist")
    args = [*BASE_FLAGS, *(("-shared", "-fPIC") if shared else ()), *flags]
    includes = [*sorted({f"-I{s.parent}" for s in srcs}), f"-I{generated_dir()}"]
    key = _key(cc, srcs, [*args, *libs, output_name])
    out_dir = cache_dir() / f"{Path(output_name).stem}-{key}"
    out = out_dir / output_name
    if out.exists():
        return out
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{output_name}.", dir=out_dir)
    os.close(fd)
    cmd = [cc, *args, *includes, *map(str, srcs), "-o", tmp, *libs]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise BuildError(
                f"building {output_name} failed ({' '.join(cmd)}):\n{proc.stderr.strip()}"
            )
        os.chmod(tmp, 0o755)
        os.replace(tmp, out)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return out


def engine_path() -> Path:
    """The `mdla-engine` executable for this machine, built on first use."""
    return compile_c(
        [CSRC / s for s in ENGINE_SOURCES], "mdla-engine", flags=ENGINE_FLAGS, libs=ENGINE_LIBS
    )
