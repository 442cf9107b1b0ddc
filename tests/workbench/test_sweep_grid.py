"""`workbench sweep`'s grid beyond methods x techniques: --a16 entries as an axis, a --grid
file (TOML or JSON) whose bad keys and values are named with their line, and an older sweep
table given the columns added since (its rows kept)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdla_compile import CompileOptions
from mdla_quant import QuantConfig
from tests.workbench.conftest import TINY
from workbench.cli import app
from workbench.sweep import driver, grid
from workbench.sweep.bundle import Holdout
from workbench.sweep.gridfile import GridFileError, flag_axes, read_grid
from workbench.sweep.table import COLUMNS, Table

TOML = """# a grid
methods = ["minmax", "mse"]
techniques = "none,cle+adaround"
a16 = ["none", "auto:10%"]
percentile = [99.9, 100]
reconstruction = ["layer", "block"]
adaround = 20
"""


def test_a16_entries_are_an_axis_labelled_in_each_variant() -> None:
    points = grid.points(QuantConfig(), flag_axes("mse", "none,cle", "none;auto:10%;head*,x"))
    assert [(p.technique, p.a16) for p in points] == [
        ("none", None),
        ("none", "auto:10%"),
        ("none", "head*,x"),
        ("cle", None),
        ("cle", "auto:10%"),
        ("cle", "head*,x"),
    ]
    assert [p.variant for p in points[:3]] == ["a16=none", "a16=auto:10%", "a16=head*,x"]
    assert all(p.config.a16 == () for p in points)  # compile resolves --a16 per task


def test_no_a16_axis_leaves_the_variant_empty() -> None:
    points = grid.grid(QuantConfig(), "mse", "none")
    assert [(p.a16, p.variant) for p in points] == [(None, "")]


def test_a_bad_a16_entry_is_named() -> None:
    with pytest.raises(grid.GridError, match=r"--a16: --a16 `auto:0%`: the budget `0%`"):
        flag_axes("mse", "none", "none;auto:0%")


def test_the_plan_gives_each_a16_entry_its_own_compile_option_and_key() -> None:
    options = CompileOptions(TINY, calib="random", count=2)
    points = grid.points(options.quant, flag_axes("mse", "none", "none;auto:10%"))
    jobs, _ = driver.plan(options, points, Holdout(random=1), None)
    assert [j.options.a16 for j in jobs] == [None, "auto:10%"]
    assert [j.variant for j in jobs] == ["a16=none", "a16=auto:10%"]
    assert jobs[0].key != jobs[1].key


def test_a_toml_grid_sets_every_axis_and_fields(tmp_path: Path) -> None:
    path = tmp_path / "grid.toml"
    path.write_text(TOML)
    points = grid.points(QuantConfig(), read_grid(path, None, None, None))
    # 2 methods x (none: 2 a16 x 2 percentiles, block collapsing to layer; cle+adaround: 2 x 2 x 2)
    assert len(points) == 2 * (4 + 8)
    ada = [p for p in points if p.technique == "cle+adaround"]
    assert {(p.config.adaround, p.config.equalize) for p in ada} == {(20, True)}
    assert {p.config.reconstruction for p in ada} == {"layer", "block"}
    assert {p.config.percentile for p in points} == {99.9, 100.0}
    assert points[0].variant == "a16=none percentile=99.9 reconstruction=layer adaround=0"
    assert {p.config.reconstruction for p in points if p.technique == "none"} == {"layer"}


def test_a_json_grid_and_the_defaults_of_keys_it_leaves_out(tmp_path: Path) -> None:
    path = tmp_path / "grid.json"
    path.write_text(json.dumps({"methods": ["entropy"], "rounding": ["double", "single"]}))
    axes = read_grid(path, None, "none", None)
    assert axes.techniques == ("none",)
    assert axes.a16 == (None,)
    points = grid.points(QuantConfig(), axes)
    assert [(p.method, p.config.rounding) for p in points] == [
        ("entropy", "double"),
        ("entropy", "single"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('methods = ["mse"]\nbins = "many"\n', r"grid.toml:2: `bins` takes int values"),
        ('\n\nmethod = ["mse"]\n', r"grid.toml:3: unknown key `method`: expected one of methods"),
        ('bins = 256\nmethods = ["mse", "l2"]\n', r"grid.toml:2: unknown `l2`"),
        ('a16 = ["none", "auto:200%"]\n', r"grid.toml:1: a16: --a16 `auto:200%`: the budget"),
        ("percentile = [99.9, 20]\n", r"grid.toml:1: `percentile` = 20.0: percentile 20.0"),
        ("rounding = []\n", r"grid.toml:1: `rounding` is an empty list"),
        ('methods = ["mse"]\nbins = = 3\n', r"--grid .*grid.toml: .*line 2"),
        ('techniques = ["cle"]\n', r"grid.toml:1: `techniques` is also given as --techniques"),
    ],
)
def test_a_bad_grid_file_names_the_key_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "grid.toml"
    path.write_text(text)
    with pytest.raises(GridFileError, match=message):
        read_grid(path, None, "none", None)


def test_a_grid_file_of_another_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "grid.ini"
    path.write_text("[grid]\n")
    with pytest.raises(GridFileError, match=r"grid.ini: write the grid as .toml or .json"):
        read_grid(path, None, None, None)


@pytest.mark.parametrize("since", ["variant", "act_bytes"])  # each older table's first missing
def test_an_older_table_gains_the_new_columns_and_keeps_its_rows(
    tmp_path: Path, since: str
) -> None:
    path = tmp_path / "old.sqlite"
    old = list(COLUMNS[: COLUMNS.index(since)])
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE sweep ({', '.join(old)})")
        values = dict.fromkeys(old, 0) | {"key": "k", "error": "", "method": "mse"}
        db.execute(
            f"INSERT INTO sweep VALUES ({', '.join('?' for _ in old)})", list(values.values())
        )
    with Table.open(path) as t:
        (row,) = t.rows()
        assert t.done_keys() == {"k"}
    assert row.method == "mse"
    assert (row.act_bytes, row.macs16) == (None, None)
    if since == "variant":
        assert (row.variant, row.cpu_s) == ("", None)


def test_the_cli_sweeps_a16_entries_each_reaching_the_compile(tmp_path: Path) -> None:
    args = ["sweep", TINY, "--calib", "random", "--count", "2", "--holdout-count", "2"]
    args += ["--methods", "percentile", "--techniques", "none", "--a16", "none;nope*"]
    args += ["--workers", "1", "--json", "--table", str(tmp_path / "t.sqlite")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = {r["variant"]: r for r in json.loads(result.stdout.strip().splitlines()[-1])["rows"]}
    assert set(rows) == {"a16=none", "a16=nope*"}
    assert rows["a16=none"]["error"] == ""
    assert rows["a16=none"]["cpu_s"] > 0
    assert "pattern `nope*` matches no tensor or op" in rows["a16=nope*"]["error"]
    assert "[2/2] percentile none a16=" in result.stderr


def test_the_cli_refuses_a_bad_grid_file_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "grid.toml"
    path.write_text('methods = ["mse"]\ntechniques = ["none", "cle+x"]\n')
    args = ["sweep", TINY, "--grid", str(path), "--holdout-count", "1"]
    result = CliRunner().invoke(app, [*args, "--table", str(tmp_path / "t.sqlite")])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "grid.toml:2: unknown `cle+x`: expected one of none" in lines[0]
    assert not (tmp_path / "t.sqlite").exists()
