"""Closing the terminal (SIGHUP) or a SIGTERM ends the TUI through its cleanup, as Ctrl-C does:
no `workbench-tui-*` temp dir is left behind, and the terminal leaves the alternate screen
(Textual draws on stderr)."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = r"""
import sys
from workbench.tui.app import WorkbenchApp
orig = WorkbenchApp.run
def run(self, *a, **k):  # the temp dir made up front, and said (its handlers are in place)
    sys.stderr.write(f"workdir {self.session.workdir}\n")
    sys.stderr.flush()
    return orig(self, *a, **k)
WorkbenchApp.run = run
from workbench.cli import main
sys.argv = ["workbench", "tui"]
main()
"""


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
@pytest.mark.parametrize("delay", [0.0, 2.0])
def test_sighup_and_sigterm_remove_the_temp_dir(sig: signal.Signals, delay: float) -> None:
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "80", "LINES": "24"}
    argv = [sys.executable, "-c", SCRIPT]
    with subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=subprocess.PIPE, env=env) as proc:
        os.close(slave)
        assert proc.stderr is not None
        try:
            first = proc.stderr.readline().decode()
            assert first.startswith("workdir "), first
            workdir = Path(first.split(" ", 1)[1].strip())
            assert workdir.is_dir()
            time.sleep(delay)  # 0: while Textual starts; 2: once it draws
            proc.send_signal(sig)
            if sig == signal.SIGHUP:
                os.close(master)  # the terminal is gone too
                master = -1
            rc = proc.wait(timeout=60)
            err = proc.stderr.read().decode(errors="replace")
        finally:
            if proc.poll() is None:
                proc.kill()
            if master >= 0:
                os.close(master)
    assert rc == 130, err
    assert "error: interrupted\n" in err, err
    if delay:  # (a signal before Textual's event loop runs may leave asyncio's GC warnings)
        assert "Traceback" not in err, err
        assert "Exception ignored" not in err, err
    assert not workdir.exists()
    if "\x1b[?1049h" in err:  # Textual entered the alternate screen: it left it again
        assert "\x1b[?1049l" in err.rpartition("\x1b[?1049h")[2]
