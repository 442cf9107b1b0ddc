"""`workbench run` on manifests both readers used to accept and that ended in "internal error"
(issue 14): each is now rejected by the readers, exit 1, one line naming the file, the field and
the byte offset; the budget flags raise the limits and are passed on to the engine."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdla_runtime import ManifestError
from mdla_runtime.format.manifest import parse
from mdla_runtime.testing import malformed_cases, sample_manifest
from workbench.cli import app

CASES = {c.name: c for c in malformed_cases()}
ISSUE = [  # the issue's examples: heap corruption, 96 GiB, and the 39 "internal error" files
    "dup_outputs",
    "perm_axis_past_rank",
    "perm_wrong_length",
    "model_shape",
    "model_shape_huge",
    "labels_true",
    "preprocess_no_inputs",
    "tensor_over_budget",
    "scale_nan",
    "scale_above_flt_max",
    "zero_point_range",
]


@pytest.mark.parametrize("name", ISSUE)
def test_run_rejects_the_file_naming_file_field_and_offset(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    path = tmp_path / f"{name}.mdla"
    path.write_bytes(case.data)
    with pytest.raises(ManifestError) as info:
        parse(case.data)
    result = CliRunner().invoke(app, ["run", str(path)])
    assert result.exit_code == 1, result.output
    line = result.stderr.strip()
    assert "internal error" not in line
    assert "\n" not in line
    want = f"{path}: {info.value.kind}: `{case.field}` at byte {info.value.offset}: "
    assert line.startswith(f"error: {want}"), line


def test_run_budget_flag_is_named_in_the_error(tmp_path: Path) -> None:
    path = tmp_path / "sample.mdla"
    path.write_bytes(sample_manifest())
    result = CliRunner().invoke(app, ["run", str(path), "--max-header-values", "10"])
    assert result.exit_code == 1
    assert "OverBudget" in result.stderr
    assert "--max-header-values" in result.stderr
