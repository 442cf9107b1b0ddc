"""Legalizing, and placing on the CPU the ops `cpu=` names (explicit CPU partitions).

    device = legalize_graph(source.graph, "mdla3.5", "mtk-mdla")     # LegalizeError lists ops
    placed = place_graph(source.graph, "mdla3.5", "mtk-mdla", ["LAYER_NORM,GELU"])
    print(placed)            # per op: device, partition, why; partitions; device switches

A `cpu` token that selects nothing is an OptionError; an op left on the NPU that does not map
is a LegalizeError, as without `cpu` (no automatic fallback); an op that maps but was named is
placed on the CPU with a warning (`Placement.warnings`).

`--cpu auto` also places a model-output CONCATENATION that joins a fixed-range op's values with
others (a detector's boxes in pixels beside its class probabilities): it maps on the NPU, but
no one int8 scale holds both ([0, 1) at 1/256 against 0-480 px), so the quantizer would refuse
it there; on the CPU it joins them in float32 (`mdla_quant.float_region`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_compile.errors import OptionError
from mdla_ir import Graph, OpKind
from mdla_ir.devices import DEFAULT_TARGET, NPU
from mdla_legalize import Placement
from mdla_quant.float_region import float_concats


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
        placed = mdla_legalize.place(graph, tgt, device, cpu, skip_rules)
        if mdla_legalize.AUTO not in mdla_legalize.parse_cpu(cpu):
            return placed
        mixed = mixed_output_concats(placed.graph)
        if not mixed:
            return placed
        again = mdla_legalize.place(graph, tgt, device, [*cpu, *mixed], skip_rules)
    except (mdla_legalize.PlacementSpecError, mdla_legalize.UnknownRuleError) as exc:
        raise OptionError(str(exc)) from None
    note = (
        f"--cpu {mdla_legalize.AUTO}: placed {len(mixed)} output concatenation(s) on the CPU "
        f"({', '.join(f'`{m}`' for m in mixed)}): each joins a fixed-range op's values with "
        "others, which no one int8 scale holds; the CPU joins them in float32"
    )
    return dataclasses.replace(again, notes=(*again.notes, note))


def mixed_output_concats(graph: Graph) -> list[str]:
    """The CONCATENATIONs left on the NPU that the quantizer would make float32 if they ran on
    the CPU (`mdla_quant.float_concats`: model outputs joining fixed-range values with others),
    and that it must refuse where they are."""
    concats = tuple(op.name for op in graph.ops if op.kind is OpKind.CONCATENATION)
    on_cpu = set(graph.provenance.cpu_ops)
    prov = dataclasses.replace(graph.provenance, cpu_ops=(*graph.provenance.cpu_ops, *concats))
    floats = float_concats(graph.with_(provenance=prov))
    return [op.name for op in graph.ops if op.name in floats and op.name not in on_cpu]


def output_cosine(float_graph: Graph, qgraph: Graph, sample: list[Any]) -> float:
    """Cosine of the int8 reference's first output against the float graph's on `sample`
    (what `compile` reports for a model with CPU partitions)."""
    want: Any = mdla_ir.run_float(float_graph, sample)[0]
    got: Any = mdla_quant.run_int8(qgraph, sample)[0]
    a, b = np.ravel(want).astype(np.float64), np.ravel(got).astype(np.float64)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b / norm) if norm > 0 else float(np.array_equal(a, b))
