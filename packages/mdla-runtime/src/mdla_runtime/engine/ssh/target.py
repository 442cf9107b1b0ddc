"""`SshTarget`: the engine protocol of `Target`, run on a phone over one multiplexed connection."""

from __future__ import annotations

import hashlib
import io
import os
import shlex
import subprocess
import tarfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mdla_runtime.atomic import write_atomic
from mdla_runtime.engine.ssh import cache, remote
from mdla_runtime.engine.ssh.control import make_control_dir, remove_stale_control_dirs
from mdla_runtime.engine.ssh.session import classify, close_session, start_session
from mdla_runtime.engine.ssh.spec import parse_spec, ssh_argv
from mdla_runtime.engine.target import StepProgress, Target
from mdla_runtime.errors import TargetError

VENDOR_DIRS = ("/vendor/lib64/*", "/vendor/lib64", "/system/vendor/lib64")
ADAPTER_GLOBS = ("libneuronusdk_adapter*.so*", "libneuron_adapter*.so")
FILE_FLAGS = ("--input", "--cache")  # flags whose value is a local file the engine reads
TRANSFERS = ("upload", "engine upload")  # steps whose stdin is reported byte by byte
CHUNK = 1 << 16


def _feed(fd: int, blob: bytes, sent: Callable[[int], None]) -> None:
    """Write `blob` into the pipe `fd` a CHUNK at a time, `sent(bytes so far)` after each, then
    close it (end of file for ssh). A command that exits early breaks the pipe: stop there."""
    try:
        for start in range(0, len(blob), CHUNK):
            os.write(fd, blob[start : start + CHUNK])  # blocks while ssh is sending: the pace
            sent(min(start + CHUNK, len(blob)))
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclass
class _Session:
    workdir: str = ""
    engine: str = ""
    sha: str = ""
    ld_path: str = ""
    uploaded: set[str] = field(default_factory=set)


