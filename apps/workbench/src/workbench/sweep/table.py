"""The sweep's results: one SQLite table, one row per configuration, appended (and committed)
as each task finishes, so an interrupted or repeated sweep keeps what is done.

    with Table.open("sweep.sqlite") as t:
        done = t.done_keys()
        t.add(row)
        rows = t.rows()

A row is keyed by a hash of its configuration, the model spec (with the bytes of its files)
and the held-out inputs; a row with an error is run again by the next sweep.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

NAME = "sweep"


@dataclass(frozen=True)
class Row:
    key: str
    spec: str
    method: str
    technique: str
    config: str  # the QuantConfig as JSON (as compiled: `a16` the tensors --a16 chose)
    kind: str = ""  # what the first output is (logits, classmap, ...): what agreement means
    agree_all: float | None = None  # mean agreement with FP32 over the held-out inputs
    all_k: int = 0  # inputs whose top-1 agrees (a classifier) ...
    all_n: int = 0  # ... of this many
    all_lo: float | None = None  # 95 % Wilson interval (a classifier)
    all_hi: float | None = None
    agree_decided: float | None = None  # the same over the inputs FP32 decides
    decided_k: int = 0
    decided_n: int = 0
    decided_lo: float | None = None
    decided_hi: float | None = None
    sqnr_db: float | None = None  # first output (the logits), FP32 vs the emulator, all inputs
    compile_s: float | None = None
    latency_ms: float | None = None  # median emulated run, host wall time (noisy under load)
    manifest_sha256: str = ""  # of the .mdla bytes
    error: str = ""  # one line: what failed (then the measures are empty)
    worker: str = ""  # where it ran (host:pid), not compared
    # Added after the first tables (an older table gains them, empty, when opened):
    variant: str = ""  # the a16 and field-axis values (`a16=auto:10% percentile=99.9`)
    cpu_s: float | None = None  # the task's CPU seconds (its process and children), any row
    act_bytes: int | None = None  # activation bytes an inference moves (int16 ones twice)
    macs16: int | None = None  # multiply-accumulates run 16x8 (`cost.traffic`)

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def label(self) -> str:
        """`method technique [variant]`: which configuration this is."""
        return " ".join(x for x in (self.method, self.technique, self.variant) if x)


COLUMNS = tuple(f.name for f in dataclasses.fields(Row))


def _column(f: dataclasses.Field[object]) -> str:
    kind = "INTEGER" if "int" in str(f.type) else "REAL" if "float" in str(f.type) else "TEXT"
    default = f" DEFAULT {f.default!r}" if isinstance(f.default, str) else ""
    return f"{f.name} {kind}" + (" PRIMARY KEY" if f.name == "key" else default)


def _schema() -> str:
    cols = ", ".join(_column(f) for f in dataclasses.fields(Row))
    return f"CREATE TABLE IF NOT EXISTS {NAME} ({cols})"


def _upgrade(db: sqlite3.Connection, have: list[str]) -> list[str]:
    """An older sweep table (its columns a prefix of ours) given the columns added since."""
    if not have or tuple(have) != COLUMNS[: len(have)]:
        return have
    for f in dataclasses.fields(Row)[len(have) :]:
        db.execute(f"ALTER TABLE {NAME} ADD COLUMN {_column(f)}")
    db.commit()
    return list(COLUMNS)


class TableError(ValueError):
    """A --table file that is not a sweep table."""


class Table:
    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db, self.path = db, path

    @classmethod
    @contextmanager
    def open(cls, path: str | Path) -> Iterator[Table]:
        path = Path(path)
        try:
            db = sqlite3.connect(path)
            db.execute(_schema())
            have = _upgrade(db, [r[1] for r in db.execute(f"PRAGMA table_info({NAME})")])
        except sqlite3.DatabaseError as exc:
            raise TableError(f"--table {path}: not an SQLite file ({exc})") from exc
        if tuple(have) != COLUMNS:
            db.close()
            raise TableError(
                f"--table {path}: its `{NAME}` table has columns {', '.join(have)}, not a "
                "sweep's: give a new file"
            )
        try:
            yield cls(db, path)
        finally:
            db.close()

    def done_keys(self) -> set[str]:
        """The keys of the rows that finished without an error."""
        return {r[0] for r in self.db.execute(f"SELECT key FROM {NAME} WHERE error = ''")}

    def add(self, row: Row) -> None:
        """Insert (or replace an earlier error row of the same key) and commit at once."""
        marks = ", ".join("?" for _ in COLUMNS)
        values = tuple(getattr(row, c) for c in COLUMNS)
        with self.db:
            self.db.execute(f"INSERT OR REPLACE INTO {NAME} VALUES ({marks})", values)

    def rows(self, keys: set[str] | None = None) -> list[Row]:
        """Every row (those of `keys` alone when given), in the order they finished."""
        got = [Row(*r) for r in self.db.execute(f"SELECT * FROM {NAME} ORDER BY rowid")]
        return [r for r in got if keys is None or r.key in keys]
