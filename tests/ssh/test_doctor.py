"""`workbench doctor --on ssh://...` against the loopback "phone", each failure staged: a closed
port, an unknown host key (then accepted with the command doctor prints), a refused key, no
compiler, no adapter library; and the happy path, which builds the engine and lists devices."""

from __future__ import annotations

import shlex
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdla_runtime import TargetError, open_target
from mdla_runtime.engine.ssh import doctor
from mdla_runtime.engine.ssh.doctor import FAIL, OK, SKIP, WARN, diagnose
from tests.ssh.helpers import url
from tests.ssh.sshd_server import Server
from workbench.cli import app


def statuses(steps: list[doctor.Step]) -> dict[str, str]:
    return {s.name: s.status for s in steps}


def test_a_working_phone_is_ready_and_the_cli_exits_0(sshd: Server, phone: dict[str, Path]) -> None:
    result = CliRunner().invoke(app, ["doctor", "--on", url(sshd, phone)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for name in ("ssh client", "address", "host key", "login", "compiler", "sha256", "adapter"):
        assert any(line.startswith(f"ok   {name}") for line in lines), result.output
    engine = next(line for line in lines if " engine " in line)
    assert engine.startswith("ok")
    assert "mtk-mdla" in engine
    assert lines[-1].endswith(": ready")


def test_a_closed_port_names_sshd_and_skips_the_rest(phone: dict[str, Path], sshd: Server) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends
    spec = url(sshd, phone).replace(f":{sshd.port}?", f":{port}?")
    result = CliRunner().invoke(app, ["doctor", "--on", spec])
    assert result.exit_code == 4
    assert f"FAIL address    cannot reach 127.0.0.1:{port}" in result.output
    assert "`sshd`; it listens on 8022" in result.output
    assert "skip engine" in result.output


def test_an_unknown_host_key_says_so_and_its_fix_works(
    sshd: Server, phone: dict[str, Path], tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    config = tmp_path / "ssh_config"  # strict host key checking with an empty known_hosts
    config.write_text(
        f"Host *\n  StrictHostKeyChecking yes\n  UserKnownHostsFile {known}\n  LogLevel ERROR\n"
    )
    spec = url(sshd, phone, config=str(config))
    steps = diagnose(spec)
    assert statuses(steps)["host key"] == FAIL
    step = next(s for s in steps if s.name == "host key")
    assert "not known" in step.detail
    command = step.fix.rpartition(": ")[2]
    assert "StrictHostKeyChecking=accept-new" in command
    subprocess.run(shlex.split(command), check=True, timeout=30, stdin=subprocess.DEVNULL)
    assert known.read_text().strip()  # the key is now known ...
    assert statuses(diagnose(spec))["host key"] == OK  # ... and doctor agrees


def test_a_refused_key_is_a_login_failure_with_the_fix(
    sshd: Server, phone: dict[str, Path], tmp_path: Path
) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    steps = diagnose(url(sshd, phone, key=str(other)))
    got = statuses(steps)
    assert (got["host key"], got["login"], got["engine"]) == (OK, FAIL, SKIP)
    fix = next(s for s in steps if s.name == "login").fix
    assert "authorized_keys" in fix
    assert "ssh-copy-id" in fix


def test_no_compiler_and_no_adapter_are_named(
    sshd: Server, phone: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tools = tmp_path / "bin"  # a shell and the usual tools, no compiler
    tools.mkdir()
    for tool in ("sh", "id", "uname", "cat", "sha256sum"):
        (tools / tool).symlink_to(shutil.which(tool) or f"/bin/{tool}")
    monkeypatch.setattr(doctor, "FACTS", f"PATH={tools}; export PATH\n" + doctor.FACTS)
    steps = diagnose(url(sshd, phone, lib=str(tmp_path / "missing.so")))
    got = statuses(steps)
    assert (got["login"], got["sha256"]) == (OK, OK)
    assert (got["compiler"], got["adapter"], got["engine"]) == (FAIL, FAIL, SKIP)
    fixes = {s.name: s.fix for s in steps}
    assert "pkg install clang" in fixes["compiler"]
    assert "?lib=PATH" in fixes["adapter"]
    assert got["witness"] in (OK, WARN)  # a warning never fails the check


def test_a_malformed_spec_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["doctor", "--on", "ssh://u@h?bogus=1"])
    assert result.exit_code == 2


def test_the_target_itself_names_an_unknown_host_key(
    sshd: Server, phone: dict[str, Path], tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    config = tmp_path / "ssh_config"
    config.write_text(f"Host *\n  StrictHostKeyChecking yes\n  UserKnownHostsFile {known}\n")
    with pytest.raises(TargetError, match=r"host key is unknown.*workbench doctor"):
        open_target(url(sshd, phone, config=str(config)))
