"""`explain(graph, target, device)`: per op, does it map, why not, and what would fix it.

The fix is the first legalize rule that rewrites the op (tried on the graph as it is, or on its
NHWC form for the device-layout rules), else "not mappable on this device: <why>".
"""

from __future__ import annotations

from dataclasses import dataclass

from mdla_ir import Graph, Op
from mdla_ir.devices import NPU
from mdla_ir.passes import Rewriter
from mdla_legalize.constraints import graph_problems, non_default, op_problems
from mdla_legalize.errors import check_device
from mdla_legalize.layout import to_nhwc
from mdla_legalize.rules import COSTS, DEVICE_RULES, MODEL_RULES
from mdla_legalize.rules.base import Ctx, Rule
from mdla_target.target import ATTRIBUTE_SOURCES, OpSpec, Target


@dataclass(frozen=True, slots=True)
class OpSupport:
    index: int
    name: str
    kind: str
    supported: bool
    reason: str = ""
    fix: str = ""
    assumed: str = ""  # the target entry's source when the op maps on an assumption
    assumed_attr: str = ""  # the attribute whose own source is the assumption ("dilation")


@dataclass(frozen=True, slots=True)
class SupportReport:
    graph: str
    target: str
    device: str
    ops: tuple[OpSupport, ...]
    notes: tuple[str, ...] = ()

    @property
    def all_supported(self) -> bool:
        """Every op maps; `notes` (an NCHW graph's layout) are information, not failures."""
        return all(o.supported for o in self.ops)

    @property
    def unsupported(self) -> list[OpSupport]:
        return [o for o in self.ops if not o.supported]

    def assumptions(self) -> dict[str, str]:
        """{kind: why} of the ops that map only because the target assumes it (unmeasured)."""
        found: dict[str, str] = {}
        for o in self.ops:
            if o.supported and o.assumed:
                kind = o.kind.split("+")[0]
                key = f"{kind} with {o.assumed_attr}" if o.assumed_attr else kind
                found.setdefault(key, f"maps on an assumption, not a measurement ({o.assumed})")
        return found

    def __str__(self) -> str:
        ok = sum(o.supported for o in self.ops)
        lines = [f"{self.graph} on {self.target}/{self.device}: {ok}/{len(self.ops)} ops map"]
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  assumed: {k} {why}" for k, why in self.assumptions().items()]
        rows = [("#", "op", "kind", "ok", "fix", "reason")]
        rows += [
            (str(o.index), o.name, o.kind, "yes" if o.supported else "NO", _cell(o.fix), o.reason)
            for o in self.ops
        ]
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        for r in rows:
            cells = [f"{r[c]:<{widths[c]}}" if c else f"{r[c]:>{widths[c]}}" for c in range(5)]
            lines.append(("  " + "  ".join(cells) + "  " + r[5]).rstrip())
        return "\n".join(lines)


def _cell(fix: str) -> str:
    """The table's fix cell: a rule, or `not mappable` (the reason column says why)."""
    return "not mappable" if fix.startswith("not mappable on this device") else fix


def _probe(table: list[Rule], graph: Graph, target: Target, device: str, name: str) -> str:
    """Walk `graph` with `table` as `legalize` would; the rule that rewrites op `name`, or "".
    A rule firing on a later op may take `name` with it (a RESHAPE-TRANSPOSE-RESHAPE chain)."""
    rw = Rewriter(graph)
    ctx = Ctx(rw, target, device)
    seen = False
    for op in rw:
        for kinds, fn in table:
            new = fn(op, ctx) if op.kind in kinds else None
            if new is not None:
                if op.name == name or (seen and all(o.name != name for o in rw.ops)):
                    return fn.__name__
                for o in new:
                    rw.emit(o)
                break
        else:
            seen = seen or op.name == name
            rw.emit(op)
    return ""


def _fix(op: Op, target: Target, device: str, tables: list[tuple[Graph, list[Rule]]]) -> str:
    for g, table in tables:
        if any(o.name == op.name for o in g.ops):
            found = _probe(table, g, target, device, op.name)
            if found:
                cost = COSTS.get(found)
                return f"rule {found}" + (f" ({cost(op, g)})" if cost else "")
    return ""


def assumption(op: Op, spec: OpSpec) -> tuple[str, str]:
    """(attribute, source) when `op` maps only on an assumption: an attribute of it that is not
    its default (dilation > 1) and has its own `assumed: ...` source in the target entry, else
    ("", the entry's source) when that source is an assumption, else ("", "")."""
    for attr in ATTRIBUTE_SOURCES:
        source = spec.attribute_source(attr)
        default = non_default(op, attr)
        if source.startswith("assumed") and default is not None:
            return f"{attr} other than {default}", source
    return "", spec.source if spec.source.startswith("assumed") else ""


def explain(graph: Graph, target: Target, device: str = NPU) -> SupportReport:
    check_device(target, device)  # an unknown device raises, naming the known ones
    ctx = Ctx(Rewriter(graph), target, device)
    rows: list[OpSupport] = []
    tables: list[tuple[Graph, list[Rule]]] | None = None
    for i, op in enumerate(graph.ops):
        problems = op_problems(graph, op, target, device, ctx)
        if not problems:
            attr, assumed = assumption(op, target.op(device, op.kind))
            rows.append(OpSupport(i, op.name, op.label, True, assumed=assumed, assumed_attr=attr))
            continue
        if tables is None:
            device_graph = to_nhwc(graph).graph
            tables = [(graph, MODEL_RULES + DEVICE_RULES), (device_graph, DEVICE_RULES)]
        fix = _fix(op, target, device, tables) or (f"not mappable on this device: {problems[0]}")
        rows.append(OpSupport(i, op.name, op.label, False, "; ".join(problems), fix))
    return SupportReport(graph.name, target.name, device, tuple(rows), tuple(graph_problems(graph)))
