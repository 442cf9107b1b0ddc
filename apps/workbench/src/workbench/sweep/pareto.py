"""The Pareto front of a sweep (higher agreement, lower cost, lower compile time) and the
choice `--pick` makes: the cheapest row meeting every condition (lowest cost, then compile
time), or, when none does, the best agreement achieved.

The cost is the activation traffic (`cost.traffic`: the same on any machine under any load);
the rows of an older table, which lack it, are compared by the host's emulated latency.

    front(rows)                                  # the rows no other row beats on all three
    pick(rows, parse("agreement>=0.99"))         # (row or None, why)
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from workbench.sweep.table import Row

METRICS: dict[str, str] = {  # --pick's names -> Row fields
    "agreement": "agree_all",
    "decided": "agree_decided",
    "sqnr": "sqnr_db",
    "latency": "latency_ms",
    "bytes": "act_bytes",
    "compile": "compile_s",
}
OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_CONDITION = re.compile(r"^\s*([a-z]+)\s*(>=|<=|>|<)\s*([0-9.eE+-]+)\s*$")


class PickError(ValueError):
    """A --pick expression that does not parse."""


@dataclass(frozen=True)
class Condition:
    metric: str
    op: str
    value: float

    def holds(self, row: Row) -> bool:
        got = getattr(row, METRICS[self.metric])
        return got is not None and OPS[self.op](float(got), self.value)

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"


def parse(text: str) -> list[Condition]:
    """`agreement>=0.99` or several joined by commas (all must hold)."""
    conditions = []
    for part in text.split(","):
        m = _CONDITION.match(part)
        if m is None or m.group(1) not in METRICS:
            raise PickError(
                f"--pick `{part.strip()}`: expected METRIC OP VALUE, METRIC one of "
                f"{', '.join(METRICS)}, OP one of {' '.join(OPS)} (e.g. agreement>=0.99)"
            )
        try:
            value = float(m.group(3))
        except ValueError as exc:
            raise PickError(f"--pick `{part.strip()}`: `{m.group(3)}` is not a number") from exc
        conditions.append(Condition(m.group(1), m.group(2), value))
    return conditions


@dataclass(frozen=True)
class Axis:
    """What "cheaper" compares: a Row field, its name and the unit it is shown in."""

    field: str
    name: str
    unit: str
    scale: float  # field value * scale = shown value

    def of(self, row: Row) -> float:
        return float(getattr(row, self.field) or 0.0)


TRAFFIC = Axis("act_bytes", "activation traffic", "MB", 1e-6)
LATENCY = Axis("latency_ms", "host latency", "ms", 1.0)


def _measured(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if r.ok and r.agree_all is not None]


def axis(rows: Sequence[Row]) -> Axis:
    """The traffic when every measured row has it, else (an older table) the latency."""
    ok = _measured(rows)
    return TRAFFIC if ok and all(r.act_bytes is not None for r in ok) else LATENCY


def _costs(r: Row, cost: Axis) -> tuple[float, float, float]:
    """Smaller is better on each: minus agreement, cost, compile time."""
    return (-(r.agree_all or 0.0), cost.of(r), r.compile_s or 0.0)


def dominates(a: Row, b: Row, cost: Axis | None = None) -> bool:
    cost = cost or axis([a, b])
    ca, cb = _costs(a, cost), _costs(b, cost)
    return all(x <= y for x, y in zip(ca, cb, strict=True)) and ca != cb


def front(rows: Sequence[Row]) -> list[Row]:
    """The measured rows no other row dominates, cheapest first."""
    ok, cost = _measured(rows), axis(rows)
    best = [r for r in ok if not any(dominates(o, r, cost) for o in ok)]
    return sorted(best, key=lambda r: (cost.of(r), r.compile_s or 0.0))


def pick(rows: Sequence[Row], conditions: Sequence[Condition]) -> tuple[Row | None, str]:
    """The cheapest row meeting `conditions` and why; else None and the best achieved."""
    ok, cost = _measured(rows), axis(rows)
    meeting = [r for r in ok if all(c.holds(r) for c in conditions)]
    wanted = ", ".join(str(c) for c in conditions)
    if not meeting:
        if not ok:
            return None, f"no configuration meets {wanted}: none was measured"
        top = max(ok, key=lambda r: (r.agree_all or 0.0, -cost.of(r)))
        return None, f"no configuration meets {wanted}; the best achieved: {describe(top)}"
    chosen = min(meeting, key=lambda r: (cost.of(r), r.compile_s or 0.0))
    why = (
        f"{chosen.label}: the cheapest ({cost.name}, then compile "
        f"time) of the {len(meeting)} of {len(ok)} configurations meeting {wanted}: "
        f"{describe(chosen)}"
    )
    return chosen, why


def describe(r: Row) -> str:
    agree = f"agreement {r.agree_all:.2%} ({r.all_k}/{r.all_n})" if r.agree_all is not None else ""
    moved = "" if r.act_bytes is None else f"{r.act_bytes * TRAFFIC.scale:.3f} MB moved, "
    return (
        f"{r.label}, {agree}, {moved}{r.latency_ms or 0:.3f} ms, compile {r.compile_s or 0:.1f} s"
    )
