"""Parsing an `ssh://` target spec into an `SshSpec`; every malformation is a `TargetSpecError`.

    ssh://user@host[:port][?su=1&key=PATH&config=PATH&lib=PATH&libpath=DIRS&engine=PATH
                           &env=NAME=VALUE&base=DIR&timeout=S&stale=MINUTES]

Values that reach the phone (`base`, `lib`, `libpath`, `env`) are only ever passed to its shell
as quoted arguments; they are still checked here so a mistake fails early and clearly: `base`
must be an absolute path, and no value may hold a control character (a newline, a tab).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from mdla_runtime.errors import TargetSpecError

OPTIONS = frozenset(
    ("su", "key", "config", "lib", "libpath", "engine", "env", "base", "timeout", "stale")
)
MAX_TIMEOUT = 86_400.0  # seconds a step may take on the phone (a day)
MAX_STALE = 525_600  # minutes (a year)


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


def _has_control(text: str) -> bool:
    return any(ord(c) < 32 or ord(c) == 127 for c in text)


def _checked(spec: str, name: str, value: str | None) -> str | None:
    if value is not None and _has_control(value):
        raise TargetSpecError(
            f"SSH target option {name}={value!r} holds a control character (a newline or a "
            "tab); remove it"
        )
    return value


def _base(spec: str, value: str | None) -> str | None:
    value = _checked(spec, "base", value)
    if value is not None and not value.startswith("/"):
        raise TargetSpecError(
            f"SSH target option base={value!r} is not an absolute path: give the phone "
            "directory from its root, e.g. base=/data/local/tmp/me"
        )
    return value


def _destination(spec: str, user: str | None, host: str) -> str:
    for part in (user or "", host):
        if part.startswith("-") or _has_control(part) or " " in part:
            raise TargetSpecError(
                f"bad SSH target {spec!r}: user and host may not start with '-' or hold "
                "spaces or control characters"
            )
    return f"{user}@{host}" if user else host


def parse_spec(spec: str) -> SshSpec:
    """The `SshSpec` of `spec`; a `TargetSpecError` (usage, exit 2) naming what is wrong."""
    try:
        parts = urlsplit(spec)
        port = parts.port
        hostname = parts.hostname
    except ValueError as exc:
        raise TargetSpecError(f"bad SSH target {spec!r}: {exc}") from exc
    if parts.scheme != "ssh" or not hostname:
        raise TargetSpecError(f"bad SSH target {spec!r}: expected ssh://user@host[:port][?options]")
    query = parse_qs(parts.query)
    q = {k: v[-1] for k, v in query.items()}
    unknown = set(q) - OPTIONS
    if unknown:
        raise TargetSpecError(f"SSH target {spec!r}: unknown option(s) {sorted(unknown)}")
    env = []
    for item in query.get("env", []):
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier() or not name.isascii():
            raise TargetSpecError(f"SSH target option env={item!r}: expected env=NAME=VALUE")
        env.append((name, str(_checked(spec, "env", value))))
    timeout = _timeout(spec, q.get("timeout", "120"))
    try:
        stale = int(q.get("stale", "60"))
    except ValueError:
        stale = -1
    if not 0 <= stale <= MAX_STALE:
        raise TargetSpecError(
            f"SSH target option stale={q.get('stale')!r}: expected whole minutes, 0 to {MAX_STALE}"
        )
    return SshSpec(
        _destination(spec, parts.username, hostname),
        port,
        q.get("su") in ("1", "true", "yes"),
        q.get("key"),
        q.get("config"),
        _checked(spec, "lib", q.get("lib")),
        _checked(spec, "libpath", q.get("libpath")),
        q.get("engine"),
        tuple(env),
        _base(spec, q.get("base")),
        timeout,
        stale,
    )


def _timeout(spec: str, text: str) -> float:
    """`timeout=S`: seconds, finite, more than 0 and at most MAX_TIMEOUT (nan, inf, 1e400
    and -1 are mistakes in the spec, not a device that timed out)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT):
        raise TargetSpecError(
            f"SSH target option timeout={text!r}: expected seconds, more than 0 and at most "
            f"{MAX_TIMEOUT:.0f}"
        )
    return value


def ssh_argv(spec: SshSpec, control: str | None, *command: str) -> list[str]:
    """The system ssh command line for `spec` (batch mode, keep-alives, the spec's port, key
    and config; multiplexed over the ControlMaster socket in `control` when given), then `--`,
    the destination and `command`."""
    opts = {"BatchMode": "yes", "ConnectTimeout": "10"}
    if control is not None:
        opts |= {"ControlMaster": "auto", "ControlPath": f"{control}/cm", "ControlPersist": "120"}
    opts |= {"ServerAliveInterval": "5", "ServerAliveCountMax": "3"}
    cmd = ["ssh", *(a for k, v in opts.items() for a in ("-o", f"{k}={v}"))]
    cmd += ["-p", str(spec.port)] if spec.port else []
    cmd += ["-i", spec.key, "-o", "IdentitiesOnly=yes"] if spec.key else []
    cmd += ["-F", spec.config] if spec.config else []
    return [*cmd, "--", spec.destination, *command]
