"""`workbench doctor` proves the target: one int8 CONV_2D run on mtk-mdla and compared bit for
bit with mdla_quant.run_int8; --json; an SSH spec shown as ssh://user@host only."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import mdla_quant
import mdla_runtime
from mdla_runtime.engine.ssh.doctor import FAIL, OK
from workbench import proof
from workbench.cli import app


def test_the_emulator_is_proved_and_ready(runner: CliRunner) -> None:
    result = runner.invoke(app, ["doctor", "--on", "emu"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1] == (
        "ok   npu run    one int8 CONV_2D 1x8x8x3 -> 1x8x8x4 on mtk-mdla: all 256 int8 values "
        "equal mdla_quant.run_int8"
    )
    assert lines[-1] == "emu: ready"


def test_json_is_one_document_with_every_step(runner: CliRunner) -> None:
    result = runner.invoke(app, ["doctor", "--on", "emu", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["target"], doc["ready"]) == ("emu", True)
    assert [(s["name"], s["status"]) for s in doc["steps"]] == [("engine", OK), ("npu run", OK)]
    assert "ready" in result.stderr  # the text moved to stderr


def test_a_missing_library_is_not_ready_and_skips_the_run(runner: CliRunner) -> None:
    result = runner.invoke(app, ["doctor", "--on", "lib:/nonexistent/libneuron_adapter.so"])
    assert result.exit_code == 4
    assert result.output.splitlines()[:2] == [
        "FAIL engine     target 'lib:/nonexistent/libneuron_adapter.so': no such library "
        "/nonexistent/libneuron_adapter.so",
        "skip npu run    needs `engine`",
    ]


def test_the_one_op_output_is_not_trivial() -> None:
    """A proof that could not fail proves nothing: the conv's int8 output spans many values."""
    raw = mdla_quant.run_int8(proof.one_op_graph(), [proof.one_op_input()], raw=True)[0]
    assert len(np.unique(raw)) > 40
    assert 0 < np.count_nonzero(raw == -128) < raw.size * 3 // 4  # the RELU cuts, not all
    assert np.count_nonzero(raw == 127) < raw.size // 10  # hardly any saturates


class OffByOne:
    """A target whose device gets one int8 value wrong (a differing kernel)."""

    def __init__(self, inner: mdla_runtime.Target) -> None:
        self.inner = inner

    def run(self, *args: Any, **kwargs: Any) -> mdla_runtime.RunResult:
        result = self.inner.run(*args, **kwargs)
        raw = np.array(result.raw_outputs[0], copy=True)
        raw.flat[5] = raw.flat[5] + (1 if raw.flat[5] < 127 else -1)
        return dataclasses.replace(result, raw_outputs=[raw])


def test_a_device_that_differs_by_one_value_fails_the_proof() -> None:
    step = proof.prove(OffByOne(mdla_runtime.open_target("emu")))  # type: ignore[arg-type]
    assert step.status == FAIL
    assert "1 of 256 int8 values differ from mdla_quant.run_int8 (at most by 1)" in step.detail


def test_a_run_the_device_refuses_is_a_failure_with_the_fix() -> None:
    step = proof.prove(mdla_runtime.open_target("emu"), device="mtk-nothing")
    assert step.status == FAIL
    assert step.detail.startswith("one CONV_2D on mtk-nothing failed: ")
    assert "workbench devices" in step.fix


@pytest.mark.parametrize(
    ("on", "title"),
    [
        (
            "ssh://u0_a1@192.168.1.20:8022?key=/home/me/.ssh/k&lib=/data/l.so",
            "ssh://u0_a1@192.168.1.20",
        ),
        ("ssh://phone", "ssh://phone"),
        ("emu", "emu"),
        ("lib:/opt/libneuron_adapter.so", "lib:/opt/libneuron_adapter.so"),
    ],
)
def test_a_target_is_shown_without_its_options(on: str, title: str) -> None:
    assert proof.shown(on) == title
