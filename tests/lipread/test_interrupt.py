"""Ctrl-C at any moment of `lipread calibrate` (module imports, torch's import, the compile):
one line, `lipread: error: interrupted`, exit 130; never a traceback, never blamed on the model
(a Ctrl-C inside sympy's import once surfaced as "LipNet does not compile", exit 3), and no
cache entry written after it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mdla_runtime.interrupt import IMPORT_NOTICE

SAMPLES = Path(__file__).parents[2] / "apps/lipread/samples"


def wait_for_numpy(pid: int) -> None:
    """Until process `pid` has mapped numpy's core library: it is then importing the CLI's
    modules, past the interpreter's own start-up (which no code of ours can guard: a loaded
    machine can stretch it past any fixed delay)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if "_multiarray_umath" in Path(f"/proc/{pid}/maps").read_text():
                return
        except (FileNotFoundError, ProcessLookupError):
            return
        time.sleep(0.002)


def _calibrate(cache: Path) -> subprocess.Popen[str]:
    exe = Path(sys.executable).with_name("lipread")
    env = {**os.environ, "LIPREAD_CACHE": str(cache), "MDLA_PROGRESS": "0"}
    return subprocess.Popen(
        [str(exe), "calibrate", str(SAMPLES)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.fixture(scope="module")
def run_seconds(tmp_path_factory: pytest.TempPathFactory) -> float:
    """How long an uninterrupted calibrate takes here, from its imports to its exit: the
    moments below are fractions of it, so that each lands inside the run on any machine. The
    shorter of two runs: the first may also build the emulator's C."""
    seconds = []
    for _ in range(2):
        proc = _calibrate(tmp_path_factory.mktemp("whole") / "cache")
        wait_for_numpy(proc.pid)
        start = time.monotonic()
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        seconds.append(time.monotonic() - start)
    return min(seconds)


def ran_for(proc: subprocess.Popen[str], seconds: float) -> float | None:
    """Wait `seconds` while `proc` runs: None if it still runs then, else how long it ran."""
    start = time.monotonic()
    while (left := start + seconds - time.monotonic()) > 0:
        if proc.poll() is not None:
            return time.monotonic() - start
        time.sleep(min(0.005, left))
    return None if proc.poll() is None else time.monotonic() - start


@pytest.mark.parametrize("fraction", [0.0, 0.05, 0.2, 0.4, 0.6, 0.8])
def test_ctrl_c_is_interrupted_at_any_moment(
    tmp_path: Path, run_seconds: float, fraction: float
) -> None:
    # A run can be quicker than the measured one (another test process's load fell meanwhile):
    # then the moment is taken again as the same fraction of that quicker run, so that it still
    # lands inside a run; only the timing adapts, never what a Ctrl-C must give.
    seconds = run_seconds
    for attempt in range(4):
        cache = tmp_path / f"cache{attempt}"
        proc = _calibrate(cache)
        wait_for_numpy(proc.pid)
        ran = ran_for(proc, fraction * seconds)
        if ran is None:
            break
        proc.communicate()
        seconds = ran
    else:
        pytest.fail(f"calibrate ended before {fraction:.0%} of each of four runs ({seconds:.1f} s)")
    try:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:  # never leave a calibrate running into the next test
            proc.kill()
            proc.communicate()
    if proc.returncode == -signal.SIGINT:
        # The signal came after the command had ended: CPython's shutdown gives SIGINT back its
        # default action, which ends the process by the signal, silently. Only then: the
        # compiled model is in the cache, and nothing was printed about it.
        assert list(cache.glob("*.mdla")), "ended by SIGINT before the command did"
        assert "Traceback" not in err, err
        return
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    if lines[:1] == [IMPORT_NOTICE.decode().strip()]:
        lines = lines[1:]  # the signal came during an import: it said so at once, then stopped
    assert lines == ["lipread: error: interrupted"], err
    assert out == ""
    assert not list(cache.glob("*.mdla"))


@pytest.mark.parametrize("how", ["swallowed", "wrapped", "raised"])
def test_an_error_after_a_ctrl_c_is_not_blamed_on_the_model(
    monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A library that swallows a Ctrl-C half-imported and then fails, one that wraps it, and a
    plain KeyboardInterrupt: all `interrupted`, 130, not "does not compile" (exit 3)."""
    from typer.testing import CliRunner

    import lipread.commands.read
    from lipread.cli import app
    from lipread.errors import UnsupportedError
    from mdla_runtime import interrupt

    def compile_fails(_weights: object) -> None:
        if how == "raised":
            raise KeyboardInterrupt
        if how == "swallowed":
            interrupt._SIGINT.set()  # what the guard's handler records inside an import
            raise UnsupportedError("LipNet does not compile: module 'sympy' has no attribute")
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise UnsupportedError("LipNet does not compile") from exc

    monkeypatch.setattr(lipread.commands.read, "load_checkpoint", compile_fails)
    result = CliRunner().invoke(app, ["read", str(sorted(SAMPLES.glob("*.mp4"))[0])])
    interrupt.clear()
    assert result.exit_code == 130, result.output
    assert result.stderr.strip() == "lipread: error: interrupted"
