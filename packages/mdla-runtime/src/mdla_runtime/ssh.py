"""The SSH target: run `mdla-engine` on a phone reached with the system OpenSSH client.

    ssh://user@host[:port][?su=1&key=PATH&config=PATH&lib=PATH&libpath=DIRS&engine=PATH
                           &env=NAME=VALUE&base=DIR&timeout=S&stale=MINUTES]

`~/.ssh/config`, keys, agents and jump hosts apply as for `ssh`; every command runs over one
multiplexed connection (ControlMaster), so a witness read costs milliseconds, not a handshake.
On open: a private work directory under `base` (default $TMPDIR, /data/local/tmp or /tmp; work
directories left by dropped connections are removed when older than `stale` minutes), the
engine (a prebuilt `engine=` binary for the phone's architecture, or its C sources built with
the phone's cc/clang/gcc, cached there by content hash) and the adapter (`lib=`, else found
under /vendor/lib64/<soc> and /vendor/lib64, run with that LD_LIBRARY_PATH unless `libpath=`
says otherwise). `su=1` runs the engine and the witness reads through `su -c`. Every remote
step has a timeout; `close()` removes the work directory.
"""

from __future__ import annotations

import hashlib
import io
import os
import shlex
import subprocess
import tarfile
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from mdla_runtime.build import CSRC, ENGINE_SOURCES
from mdla_runtime.errors import TargetError
from mdla_runtime.target import Target

VENDOR_DIRS = ("/vendor/lib64/*", "/vendor/lib64", "/system/vendor/lib64")
ADAPTER_GLOBS = ("libneuronusdk_adapter*.so*", "libneuron_adapter*.so")
FILE_FLAGS = ("--input", "--cache")  # flags whose value is a local file the engine reads


@dataclass(frozen=True)
class SshSpec:
    destination: str  # what ssh connects to: [user@]host
    port: int | None = None
    su: bool = False
    key: str | None = None
    config: str | None = None
    lib: str | None = None
    libpath: str | None = None
    engine: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    base: str | None = None
    timeout: float = 120.0
    stale_minutes: int = 60

    @property
    def host(self) -> str:
        return self.destination.rpartition("@")[2]


def parse_spec(spec: str) -> SshSpec:
    parts = urlsplit(spec)
    if parts.scheme != "ssh" or not parts.hostname:
        raise TargetError(f"bad SSH target {spec!r}: expected ssh://user@host[:port][?options]")
    q = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    unknown = set(q) - {
        "su",
        "key",
        "config",
        "lib",
        "libpath",
        "engine",
        "env",
        "base",
        "timeout",
        "stale",
    }
    if unknown:
        raise TargetError(f"SSH target {spec!r}: unknown option(s) {sorted(unknown)}")
    env = []
    for item in parse_qs(parts.query).get("env", []):
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise TargetError(f"SSH target option env={item!r}: expected env=NAME=VALUE")
        env.append((name, value))
    try:
        port, timeout, stale = parts.port, float(q.get("timeout", 120)), int(q.get("stale", 60))
    except ValueError as exc:
        raise TargetError(f"SSH target {spec!r}: {exc}") from exc
    user = f"{parts.username}@" if parts.username else ""
    return SshSpec(
        f"{user}{parts.hostname}",
        port,
        q.get("su") in ("1", "true", "yes"),
        q.get("key"),
        q.get("config"),
        q.get("lib"),
        q.get("libpath"),
        q.get("engine"),
        tuple(env),
        q.get("base"),
        timeout,
        stale,
    )


def _classify(stderr: str, host: str, step: str) -> str:
    s = stderr.strip()
    if "Permission denied" in s or "Too many authentication failures" in s:
        return f"{host} refused the SSH authentication ({s.splitlines()[-1]}); check the key"
    if any(
        w in s
        for w in (
            "Connection refused",
            "No route to host",
            "timed out",
            "Could not resolve",
            "Name or service not known",
        )
    ):
        return f"cannot reach {host} over SSH ({s.splitlines()[-1]})"
    return (
        f"the SSH connection to {host} dropped during {step} ({s or 'no message'}); the "
        "remote work directory is removed on the next connection"
    )


