"""Find the APU's runtime-PM nodes in sysfs and read their counters, locally or through a shell.

Every read is one POSIX `sh` script run through `shell(command) -> (exit code, stdout)`: the
default runs it here, the SSH target passes one that runs it on the phone, so the same parsing
reads both. Discovery order (reference/neuron-adapter-abi.md §7): devices bound to the APU
power driver (`apu_top_3`), then to the APU controller (`mtk-apu`), then any platform device
whose name says apu / apusys / mdla and that has runtime-PM files.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mdla_witness.errors import WitnessError

Shell = Callable[[str], tuple[int, str]]
DRIVERS = ("apu_top_3", "apu_top", "mtk-apu", "apusys")
NAME_HINTS = ("apu", "apusys", "mdla")
FIELDS = ("runtime_status", "runtime_active_time", "runtime_suspended_time")


def local_shell(command: str, timeout: float = 10.0) -> tuple[int, str]:
    """Run `command` with this machine's /bin/sh; (exit code, stdout)."""
    proc = subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, timeout=timeout, check=False
    )
    return proc.returncode, proc.stdout


@dataclass(frozen=True, slots=True)
class Reading:
    """One read of a node: status and counters (ms), or why they could not be read."""

    path: str
    status: str | None = None
    active_ms: int | None = None
    suspended_ms: int | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True)
class PowerNode:
    path: str
    found_by: str  # "driver apu_top_3", "name", "given"
    reading: Reading


def _discover_script(sysfs: str) -> str:
    s = shlex.quote(sysfs.rstrip("/") or "/")
    drivers = " ".join(shlex.quote(d) for d in DRIVERS)
    hints = "|".join(f"*{h}*" for h in NAME_HINTS)
    return (
        f'S={s}; for drv in {drivers}; do for d in "$S"/bus/platform/drivers/$drv/*; do '
        '[ -f "$d/power/runtime_status" ] && printf \'driver %s\\t%s\\n\' "$drv" '
        '"$(cd "$d" && pwd -P)"; done; done; '
        'for d in "$S"/devices/platform/* "$S"/devices/platform/*/* '
        '"$S"/bus/platform/devices/*; do case "${d##*/}" in '
        f"{hints}) [ -f \"$d/power/runtime_active_time\" ] && printf 'name\\t%s\\n' "
        '"$(cd "$d" && pwd -P)";; esac; done; true'
    )


def _read_script(paths: Sequence[str]) -> str:
    parts = []
    for p in paths:
        q = shlex.quote(p)
        cats = " ".join(f'"$(cat {q}/power/{f} 2>&1 | head -n 1)"' for f in FIELDS)
        parts.append(f"printf '%s\\t%s\\t%s\\t%s\\n' {q} {cats}")
    return "; ".join(parts) + "; true"


def _parse_reading(line: str) -> Reading:
    path, status, active, suspended = [*line.split("\t"), "", "", ""][:4]
    try:
        active_ms, suspended_ms = int(active), int(suspended)
    except ValueError:
        bad = next(
            (
                v
                for v in (status, active, suspended)
                if v
                and not v.isdigit()
                and v not in ("active", "suspended", "suspending", "resuming")
            ),
            "unreadable",
        )
        return Reading(path, error=f"{path}/power: {bad}")
    return Reading(path, status.strip(), active_ms, suspended_ms)


def read_nodes(paths: Sequence[str], shell: Shell | None = None) -> list[Reading]:
    """Read status and counters of every node in one shell round trip."""
    if not paths:
        return []
    code, out = (shell or local_shell)(_read_script(paths))
    lines = [ln for ln in out.splitlines() if ln]
    if code != 0 or len(lines) != len(paths):
        raise WitnessError(
            f"reading {len(paths)} runtime-PM node(s) failed (exit {code}): {out.strip()[:200]!r}",
            paths[0],
        )
    return [_parse_reading(ln) for ln in lines]


def find_power_nodes(
    sysfs: str = "/sys", shell: Shell | None = None, node: str | None = None
) -> list[PowerNode]:
    """APU runtime-PM nodes with their current readings, best first (driver-bound first).

    `node` names one node directory explicitly (its `power/` files are read); `shell` runs the
    reads elsewhere (e.g. on a phone over SSH).
    """
    if node is not None:
        return [PowerNode(node, "given", read_nodes([node], shell)[0])]
    code, out = (shell or local_shell)(_discover_script(sysfs))
    if code != 0:
        raise WitnessError(f"searching {sysfs} for APU power nodes failed (exit {code})", sysfs)
    found: dict[str, str] = {}
    for line in out.splitlines():
        how, _, path = line.rpartition("\t")
        if path and path not in found:
            found[path] = how
    readings = read_nodes(list(found), shell)
    return [PowerNode(r.path, found[r.path], r) for r in readings]
