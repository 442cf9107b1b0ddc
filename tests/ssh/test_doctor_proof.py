"""`workbench doctor` against the loopback "phone" runs its one-op proof there, and its report
(text and --json) never shows the spec's key, config or library paths."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mdla_emu import build_emulator
from tests.ssh.helpers import url
from tests.ssh.sshd_server import Server
from workbench.cli import app


def test_doctor_runs_the_one_op_check_on_the_phone(sshd: Server, phone: dict[str, Path]) -> None:
    spec = url(sshd, phone)
    result = CliRunner().invoke(app, ["doctor", "--on", spec, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    title = f"ssh://{sshd.user}@127.0.0.1"
    assert (doc["target"], doc["ready"]) == (title, True)
    run = next(s for s in doc["steps"] if s["name"] == "npu run")
    assert run["status"] == "ok"
    assert run["detail"].endswith("on mtk-mdla: all 256 int8 values equal mdla_quant.run_int8")
    assert result.stderr.splitlines()[-1] == f"{title}: ready"
    for path in (sshd.key, sshd.config, build_emulator(), phone["base"]):
        assert str(path) not in result.output, path


def test_run_over_ssh_titles_the_phone_by_user_and_host(
    sshd: Server, phone: dict[str, Path], manifest: Path
) -> None:
    spec = url(sshd, phone)
    shown = f"ssh://{sshd.user}@127.0.0.1"
    text = CliRunner().invoke(app, ["run", str(manifest), "--on", spec])
    assert text.exit_code == 0, text.output
    assert f"on {shown} (1 run(s) per image)" in text.stdout
    doc = CliRunner().invoke(app, ["run", str(manifest), "--on", spec, "--json"])
    assert json.loads(doc.stdout)["target"] == shown
    for path in (sshd.key, sshd.config, build_emulator()):
        assert str(path) not in text.output + doc.output, path
