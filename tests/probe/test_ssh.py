"""The probe end to end over SSH: a real OpenSSH server on 127.0.0.1 plays the phone, with the
host emulator as its adapter. The matrix equals the local emulator's, cell for cell."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from mdla_emu import build_emulator
from mdla_ir.ops import OpKind
from mdla_legalize import load_target
from mdla_runtime import open_target
from tests.ssh.sshd_server import Server, sshd
from workbench.commands.probe import probe
from workbench.probe import catalogue, run_probes

__all__ = ["sshd"]
OPS = ("CONV_2D", "LOGISTIC", "CONCATENATION", "SQRT", "POW")


@pytest.fixture(scope="module")
def url(sshd: Server, tmp_path_factory: pytest.TempPathFactory) -> str:
    base = tmp_path_factory.mktemp("phone")
    query = f"key={sshd.key}&config={sshd.config}&lib={build_emulator()}&base={base}"
    return f"ssh://{sshd.user}@127.0.0.1:{sshd.port}?{query}"


def test_probe_over_ssh_matches_the_local_emulator(url: str) -> None:
    probes = catalogue(OPS)
    devices = ("mtk-mdla", "mtk-gpu")
    remote = run_probes(open_target(url), probes, devices, repeat=1)
    local = run_probes(open_target("emu"), probes, devices, repeat=1)
    assert remote.version == "8.2.24"
    assert remote.target == url.split("?")[0]
    for r, ref in zip(remote.results, local.results, strict=True):
        for dev in devices:
            a, b = r.cells[dev], ref.cells[dev]
            assert (a.supported, a.compiles, a.runs, a.exact, a.error, a.matches) == (
                b.supported,
                b.compiles,
                b.runs,
                b.exact,
                b.error,
                b.matches,
            ), (r.probe.key, dev)
    assert sum(bool(c.exact) for r in remote.results for c in r.cells.values()) >= 10


def test_the_command_over_ssh_writes_a_target(url: str, tmp_path: Path) -> None:
    app = typer.Typer(add_completion=False)
    app.command("probe")(probe)
    app.callback()(lambda: None)
    out = tmp_path / "phone.toml"
    args = ["probe", "--on", url, "--devices", "mtk-mdla", "--only", "SQRT", "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    spec = load_target(out).op("mtk-mdla", OpKind.SQRT)
    assert not spec.supported
    assert spec.source.startswith(f"probed on {url.split('?')[0]} mtk-mdla")
