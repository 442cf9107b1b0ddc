"""`diagnose`: each step from this machine to a working engine on a phone, checked in order,
with what is missing and the command that fixes it.

    ssh client -> address -> host key and login -> phone tools (compiler, sha256, work dir)
    -> adapter library -> engine (built, loads the adapter, lists its devices) -> witness

A step whose prerequisite failed is skipped, not guessed. The witness step only warns: the rest
works without it. Nothing here changes the phone except what opening the target does (the
private engine cache and a session work directory, removed on close).
"""

from __future__ import annotations

import shlex
import shutil
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from mdla_runtime.engine.ssh import remote
from mdla_runtime.engine.ssh.spec import SshSpec, parse_spec, ssh_argv
from mdla_runtime.engine.ssh.target import ADAPTER_GLOBS, VENDOR_DIRS
from mdla_runtime.errors import TargetError

OK, FAIL, WARN, SKIP = "ok", "missing", "warning", "skipped"
APU_DRIVERS = ("apu_top_3", "apu_top", "mtk-apu", "apusys")  # mdla_witness.nodes.DRIVERS

# $1 the adapter library ('' to search), $2 '1' to try su, then the glob patterns to search.
FACTS = r"""echo "uid=$(id -u)"
echo "user=$(id -un 2>/dev/null || whoami 2>/dev/null)"
echo "arch=$(uname -m)"
for c in cc clang gcc; do
  if command -v $c >/dev/null 2>&1; then echo "cc=$(command -v $c)"; break; fi
done
if command -v sha256sum >/dev/null 2>&1 || command -v shasum >/dev/null 2>&1; then echo sha=1
elif command -v toybox >/dev/null 2>&1; then echo sha=1; fi
lib=$1; want_su=$2; shift 2
if [ -n "$lib" ]; then [ -f "$lib" ] && echo "lib=$lib"
else for g in "$@"; do for f in $g; do [ -f "$f" ] && echo "lib=$f"; done; done; fi
for d in apu_top_3 apu_top mtk-apu apusys; do
  for n in /sys/bus/platform/drivers/$d/*/power/runtime_active_time; do
    [ -f "$n" ] || continue
    echo "apu=$n"; cat "$n" >/dev/null 2>&1 && echo "apu_readable=$n"
  done
done
if [ "$want_su" = 1 ]; then echo "su_uid=$(su -c 'id -u' 2>/dev/null)"; fi
true
"""


@dataclass(frozen=True)
class Step:
    name: str
    status: str  # OK, FAIL, WARN or SKIP
    detail: str
    fix: str = ""


Runner = Callable[[list[str], float], "subprocess.CompletedProcess[bytes]"]


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, capture_output=True, timeout=timeout, check=False)


def _resolved(spec: SshSpec, run: Runner) -> tuple[str, int]:
    """(host name, port) as ssh itself resolves them (config aliases, Port lines): `ssh -G`."""
    argv = ssh_argv(spec, None)
    proc = run([*argv[: argv.index("--")], "-G", spec.destination], 15)
    host, port = spec.host, spec.port or 22
    for line in proc.stdout.decode(errors="replace").splitlines():
        key, _, value = line.partition(" ")
        if key == "hostname":
            host = value.strip()
        elif key == "port" and value.strip().isdigit():
            port = int(value)
    return host, port


def _ssh_line(spec: SshSpec, *extra: str) -> str:
    """The interactive ssh command a user types to reach the phone as the target does."""
    words = ["ssh", *extra]
    words += ["-p", str(spec.port)] if spec.port else []
    words += ["-i", spec.key] if spec.key else []
    words += ["-F", spec.config] if spec.config else []
    return shlex.join([*words, spec.destination, "true"])


def _login_failure(spec: SshSpec, stderr: str) -> Step:
    last = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
    if "IDENTIFICATION HAS CHANGED" in stderr:
        host = f"[{spec.host}]:{spec.port}" if spec.port else spec.host
        return Step(
            "host key",
            FAIL,
            f"{spec.host}'s host key differs from the one this machine knows (a reinstalled "
            "Termux, or another device at that address)",
            f"if that is expected: ssh-keygen -R {shlex.quote(host)}, then "
            f"{_ssh_line(spec, '-o', 'StrictHostKeyChecking=accept-new')}",
        )
    if "Host key verification failed" in stderr:
        return Step(
            "host key",
            FAIL,
            f"{spec.host}'s host key is not known to this machine (ssh runs in batch mode and "
            "cannot ask)",
            "accept it once (compare the fingerprint with `ssh-keygen -lf "
            "$PREFIX/etc/ssh/ssh_host_ed25519_key.pub` on the phone): "
            + _ssh_line(spec, "-o", "StrictHostKeyChecking=accept-new"),
        )
    if "Permission denied" in stderr or "Too many authentication failures" in stderr:
        user = spec.destination.partition("@")[0] if "@" in spec.destination else "(your user)"
        return Step(
            "login",
            FAIL,
            f"{spec.host} refused the key ({last})",
            f"put your public key in the phone's ~/.ssh/authorized_keys (ssh-copy-id "
            f"{'-p ' + str(spec.port) + ' ' if spec.port else ''}{spec.destination}), check the "
            f"user (`whoami` in Termux, not {user}?), or give ?key=PATH",
        )
    return Step("login", FAIL, f"ssh to {spec.host} failed: {last}", "run " + _ssh_line(spec))


def _facts(out: str) -> dict[str, list[str]]:
    facts: dict[str, list[str]] = {}
    for line in out.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            facts.setdefault(key, []).append(value)
    return facts


