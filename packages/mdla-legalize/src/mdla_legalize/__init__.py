"""mdla_legalize: the MDLA target as data, rewrite rules as tables, explain, prefix cuts.

target = mdla_legalize.load_target("mdla3.5")          # or a path to a target .toml
print(mdla_legalize.explain(graph, target))             # per op: maps? why not? fix?
device_graph = mdla_legalize.legalize(graph, target)    # NHWC, every op on mtk-mdla
head = mdla_legalize.prefix(device_graph, 82)           # first 82 ops, live tensors out
placed = mdla_legalize.place(graph, target, "mtk-mdla", ["LAYER_NORM", "GELU"])  # + CPU parts
target.op("mtk-mdla", OpKind.LOGISTIC).fixed_output     # (1/256, -128) for the quantizer
"""

from __future__ import annotations

from mdla_legalize.errors import LegalizeError, UnknownRuleError
from mdla_legalize.explain import OpSupport, SupportReport, explain, int16_reasons, int16_why
from mdla_legalize.layout import to_nhwc
from mdla_legalize.legalize import known_rules, legalize, pipeline, rewrite
from mdla_legalize.partition import Placed, Placement, PlacementSpecError, parse_cpu, place
from mdla_legalize.prefix import prefix
from mdla_legalize.suggest import AUTO
from mdla_target import DeviceSpec, OpSpec, Target, known_targets, load_target  # old names kept

__all__ = [
    "AUTO",
    "DeviceSpec",
    "LegalizeError",
    "OpSpec",
    "OpSupport",
    "Placed",
    "Placement",
    "PlacementSpecError",
    "SupportReport",
    "Target",
    "UnknownRuleError",
    "explain",
    "int16_reasons",
    "int16_why",
    "known_rules",
    "known_targets",
    "legalize",
    "load_target",
    "parse_cpu",
    "pipeline",
    "place",
    "prefix",
    "rewrite",
    "to_nhwc",
]
