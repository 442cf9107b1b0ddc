"""`workbench sweep` on the local pool: a 2 x 1 grid of the tiny model scored on held-out
random inputs, one SQLite row each; run again, it runs nothing and shows the same rows, and
--pick writes the cheapest configuration meeting its condition (none meeting it: exit 1)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from tests.workbench.conftest import TINY
from tests.workbench.test_sweep_cost import INT8_BYTES
from workbench.cli import app

ARGS = [TINY, "--calib", "random", "--count", "2", "--methods", "minmax,mse"]
ARGS += ["--techniques", "none", "--holdout-count", "3", "--workers", "2", "--json"]


def test_sweep_writes_one_row_per_configuration_and_resumes(tmp_path: Path) -> None:
    table = tmp_path / "sweep.sqlite"
    runner = CliRunner()
    first = runner.invoke(app, ["sweep", *ARGS, "--table", str(table)])
    assert first.exit_code == 0, first.output
    doc = json.loads(first.stdout.strip().splitlines()[-1])
    assert doc["ran"] == 2
    assert len(doc["rows"]) == 2
    for row in doc["rows"]:
        assert row["error"] == "", row
        assert row["all_n"] == 3
        assert row["kind"] == "logits"
        assert 0 <= row["all_lo"] <= row["agree_all"] <= row["all_hi"] <= 1
        assert len(row["manifest_sha256"]) == 64
        assert row["latency_ms"] > 0
        assert (row["act_bytes"], row["macs16"]) == (INT8_BYTES, 0)  # the tiny graph, int8
    assert {json.loads(r["config"])["method"] for r in doc["rows"]} == {"minmax", "mse"}
    assert "[2/2]" in first.stderr
    assert "ETA" in first.stderr
    with sqlite3.connect(table) as db:
        assert db.execute("SELECT count(*) FROM sweep").fetchone() == (2,)
    out, png = tmp_path / "picked.mdla", tmp_path / "front.png"
    pick = ["--pick", "agreement>=0.5", "-o", str(out), "--plot", str(png)]
    again = runner.invoke(app, ["sweep", *ARGS, "--table", str(table), *pick])
    assert again.exit_code == 0, again.output
    redo = json.loads(again.stdout.strip().splitlines()[-1])
    assert redo["picked"]["key"] in {r["key"] for r in doc["rows"]}
    assert "picked" in again.stderr
    assert "the cheapest" in again.stderr
    assert out.stat().st_size > 0
    assert png.read_bytes().startswith(b"\x89PNG")
    none = ["--pick", "agreement>1", "-o", str(tmp_path / "none.mdla")]
    unmet = runner.invoke(app, ["sweep", *ARGS, "--table", str(table), *none])
    assert unmet.exit_code == 1, unmet.output
    assert "error: no configuration meets agreement>1; the best achieved:" in unmet.stderr
    assert not (tmp_path / "none.mdla").exists()
    assert redo["ran"] == 0
    assert redo["rows"] == doc["rows"]