class SshTarget(Target):
    """A phone over SSH, driven through the same engine protocol as the local targets."""

    def __init__(self, spec: str, progress: StepProgress | None = None) -> None:
        self.spec = parse_spec(spec)
        self.progress = progress  # told about each step but the witness's reads
        super().__init__(Path(self.spec.lib or "(vendor adapter)"), spec.split("?")[0])
        self.timings: dict[str, float] = {}
        self.arch = ""
        remove_stale_control_dirs()
        self._control = make_control_dir()
        self._s = _Session()
        self._keeper: subprocess.Popen[bytes] | None = None
        self._finalizer = weakref.finalize(self, close_session, self._ssh(), self._control)
        self._open()

    # -- plumbing ------------------------------------------------------------------------------
    def _ssh(self, *command: str) -> list[str]:
        """The ssh command line (its options, then `--`, the destination and `command`)."""
        return ssh_argv(self.spec, str(self._control), *command)

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
        With `progress`, the step is reported as it starts and ends, and the stdin of a
        TRANSFERS step is fed through a pipe a chunk at a time, each chunk reported.
        """
        if root and self.spec.su:
            command = f"su -c {shlex.quote(command)}"
        report = self.progress if step != "witness read" else None  # reads: a hot loop
        feed = report is not None and stdin is not None and step in TRANSFERS
        if report is not None:
            report(step, 0, len(stdin) if feed and stdin is not None else 0)
        start = time.perf_counter()
        read_end, write_end = os.pipe() if tether or feed else (-1, -1)
        if feed and report is not None and stdin is not None:
            size = len(stdin)
            threading.Thread(
                target=_feed, args=(write_end, stdin, lambda n: report(step, n, size)), daemon=True
            ).start()  # the thread owns write_end now
        try:
            proc = subprocess.run(
                self._ssh(command),
                input=None if feed else stdin,
                stdin=read_end if tether or feed else None,
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
            if tether or feed:
                os.close(read_end)  # a feeder still writing now sees a broken pipe
            if tether:
                os.close(write_end)
        if report is not None:
            done = len(stdin) if feed and stdin else 1  # a step's end is never (0, 0)
            report(step, done, done)
        stderr = proc.stderr.decode(errors="replace")
        if proc.returncode == 255:
            raise TargetError(classify(stderr, self.spec.host, step), exit_code=4)
        return proc.returncode, proc.stdout, stderr

    def _check(self, step: str, command: str, stdin: bytes | None = None) -> str:
        code, out, err = self._exec(step, command, stdin)
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
        self.arch = self._check("connect", "uname -m").strip()
        start = time.perf_counter()
        if self.progress is not None:
            self.progress("work directory", 0, 0)
        try:
            self._keeper, self._s.workdir = start_session(
                self._ssh(),
                self.spec,
                remote.command(
                    remote.SESSION, self.spec.base or "", str(max(self.spec.stale_minutes, 0))
                ),
            )
        finally:
            self.timings["work directory"] = time.perf_counter() - start
        if self.progress is not None:
            self.progress("work directory", 1, 1)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(
            self, close_session, self._ssh(), self._control, self._s.workdir, self._keeper
        )
        self._ensure_engine()
        self._s.ld_path = self._find_library()

    def _ensure_engine(self) -> None:
        private = self._s.workdir.rsplit("/", 1)[0]
        sha = cache.ensure_engine(self, self.spec.host, private, self._s.workdir, self.spec.engine)
        self._s.sha = sha
        self._s.engine = cache.engine_path(private, sha, prebuilt=bool(self.spec.engine))

    def _find_library(self) -> str:
        if self.spec.lib:
            code, _, _ = self._exec("adapter check", remote.command(remote.IS_FILE, self.spec.lib))
            if code != 0:
                raise TargetError(
                    f"no Neuron adapter library at {self.spec.lib} on {self.spec.host}", exit_code=4
                )
            return self.spec.libpath or ""
        globs = [f"{d}/{g}" for d in VENDOR_DIRS for g in ADAPTER_GLOBS]
        out = self._check("adapter search", remote.command(remote.FIND, *globs))
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
            self._check("upload", remote.command(remote.UNTAR, work), stdin=remote.tar(uploads))
            self._s.uploaded.update(n for n in uploads if n.startswith("model-"))
        code, out, err = self._run(remote_args)
        if code == remote.CHANGED_STATUS and remote.ENGINE_CHANGED in err:
            self._ensure_engine()  # the cached engine no longer hashes right: rebuild, rerun
            code, out, err = self._run(remote_args)
            if code == remote.CHANGED_STATUS and remote.ENGINE_CHANGED in err:
                raise TargetError(
                    f"the engine on {self.spec.host} changed between its check and its run "
                    f"({self._s.engine}); is another process writing the cache?",
                    exit_code=4,
                )
        if outdir is not None:
            self._fetch(f"{work}/out", outdir)
        for i, arg in enumerate(args[:-1]):
            if arg == "--cache":
                self._fetch_file(str(remote_args[i + 1]), Path(args[i + 1]))
        return code, out.decode(errors="replace"), err

    def _run(self, remote_args: Sequence[str]) -> tuple[int, bytes, str]:
        s = self._s
        lib = ["--lib", self.spec.lib] if self.spec.lib else []
        env = [f"{k}={v}" for k, v in self.spec.env]
        script = remote.command(
            remote.RUN,
            s.workdir,
            s.engine,
            s.sha,
            s.ld_path,
            *env,
            "--",
            *remote_args,
            *lib,
            "--json",
        )
        return self._exec(
            "run",
            script,
            root=True,
            timeout=self.timeout or max(self.spec.timeout, 600),
            tether=True,
        )

    def _fetch(self, remote_dir: str, local: Path) -> None:
        code, blob, err = self._exec("download", remote.command(remote.FETCH, remote_dir))
        if code != 0:
            raise TargetError(f"download from {self.spec.host} failed: {err.strip()}", exit_code=4)
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            tar.extractall(local, filter="data")

    def _fetch_file(self, remote_path: str, local: Path) -> None:
        code, blob, _ = self._exec("download", remote.command(remote.CAT, remote_path))
        if code == 0 and blob:
            write_atomic(local, blob)

    def close(self) -> None:
        """Remove the remote work directory and end the shared connection."""
        self._finalizer()

    def __enter__(self) -> SshTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
