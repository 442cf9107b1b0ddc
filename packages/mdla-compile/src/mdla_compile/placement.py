"""Legalizing, and placing on the CPU the ops `cpu=` names (explicit CPU partitions).

    device = legalize_graph(source.graph, "mdla3.5", "mtk-mdla")     # LegalizeError lists ops
    placed = place_graph(source.graph, "mdla3.5", "mtk-mdla", ["LAYER_NORM,GELU"])
    print(placed)            # per op: device, partition, why; partitions; device switches

A `cpu` token that selects nothing is an OptionError; an op left on the NPU that does not map
is a LegalizeError, as without `cpu` (no automatic fallback); an op that maps but was named is
placed on the CPU with a warning (`Placement.warnings`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_compile.errors import OptionError
from mdla_ir import Graph
from mdla_ir.devices import DEFAULT_TARGET, NPU
from mdla_legalize import Placement


def rule_names() -> list[str]:
    return mdla_legalize.known_rules()


def legalize_graph(
    graph: Graph, target: str = DEFAULT_TARGET, device: str = NPU, skip_rules: Sequence[str] = ()
) -> Graph:
    """The device graph; with `skip_rules` the named rules never fire and the result is not
    required to map (the device then says what it thinks of it)."""
    tgt = mdla_legalize.load_target(target)
    try:
        return mdla_legalize.legalize(graph, tgt, device, skip_rules=skip_rules)
    except mdla_legalize.UnknownRuleError as exc:
        raise OptionError(str(exc)) from None


def place_graph(
    graph: Graph, target: str, device: str, cpu: Sequence[str], skip_rules: Sequence[str] = ()
) -> Placement:
    """Legalize and place `graph` (mdla_legalize.place); a bad `cpu` token is an OptionError."""
    tgt = mdla_legalize.load_target(target)
    try:
        return mdla_legalize.place(graph, tgt, device, cpu, skip_rules)
    except (mdla_legalize.PlacementSpecError, mdla_legalize.UnknownRuleError) as exc:
        raise OptionError(str(exc)) from None


def output_cosine(float_graph: Graph, qgraph: Graph, sample: list[Any]) -> float:
    """Cosine of the int8 reference's first output against the float graph's on `sample`
    (what `compile` reports for a model with CPU partitions)."""
    want: Any = mdla_ir.run_float(float_graph, sample)[0]
    got: Any = mdla_quant.run_int8(qgraph, sample)[0]
    a, b = np.ravel(want).astype(np.float64), np.ravel(got).astype(np.float64)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b / norm) if norm > 0 else float(np.array_equal(a, b))
