"""`workbench check` loads a model with compile's spec options (`--arg`, `--input-shape`), so
`check --legalized` and `compile` count the same ops on the same spec: N ops map, and compile
runs N/N of them on the device."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from workbench.cli import app

SPEC = f"{Path(__file__).with_name('stack_model.py')}:stack"
OPTIONS = ["--arg", "depth=3", "--input-shape", "1,3,24,24"]


def _json(args: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("stack") / "stack.mdla"
    return _json(["compile", SPEC, *OPTIONS, "--calib", "random", "--count", "2", "-o", str(out)])


def test_check_legalized_and_compile_agree_n_of_n(compiled: dict[str, Any]) -> None:
    checked = _json(["check", SPEC, *OPTIONS, "--legalized"])
    assert checked["maps"] is True
    n = checked["device_ops"]
    assert len(checked["ops"]) == n
    assert compiled["ops"]["manifest"] == n
    assert compiled["supported"] == {"ok": n, "total": n}
    # the 24x24 input reached the import: stem 4x12x12 outputs of 3x3x3 MACs, 3 convs of 4x3x3
    assert checked["conv_macs"]["imported"] == 4 * 12 * 12 * 27 + 3 * 4 * 12 * 12 * 36


def test_the_options_change_what_check_imports(compiled: dict[str, Any]) -> None:
    """Without --arg, check sees another model (fewer ops): the options are not ignored."""
    plain = _json(["check", SPEC, "--legalized"])
    assert plain["device_ops"] < compiled["ops"]["manifest"]
    deeper = _json(["check", SPEC, "--arg", "depth=5", "--legalized"])
    assert deeper["device_ops"] > compiled["ops"]["manifest"]


def test_a_bad_arg_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["check", SPEC, "--arg", "depth"])
    assert result.exit_code == 2, result.output
    result = CliRunner().invoke(app, ["check", SPEC, "--input-shape", "1,3,x"])
    assert result.exit_code == 2, result.output
