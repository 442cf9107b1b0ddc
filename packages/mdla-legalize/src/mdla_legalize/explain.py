"""`explain(graph, target, device)`: per op, does it map, why not, and what would fix it.

The fix is the first legalize rule that rewrites the op (tried on the graph as it is, or on its
NHWC form for the device-layout rules), else "not mappable on this device: <why>". On a graph
quantized with int16 activations (`QuantConfig.a16`), each op writing one says why it is int16
(`int16_reasons`): the gain `--a16 auto` measured for it, or the request that named it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from mdla_ir import Graph, Op
from mdla_ir.devices import NPU
from mdla_ir.passes import Rewriter
from mdla_ir.provenance import QuantRecord
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
    int16: str = ""  # why the op's output is int16 (`int16_reasons`); "" when it is not


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
        lines += [f"  int16: `{o.name}` ({o.kind}): {o.int16}" for o in self.ops if o.int16]
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


def int16_reasons(graph: Graph) -> dict[str, str]:
    """{op name: why its output is int16} for a graph quantized with `QuantConfig.a16`: a
    named tensor's measured gain and the `--a16` request (`auto:25%`, or the patterns), as its
    `quant` record keeps them; a requantized copy (`x/a16`) is there for the 16x8 ops that
    read `x`. Empty for a float or all-int8 graph."""
    wide = [
        (op.name, op.outputs[0])
        for op in graph.ops
        if op.outputs[0] in graph.tensors and graph.tensors[op.outputs[0]].dtype == "int16"
    ]
    return int16_why(graph.provenance.quant, wide)


def int16_why(record: QuantRecord | None, wide: Iterable[tuple[str, str]]) -> dict[str, str]:
    """{op: why} for the (op, output) pairs `wide` whose outputs are int16 (`int16_reasons`;
    a manifest's operations give the pairs too)."""
    if record is None or not record.a16:
        return {}
    gains = dict(zip(record.a16, record.a16_gain_db, strict=False))
    how = f"--a16 {record.a16_mode}" if record.a16_mode else "QuantConfig.a16"
    found: dict[str, str] = {}
    for op, name in wide:
        if name in gains:
            found[op] = f"{gains[name]:+.2f} dB output SQNR (measured by {how})"
        elif name in record.a16:
            found[op] = f"named by {how}"
        else:
            found[op] = (
                f"a copy of `{name.removesuffix('/a16')}` for the 16x8 ops reading it ({how})"
            )
    return found


def explain(graph: Graph, target: Target, device: str = NPU) -> SupportReport:
    check_device(target, device)  # an unknown device raises, naming the known ones
    ctx = Ctx(Rewriter(graph), target, device)
    rows: list[OpSupport] = []
    tables: list[tuple[Graph, list[Rule]]] | None = None
    wide = int16_reasons(graph)
    for i, op in enumerate(graph.ops):
        problems = op_problems(graph, op, target, device, ctx)
        if not problems:
            attr, assumed = assumption(op, target.op(device, op.kind))
            row = OpSupport(i, op.name, op.label, True, assumed=assumed, assumed_attr=attr)
            rows.append(dataclasses.replace(row, int16=wide.get(op.name, "")))
            continue
        if tables is None:
            device_graph = to_nhwc(graph).graph
            tables = [(graph, MODEL_RULES + DEVICE_RULES), (device_graph, DEVICE_RULES)]
        fix = _fix(op, target, device, tables) or (f"not mappable on this device: {problems[0]}")
        row = OpSupport(i, op.name, op.label, False, "; ".join(problems), fix)
        rows.append(dataclasses.replace(row, int16=wide.get(op.name, "")))
    return SupportReport(graph.name, target.name, device, tuple(rows), tuple(graph_problems(graph)))
