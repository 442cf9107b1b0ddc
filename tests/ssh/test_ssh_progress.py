"""Progress over SSH (issue 21): the target reports each remote step as it starts and ends and
an upload byte by byte (so a bar can show megabytes and an ETA), never the witness's reads; the
workbench draws them on stderr for `run --on ssh://` and `probe --on ssh://`, and `--json` on
stdout stays one document."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import mdla_runtime.engine.ssh.target as ssh_target
from mdla_runtime import load, open_target
from tests.ssh.helpers import inputs, url
from tests.ssh.sshd_server import Server
from workbench.cli import app
from workbench.output import steps


def test_every_step_is_reported_and_an_upload_byte_by_byte(
    sshd: Server, phone: dict[str, Path], manifest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ssh_target, "CHUNK", 256)  # the manifest is ~1 KB: several chunks
    seen: list[tuple[str, int, int]] = []
    local = open_target("emu").run(load(manifest), inputs())
    with open_target(url(sshd, phone), progress=lambda *r: seen.append(r)) as target:
        opened = len(seen)
        result = target.run(load(manifest), inputs())
        target.shell("true")  # the witness's reads: a hot loop, not reported
    np.testing.assert_array_equal(result.raw_outputs[0], local.raw_outputs[0])  # fed intact
    steps = [s for s, _, _ in seen]
    assert steps[:4] == ["connect", "connect", "work directory", "work directory"]
    assert "adapter check" in steps[:opened]  # lib= given: checked, not searched
    assert "witness read" not in steps
    for step in set(steps) - {"upload"}:  # a step of unknown length: start, then end
        marks = [(d, t) for s, d, t in seen if s == step]
        assert marks[0] == (0, 0)
        assert marks[-1] == (1, 1)
    upload = [(d, t) for s, d, t in seen if s == "upload"]
    size = upload[0][1]
    assert upload[0] == (0, size)
    assert size > 3 * 256
    sent = [d for d, _ in upload[1:]]
    assert sent == sorted(sent)
    assert len(sent) >= 4  # one report a chunk, then the end
    assert sent[-1] == size
    assert all(t == size for _, t in upload)
    assert steps.index("upload") < steps.index("run") < steps.index("download")


def test_run_over_ssh_shows_its_steps_on_stderr_and_json_stays_clean(
    sshd: Server, phone: dict[str, Path], manifest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDLA_PROGRESS", "1")
    spec = url(sshd, phone)
    result = CliRunner().invoke(app, ["run", str(manifest), "--on", spec, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["runs"][0]["device"] == "mtk-mdla"
    for line in ("127.0.0.1: connect", "127.0.0.1: work directory", "127.0.0.1: upload"):
        assert line in result.stderr, result.stderr
    assert re.search(r"upload .* \d+\.\d/\d+\.\d kB", result.stderr)  # ~1 KB sent, in kB
    assert "running" in result.stderr
    monkeypatch.setenv("MDLA_PROGRESS", "0")
    quiet = CliRunner().invoke(app, ["run", str(manifest), "--on", spec, "--json"])
    assert quiet.exit_code == 0, quiet.output
    assert "127.0.0.1" not in quiet.stderr


def test_probe_over_ssh_has_a_bar_with_eta(
    sshd: Server, phone: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDLA_PROGRESS", "1")
    args = ["probe", "--on", url(sshd, phone), "--only", "ADD", "--devices", "mtk-mdla"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    probes = json.loads(result.stdout)["probes"]
    roles = sorted(p["role"] for p in probes)  # ADD's two int8 forms and its two 16x8 cases
    assert roles == ["base", "broadcast", "int16", "int16"]
    bar = next(line for line in result.stderr.splitlines() if "probed ADD/" in line)
    assert "4/4" in bar  # the last probe's line
    assert bar.count("0:00:") == 2  # elapsed and the remaining time (ETA) columns
    assert "127.0.0.1: connect" in result.stderr


def test_other_commands_show_the_phones_opening_steps(
    sshd: Server, phone: dict[str, Path], manifest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """devices, check, bisect, validate and witness open the target through
    `workbench.output.open_target`: the connect and the rest of the opening are shown."""
    monkeypatch.setenv("MDLA_PROGRESS", "1")
    spec = url(sshd, phone)
    for args in (["devices", "--json"], ["check", str(manifest), "--json"]):
        result = CliRunner().invoke(app, [*args, "--on", spec])
        assert result.exit_code == 0, result.output
        json.loads(result.stdout)
        assert "127.0.0.1: connect" in result.stderr
        assert "127.0.0.1: adapter check" in result.stderr
        assert "127.0.0.1: upload" not in result.stderr  # after the opening: quiet


def test_remote_steps_share_one_line_each_and_transfers_are_in_bytes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MDLA_PROGRESS", "1")
    with steps() as s:
        assert s.remote("emu") is None  # a local target has no remote steps
        report = s.remote("ssh://u0_a1@phone:8022?su=1")
        assert report is not None
        for _ in range(2):  # each image's upload and run: the same two lines again
            report("upload", 0, 3_500_000)
            report("upload", 1_000_000, 3_500_000)
            report("upload", 3_500_000, 3_500_000)
            report("run", 0, 0)
            report("run", 1, 1)
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert "phone: upload" in lines[0]
    assert "3.5/3.5 MB" in lines[0]
    assert "phone: run" in lines[1]
    assert "1/1" in lines[1]
