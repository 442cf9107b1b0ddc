"""Which activations go int16: by name patterns, or chosen by measured gain per cost.

    request = parse_a16("auto:10%")          # or "features.3.*,head" (globs), "auto" (25 %),
                                              # "joint:10%" (`mdla_quant.joint`), "refit:10%"
    costs = tensor_costs(graph)               # elements, bytes moved, 16x8 MACs per tensor
    picked = choose(sensitivity(fw, q, held), costs, budget=0.10, allowed=a16_candidates(graph))
    QuantConfig(a16=tuple(c.tensor for c in picked))

Cost of holding tensor t in int16 rather than int8, from the graph's shapes alone:
    elements   its values; the budget is a share of all activations' elements, i.e. of the
               activation bytes an all-int8 graph moves per write (int16 doubles t's share)
    bytes      extra bytes moved at 16 bits: elements * (1 write + one read per consumer)
    macs       multiply-accumulates of the weighted ops reading t, which then run 16x8:
               output elements * (filter size / output channels) (CONV_2D: KH*KW*Cin,
               DEPTHWISE_CONV_2D: KH*KW, FULLY_CONNECTED: Cin); other ops count 0
The emulator's time per tensor is not in the cost yet (it needs the 16x8 C kernels).

Choice, `auto` (greedy, the knapsack heuristic): tensors with a positive simulated gain, best
gain per element first, each taken with its group (the readers' outputs that make it read at 16
bits, `sensitivity.unit`) while the chosen elements stay within `budget` of all activations'.
Gains are measured one group at a time, so their sum is an estimate, not a bound. `joint` measures
combinations instead: backward elimination from all-int16 (`mdla_quant.joint`). `refit` is
`joint` measured on weights AdaRound fit to the int16 activations (`mdla_compile.a16`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from mdla_ir import Graph
from mdla_quant.a16 import check_a16
from mdla_quant.errors import QuantError
from mdla_quant.rewrites import WEIGHTED
from mdla_quant.sensitivity import Gain, Sensitivity

DEFAULT_BUDGET = 0.25  # share of activation bytes: issue's bound for efficientnet_lite0


@dataclass(frozen=True, slots=True)
class Request:
    """A parsed `--a16`: `auto`, `joint` (`joint` set) or `refit` (`joint` and `refit` set)
    with its budget (a share in (0, 1]), or name patterns."""

    auto: bool
    budget: float = DEFAULT_BUDGET
    patterns: tuple[str, ...] = ()
    joint: bool = False
    refit: bool = False

    @property
    def mode(self) -> str:
        """The request as a16_mode records it (`refit:25%`), or its patterns."""
        if not self.auto:
            return ",".join(self.patterns)
        name = "refit" if self.refit else "joint" if self.joint else "auto"
        return f"{name}:{self.budget * 100:g}%"


@dataclass(frozen=True, slots=True)
class Cost:
    tensor: str
    elements: int
    bytes: int
    macs: int


@dataclass(frozen=True, slots=True)
class Choice:
    """A tensor chosen for int16: why (the simulated gain of the group it came with) and what
    it costs."""

    tensor: str
    gain_db: float
    share: float  # of all activation elements
    cost: Cost


def parse_a16(text: str) -> Request:
    """`auto`, `auto:BUDGET` (`10%` or `0.1`: a share of activation bytes in (0, 100 %]), the
    same with `joint` or `refit`, or comma-separated name globs; a malformed one is a
    QuantError naming the fix."""
    spec = text.strip()
    mode = spec.split(":", 1)[0]
    if mode in ("auto", "joint", "refit"):
        raw = spec[len(mode) + 1 :].strip() or f"{DEFAULT_BUDGET:.0%}"
        try:
            budget = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
        except ValueError:
            budget = float("nan")
        if not 0.0 < budget <= 1.0:
            raise QuantError(
                f"--a16 `{text}`: the budget `{raw}` is not a share of activation bytes in "
                f"(0, 100%]: write e.g. {mode}:10% or {mode}:0.1"
            )
        return Request(True, budget, joint=mode != "auto", refit=mode == "refit")
    patterns = tuple(p.strip() for p in spec.split(","))
    if not spec or "" in patterns:
        raise QuantError(
            f"--a16 `{text}`: expected `auto[:BUDGET]`, `joint[:BUDGET]`, `refit[:BUDGET]` or "
            "comma-separated tensor/op name patterns (e.g. 'features.1.*,head'), none empty"
        )
    return Request(False, patterns=patterns)


def activations(graph: Graph) -> list[str]:
    """Graph inputs and op outputs, in graph order."""
    return [*graph.inputs, *(o for op in graph.ops for o in op.outputs)]


def select(graph: Graph, patterns: Collection[str]) -> tuple[str, ...]:
    """The activations whose name, or whose producing op's name, matches a glob; each pattern
    must match something."""
    producer = {o: op.name for op in graph.ops for o in op.outputs}
    names = activations(graph)
    picked: list[str] = []
    for pattern in patterns:
        hits = [
            n
            for n in names
            if fnmatch.fnmatchcase(n, pattern) or fnmatch.fnmatchcase(producer.get(n, n), pattern)
        ]
        if not hits:
            raise QuantError(
                f"--a16 pattern `{pattern}` matches no tensor or op of graph `{graph.name}` "
                f"(e.g. {', '.join(names[:4])}): `workbench inspect` lists the names"
            )
        picked += [n for n in hits if n not in picked]
    return tuple(picked)


def a16_candidates(graph: Graph) -> list[str]:
    """The activations `check_a16` accepts alone (the 16x8 kernels' reach, as
    `mdla_quant.a16` defines it), in graph order, graph outputs among them (a manifest's
    output may be int16); not the graph's inputs, which the host quantizes to int8."""
    ok = []
    for name in (n for n in activations(graph) if n not in graph.inputs):
        try:
            check_a16(graph, (name,))
        except QuantError:
            continue
        ok.append(name)
    return ok


