"""A Ctrl-C that lands inside an import is remembered, not raised there: torch's import runs
Python from C++ callbacks, where an exception aborts the process (seen in CI as
`terminate called after throwing ... KeyboardInterrupt` instead of exit 130)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from workbench.errors import _SIGINT, _importing, interrupt_guard


def test_a_sigint_inside_an_import_waits_for_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "grab_frame_mod.py").write_text("import sys\nFRAME = sys._getframe()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import grab_frame_mod  # type: ignore[import-not-found]

    frame = grab_frame_mod.FRAME
    assert _importing(frame)
    assert not _importing(sys._getframe())
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