@dataclass
class _Session:
    workdir: str = ""
    engine: str = ""
    ld_path: str = ""
    uploaded: set[str] = field(default_factory=set)


class SshTarget(Target):
    """A phone over SSH, driven through the same engine protocol as the local targets."""

    def __init__(self, spec: str) -> None:
        self.spec = parse_spec(spec)
        super().__init__(Path(self.spec.lib or "(vendor adapter)"), spec.split("?")[0])
        self.timings: dict[str, float] = {}
        self._control = tempfile.mkdtemp(prefix="mdla-ssh-")
        self._s = _Session()
        self._finalizer = weakref.finalize(self, _close, self._ssh_base(), self._control, "")
        self._open()

    # -- plumbing ------------------------------------------------------------------------------
    def _ssh_base(self) -> list[str]:
        s = self.spec
        cmd = [
            "ssh",
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=10",
            "-o",
            "ControlMaster=auto",
            "-o",
            f"ControlPath={self._control}/cm",
            "-o",
            "ControlPersist=120",
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
        ]
        cmd += ["-p", str(s.port)] if s.port else []
        cmd += ["-i", s.key, "-o", "IdentitiesOnly=yes"] if s.key else []
        cmd += ["-F", s.config] if s.config else []
        return [*cmd, s.destination]

    def _exec(
        self,
        step: str,
        command: str,
        stdin: bytes | None = None,
        timeout: float | None = None,
        root: bool = False,
        tether: bool = False,
    ) -> tuple[int, bytes, str]:
        """Run `command` on the phone (through `su -c` when `root` and su=1).

        `tether` keeps the command's stdin open for as long as this call runs: the remote side
        sees end-of-file exactly when the connection dies, which is how a run notices it.
        """
        if root and self.spec.su:
            command = f"su -c {shlex.quote(command)}"
        start = time.perf_counter()
        read_end, write_end = os.pipe() if tether else (-1, -1)
        try:
            proc = subprocess.run(
                [*self._ssh_base(), command],
                input=stdin,
                stdin=read_end if tether else None,
                capture_output=True,
                timeout=timeout or self.spec.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise TargetError(
                f"{step} on {self.spec.host} timed out after {timeout or self.spec.timeout:g} s",
                exit_code=4,
            ) from exc
        finally:
            self.timings[step] = self.timings.get(step, 0.0) + time.perf_counter() - start
            if tether:
                os.close(read_end)
                os.close(write_end)
        stderr = proc.stderr.decode(errors="replace")
        if proc.returncode == 255:
            raise TargetError(_classify(stderr, self.spec.host, step), exit_code=4)
        return proc.returncode, proc.stdout, stderr

    def _check(
        self, step: str, command: str, stdin: bytes | None = None, root: bool = False
    ) -> str:
        code, out, err = self._exec(step, command, stdin, root=root)
        if code != 0:
            raise TargetError(
                f"{step} on {self.spec.host} failed (exit {code}): "
                f"{err.strip() or out.decode(errors='replace').strip()}",
                exit_code=4,
            )
        return out.decode(errors="replace")

    def shell(self, command: str) -> tuple[int, str]:
        """Run a shell command on the phone: (exit code, stdout); mdla_witness's `shell`."""
        code, out, _ = self._exec("witness read", command, root=True, timeout=30)
        return code, out.decode(errors="replace")

    # -- opening -------------------------------------------------------------------------------
    def _open(self) -> None:
        base = (
            self.spec.base
            or '"${TMPDIR:-$([ -w /data/local/tmp ] && echo /data/local/tmp || echo /tmp)}"'
        )
        out = self._check("connect", "uname -m")
        self.arch = out.strip()
        stale = max(self.spec.stale_minutes, 0)
        self._s.workdir = (
            self._check(
                "work directory",
                f'b={base}; mkdir -p "$b/mdla-cache" && find "$b" -maxdepth 1 -name '
                f"'mdla-work.*' -mmin +{stale} -exec rm -rf {{}} + ; "
                'mktemp -d "$b/mdla-work.XXXXXX"',
            )
            .strip()
            .splitlines()[-1]
        )
        self._finalizer.detach()
        self._finalizer = weakref.finalize(
            self, _close, self._ssh_base(), self._control, self._s.workdir
        )
        self._s.engine = self._ensure_engine(self._s.workdir.rsplit("/", 1)[0])
        self._s.ld_path = self._find_library()

    def _ensure_engine(self, base: str) -> str:
        if self.spec.engine:
            blob = Path(self.spec.engine).read_bytes()
            digest = hashlib.sha256(blob).hexdigest()[:20]
            folder = f"{base}/mdla-cache/prebuilt-{digest}"
            path = f"{folder}/mdla-engine"
            self._check(
                "engine upload",
                f"test -x {path} || {{ mkdir -p {folder} && cat > {path}.tmp && "
                f"chmod 755 {path}.tmp && mv {path}.tmp {path}; }}",
                stdin=blob,
            )
            return path
        sources = [CSRC / s for s in ENGINE_SOURCES]
        files = sorted({*sources, *CSRC.glob("*.h")})
        h = hashlib.sha256()
        for f in files:
            h.update(f.name.encode() + b"\0" + f.read_bytes())
        cache = f"{base}/mdla-cache/engine-{h.hexdigest()[:20]}"
        code, _, _ = self._exec("engine cache check", f"test -x {cache}/mdla-engine")
        if code == 0:
            return f"{cache}/mdla-engine"
        tar = _tar({f.name: f.read_bytes() for f in files})
        names = " ".join(ENGINE_SOURCES)
        script = (
            f"set -e; mkdir -p {cache}.src; tar -C {cache}.src -xf -; "
            "CC=; for c in cc clang gcc; do command -v $c >/dev/null 2>&1 && { CC=$c; break; }; "
            "done; [ -n \"$CC\" ] || { echo 'MDLA_NO_COMPILER' >&2; exit 3; }; "
            f"cd {cache}.src; $CC -std=c11 -O2 -I. {names} -o mdla-engine.tmp -ldl; "
            f"mkdir -p {cache}; mv mdla-engine.tmp {cache}/mdla-engine; rm -rf {cache}.src"
        )
        code, _, err = self._exec("engine build", script, stdin=tar, timeout=600)
        if code != 0:
            if "MDLA_NO_COMPILER" in err:
                raise TargetError(
                    f"{self.spec.host} has no C compiler (looked for cc, clang, gcc;"
                    " Termux: pkg install clang) and no prebuilt engine was given "
                    "(?engine=PATH, built for its architecture "
                    f"{self.arch})",
                    exit_code=4,
                )
            raise TargetError(
                f"building mdla-engine on {self.spec.host} failed: {err.strip()}", exit_code=4
            )
        return f"{cache}/mdla-engine"

    def _find_library(self) -> str:
        if self.spec.lib:
            code, _, _ = self._exec("adapter check", f"test -f {shlex.quote(self.spec.lib)}")
            if code != 0:
                raise TargetError(
                    f"no Neuron adapter library at {self.spec.lib} on {self.spec.host}", exit_code=4
                )
            return self.spec.libpath or ""
        globs = " ".join(f"{d}/{g}" for d in VENDOR_DIRS for g in ADAPTER_GLOBS)
        out = self._check(
            "adapter search", f'for f in {globs}; do [ -f "$f" ] && echo "$f"; done; true'
        )
        found = [line for line in out.splitlines() if line]
        if not found:
            raise TargetError(
                f"no Neuron adapter library on {self.spec.host}: looked for "
                f"{', '.join(ADAPTER_GLOBS)} in {', '.join(VENDOR_DIRS)} (give one "
                "with ?lib=PATH)",
                exit_code=4,
            )
        dirs = list(dict.fromkeys(f.rsplit("/", 1)[0] for f in found))
        return self.spec.libpath or ":".join(dirs)

    # -- running -------------------------------------------------------------------------------
    def _execute(self, args: Sequence[str]) -> tuple[int, str, str]:
        """Upload the files `args` names, run the engine there, bring its outputs back."""
        work, remote_args, uploads, outdir = self._s.workdir, list(args), {}, None
        if remote_args and Path(remote_args[0]).is_file():
            blob = Path(remote_args[0]).read_bytes()
            name = f"model-{hashlib.sha256(blob).hexdigest()[:16]}.mdla"
            if name not in self._s.uploaded:
                uploads[name] = blob
            remote_args[0] = f"{work}/{name}"
        for i, arg in enumerate(remote_args[:-1]):
            value = remote_args[i + 1]
            if arg in FILE_FLAGS:
                name = f"{arg[2:]}-{i}-{Path(value).name}"
                if Path(value).is_file():
                    uploads[name] = Path(value).read_bytes()
                remote_args[i + 1] = f"{work}/{name}"
            elif arg == "--outdir":
                outdir, remote_args[i + 1] = Path(value), f"{work}/out"
        if uploads:
            self._check("upload", f"tar -C {work} -xf -", stdin=_tar(uploads))
            self._s.uploaded.update(n for n in uploads if n.startswith("model-"))
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.spec.env)
        ld = f"LD_LIBRARY_PATH={shlex.quote(self._s.ld_path)} " if self._s.ld_path else ""
        lib = ["--lib", self.spec.lib] if self.spec.lib else []
        cmd = " ".join(shlex.quote(a) for a in [self._s.engine, *remote_args, *lib, "--json"])
        # The engine runs beside a watcher of the session's stdin (saved as fd 3: background
        # jobs get /dev/null): if the connection drops, stdin ends and the watcher kills the
        # engine, so a lost phone does not keep computing for nobody.
        script = (
            f"mkdir -p {work}/out && cd {work} && exec 3<&0 && {{ {ld}{env} {cmd} & p=$!; "
            "(cat <&3; kill -9 $p) >/dev/null 2>&1 & w=$!; wait $p; rc=$?; "
            "kill $w 2>/dev/null; exit $rc; }"
        )
        code, out, err = self._exec(
            "run", script, root=True, timeout=max(self.spec.timeout, 600), tether=True
        )
        if outdir is not None:
            self._fetch(f"{work}/out", outdir)
        for i, arg in enumerate(args[:-1]):
            if arg == "--cache":
                self._fetch_file(str(remote_args[i + 1]), Path(args[i + 1]))
        return code, out.decode(errors="replace"), err

    def _fetch(self, remote_dir: str, local: Path) -> None:
        code, blob, err = self._exec(
            "download", f"tar -C {remote_dir} -cf - . && rm -rf {remote_dir}/*"
        )
        if code != 0:
            raise TargetError(f"download from {self.spec.host} failed: {err.strip()}", exit_code=4)
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            tar.extractall(local, filter="data")

    def _fetch_file(self, remote: str, local: Path) -> None:
        code, blob, _ = self._exec("download", f"cat {shlex.quote(remote)}")
        if code == 0 and blob:
            local.write_bytes(blob)

    def close(self) -> None:
        """Remove the remote work directory and end the shared connection."""
        self._finalizer()

    def __enter__(self) -> SshTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _close(ssh: list[str], control: str, workdir: str) -> None:
    try:
        if workdir:
            subprocess.run(
                [*ssh, f"rm -rf {shlex.quote(workdir)}"],
                capture_output=True,
                timeout=30,
                check=False,
            )
        subprocess.run(
            [*ssh[:-1], "-O", "exit", ssh[-1]], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        pass  # best effort: the next connection removes stale work directories
    subprocess.run(["rm", "-rf", control], check=False)
