"""Op-prefix bisection on the device's support query, one step at a time (CLI and TUI).

The MDLA's support report is all-or-nothing (silicon fact 4), so the first op that does not map
is the K with ops [0, K) mapping and ops [0, K + 1) not: log2(N) support queries, each reported
through `on_step` as it finishes. A partitioned manifest (`compile --cpu`) is cut the same way:
`mdla-engine --ops K` runs whole partitions before the one K cuts and that one to its prefix, so
the support of an NPU partition's prefix is asked on its own device (cpu ops are never asked).

`diverge` bisects on outputs instead: an op whose result on the target differs from
`mdla_quant.run_int8`'s on agreeing inputs, for a device that maps everything and computes
something else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import mdla_legalize
import mdla_quant
import mdla_runtime
import mdla_target
from mdla_ir import Graph
from mdla_ir.devices import DEFAULT_TARGET, NPU
from mdla_ir.ops import OpKind
from mdla_runtime.engine.target import Array


@dataclass(frozen=True)
class Step:
    ops: int  # prefix length queried
    supported: int  # ops the device reports supported in that prefix
    maps: bool
    cpu: int = 0  # ops of the prefix in cpu partitions (never asked)

    def __str__(self) -> str:
        cpu = f" ({self.cpu} on cpu, not asked)" if self.cpu else ""
        verdict = "maps" if self.maps else "does not map"
        return (
            f"ops[:{self.ops}]: {self.supported}/{self.ops - self.cpu} supported{cpu} -> {verdict}"
        )


@dataclass(frozen=True)
class Culprit:
    index: int
    name: str
    kind: str
    reason: str

    def __str__(self) -> str:
        return f"first unmappable op: #{self.index} {self.name} ({self.kind}): {self.reason}"


@dataclass(frozen=True)
class OutputStep:
    ops: int  # prefix length run
    outputs: int  # tensors live at the cut
    differing: int  # of them, those not bit-exact with run_int8's

    @property
    def agrees(self) -> bool:
        return self.differing == 0


def first_failing(total: int, passes: Callable[[int], bool]) -> int | None:
    """Bisection over op prefixes: None when prefix `total` (the whole model) passes, else the
    op n - 1 of a prefix n that fails while prefix n - 1 passes (the empty prefix passes)."""
    if passes(total):
        return None
    lo, hi = 0, total  # prefix lo passes, prefix hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if passes(mid) else (lo, mid)
    return lo


def kind_name(code: int) -> str:
    try:
        return OpKind(code).name
    except ValueError:
        return f"op {code}"


def bisect(
    target: mdla_runtime.Target,
    manifest: mdla_runtime.Manifest,
    device: str = NPU,
    on_step: Callable[[Step], None] | None = None,
) -> int | None:
    """The index of the first op `device` cannot run, or None when the whole model maps."""

    def maps(n: int) -> bool:
        flags = target.supported(manifest, [device], ops=n)[device]
        cpu = sum(i < n for p in manifest.partitions if p.on_cpu for i in p.operations)
        step = Step(n, sum(flags), all(flags), cpu)
        if on_step is not None:
            on_step(step)
        return step.maps

    return first_failing(len(manifest.operations), maps)


def culprit(
    manifest: mdla_runtime.Manifest,
    index: int,
    device: str = NPU,
    graph: Graph | None = None,
    target: str = DEFAULT_TARGET,
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


def diverge(
    target: mdla_runtime.Target,
    manifest: mdla_runtime.Manifest,
    qgraph: Graph,
    inputs: list[Array],
    device: str = NPU,
    on_step: Callable[[OutputStep], None] | None = None,
) -> int | None:
    """The index of an op whose int8 output on the target differs from run_int8's while its
    inputs agree, or None when the whole model's outputs are bit-exact. It is the first such op
    when a difference, once made, stays visible at every later cut; a later op can hide one (a
    softmax absorbing a one-code difference), and then bisection may land past it.

    Prefix n runs ops [0, n) on the target (`--ops n`) and `mdla_legalize.prefix(qgraph, n)`
    through run_int8; both give the tensors live at the cut, compared by name, bit for bit. The
    empty prefix agrees (the inputs are quantized once, the same way), so bisection ends at an n
    with prefix n - 1 agreeing and prefix n not. Every input of op n - 1 is read at or after
    n - 1, so it is live at cut n - 1 and agrees there: op n - 1 itself computed another result.
    """
    if len(manifest.operations) != len(qgraph.ops):
        raise mdla_runtime.TargetError(
            f"the manifest has {len(manifest.operations)} operations, the graph "
            f"`{qgraph.name}` {len(qgraph.ops)}: an output bisection needs the graph it was "
            "saved from"
        )

    def agrees(n: int) -> bool:
        got = target.run(manifest, inputs, [device], ops=n)
        head = qgraph if n == len(qgraph.ops) else mdla_legalize.prefix(qgraph, n)
        want = dict(zip(head.outputs, mdla_quant.run_int8(head, inputs, raw=True), strict=True))
        if sorted(got.output_names) != sorted(want):
            raise mdla_runtime.TargetError(
                f"ops[:{n}]: the target returned {', '.join(got.output_names)}, the reference "
                f"{', '.join(want)}: the manifest was not saved from `{qgraph.name}`"
            )
        differing = sum(
            not np.array_equal(raw, want[name])
            for name, raw in zip(got.output_names, got.raw_outputs, strict=True)
        )
        step = OutputStep(n, len(want), differing)
        if on_step is not None:
            on_step(step)
        return step.agrees

    return first_failing(len(qgraph.ops), agrees)
