"""`workbench compile` outputs: checked before any work, written atomically, and a Ctrl-C
anywhere (even one a library swallows or wraps) exits 130 leaving the old file in place."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import mdla_ir
from mdla_compile import output as compile_output
from mdla_compile import pipeline as compile_pipeline
from tests.workbench.conftest import TINY
from workbench.cli import app

OLD = b"the previous output\n"


def compile_args(out: Path, *extra: str) -> list[str]:
    return ["compile", TINY, "--calib", "random", "--count", "2", "-o", str(out), *extra]


@pytest.fixture
def old_output(tmp_path: Path) -> Path:
    path = tmp_path / "net.mdla"
    path.write_bytes(OLD)
    return path


def interrupt_during_quantize(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    real = compile_pipeline.quantize_graph

    def quantize(*args: Any, **kwargs: Any) -> Any:
        if how == "raise":
            raise KeyboardInterrupt
        if how == "wrap":
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as exc:
                raise mdla_ir.IRError("tracing failed") from exc
        try:  # "swallow": a real SIGINT that the library catches and ignores
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        return real(*args, **kwargs)

    monkeypatch.setattr(compile_pipeline, "quantize_graph", quantize)


@pytest.mark.parametrize("how", ["raise", "wrap", "swallow"])
def test_an_interrupt_exits_130_and_keeps_the_old_file(
    runner: CliRunner, old_output: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    interrupt_during_quantize(monkeypatch, how)
    result = runner.invoke(app, compile_args(old_output))
    assert result.exit_code == 130, result.output
    assert "interrupted" in result.stderr
    assert old_output.read_bytes() == OLD
    assert sorted(p.name for p in old_output.parent.iterdir()) == ["net.mdla"]  # no temp file


def test_a_failing_tflite_export_leaves_the_mdla_alone(
    runner: CliRunner, old_output: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(_graph: Any) -> bytes:
        raise OSError("disk full")

    monkeypatch.setattr(compile_output.mdla_runtime, "tflite_bytes", broken)
    result = runner.invoke(
        app, compile_args(old_output, "--tflite", str(old_output.parent / "n.tflite"))
    )
    assert result.exit_code == 1
    assert "disk full" in result.stderr
    assert old_output.read_bytes() == OLD
    assert not (old_output.parent / "n.tflite").exists()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("missing/net.mdla", "output directory `{d}/missing` does not exist"),
        ("adir.mdla", "output `{d}/adir.mdla` is a directory"),
    ],
)
def test_output_paths_are_checked_before_the_compile(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, message: str
) -> None:
    (tmp_path / "adir.mdla").mkdir()

    def never(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("the model was loaded before the output was checked")

    monkeypatch.setattr(compile_pipeline, "load_source", never)
    result = runner.invoke(app, compile_args(tmp_path / target))
    assert result.exit_code == 1
    assert message.format(d=tmp_path) in result.stderr


def test_a_real_ctrl_c_mid_compile(old_output: Path) -> None:
    """SIGINT to the real CLI process while it works: exit 130, the old file untouched."""
    exe = Path(sys.executable).with_name("workbench")
    proc = subprocess.Popen(
        [str(exe), *compile_args(old_output)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.5)  # inside the imports / model load
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert old_output.read_bytes() == OLD
