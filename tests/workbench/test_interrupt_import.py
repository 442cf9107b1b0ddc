"""A Ctrl-C that lands inside an import is remembered, not raised there: torch's import runs
Python from C++ callbacks, where an exception aborts the process (seen in CI as
`terminate called after throwing ... KeyboardInterrupt` instead of exit 130)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer

from mdla_runtime.interrupt import _SIGINT, importing, interrupt_guard
from tests.lipread.test_interrupt import wait_for_numpy
from tests.workbench.conftest import TINY


def test_a_sigint_inside_an_import_waits_for_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "grab_frame_mod.py").write_text("import sys\nFRAME = sys._getframe()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import grab_frame_mod  # type: ignore[import-not-found]

    frame = grab_frame_mod.FRAME
    assert importing(frame)
    assert not importing(sys._getframe())
    with interrupt_guard() as check:
        request_clear = _SIGINT.clear  # the record must not outlive this test
        handler = signal.getsignal(signal.SIGINT)
        assert callable(handler)
        handler(signal.SIGINT, frame)  # inside the import: no raise
        with pytest.raises(KeyboardInterrupt):
            check()
        with pytest.raises(KeyboardInterrupt):
            handler(signal.SIGINT, sys._getframe())  # anywhere else: raised at once
    request_clear()


@pytest.mark.parametrize("delay", [0.0, 0.3, 1.0, 2.0])
def test_a_ctrl_c_at_any_moment_is_one_line_and_exit_130(tmp_path: Path, delay: float) -> None:
    """From the first modules' import on (the CLI's own import takes about a second, torch's
    more): never a traceback, always `error: interrupted` and 130, and no output file."""
    exe = Path(sys.executable).with_name("workbench")
    out = tmp_path / "net.mdla"
    args = ["compile", TINY, "--calib", "random", "--count", "2", "-o", str(out)]
    proc = subprocess.Popen(
        [str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    wait_for_numpy(proc.pid)  # the CLI's imports have begun (about 0.1 s in, unloaded)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1:] == ["error: interrupted"], err
    assert "Traceback" not in err
    assert not out.exists()


def test_a_ctrl_c_remembered_before_the_command_starts_is_kept() -> None:
    """The entry point's guard is in place while Typer sets the command up; a Ctrl-C it
    remembered then (inside an import) survives the command's own start (`reported`)."""
    from mdla_runtime import interrupt
    from workbench.errors import reported

    with interrupt_guard():
        _SIGINT.set()
        with pytest.raises(typer.Exit) as info, reported():
            raise ValueError("a library that swallowed the Ctrl-C, then failed")
        assert info.value.exit_code == 130
    with interrupt_guard() as check:  # a new outermost guard: a new command, afresh
        check()
    _SIGINT.set()
    interrupt.clear()  # no guard watching: forgotten
    assert not _SIGINT.is_set()


AFTER_THE_COMMAND = """
import os, signal, sys, time
sys.argv = ["{app}", "--version"]
from {app}.cli import main
try:
    main()
except SystemExit:
    pass
os.kill(os.getpid(), signal.SIGINT)  # as if during the interpreter's shutdown
time.sleep(5)
print("not reached")
"""


@pytest.mark.parametrize(("name", "line"), [("workbench", "error"), ("lipread", "lipread: error")])
def test_a_ctrl_c_after_the_command_ended_is_no_traceback(name: str, line: str) -> None:
    code = AFTER_THE_COMMAND.replace("{app}", name)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr == f"{line}: interrupted\n"
    assert "not reached" not in proc.stdout


SECOND = """
import sys
from mdla_runtime.interrupt import interrupt_guard
sys.path.insert(0, sys.argv[1])
import grab_frame_mod
import signal
with interrupt_guard({line!r}):
    handler = signal.getsignal(signal.SIGINT)
    handler(signal.SIGINT, grab_frame_mod.FRAME)  # the first inside an import: remembered
    handler(signal.SIGINT, grab_frame_mod.FRAME)  # the second: the app's line, exit 130
print("not reached")
"""


@pytest.mark.parametrize(
    "line", [None, "lipread: error: interrupted"], ids=["workbench", "lipread"]
)
def test_a_second_ctrl_c_in_an_import_says_the_apps_line(tmp_path: Path, line: str | None) -> None:
    """The second Ctrl-C inside an import ends the process at once, with the line of the app
    it runs in (lipread's had no `lipread: ` before it)."""
    (tmp_path / "grab_frame_mod.py").write_text("import sys\nFRAME = sys._getframe()\n")
    script = SECOND.format(line=line)
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 130, done.stderr
    assert "not reached" not in done.stdout
    said = done.stderr.strip().splitlines()
    assert said[-1] == (line or "error: interrupted"), done.stderr
