"""`workbench doctor`: every step from this machine to a working engine on a phone, checked."""

from __future__ import annotations

from typing import Annotated

import typer

import mdla_runtime
from mdla_runtime.engine.ssh.doctor import FAIL, OK, SKIP, WARN, diagnose
from workbench.commands.options import Debug, console
from workbench.errors import DEVICE, reported

EPILOG = """Examples:

  workbench doctor --on ssh://u0_a123@192.168.1.20:8022

  workbench doctor --on 'ssh://root@phone:8022?su=1&lib=/vendor/lib64/libneuron_adapter_mgvi.so'

  workbench doctor --on emu
"""

MARKS = {OK: "ok  ", FAIL: "FAIL", WARN: "warn", SKIP: "skip"}


def doctor_command(
    on: Annotated[
        str,
        typer.Option(
            "--on",
            help="The target to check: `ssh://user@host[:port][?options]` (a phone), "
            "`lib:/path/libneuron_adapter.so` or `emu`.",
        ),
    ] = "emu",
    debug: Debug = False,
) -> None:
    """Check each step to a working target (for a phone: the SSH client, its address, the host
    key, the login, the C compiler and sha256 there, the Neuron adapter library, the engine
    built and listing its devices, and whether the witness can read the APU counter), and
    print what is missing with the command that fixes it. Exit 0 when the target works, 4 when
    a step is missing (warnings do not count)."""
    con = console()
    with reported(debug):
        if not on.startswith("ssh://"):
            info = mdla_runtime.open_target(on).info()
            devices = ", ".join(str(d) for d in info["devices"])
            con.print(f"ok   engine     {info.get('adapter', on)}: devices {devices}", markup=False)
            return
        steps = diagnose(on)
    for step in steps:
        con.print(f"{MARKS[step.status]} {step.name:<10} {step.detail}", markup=False)
        if step.fix and step.status in (FAIL, WARN):
            label = "fix" if step.status == FAIL else "note"
            con.print(f"{'':15}{label}: {step.fix}", markup=False)
    failed = [s.name for s in steps if s.status == FAIL]
    if failed:
        con.print(f"{on.split('?')[0]}: not ready ({', '.join(failed)})", markup=False)
        raise typer.Exit(DEVICE)
    con.print(f"{on.split('?')[0]}: ready", markup=False)
