"""`run`'s table: per input its top-5, keypoints or output statistics, latency and device."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from workbench import keypoints
from workbench.commands.options import console

SHOWN_KEYPOINTS = 5  # keypoints in the table (--json has them all)


def what(e: dict[str, Any]) -> str:
    """The table's output cell of one run record."""
    if "top5" in e:
        return ", ".join(f"{t['label']} {t['p']:.2f}" for t in e["top5"])
    if "keypoints" in e:
        return keypoints.line(e["keypoints"], SHOWN_KEYPOINTS)
    return f"shape {e['output']['shape']}, mean {e['output']['mean']:.4g}"


def print_table(results: list[dict[str, Any]], model: str, on: str, repeat: int) -> None:
    table = Table(title=f"{model} on {on} ({repeat} run(s) per image)")
    timing = "ms median/min" if repeat == 1 else "ms median p90 p99 min ±std"
    for col in ("image", "top-5" if "top5" in results[0] else "output", timing, "device"):
        table.add_column(col)
    for e in results:
        lat = e["latency_ms"]
        ms = (
            f"{lat['median']:.2f}/{lat['min']:.2f}"
            if repeat == 1
            else f"{lat['median']:.2f} {lat['p90']:.2f} {lat['p99']:.2f} {lat['min']:.2f} "
            f"±{lat['std']:.2f}"
        )
        table.add_row(e["image"], what(e), ms, e["device"])
    console().print(table)
