"""`place(graph, target, device, cpu)`: put the ops the user names on the CPU, the rest on the
NPU, and prove the NPU part maps (issue 17). Never silent: an op that does not map and is not
named is an error naming it, exactly as `legalize` reports it, unless the token `auto` asks for
it (`--cpu auto`: every op that does not map after legalization and that the CPU runs goes to
the CPU, nothing else; `Placement.notes` says which and why).

`cpu` is a list of tokens (`--cpu LAYER_NORM,GELU,'features.7.*'`): a token that names an
`OpKind` (upper case, `LAYER_NORM`) selects every op of that kind in the device graph; any other
token is an fnmatch pattern over op names (`features.7.*`, `classifier.?`). Rules, in order:

- `auto` selects the ops that do not map on `device` (it may select none: a note says so);
  it mixes with the other tokens (`--cpu auto,'head.*'`). It also moves a RESHAPE that maps
  to the CPU when that removes a device switch (a flatten's RESHAPE after the CPU's layout
  TRANSPOSE at a model output): a RESHAPE costs nothing on either device and a switch is a
  round trip through the adapter; a note names each one;
- any other token that selects no op is a PlacementSpecError (a usage error: exit 2), naming it;
- a selected op the CPU cannot run (no int8 or float kernel: `mdla_ir.partitions.CPU_KINDS`)
  is a LegalizeError naming it;
- an op that is not selected and does not map on `device` is a LegalizeError (as `legalize`);
- a selected op that maps on `device` anyway goes to the CPU, with a warning (the user asked).

The placement is recorded in the graph (`provenance.cpu_ops`), so every later stage (quantize,
run_int8, the manifest) derives the same partitions with `mdla_ir.partitions.partitions`.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from mdla_ir import Graph, OpKind
from mdla_ir.partitions import CPU, CPU_KINDS, Partition, partitions, switches
from mdla_legalize.cluster import cluster, grouped_switches
from mdla_legalize.errors import LegalizeError
from mdla_legalize.explain import SupportReport, explain
from mdla_legalize.legalize import rewrite
from mdla_legalize.suggest import AUTO  # the token that places exactly the ops that do not map
from mdla_target.target import Target


class PlacementSpecError(LegalizeError):
    """A `--cpu` token that selects nothing (or is empty); `items` lists the tokens."""


@dataclass(frozen=True, slots=True)
class Placed:
    """One op of the placement table: where it runs and why."""

    index: int
    name: str
    kind: str
    device: str
    why: str
    partition: int


@dataclass(frozen=True)
class Placement:
    """The placed device graph (`graph.provenance.cpu_ops` set), its per-op table, its
    partitions (`mdla_ir.partitions`), the warnings of `place` and its notes (what `auto`
    placed, and why)."""

    graph: Graph
    ops: tuple[Placed, ...]
    partitions: tuple[Partition, ...]
    warnings: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def switches(self) -> int:
        return switches(self.partitions)

    def count(self, device: str) -> int:
        return sum(o.device == device for o in self.ops)

    def __str__(self) -> str:
        npu = self.graph.provenance.device
        lines = [
            f"placement of {self.graph.name}: {len(self.partitions)} partition(s), "
            f"{self.count(npu)} op(s) on {npu}, {self.count(CPU)} on {CPU}, "
            f"{self.switches} device switch(es)"
        ]
        rows = [("#", "op", "kind", "device", "part", "why")]
        rows += [
            (str(o.index), o.name, o.kind, o.device, str(o.partition), o.why) for o in self.ops
        ]
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        for r in rows:
            cells = [f"{r[c]:<{widths[c]}}" if c else f"{r[c]:>{widths[c]}}" for c in range(5)]
            lines.append(("  " + "  ".join(cells) + "  " + r[5]).rstrip())
        lines.extend(
            f"  partition {p.index} on {p.device}: ops #{p.first}..#{p.first + len(p.ops) - 1}"
            f" ({len(p.ops)}), in: {', '.join(p.inputs) or '-'}; "
            f"out: {', '.join(p.outputs) or '-'}"
            for p in self.partitions
        )
        return "\n".join(lines)


def parse_cpu(spec: str | Sequence[str]) -> tuple[str, ...]:
    """`LAYER_NORM,GELU` (or several such strings) -> the tokens, blanks dropped, order kept."""
    parts = [spec] if isinstance(spec, str) else list(spec)
    tokens: list[str] = []
    for part in parts:
        for token in (t.strip() for t in part.split(",")):
            if token and token not in tokens:
                tokens.append(token)
    return tuple(tokens)


# Ops the quantizer inserts after placement (QuantConfig.a16's int8 <-> int16 QUANTIZE): the
# token selects nothing here; compile places them when it quantizes (mdla_compile.pipeline).
LATER = OpKind.QUANTIZE.name


def _selects(token: str, name: str, kind: OpKind) -> bool:
    if token in OpKind.__members__:
        return kind is OpKind[token]
    return fnmatch.fnmatchcase(name, token)


def _why_token(token: str) -> str:
    return f"--cpu {token}" if token in OpKind.__members__ else f"--cpu '{token}'"


def _explicit(graph: Graph, tokens: Sequence[str]) -> dict[str, str]:
    """{op name: why} of the ops the tokens other than `auto` select (each must select one)."""
    chosen: dict[str, str] = {}
    for token in tokens:
        if token in (AUTO, LATER):
            continue
        hits = [op.name for op in graph.ops if _selects(token, op.name, op.kind)]
        if not hits:
            kinds = sorted({op.kind.name for op in graph.ops})
            raise PlacementSpecError(
                f"--cpu {token!r} selects no op of the device graph `{graph.name}` (an op kind "
                f"such as {', '.join(kinds[:6])}, `auto`, or a pattern over op names: "
                "`workbench check MODEL --legalized` lists them)",
                [token],
            )
        for name in hits:
            chosen.setdefault(name, _why_token(token))
    return chosen


def _auto(graph: Graph, report: SupportReport, chosen: dict[str, str]) -> dict[str, str]:
    """Add to `chosen` every op that does not map and that the CPU runs; those ops' names, each
    with why it does not map."""
    placed = {
        op.name: support.reason
        for op, support in zip(graph.ops, report.ops, strict=True)
        if not support.supported and op.name not in chosen and op.kind in CPU_KINDS
    }
    for name in placed:
        chosen[name] = f"--cpu {AUTO}"
    return placed


# Ops that only relabel their input's bytes: free on either device, so `auto` may move one to
# the CPU to spare a device switch without moving work off the NPU.
_FREE_ON_CPU = frozenset({OpKind.RESHAPE}) & CPU_KINDS
_RIDE = f"--cpu {AUTO}, a switch fewer"


def _ride_along(graph: Graph, chosen: dict[str, str]) -> list[str]:
    """Move to the CPU (add to `chosen`) each RESHAPE whose move lowers the device switches of
    the clustered order; their names."""
    on_cpu = [op.name in chosen for op in graph.ops]
    if not any(on_cpu):
        return []
    best = grouped_switches(graph, on_cpu)
    moved: list[str] = []
    changed = True
    while changed:
        changed = False
        for i, op in enumerate(graph.ops):
            if on_cpu[i] or op.kind not in _FREE_ON_CPU:
                continue
            on_cpu[i] = True
            n = grouped_switches(graph, on_cpu)
            if n < best:
                best, changed = n, True
                chosen[op.name] = _RIDE
                moved.append(op.name)
            else:
                on_cpu[i] = False
    return moved


def _auto_notes(placed: dict[str, str], moved: list[str], graph: Graph, device: str) -> list[str]:
    """What `auto` did, each op by its index in the placed (clustered) graph, as the placement
    table numbers it."""
    if not placed:
        return [f"--cpu {AUTO}: every other op maps on {device}; it placed none on the CPU"]
    index = {op.name: (i, op.kind.name) for i, op in enumerate(graph.ops)}
    kinds = Counter(index[name][1] for name in placed)
    summary = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in sorted(kinds.items()))
    notes = [
        f"--cpu {AUTO}: placed {len(placed)} op(s) on the CPU ({summary}), as they do not map "
        f"on {device}:"
    ]
    notes += [f"  op #{index[n][0]} `{n}` ({index[n][1]}): {why}" for n, why in placed.items()]
    if moved:
        notes.append(
            f"--cpu {AUTO}: moved {len(moved)} RESHAPE(s) that map to the CPU, one device "
            "switch fewer (a RESHAPE costs nothing on either):"
        )
        notes += [f"  op #{index[n][0]} `{n}` (RESHAPE)" for n in moved]
    return notes


def place(
    graph: Graph, target: Target, device: str, cpu: Sequence[str], skip_rules: Collection[str] = ()
) -> Placement:
    """Legalize `graph` for `device` (its rewrites), then place it; see the module docstring."""
    tokens = parse_cpu(cpu)
    if not tokens:
        raise PlacementSpecError("--cpu names no op kind or op name pattern", [])
    graph = rewrite(graph, target, device, skip_rules)
    chosen = _explicit(graph, tokens)
    report = explain(graph, target, device)
    auto = AUTO in tokens
    placed_auto = _auto(graph, report, chosen) if auto else {}
    moved = _ride_along(graph, chosen) if auto else []
    problems, warnings, rows = [], [], []
    for op, support in zip(graph.ops, report.ops, strict=True):
        if op.name in chosen:
            if op.kind not in CPU_KINDS:
                problems.append(
                    f"op #{support.index} `{op.name}` ({op.kind.name}): placed on the CPU by "
                    f"{chosen[op.name]}, but the CPU has no kernel for {op.kind.name}"
                )
            if support.supported and chosen[op.name] != _RIDE:
                warnings.append(
                    f"warning: op `{op.name}` ({op.kind.name}) maps on {device}; it runs on the "
                    f"CPU because of {chosen[op.name]}"
                )
            rows.append((op, CPU, chosen[op.name] + ("" if not support.supported else " (maps)")))
        elif support.supported:
            rows.append((op, device, "maps" + (" (assumed)" if support.assumed else "")))
        else:
            rule = "" if support.fix.startswith("not mappable") else f"{support.fix}, or "
            way = (
                f"the CPU has no kernel for {op.kind.name} either"
                if op.kind not in CPU_KINDS
                else f"{rule}place it on the CPU: --cpu {op.kind.name} (or --cpu {AUTO})"
            )
            problems.append(
                f"op #{support.index} `{op.name}` ({support.kind}): {support.reason}; fix: {way}"
            )
    if problems:
        raise LegalizeError(
            f"graph `{graph.name}`: {len(problems)} op(s) cannot be placed on "
            f"{target.name}/{device} + {CPU}:\n  " + "\n  ".join(problems),
            problems,
        )
    graph = cluster(graph, {op.name for op, dev, _ in rows if dev == CPU})
    notes = _auto_notes(placed_auto, moved, graph, device) if auto else []
    placed = {op.name: (dev, why) for op, dev, why in rows}
    rows = [(op, *placed[op.name]) for op in graph.ops]
    cpu_ops = tuple(op.name for op, dev, _ in rows if dev == CPU)
    prov = dataclasses.replace(graph.provenance, cpu_ops=cpu_ops)
    graph = graph.with_(provenance=prov)
    parts = tuple(partitions(graph))
    part_of = {name: p.index for p in parts for name in p.ops}
    table = tuple(
        Placed(i, op.name, op.label, dev, why, part_of[op.name])
        for i, (op, dev, why) in enumerate(rows)
    )
    return Placement(graph, table, parts, tuple(warnings), tuple(notes))
