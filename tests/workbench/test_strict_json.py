"""`--json` is strict JSON whatever the numbers: a NaN or an infinity is the string "nan",
"inf" or "-inf" (a strict parser rejects Python's NaN and Infinity), in every command and in
lipread; checked here with a parser that refuses those constants."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import mdla_runtime
from mdla_runtime.jsontext import dumps, jsonable
from workbench.cli import app


def strict(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_dumps_writes_strings_for_non_finite_numbers_numpy_ones_included() -> None:
    doc = {"a": math.nan, "b": [np.float32("inf"), np.float64("-inf")], "c": np.arange(2)}
    assert strict(dumps(doc)) == {"a": "nan", "b": ["inf", "-inf"], "c": [0, 1]}
    assert jsonable((1.5, None)) == [1.5, None]
    with pytest.raises(ValueError, match="not JSON: NaN"):
        strict(json.dumps({"a": math.nan}))  # what Python's json alone writes


def test_run_json_with_non_finite_latencies_is_strict_json(
    runner: CliRunner, artifacts: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    def stats(_self: object) -> dict[str, Any]:
        return {"median": math.nan, "p90": math.inf, "std": np.float32("nan")}

    monkeypatch.setattr(mdla_runtime.RunResult, "latency_stats", stats)
    result = runner.invoke(app, ["run", str(artifacts["tiny"]), "--json"])
    assert result.exit_code == 0, result.output
    (entry,) = strict(result.stdout)["runs"]
    assert entry["latency_ms"] == {"median": "nan", "p90": "inf", "std": "nan"}


def test_lipread_json_is_strict_json(monkeypatch: pytest.MonkeyPatch) -> None:
    import lipread.pipeline
    from lipread.cli import app as lipread_app

    real = lipread.pipeline.Reading.as_dict

    def as_dict(self: lipread.pipeline.Reading) -> dict[str, Any]:
        return {**real(self), "confidence": math.nan, "window_ms": [math.inf]}

    monkeypatch.setattr(lipread.pipeline.Reading, "as_dict", as_dict)
    sample = sorted((Path(__file__).parents[2] / "apps/lipread/samples").glob("*.mp4"))[0]
    result = CliRunner().invoke(lipread_app, ["read", str(sample), "--json"])
    assert result.exit_code == 0, result.output
    doc = strict(result.stdout)
    assert (doc["confidence"], doc["window_ms"]) == ("nan", ["inf"])
