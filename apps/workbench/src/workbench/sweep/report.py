"""A sweep's rows shown: sorted best first (agreement, then activation traffic, then latency),
and as one JSON document."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from rich.table import Table as RichTable

from workbench.commands.options import console
from workbench.sweep.pareto import TRAFFIC, axis, describe, front
from workbench.sweep.table import Row


def order(row: Row) -> tuple[float, ...]:
    """Sort key: error rows last, then higher agreement (decided, then all), lower traffic,
    lower latency."""
    if row.error:
        return (1.0, 0.0, 0.0, 0.0, 0.0)
    agree = (-(row.agree_decided or 0.0), -(row.agree_all or 0.0))
    return (0.0, *agree, float(row.act_bytes or 0), row.latency_ms or 0.0)


def _mb(value: int | None) -> str:
    return "-" if value is None else f"{value * TRAFFIC.scale:.3f}"


def _rate(value: float | None, lo: float | None, hi: float | None, k: int, n: int) -> str:
    if value is None:
        return "-"
    interval = f" [{100 * lo:.1f}, {100 * hi:.1f}]" if lo is not None and hi is not None else ""
    return f"{value:.1%}{interval} {k}/{n}"


def _db(value: float | None) -> str:
    return "-" if value is None else "inf" if math.isinf(value) else f"{value:.1f}"


def show(rows: Sequence[Row], ran: int) -> None:
    variants = any(r.variant for r in rows)  # an a16 or field axis: a column of its own
    heads = ("method", "technique", *(("variant",) if variants else ()), "decided (95% CI)")
    table = RichTable(title=f"sweep: {len(rows)} configurations, {ran} run now")
    heads = (*heads, "all (95% CI)", "SQNR dB", "compile s", "traffic MB", "latency ms", "error")
    for col in heads:
        table.add_column(col)
    for r in sorted(rows, key=order):
        table.add_row(
            r.method,
            r.technique,
            *((r.variant,) if variants else ()),
            _rate(r.agree_decided, r.decided_lo, r.decided_hi, r.decided_k, r.decided_n),
            _rate(r.agree_all, r.all_lo, r.all_hi, r.all_k, r.all_n),
            _db(r.sqnr_db),
            "-" if r.compile_s is None else f"{r.compile_s:.1f}",
            _mb(r.act_bytes),
            "-" if r.latency_ms is None else f"{r.latency_ms:.2f}",
            r.error,
        )
    console().print(table)
    best = front(rows)
    if best:
        cost = axis(rows).name
        console().print(f"Pareto front (agreement, {cost}, compile time):", markup=False)
        for r in best:
            console().print(f"  {describe(r)}", markup=False)


def as_dict(row: Row) -> dict[str, Any]:
    doc = dataclasses.asdict(row)
    if isinstance(row.sqnr_db, float) and math.isinf(row.sqnr_db):
        doc["sqnr_db"] = "inf"
    return doc


def document(rows: Sequence[Row], ran: int, table: str) -> dict[str, Any]:
    return {
        "table": table,
        "ran": ran,
        "rows": [as_dict(r) for r in sorted(rows, key=order)],
        "front": [r.key for r in front(rows)],
    }
