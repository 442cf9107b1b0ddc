"""`workbench doctor`: every step from this machine to a working target checked, ending with a
one-op model run on the target's NPU device and compared bit for bit with the int8 reference."""

from __future__ import annotations

from typing import Annotated, Any

import typer

import mdla_runtime
from mdla_runtime.engine.ssh.doctor import FAIL, OK, SKIP, WARN, Step, diagnose
from mdla_runtime.engine.ssh.spec import SshSpec, parse_spec
from workbench.commands.options import Debug, JsonOut, console
from workbench.errors import DEVICE, one_line, reported
from workbench.output import json_output
from workbench.proof import NAME, prove, shown

EPILOG = """Examples:

  workbench doctor --on ssh://u0_a123@192.168.1.20:8022

  workbench doctor --on 'ssh://root@phone:8022?su=1&lib=/vendor/lib64/libneuron_adapter_mgvi.so'

  workbench doctor --on emu --json
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
    as_json: JsonOut = False,
    debug: Debug = False,
) -> None:
    """Check each step to a working target (for a phone: the SSH client, its address, the host
    key, the login, the C compiler and sha256 there, the Neuron adapter library, the engine
    built and listing its devices, and whether the witness can read the APU counter), then
    prove it: one int8 CONV_2D written here, run on mtk-mdla there, its output compared bit for
    bit with mdla_quant.run_int8. Prints what is missing with the command that fixes it. Exit 0
    when the target works, 4 when a step is missing (warnings do not count)."""
    with reported(debug), json_output(as_json) as emit:
        steps = _steps(on)
        hide = _hider(on)
        steps = [Step(s.name, s.status, hide(s.detail), hide(s.fix)) for s in steps]
        _print(steps)
        failed = [s.name for s in steps if s.status == FAIL]
        title = shown(on)
        emit({"target": title, "ready": not failed, "steps": [_doc(s) for s in steps]})
        if failed:
            console().print(f"{title}: not ready ({', '.join(failed)})", markup=False)
            raise typer.Exit(DEVICE)
        console().print(f"{title}: ready", markup=False)


def _steps(on: str) -> list[Step]:
    """The checks of `on`, the proof last (skipped when the engine does not work)."""
    if on.startswith("ssh://"):
        steps = diagnose(on)
        if any(s.name == "engine" and s.status != OK for s in steps):
            return [*steps, Step(NAME, SKIP, "needs `engine`")]
    else:
        try:
            info = mdla_runtime.open_target(on).info()
        except mdla_runtime.TargetError as exc:
            return [Step("engine", FAIL, one_line(exc)), Step(NAME, SKIP, "needs `engine`")]
        devices = ", ".join(str(d) for d in info["devices"])
        steps = [Step("engine", OK, f"{info.get('adapter', on)}: devices {devices}")]
    try:
        target = mdla_runtime.open_target(on)
    except mdla_runtime.TargetError as exc:
        return [*steps, Step(NAME, FAIL, one_line(exc))]
    try:
        return [*steps, prove(target)]
    finally:
        close = getattr(target, "close", None)  # an SSH target's remote work directory
        if close is not None:
            close()


def _hider(on: str) -> Any:
    """Replaces the paths an SSH spec names (key, config, library, engine, work base) by the
    option's name in a report line: a pasted report shows no local or remote paths."""
    if not on.startswith("ssh://"):
        return lambda text: text
    spec: SshSpec = parse_spec(on)
    paths = {
        f"<{name}>": value
        for name in ("key", "config", "lib", "libpath", "engine", "base")
        if (value := getattr(spec, name))
    }

    def hide(text: str) -> str:
        for placeholder, path in sorted(paths.items(), key=lambda p: -len(p[1])):
            text = text.replace(path, placeholder)
        return text

    return hide


def _print(steps: list[Step]) -> None:
    con = console()
    for step in steps:
        con.print(f"{MARKS[step.status]} {step.name:<10} {step.detail}", markup=False)
        if step.fix and step.status in (FAIL, WARN):
            label = "fix" if step.status == FAIL else "note"
            con.print(f"{'':15}{label}: {step.fix}", markup=False)


def _doc(step: Step) -> dict[str, str]:
    return {"name": step.name, "status": step.status, "detail": step.detail, "fix": step.fix}
