"""The SSH target as an attacker and a careless user would try it, against the loopback phone:
shell metacharacters in `base=` stay data, a planted or tampered engine never runs, an unsafe
cache directory is refused, concurrent cold runs both work, and the directories of dead
sessions (remote work dirs, local control dirs after `kill -9`) are removed by liveness."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from mdla_runtime import TargetError, load, open_target
from mdla_runtime.build import CSRC, ENGINE_SOURCES, engine_path
from mdla_runtime.engine.ssh import SshTarget
from tests.ssh.helpers import inputs, url
from tests.ssh.sshd_server import Server

METACHARACTERS = list(";|&$()`<>*?[]{}~'\"\\ ")


def planted(marker: Path) -> bytes:
    """An "engine" that, if it ever runs, creates `marker`."""
    return f"#!/bin/sh\ntouch {marker}\necho '{{\"ok\": true}}'\n".encode()


def plant(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(planted(marker))
    path.chmod(0o755)


@pytest.fixture(scope="module")
def expected(manifest: Path) -> np.ndarray:
    return open_target("emu").run(load(manifest), inputs()).raw_outputs[0]


def run_on(spec: str, manifest: Path) -> tuple[np.ndarray, str]:
    with open_target(spec) as target:
        assert isinstance(target, SshTarget)
        result = target.run(load(manifest), inputs())
        return result.raw_outputs[0], target._s.workdir


# -- injection ------------------------------------------------------------------------------------
def payloads(marker: Path) -> list[str]:
    forms = [f"x{c}touch {marker}{c}y" for c in METACHARACTERS]
    return [
        *forms,
        f"$(touch {marker})",
        f"`touch {marker}`",
        f";touch {marker};",
        f"&&touch {marker}",
        f"~{marker}",
        "a b",
    ]


@pytest.mark.parametrize("index", range(len(METACHARACTERS) + 6))
def test_metacharacters_in_base_stay_data(
    sshd: Server,
    phone: dict[str, Path],
    manifest: Path,
    expected: np.ndarray,
    tmp_path: Path,
    index: int,
) -> None:
    marker = tmp_path / "PWNED"
    root = tmp_path / "root"
    root.mkdir()
    payload = payloads(marker)[index]
    base = f"{root}/{payload}"
    spec = url(sshd, phone, base=base, engine=str(engine_path()))
    raw, workdir = run_on(spec, manifest)
    np.testing.assert_array_equal(raw, expected)
    assert not marker.exists(), f"{payload!r} ran a command on the phone"
    assert workdir.startswith(f"{base}/mdla-cache/work.")
    assert os.listdir(root) == [payload.split("/")[0]]  # nothing beside the intended base
    assert Path(base, "mdla-cache").is_dir()
    assert sorted(os.listdir(tmp_path)) == ["root"]


def test_all_metacharacters_at_once_through_a_build(
    sshd: Server, phone: dict[str, Path], manifest: Path, expected: np.ndarray, tmp_path: Path
) -> None:
    marker = tmp_path / "PWNED"
    base = f"{tmp_path}/all {''.join(METACHARACTERS)}$(touch {marker})`touch {marker}`"
    raw, _ = run_on(url(sshd, phone, base=base), manifest)
    np.testing.assert_array_equal(raw, expected)
    assert not marker.exists()
    assert sorted(os.listdir(tmp_path)) == [base[len(str(tmp_path)) + 1 :].split("/")[0]]


# -- the engine cache -----------------------------------------------------------------------------
def old_cache_name() -> str:
    """Where the target used to trust any executable: mdla-cache/engine-<hash of sources>."""
    files = sorted({*ENGINE_SOURCES, *CSRC.glob("*.h")})
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return f"engine-{h.hexdigest()[:20]}"


def test_an_engine_planted_in_the_old_shared_location_never_runs(
    sshd: Server, phone: dict[str, Path], manifest: Path, expected: np.ndarray, tmp_path: Path
) -> None:
    marker, base = tmp_path / "PLANTED_RAN", tmp_path / "shared"
    plant(base / "mdla-cache" / old_cache_name() / "mdla-engine", marker)
    raw, _ = run_on(url(sshd, phone, base=str(base)), manifest)
    np.testing.assert_array_equal(raw, expected)
    assert not marker.exists()


def test_a_cached_engine_with_a_wrong_hash_is_rebuilt_not_run(
    sshd: Server, phone: dict[str, Path], manifest: Path, expected: np.ndarray, tmp_path: Path
) -> None:
    marker, base = tmp_path / "PLANTED_RAN", tmp_path / "b"
    spec = url(sshd, phone, base=str(base))
    with open_target(spec) as target:
        assert isinstance(target, SshTarget)
        target.run(load(manifest), inputs())
        cached = Path(target._s.engine)
        assert cached.parent == base / "mdla-cache"
        assert hashlib.sha256(cached.read_bytes()).hexdigest() == target._s.sha
        plant(cached, marker)  # replaced mid-session: checked again before the next run
        result = target.run(load(manifest), inputs())
    np.testing.assert_array_equal(result.raw_outputs[0], expected)
    assert not marker.exists()
    plant(cached, marker)  # replaced between sessions: the next session rebuilds
    raw, _ = run_on(spec, manifest)
    np.testing.assert_array_equal(raw, expected)
    assert not marker.exists()
    assert b"touch" not in cached.read_bytes()


def test_a_prebuilt_engine_with_a_wrong_hash_is_uploaded_again(
    sshd: Server, phone: dict[str, Path], manifest: Path, expected: np.ndarray, tmp_path: Path
) -> None:
    marker, base = tmp_path / "PLANTED_RAN", tmp_path / "b"
    blob = engine_path().read_bytes()
    sha = hashlib.sha256(blob).hexdigest()
    (base / "mdla-cache").mkdir(parents=True, mode=0o700)
    plant(base / "mdla-cache" / f"prebuilt-{sha}", marker)
    raw, _ = run_on(url(sshd, phone, base=str(base), engine=str(engine_path())), manifest)
    np.testing.assert_array_equal(raw, expected)
    assert not marker.exists()
    assert (base / "mdla-cache" / f"prebuilt-{sha}").read_bytes() == blob


def make_unsafe(cache: Path, how: str, tmp_path: Path) -> None:
    if how == "symlink":
        (tmp_path / "elsewhere").mkdir()
        cache.symlink_to(tmp_path / "elsewhere")
    elif how == "writable":
        cache.mkdir()
        cache.chmod(0o777)
    elif how == "foreign":
        if os.getuid() != 0:
            pytest.skip("giving a directory to another user needs root")
        cache.mkdir(mode=0o700)
        os.chown(cache, 65534, 65534)


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("symlink", "is a symbolic link"),
        ("writable", r"is writable by other users \(mode 777\)"),
        ("foreign", "is owned by uid 65534, not by this user"),
    ],
)
def test_an_unsafe_cache_directory_is_refused(
    sshd: Server, phone: dict[str, Path], tmp_path: Path, how: str, message: str
) -> None:
    base = tmp_path / "b"
    base.mkdir()
    make_unsafe(base / "mdla-cache", how, tmp_path)
    with pytest.raises(TargetError, match=f"refusing the engine cache on 127.0.0.1: .*{message}"):
        open_target(url(sshd, phone, base=str(base), engine=str(engine_path())))


def test_the_default_cache_is_private_under_home(sshd: Server, phone: dict[str, Path]) -> None:
    spec = url(sshd, phone, base="", engine=str(engine_path()))
    with open_target(spec) as target:
        assert isinstance(target, SshTarget)
        private = Path(target._s.workdir).parent
        assert private == Path.home() / ".cache" / "mdla"
        assert not private.stat().st_mode & 0o022


# -- concurrency and liveness ---------------------------------------------------------------------
def test_two_concurrent_cold_runs_both_succeed(
    sshd: Server, phone: dict[str, Path], manifest: Path, expected: np.ndarray, tmp_path: Path
) -> None:
    spec = url(sshd, phone, base=str(tmp_path / "cold"))
    start = threading.Barrier(2)
    results: list[object] = [None, None]

    def one(i: int) -> None:
        start.wait()
        try:
            results[i] = run_on(spec, manifest)[0]
        except Exception as exc:  # collected for the assertion below
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for r in results:
        assert isinstance(r, np.ndarray), r
        np.testing.assert_array_equal(r, expected)


def test_a_live_sessions_work_dir_survives_a_new_session(
    sshd: Server, phone: dict[str, Path], manifest: Path, tmp_path: Path
) -> None:
    spec = url(sshd, phone, base=str(tmp_path / "b"), engine=str(engine_path()), stale="0")
    with open_target(spec) as first:
        assert isinstance(first, SshTarget)
        time.sleep(1.1)  # older than stale=0 minutes: age alone would condemn it
        with open_target(spec):
            assert Path(first._s.workdir).is_dir()
        first.run(load(manifest), inputs())


CLIENT = """
import sys
from mdla_runtime import open_target
t = open_target(sys.argv[1])
print(t._control, t._s.workdir, flush=True)
sys.stdin.read()
"""


def test_kill_9_leaves_nothing_behind_after_the_next_session(
    sshd: Server, phone: dict[str, Path], tmp_path: Path
) -> None:
    spec = url(sshd, phone, base=str(tmp_path / "b"), engine=str(engine_path()))
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, spec],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert client.stdout is not None
    control, workdir = client.stdout.readline().split()
    os.kill(client.pid, signal.SIGKILL)
    client.wait(10)
    client.stdout.close()
    if client.stdin:
        client.stdin.close()
    assert Path(control).is_dir()  # nobody could clean up
    assert Path(workdir).is_dir()
    pid = int(Path(workdir, "pid").read_text())
    deadline = time.monotonic() + 10  # its keeper ends with its connection
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    with open_target(spec):
        assert not Path(control).exists()
        assert not Path(workdir).exists()
