"""Op-prefix bisection on the device's support query, one step at a time (CLI and TUI).

The MDLA's support report is all-or-nothing (silicon fact 4), so the first op that does not map
is the K with ops [0, K) mapping and ops [0, K + 1) not: log2(N) support queries, each reported
through `on_step` as it finishes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import mdla_legalize
import mdla_runtime
import mdla_target
from mdla_ir import Graph
from mdla_ir.ops import OpKind


@dataclass(frozen=True)
class Step:
    ops: int  # prefix length queried
    supported: int  # ops the device reports supported in that prefix
    maps: bool


@dataclass(frozen=True)
class Culprit:
    index: int
    name: str
    kind: str
    reason: str

    def __str__(self) -> str:
        return f"first unmappable op: #{self.index} {self.name} ({self.kind}): {self.reason}"


def kind_name(code: int) -> str:
    try:
        return OpKind(code).name
    except ValueError:
        return f"op {code}"


def bisect(
    target: mdla_runtime.Target,
    manifest: mdla_runtime.Manifest,
    device: str = "mtk-mdla",
    on_step: Callable[[Step], None] | None = None,
) -> int | None:
    """The index of the first op `device` cannot run, or None when the whole model maps."""

    def maps(n: int) -> bool:
        flags = target.supported(manifest, [device], ops=n)[device]
        step = Step(n, sum(flags), all(flags))
        if on_step is not None:
            on_step(step)
        return step.maps

    total = len(manifest.operations)
    if maps(total):
        return None
    lo, hi = 0, total  # the empty prefix maps; the whole model does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if maps(mid) else (lo, mid)
    return lo


def culprit(
    manifest: mdla_runtime.Manifest,
    index: int,
    device: str = "mtk-mdla",
    graph: Graph | None = None,
    target: str = "mdla3.5",
) -> Culprit:
    """Name the op and say why: from `explain` on its float graph when known, else from the
    target's op table (the kind's reason, or that an attribute of it does not map)."""
    op = manifest.operations[index]
    kind = kind_name(op.code)
    tgt = mdla_legalize.load_target(target)
    if graph is not None:
        for row in mdla_legalize.explain(graph, tgt, device).ops:
            if row.name == op.name and not row.supported:
                return Culprit(index, op.name, row.kind, f"{row.reason}; fix: {row.fix}")
    try:
        spec = tgt.op(device, OpKind(op.code))
        reason = (
            f"{kind} is unsupported on {device}: {spec.reason}"
            if not spec.supported
            else f"{kind} maps on {device}, so one of its attributes or operands does not "
            "(padding, dtype, per-channel weights, shape); `workbench check MODEL` says which"
        )
    except (ValueError, KeyError, mdla_legalize.LegalizeError, mdla_target.TargetDataError):
        reason = f"{kind} is not in {target}'s table for {device}"
    return Culprit(index, op.name, kind, reason)
