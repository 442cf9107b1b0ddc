"""The engine on the phone: found in the private cache and verified by its sha256, else built
there (or uploaded, for `engine=`). The hash travels with the session and is checked again by
the run script right before every run (see `remote.RUN`)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Protocol

from mdla_runtime import build
from mdla_runtime.engine.ssh import remote
from mdla_runtime.errors import TargetError

HEX64 = re.compile(r"[0-9a-f]{64}")


class Runner(Protocol):
    """What the cache needs of the target: run a remote command."""

    arch: str

    def _exec(
        self,
        step: str,
        command: str,
        stdin: bytes | None = None,
        timeout: float | None = None,
        root: bool = False,
        tether: bool = False,
    ) -> tuple[int, bytes, str]: ...


def engine_files() -> tuple[dict[str, bytes], tuple[str, ...]]:
    """The engine's sources and headers (name -> bytes, the generated op tables included) and
    the names of its .c files."""
    return build.engine_sources(), build.engine_source_names()


def source_key(files: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name] + b"\0")
    return h.hexdigest()[:20]


def ensure_engine(t: Runner, host: str, private: str, work: str, prebuilt: str | None) -> str:
    """The sha256 of a verified engine at `engine_path(private, sha)` (or `prebuilt_path`)."""
    if prebuilt:
        blob = Path(prebuilt).read_bytes()
        sha = hashlib.sha256(blob).hexdigest()
        cmd = remote.command(
            remote.UPLOAD_ENGINE, prebuilt_path(private, sha), sha, f"{work}/engine.upload"
        )
        code, out, err = t._exec("engine upload", cmd, stdin=blob)
        if code != 0:
            raise TargetError(_failed("uploading the engine", host, err, out), exit_code=4)
        return sha
    files, names = engine_files()
    pointer = f"{private}/sources-{source_key(files)}"
    code, out, _ = t._exec("engine cache check", remote.command(remote.CACHED, private, pointer))
    sha = out.decode(errors="replace").strip()
    if code == 0 and HEX64.fullmatch(sha):
        return sha
    cmd = remote.command(remote.BUILD, private, work, pointer, *names)
    code, out, err = t._exec("engine build", cmd, stdin=remote.tar(files), timeout=600)
    sha = out.decode(errors="replace").strip().rpartition("\n")[2]
    if code == 0 and HEX64.fullmatch(sha):
        return sha
    if remote.NO_COMPILER in err:
        raise TargetError(
            f"{host} has no C compiler (looked for $CC, {', '.join(build.COMPILERS)}; Termux: "
            "pkg install clang)"
            " and no prebuilt engine was given (?engine=PATH, built for its architecture "
            f"{t.arch})",
            exit_code=4,
        )
    raise TargetError(_failed("building mdla-engine", host, err, out), exit_code=4)


def engine_path(private: str, sha: str, prebuilt: bool) -> str:
    return prebuilt_path(private, sha) if prebuilt else f"{private}/engine-{sha}"


def prebuilt_path(private: str, sha: str) -> str:
    return f"{private}/prebuilt-{sha}"


def _failed(what: str, host: str, err: str, out: bytes) -> str:
    detail = err.strip() or out.decode(errors="replace").strip() or "no message"
    if remote.NO_SHA256 in detail:
        detail += " (the engine cannot be verified without sha256sum: install toybox/coreutils)"
    return f"{what} on {host} failed: {detail}"
