"""A `.mdla` never names code to run: `workbench run` on a manifest whose recorded model spec
names a shell command, `exec`, a pickle or a script imports, calls, unpickles and executes none
of them, for a class-map output (`dense.ClassMaps`) and a detector (`boxes.Boxes`) alike; the run
succeeds with its INT8 side and says in one line how to get the FP32 side."""

from __future__ import annotations

import dataclasses
import json
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mdla_ir.builders import act, qp, single_op_qgraph
from mdla_ir.ops import OpKind
from mdla_runtime import load, save
from workbench.boxes import Boxes
from workbench.cli import app

SIDE = 4  # a [1, 3, 4, 4] input and output: a 3-class map at the input's size


class _Touch:
    """Unpickling this calls open(marker, "w"): what a hostile .pt does on load."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def _specs(tmp: Path, marker: Path) -> dict[str, str]:
    """Each kind of spec that ran code from the file, each touching `marker` if it runs."""
    script = tmp / "evil.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\ndef net():\n    return None\n")
    pt = tmp / "evil.pt"
    pt.write_bytes(pickle.dumps(_Touch(marker)))
    return {
        "os-system": f"os:system('touch {marker}')",
        "builtins-exec": f"builtins:exec('open({str(marker)!r}, \"w\").close()')",
        "pickle": str(pt),
        "script": f"{script}:net",
    }


def _hostile(tmp: Path, spec: str) -> Path:
    q = qp(0.05, 0)
    graph = single_op_qgraph(OpKind.RELU, [act("x", [1, 3, SIDE, SIDE], q)], [1, 3, SIDE, SIDE], q)
    prov = dataclasses.replace(graph.provenance, spec=spec)
    return save(graph.with_(provenance=prov), tmp / "hostile.mdla")


@pytest.mark.parametrize("kind", ["os-system", "builtins-exec", "pickle", "script"])
@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_run_on_a_hostile_manifest_runs_nothing(
    kind: str, as_json: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the class map's PNG of a random input lands here
    marker = tmp_path / "MARKER"
    path = _hostile(tmp_path, _specs(tmp_path, marker)[kind])
    modules = set(sys.modules)
    result = CliRunner().invoke(app, ["run", str(path), *(["--json"] if as_json else [])])
    assert result.exit_code == 0, result.output
    assert not marker.exists()
    assert "evil" not in " ".join(set(sys.modules) - modules)
    if as_json:
        (entry,) = json.loads(result.stdout)["runs"]
        assert entry["class_maps"][0]["fp32_int8_agree"] is None
        assert entry["no_fp32"].startswith("not shown: a .mdla never names code to run")
    else:
        text = " ".join(result.output.split())
        assert "(INT8 only)" in text
        assert "no FP32 side: not shown: a .mdla never names code to run; give --model SPEC" in (
            text
        )


@pytest.mark.parametrize("kind", ["os-system", "builtins-exec", "pickle", "script"])
def test_a_detectors_fp32_side_imports_nothing_from_the_file(kind: str, tmp_path: Path) -> None:
    """The detector path (`Boxes`, a FloatSide like the class maps) reads the same rule."""
    marker = tmp_path / "MARKER"
    boxes = Boxes(load(_hostile(tmp_path, _specs(tmp_path, marker)[kind])))
    x = np.zeros((1, 3, SIDE, SIDE), np.float32)
    assert boxes.float_outputs(x) is None
    assert not marker.exists()
    assert "give --model SPEC" in boxes.why_no_float


def test_the_repros_do_run_code_when_named_by_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The specs are live: named on the command line (`--model`), the script one runs; so the
    tests above would see it if the file's spec were imported."""
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "MARKER"
    specs = _specs(tmp_path, marker)
    path = _hostile(tmp_path, specs["script"])
    result = CliRunner().invoke(app, ["run", str(path), "--model", specs["script"], "--json"])
    assert result.exit_code == 0, result.output
    assert marker.exists()


def test_text_from_the_file_reaches_the_terminal_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`inspect` and `run` show the recorded spec with its control characters escaped and its
    rich markup as text: a file cannot set the terminal's title or clear it."""
    monkeypatch.chdir(tmp_path)
    spec = "evil\x1b]0;PWNED\x07[bold red]X[/] \x1b[2J"
    path = _hostile(tmp_path, spec)
    result = CliRunner().invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output
    assert "\x07" not in result.output
    assert "evil\\x1b]0;PWNED\\x07[bold red]X[/] \\x1b[2J" in result.output
    ran = CliRunner().invoke(app, ["run", str(path), "--json"], catch_exceptions=False)
    assert "\x1b" not in ran.stdout
