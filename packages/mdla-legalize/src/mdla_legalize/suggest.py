"""What to pass to `--cpu` when a graph does not map: `suggest(graph, report)` after
legalization, for `legalize`'s refusal (and so `check` and `compile`).

Only when every op that does not map is one the CPU runs (`mdla_ir.partitions.CPU_KINDS`) is
there an exact `--cpu` list: `--cpu auto`, which places exactly those ops, spelled also as their
kinds (`--cpu ELU,MISH`). Placing by kind may scatter the CPU ops among NPU ones (a detection
head's decode: dozens of device switches); `patterns` looks for op-name patterns over the
graph's module tree (`'model.22.*'`) whose ops the CPU all runs and that, with `auto` for the
rest, give fewer switches. A pattern may take ops that map along (their module runs whole on
the CPU), but never more than half the graph's ops in all. Switches are counted as `place`
orders the ops (`cluster`: each device's ops together where the data flow allows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from mdla_ir import Graph
from mdla_ir.partitions import CPU_KINDS
from mdla_legalize.cluster import grouped_switches
from mdla_legalize.explain import SupportReport

AUTO = "auto"


@dataclass(frozen=True, slots=True)
class Suggestion:
    """`kinds`: the `--cpu` value by kind; `patterns` the pattern list with fewer device
    switches (empty when none is better); the switches of each."""

    kinds: str
    kind_switches: int
    patterns: str = ""
    pattern_switches: int = 0

    def __str__(self) -> str:
        return (
            f"run them on the CPU: --cpu {AUTO} (here: --cpu {self.kinds}; "
            f"{self.kind_switches} device switch(es))"
        )

    @property
    def by_pattern(self) -> str:
        """The pattern advice line, or "" when placing by kind is as good."""
        if not self.patterns:
            return ""
        return (
            f"fewer device switches ({self.pattern_switches} instead of {self.kind_switches}): "
            f"--cpu {self.patterns}"
        )


def switches(on_cpu: Sequence[bool]) -> int:
    """Device changes along the op order."""
    return sum(a != b for a, b in pairwise(on_cpu))


def suggest(graph: Graph, report: SupportReport) -> Suggestion | None:
    """The `--cpu` advice for `graph` (legalized) and its support `report`, or None when some
    op that does not map has no CPU kernel either (or every op maps)."""
    bad = [i for i, s in enumerate(report.ops) if not s.supported]
    if not bad or any(graph.ops[i].kind not in CPU_KINDS for i in bad):
        return None
    kinds = ",".join(dict.fromkeys(graph.ops[i].kind.name for i in bad))
    base = [not s.supported for s in report.ops]
    found = patterns(graph, base)
    if not found:
        return Suggestion(kinds, grouped_switches(graph, base))
    chosen, on_cpu = found
    rest_auto = any(b and not _covered(graph.ops[i].name, chosen) for i, b in enumerate(base))
    tokens = [f"'{p}'" for p in chosen] + ([AUTO] if rest_auto else [])
    return Suggestion(
        kinds, grouped_switches(graph, base), ",".join(tokens), grouped_switches(graph, on_cpu)
    )


def _covered(name: str, chosen: Sequence[str]) -> bool:
    return any(name.startswith(p[:-1]) for p in chosen)


def _candidates(graph: Graph, base: Sequence[bool]) -> dict[str, list[int]]:
    """`prefix.*` -> the indices of the ops it selects, for every module prefix of an op that
    does not map whose ops the CPU all runs."""
    found: dict[str, list[int]] = {}
    for i in (j for j, must in enumerate(base) if must):
        parts = graph.ops[i].name.split(".")
        for depth in range(1, len(parts)):
            found.setdefault(".".join(parts[:depth]) + ".*", [])
    for i, op in enumerate(graph.ops):
        for pattern, hits in found.items():
            if op.name.startswith(pattern[:-1]):
                hits.append(i)
    return {
        p: hits
        for p, hits in found.items()
        if hits and all(graph.ops[i].kind in CPU_KINDS for i in hits)
    }


def patterns(graph: Graph, base: Sequence[bool]) -> tuple[list[str], list[bool]] | None:
    """Greedily the patterns that lower the switches of placing `base` most (ties: fewer ops
    taken), within half the graph's ops; None when no pattern lowers them."""
    candidates = _candidates(graph, base)
    on_cpu, chosen = list(base), list[str]()
    limit = len(graph.ops) // 2
    while True:
        best: tuple[int, int, str] | None = None
        for pattern, hits in candidates.items():
            trial = list(on_cpu)
            for i in hits:
                trial[i] = True
            if sum(trial) > limit:
                continue
            key = (grouped_switches(graph, trial), sum(trial), pattern)
            if key[0] < grouped_switches(graph, on_cpu) and (best is None or key < best):
                best = key
        if best is None:
            break
        chosen = [p for p in chosen if not p.startswith(best[2][:-1])] + [best[2]]
        for i in candidates.pop(best[2]):
            on_cpu[i] = True
    return (chosen, on_cpu) if chosen else None
