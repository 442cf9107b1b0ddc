"""The SSH target against a real OpenSSH server on 127.0.0.1 that plays the phone: the host
emulator is its adapter library and a fake sysfs tree its APU. Runs are bit-exact with the local
emulator, the witness sees the APU counter move, and every failure is a clear TargetError."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from mdla_runtime import TargetError, load, open_target
from mdla_runtime.engine.ssh import SshTarget, parse_spec
from mdla_witness import witness
from tests.ssh.helpers import inputs, url
from tests.ssh.sshd_server import Server, start_server


def running_in(workdir: str) -> list[int]:
    """Processes whose command line mentions `workdir` (the phone is this machine)."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if workdir.encode() in cmdline.read_bytes():
                pids.append(int(cmdline.parent.name))
        except OSError:
            continue
    return pids


def test_spec_parsing() -> None:
    s = parse_spec("ssh://u0_a1@phone:8022?su=1&lib=/x.so&env=A=1&timeout=5")
    assert (s.destination, s.port, s.su, s.lib, s.env, s.timeout) == (
        "u0_a1@phone",
        8022,
        True,
        "/x.so",
        (("A", "1"),),
        5.0,
    )
    with pytest.raises(TargetError, match="unknown option"):
        parse_spec("ssh://phone?colour=red")
    with pytest.raises(TargetError, match="expected env=NAME=VALUE"):
        parse_spec("ssh://phone?env=oops")


def test_run_over_ssh_is_bit_exact_with_the_local_emulator(
    sshd: Server, phone: dict[str, Path], manifest: Path
) -> None:
    local = open_target("emu").run(load(manifest), inputs())
    with open_target(url(sshd, phone)) as target:
        assert isinstance(target, SshTarget)
        remote = target.run(load(manifest), inputs(), repeat=3)
        assert target.devices() == ["mtk-mdla", "mtk-gpu", "mtk-dsp"]
        supported = target.supported(load(manifest))
        workdir = target._s.workdir
    assert supported == {"mtk-mdla": [True] * len(load(manifest).operations)}
    np.testing.assert_array_equal(remote.raw_outputs[0], local.raw_outputs[0])
    assert remote.device == "mtk-mdla"
    assert not Path(workdir).exists()  # close() removed it
    for step in ("connect", "work directory", "upload", "run", "download"):
        assert target.timings[step] > 0


def test_witness_over_ssh(sshd: Server, phone: dict[str, Path], manifest: Path) -> None:
    with open_target(url(sshd, phone)) as target:
        target.run(load(manifest), inputs())  # create the node, let it autosuspend
        time.sleep(0.2)
        w = witness(
            lambda: target.run(load(manifest), inputs(), repeat=50),
            idle_s=1.0,
            sysfs=str(phone["sys"]),
            shell=target.shell,
        )
    assert w.verdict == "witnessed", str(w)
    assert w.control_ms == 0
    assert w.run_ms is not None
    assert w.run_ms >= 10
    assert w.node == str(phone["node"].resolve())


def test_wrong_port_is_unreachable(sshd: Server, phone: dict[str, Path]) -> None:
    spec = url(sshd, phone).replace(f":{sshd.port}?", ":1?")
    with pytest.raises(TargetError, match=r"cannot reach 127\.0\.0\.1 over SSH") as info:
        open_target(spec)
    assert info.value.exit_code == 4


def test_wrong_key_is_refused(sshd: Server, phone: dict[str, Path], tmp_path: Path) -> None:
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    spec = url(sshd, phone).replace(str(sshd.key), str(stranger))
    with pytest.raises(TargetError, match="refused the SSH authentication"):
        open_target(spec)


def test_missing_library(sshd: Server, phone: dict[str, Path]) -> None:
    with pytest.raises(TargetError, match="no Neuron adapter library at /nope/libneuron"):
        open_target(url(sshd, phone, lib="/nope/libneuron_adapter.so"))
    with pytest.raises(
        TargetError, match=r"looked for libneuronusdk_adapter\*\.so\*.*/vendor/lib64"
    ):
        open_target(url(sshd, phone, lib=""))


def test_no_compiler_and_no_prebuilt_engine(
    sshd: Server, phone: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = url(sshd, phone, base=str(phone["base"] / "nocc"))
    # A phone with a shell and the usual tools but no compiler on its PATH.
    tools = phone["base"] / "nocc-bin"
    tools.mkdir(parents=True, exist_ok=True)
    for tool in ("sh", "tar", "mkdir", "mv", "rm", "cat", "test"):
        link = tools / tool
        if not link.exists():
            link.symlink_to(shutil.which(tool) or f"/bin/{tool}")
    orig = SshTarget._exec

    def no_cc(self: SshTarget, step: str, command: str, *a: object, **k: object) -> object:
        if step == "engine build":
            command = f"PATH={tools}; export PATH; {command}"
        return orig(self, step, command, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(SshTarget, "_exec", no_cc)
    with pytest.raises(TargetError, match=r"has no C compiler.*pkg install clang"):
        open_target(spec)


def test_dropped_connection_mid_run_then_cleanup(
    tmp_path_factory: pytest.TempPathFactory, phone: dict[str, Path], manifest: Path
) -> None:
    server = start_server(tmp_path_factory.mktemp("sshd-drop"))
    try:
        target = open_target(url(server, phone, stale="0"))
        stale = target._s.workdir  # type: ignore[attr-defined]
        errors: list[BaseException] = []

        def long_run() -> None:
            try:
                target.run(load(manifest), inputs(), repeat=2_000_000)
            except BaseException as exc:  # collected for the assertion below
                errors.append(exc)

        t = threading.Thread(target=long_run)
        t.start()
        time.sleep(1.0)
        server.kill_all()
        t.join(60)
        assert errors, "the run should fail when the connection drops"
        assert isinstance(errors[0], TargetError)
        assert "dropped" in str(errors[0]) or "closed" in str(errors[0])
        assert Path(stale).exists()  # nothing could clean it up
        deadline = time.monotonic() + 10  # ... but the engine noticed and stopped computing
        while running_in(stale) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not running_in(stale)
    finally:
        server.stop()
    server2 = start_server(tmp_path_factory.mktemp("sshd-again"))
    try:
        time.sleep(1.1)
        with open_target(url(server2, phone, stale="0")):
            assert not Path(stale).exists()  # the next connection removed it
    finally:
        server2.stop()
    os.sync()


def test_a_prebuilt_engine_is_uploaded_and_used(
    sshd: Server, phone: dict[str, Path], manifest: Path
) -> None:
    from mdla_runtime.build import engine_path

    base = phone["base"] / "prebuilt"
    with open_target(url(sshd, phone, base=str(base), engine=str(engine_path()))) as target:
        assert "/mdla-cache/prebuilt-" in target._s.engine  # type: ignore[attr-defined]
        assert "engine build" not in target.timings  # type: ignore[attr-defined]
        result = target.run(load(manifest), inputs())
    local = open_target("emu").run(load(manifest), inputs())
    np.testing.assert_array_equal(result.raw_outputs[0], local.raw_outputs[0])
