"""The witness protocol: read, idle (the control), read, run, read; then a verdict.

    witnessed          the idle control moved at most `tolerance_ms` and the run moved the
                       APU's runtime_active_time by at least `min_run_ms` (seed: +0 ms vs +154 ms)
    not witnessed      the run did not move the counter (and the status stayed suspended)
    cannot witness: …  no node, an unreadable node (SELinux, permissions), a busy control, a
                       counter that went backwards, or a run delta too small to tell from noise

The verdict is never `witnessed` unless every one of those checks passed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mdla_witness.errors import WitnessError
from mdla_witness.nodes import PowerNode, Reading, Shell, find_power_nodes, read_nodes


@dataclass(frozen=True, slots=True)
class Witness:
    verdict: str  # "witnessed", "not witnessed" or "cannot witness: <why>"
    node: str | None = None
    idle_s: float = 0.0
    control_ms: int | None = None
    run_ms: int | None = None
    status_before: str | None = None
    status_after: str | None = None
    run_result: Any = None

    @property
    def witnessed(self) -> bool:
        return self.verdict == "witnessed"

    def __str__(self) -> str:
        lines = [f"verdict: {self.verdict}"]
        if self.node:
            lines.append(f"node: {self.node}")
        if self.control_ms is not None:
            lines.append(
                f"idle control ({self.idle_s:g} s): runtime_active_time {self.control_ms:+d} ms"
            )
        if self.run_ms is not None:
            lines.append(
                f"run: runtime_active_time {self.run_ms:+d} ms, runtime_status "
                f"{self.status_before} -> {self.status_after}"
            )
        return "\n".join(lines)


def _cannot(why: str, **fields: Any) -> Witness:
    return Witness(f"cannot witness: {why}", **fields)


def _pick(nodes: list[PowerNode], sysfs: str) -> PowerNode | Witness:
    if not nodes:
        return _cannot(
            f"no APU runtime-PM node under {sysfs} (looked for devices of drivers "
            "apu_top_3, apu_top, mtk-apu, apusys and names with apu/apusys/mdla); "
            "give the node path explicitly"
        )
    readable = [n for n in nodes if n.reading.ok]
    if not readable:
        return _cannot(
            "APU runtime-PM node(s) unreadable: "
            + "; ".join(str(n.reading.error) for n in nodes)
            + " (SELinux or permissions: read as root, e.g. ssh://...?su=1)"
        )
    return readable[0]


def witness(
    run: Callable[[], Any],
    idle_s: float = 4.0,
    sysfs: str = "/sys",
    node: str | None = None,
    shell: Shell | None = None,
    tolerance_ms: int = 2,
    min_run_ms: int = 10,
    sleep: Callable[[float], None] = time.sleep,
) -> Witness:
    """Run the protocol around `run()` (whose result is kept in `.run_result`)."""
    if idle_s < 0 or tolerance_ms < 0 or min_run_ms <= tolerance_ms:
        raise WitnessError(
            f"need idle_s >= 0 and min_run_ms ({min_run_ms}) > tolerance_ms ({tolerance_ms}) >= 0"
        )
    picked = _pick(find_power_nodes(sysfs, shell, node), sysfs if node is None else node)
    if isinstance(picked, Witness):
        return picked
    path = picked.path
    r0 = picked.reading
    sleep(idle_s)
    r1 = _read(path, shell)
    base = {"node": path, "idle_s": idle_s}
    if not r1.ok:
        return _cannot(f"node became unreadable: {r1.error}", **base)
    control = _delta(r0, r1)
    if control < 0:
        return _cannot(f"runtime_active_time went backwards ({control:+d} ms)", **base)
    if control > tolerance_ms:
        return _cannot(
            f"the idle control moved runtime_active_time {control:+d} ms "
            f"(> {tolerance_ms} ms): the NPU is busy with other work",
            control_ms=control,
            **base,
        )
    result = run()
    r2 = _read(path, shell)
    fields = {**base, "control_ms": control, "status_before": r1.status, "run_result": result}
    if not r2.ok:
        return _cannot(f"node became unreadable: {r2.error}", **fields)
    moved = _delta(r1, r2)
    fields.update(run_ms=moved, status_after=r2.status)
    if moved < 0:
        return _cannot(f"runtime_active_time went backwards ({moved:+d} ms)", **fields)
    if moved <= tolerance_ms:
        return Witness("not witnessed", **fields)
    if moved < min_run_ms:
        return _cannot(
            f"the run moved runtime_active_time only {moved:+d} ms (< {min_run_ms} "
            "ms); repeat the run for a clearer signal",
            **fields,
        )
    return Witness("witnessed", **fields)


def _read(path: str, shell: Shell | None) -> Reading:
    return read_nodes([path], shell)[0]


def _delta(a: Reading, b: Reading) -> int:
    if a.active_ms is None or b.active_ms is None:  # callers checked .ok first
        raise WitnessError(f"no counter in reading of {a.path}", a.path)
    return b.active_ms - a.active_ms