def tensor_costs(graph: Graph) -> dict[str, Cost]:
    """Each activation's cost at 16 bits (see the module docstring)."""
    readers: dict[str, int] = {}
    macs: dict[str, int] = {}
    for op in graph.ops:
        for name in set(op.inputs):
            readers[name] = readers.get(name, 0) + 1
        if op.kind in WEIGHTED and len(op.inputs) > 1:
            w = graph.tensors[op.inputs[1]]
            channels = w.shape[WEIGHTED[op.kind]] or 1
            out = int(np.prod(graph.tensors[op.outputs[0]].shape))
            per = int(np.prod(w.shape)) // channels
            macs[op.inputs[0]] = macs.get(op.inputs[0], 0) + out * per
    costs = {}
    for name in activations(graph):
        elements = int(np.prod(graph.tensors[name].shape))
        moved = elements * (1 + readers.get(name, 0))
        costs[name] = Cost(name, elements, moved, macs.get(name, 0))
    return costs


def choose(
    found: Sensitivity,
    costs: dict[str, Cost],
    budget: float,
    allowed: Collection[str] | None = None,
) -> tuple[Choice, ...]:
    """Greedy by gain per element under `budget` (a share of all activation elements): each
    gain's tensors (`Gain.tensors`, the tensor alone where empty) are taken together, the
    elements of those already taken counted once."""
    total = sum(c.elements for c in costs.values())
    ok = set(costs) if allowed is None else set(allowed) & set(costs)

    def group(g: Gain) -> tuple[str, ...]:
        return g.tensors or (g.tensor,)

    usable = [g for g in found.gains if g.gain_db > 0 and all(t in ok for t in group(g))]
    ranked = sorted(
        usable, key=lambda g: -g.gain_db / max(sum(costs[t].elements for t in group(g)), 1)
    )
    picked: list[Choice] = []
    taken: set[str] = set()
    for g in ranked:
        new = [t for t in group(g) if t not in taken]
        extra = sum(costs[t].elements for t in new)
        if not new or (sum(costs[t].elements for t in taken) + extra > budget * total):
            continue
        taken.update(new)
        picked += [Choice(t, g.gain_db, costs[t].elements / total, costs[t]) for t in new]
    return tuple(picked)