def diagnose(spec_text: str, run: Runner = _run, connect_timeout: float = 5.0) -> list[Step]:
    """The steps to a working target `spec_text` (an ssh:// spec), in order; raises
    `TargetSpecError` for a malformed spec."""
    spec = parse_spec(spec_text)
    steps: list[Step] = []

    def skip_rest(after: str) -> list[Step]:
        names = ("host key", "login", "compiler", "sha256", "adapter", "engine", "witness")
        rest = names[names.index(after) + 1 :] if after in names else names
        return steps + [Step(n, SKIP, f"needs `{after}`") for n in rest]

    if shutil.which("ssh") is None:
        steps.append(
            Step("ssh client", FAIL, "no `ssh` on this machine", "apt-get install openssh-client")
        )
        return skip_rest("ssh client")
    steps.append(Step("ssh client", OK, shutil.which("ssh") or "ssh"))
    host, port = _resolved(spec, run)
    try:
        socket.create_connection((host, port), timeout=connect_timeout).close()
    except OSError as exc:
        steps.append(
            Step(
                "address",
                FAIL,
                f"cannot reach {host}:{port} ({exc.strerror or exc})",
                "on the phone, start the server in Termux (`sshd`; it listens on 8022), keep "
                "Termux running, and check the phone's address (`ifconfig wlan0` in Termux) "
                "and that both are on the same network",
            )
        )
        return skip_rest("address")
    steps.append(Step("address", OK, f"{host}:{port} accepts connections"))
    globs = [f"{d}/{g}" for d in VENDOR_DIRS for g in ADAPTER_GLOBS]
    script = remote.command(FACTS, spec.lib or "", "1" if spec.su else "0", *globs)
    try:
        proc = run(ssh_argv(spec, None, script), spec.timeout)
    except subprocess.TimeoutExpired:
        steps.append(Step("login", FAIL, f"no answer within {spec.timeout:g} s", ""))
        return skip_rest("login")
    stderr = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        failed = _login_failure(spec, stderr)
        if failed.name == "host key":
            steps.append(failed)
            return skip_rest("host key")
        steps += [Step("host key", OK, "known"), failed]
        return skip_rest("login")
    facts = _facts(proc.stdout.decode(errors="replace"))
    first = {k: v[0] for k, v in facts.items()}
    steps.append(Step("host key", OK, "known"))
    steps.append(
        Step(
            "login",
            OK,
            f"{first.get('user', '?')} (uid {first.get('uid', '?')}), {first.get('arch', '?')}",
        )
    )
    ready = True
    if "cc" in first or spec.engine:
        detail = first.get("cc") or f"none needed: prebuilt engine {spec.engine}"
        steps.append(Step("compiler", OK, detail))
    else:
        ready = False
        steps.append(
            Step(
                "compiler",
                FAIL,
                "no cc, clang or gcc on the phone's PATH (the engine is built there from C)",
                "in Termux: pkg install clang; or give a prebuilt engine with ?engine=PATH",
            )
        )
    if "sha" in first:
        steps.append(Step("sha256", OK, "sha256sum"))
    else:
        ready = False
        steps.append(
            Step(
                "sha256", FAIL, "no sha256sum, shasum or toybox", "in Termux: pkg install coreutils"
            )
        )
    libs = facts.get("lib", [])
    if libs:
        steps.append(Step("adapter", OK, ", ".join(libs)))
    else:
        ready = False
        where = spec.lib or f"{', '.join(ADAPTER_GLOBS)} in {', '.join(VENDOR_DIRS)}"
        steps.append(
            Step(
                "adapter",
                FAIL,
                f"no Neuron adapter library ({where})",
                "a MediaTek phone with an APU ships it under /vendor/lib64; if yours is "
                "elsewhere give ?lib=PATH (`ls /vendor/lib64 | grep neuron` on the phone)",
            )
        )
    if not ready:
        steps.append(Step("engine", SKIP, "needs the steps above"))
    else:
        steps.append(_engine_step(spec_text))
    steps.append(_witness_step(spec, first, facts.get("apu", [])))
    return steps


def _engine_step(spec_text: str) -> Step:
    from mdla_runtime.engine.ssh.target import SshTarget

    try:
        with SshTarget(spec_text) as target:
            info = target.info()
    except TargetError as exc:
        return Step("engine", FAIL, str(exc), "see the message; --debug shows the whole run")
    devices = [str(d) for d in info.get("devices", [])]
    detail = f"built; loads {info.get('adapter', '?')}: devices {', '.join(devices) or 'none'}"
    if "mtk-mdla" not in devices:
        return Step(
            "engine",
            FAIL,
            detail,
            "the adapter lists no mtk-mdla device: this phone's NPU is not reachable through it",
        )
    return Step("engine", OK, detail)


def _witness_step(spec: SshSpec, first: dict[str, str], apu: list[str]) -> Step:
    if not apu:
        return Step(
            "witness",
            WARN,
            f"no APU runtime-PM counter under /sys/bus/platform/drivers ({', '.join(APU_DRIVERS)})",
            "runs still work; `workbench witness` cannot prove the NPU ran on this phone",
        )
    if "apu_readable" in first:
        return Step("witness", OK, f"{first['apu_readable']} is readable")
    if spec.su and first.get("su_uid") == "0":
        return Step("witness", OK, f"{apu[0]}, read through su")
    fix = "root the phone (Magisk) and add ?su=1" if not spec.su else "grant su to Termux"
    return Step("witness", WARN, f"{apu[0]} exists but this user cannot read it", fix)
