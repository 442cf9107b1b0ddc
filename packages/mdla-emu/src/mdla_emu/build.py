"""Building C with the machine's C compiler, cached by content (the emulator's and the engine's).

    exe = compile_c([src / "main.c"], "tool", libs=("-ldl",))
    lib = compile_c(sources, "libneuron_emu.so", shared=True, flags=("-O3",), include_dirs=(d,))

The compiler is `$CC`, else the first of cc, gcc, clang on PATH (`COMPILERS`: the one search
order every build uses, the remote shell recipe included). Outputs go to `$MDLA_CACHE_DIR` (else
~/.cache/mdla) under a key hashing the compiler (path and version), the flags, every source and
every header of the source and include directories, and the generated headers, so an edit
rebuilds and an unchanged tree never does. Writes are atomic, so concurrent builds cannot leave a
half-written binary. The sources compile side by side (`jobs()` compilers at once, then one
link): on two cores the engine and the emulator library build cold in 18.7 s instead of 32.3.

Every build also sees headers generated from their Python definitions (`codegen.headers()` by
default, or the caller's set): `generated_dir(texts)` writes them into the cache (never into the
source tree) and is on every include path and in every cache key. `generated_file` is the one way
a generated file reaches the cache (content-keyed, written atomically).

A build takes tens of seconds; a caller that shows progress says so while it runs:

    with announced(lambda name: show(f"building {name}") or done):   # `done()` after it
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from pathlib import Path

from mdla_emu.codegen import headers as emu_headers

BASE_FLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra")
COMPILERS = ("cc", "gcc", "clang")  # after $CC; the order every build (local or remote) tries


class BuildError(RuntimeError):
    """C sources could not be compiled (no compiler, or the compiler failed: `returncode` is
    its exit status then, else None)."""

    def __init__(self, message: str, returncode: int | None = None) -> None:
        super().__init__(message)
        self.returncode = returncode


Listener = Callable[[str], Callable[[], None]]  # (output name) -> called when the build ends
_LISTENERS: list[Listener] = []


@contextlib.contextmanager
def announced(listener: Listener) -> Iterator[None]:
    """Meanwhile, each build that compiles (not a cached one) calls `listener(output_name)`
    before the compiler runs, and the callable it returned once the compiler has ended."""
    _LISTENERS.append(listener)
    try:
        yield
    finally:
        _LISTENERS.remove(listener)


def cache_dir() -> Path:
    env = os.environ.get("MDLA_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "mdla"


_CHOSEN: ContextVar[str | None] = ContextVar("mdla_compiler", default=None)


@contextlib.contextmanager
def using_compiler(cc: str) -> Iterator[None]:
    """Builds in this block compile with `cc` (a cross compiler, or clang for a sanitizer
    build) instead of `find_compiler`'s choice; the compiler is part of each build's cache key,
    so its outputs are kept apart from the native ones."""
    token = _CHOSEN.set(cc)
    try:
        yield
    finally:
        _CHOSEN.reset(token)


def find_compiler() -> str:
    """The compiler of an enclosing `using_compiler`, else `$CC`, else cc, gcc or clang; a
    `BuildError` saying what to install when none exists."""
    chosen = _CHOSEN.get()
    if chosen:
        return chosen
    env = os.environ.get("CC")
    candidates = [env] if env else list(COMPILERS)
    for name in candidates:
        path = shutil.which(name.split()[0]) if name else None
        if path:
            return path
    raise BuildError(
        f"no C compiler found (tried {', '.join(c for c in candidates if c)}): mdla builds "
        "its emulator and engine with one. Install one (Debian/Ubuntu: apt-get install gcc; "
        "Termux: pkg install clang) or point $CC at it."
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


def generated_dir(texts: Mapping[str, str] | None = None) -> Path:
    """The directory holding the generated headers `texts` (default: the emulator's), keyed by
    all of their texts."""
    texts = emu_headers() if texts is None else texts
    out_dir = cache_dir() / f"generated-{_digest(repr(sorted(texts.items())))}"
    for name, text in texts.items():
        _write_once(out_dir / name, text)
    return out_dir


def _key(
    cc: str,
    sources: Sequence[Path],
    dirs: Iterable[Path],
    args: Iterable[str],
    generated: Mapping[str, str],
) -> str:
    h = hashlib.sha256()
    h.update(cc.encode() + b"\0" + _version(cc).encode() + b"\0")
    h.update("\0".join(args).encode() + b"\0")
    found = sorted({p for d in {*(s.parent for s in sources), *dirs} for p in d.glob("*.h")})
    for path in [*sources, *found]:
        h.update(str(path.name).encode() + b"\0" + path.read_bytes() + b"\0")
    for name, text in sorted(generated.items()):
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()[:20]


def jobs() -> int:
    """Compiler processes a build runs at once: `$MDLA_BUILD_JOBS`, else the CPUs this process
    may run on (a build's files compile side by side, then one link)."""
    env = os.environ.get("MDLA_BUILD_JOBS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise BuildError(f"MDLA_BUILD_JOBS={env!r}: give a whole number of processes >= 1")
        return int(env)
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def build_commands(
    cc: str,
    args: Sequence[str],
    sources: Sequence[str],
    out: str,
    libs: Sequence[str] = (),
    objects: str = "",
    includes: Sequence[str] = (),
) -> tuple[list[list[str]], list[str]]:
    """The recipe as commands: one `-c` compile per source (`includes` on it; its object in the
    folder `objects`, numbered so that two sources of one name never share one), then the link.
    It is what one `cc ARGS INCLUDES SOURCES -o OUT LIBS` runs, with its compiles side by side
    (`run_build`)."""
    objs = [os.path.join(objects, f"{i:03d}-{Path(s).stem}.o") for i, s in enumerate(sources)]
    compiles = [
        [cc, *args, *includes, "-c", s, "-o", o] for s, o in zip(sources, objs, strict=True)
    ]
    return compiles, [cc, *args, *objs, "-o", out, *libs]


def run_build(
    compiles: Sequence[list[str]], link: list[str], name: str, cwd: str | None = None
) -> None:
    """Run `build_commands`' compiles `jobs()` at a time, then the link; a failure raises
    BuildError with the failing command and the compiler's message (every failing file's)."""

    def one(cmd: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=cwd)

    with ThreadPoolExecutor(max_workers=max(1, min(jobs(), len(compiles)))) as pool:
        done = list(pool.map(one, compiles))
    failed = [(cmd, p) for cmd, p in zip(compiles, done, strict=True) if p.returncode != 0]
    what = f"{len(failed)} of {len(compiles)} files did not compile"
    if not failed:
        proc = one(link)
        failed, what = ([(link, proc)], "the link failed") if proc.returncode != 0 else ([], "")
    if failed:
        (cmd, first), texts = failed[0], dict.fromkeys(p.stderr.strip() for _, p in failed)
        raise BuildError(
            f"building {name} failed: {what} (exit {first.returncode}; the first: "
            f"{' '.join(cmd)}):\n" + "\n".join(texts),
            first.returncode,
        )


def compile_c(
    sources: Sequence[str | os.PathLike[str]],
    output_name: str,
    shared: bool = False,
    flags: Sequence[str] = (),
    libs: Sequence[str] = (),
    include_dirs: Sequence[Path] = (),
    generated: Mapping[str, str] | None = None,
) -> Path:
    """Compile `sources` into `output_name` (an executable, or a .so with `shared`); cached.
    Each source's directory and every `include_dirs` entry is on the include path, and so are
    the `generated` headers (default: the emulator's, `codegen.headers()`)."""
    cc = find_compiler()
    srcs = [Path(s).resolve() for s in sources]
    for s in srcs:
        if not s.is_file():
            raise BuildError(f"C source {s} does not exist")
    texts = emu_headers() if generated is None else generated
    args = [*BASE_FLAGS, *(("-shared", "-fPIC") if shared else ()), *flags]
    dirs = [Path(d).resolve() for d in include_dirs]
    inc = [*dict.fromkeys(f"-I{d}" for d in [*sorted({s.parent for s in srcs}), *dirs])]
    includes = [*inc, f"-I{generated_dir(texts)}"]
    key = _key(cc, srcs, dirs, [*args, *libs, output_name], texts)
    out_dir = cache_dir() / f"{Path(output_name).stem}-{key}"
    out = out_dir / output_name
    if out.exists():
        return out
    out_dir.mkdir(parents=True, exist_ok=True)
    ended = [listener(output_name) for listener in list(_LISTENERS)]
    try:
        with tempfile.TemporaryDirectory(prefix=f".{output_name}.", dir=out_dir) as work:
            tmp = os.path.join(work, output_name)
            compiles, link = build_commands(
                cc, args, list(map(str, srcs)), tmp, libs, work, includes
            )
            run_build(compiles, link, output_name)
            os.chmod(tmp, 0o755)
            os.replace(tmp, out)  # atomic: a reader sees the whole binary or none
    finally:
        for end in ended:
            end()
    return out
