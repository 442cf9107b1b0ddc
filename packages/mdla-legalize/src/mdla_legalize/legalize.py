"""`legalize(graph, target, device, skip_rules)`: rewrite a float graph into ops the device
maps, then prove it.

The pipeline (`pipeline()`): named stages of mdla_ir's pass manager, top to bottom, each run
until nothing changes: mdla_ir's import clean-up, the model-layout rules (MODEL_RULES), the
NCHW -> NHWC layout pass, the device-layout rules (DEVICE_RULES) with RELU/RELU6 fusion. Then
`explain` must find every op mapped, else LegalizeError lists each op that is not, with its
reason and fix. The rules that fired go to `graph.provenance.rules`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from mdla_ir import Graph
from mdla_ir.devices import NPU
from mdla_ir.passes import (
    PassError,
    PassResult,
    Stage,
    UnknownPassError,
    canonicalize_mean,
    canonicalize_reshapes,
    drop_identities,
    fold_batchnorm,
    fuse_activations,
    mark_depthwise,
    run_stages,
)
from mdla_ir.passes.manager import known_names
from mdla_ir.provenance import merge_rules
from mdla_legalize.channels_last import CHANNELS_LAST
from mdla_legalize.errors import LegalizeError, UnknownRuleError, check_device
from mdla_legalize.explain import explain
from mdla_legalize.layout import to_nhwc
from mdla_legalize.rules import (
    ACTIVATIONS,
    CLAMP,
    COMPOSE,
    DETECT,
    FLATTEN,
    FRAMES,
    GROUPS,
    MOVEMENT,
    PADDING,
    PATTERNS,
    POOLS,
    RADIX,
    REDUCE,
    REQUANTIZE,
    SELECTIONS,
    STRIDED,
    SUBTRACT,
    squeeze_boundary,
)
from mdla_legalize.rules.base import Rule, apply_table, rule_names
from mdla_legalize.rules.cpu_forms import CPU_FORMS
from mdla_legalize.rules.lift import LIFT
from mdla_legalize.sequences import SEQUENCES
from mdla_legalize.suggest import suggest
from mdla_target.target import Target


class Table:
    """A rule table as a pass; the pass manager can skip single rules of it (a `RuleSet`)."""

    def __init__(
        self, name: str, rules: Sequence[Rule], target: Target | None, device: str
    ) -> None:
        self.__name__ = name
        self.rules, self.target, self.device = tuple(rules), target, device

    def __call__(self, graph: Graph) -> PassResult:
        return apply_table(self.rules, graph, self.target, self.device)

    def rule_names(self) -> tuple[str, ...]:
        return tuple(rule_names(self.rules))

    def without(self, names: Collection[str]) -> Table:
        kept = [r for r in self.rules if r[1].__name__ not in names]
        return Table(self.__name__, kept, self.target, self.device)


def pipeline(target: Target | None, device: str = NPU) -> list[Stage]:
    """The stages of `legalize`; each runs to a fixed point before the next."""

    def t(name: str, rules: Sequence[Rule]) -> Table:
        return Table(name, rules, target, device)

    reshapes = canonicalize_reshapes
    cleanup = (drop_identities, reshapes, canonicalize_mean, fold_batchnorm, mark_depthwise)
    tail = (t("padding", PADDING), squeeze_boundary)
    return [
        Stage("cleanup", cleanup),  # mdla_ir import clean-up
        Stage(
            "model_layout",  # Linear, avg/adaptive pools, SiLU, hardsigmoid, groups, slices, ...
            (
                t("flatten", FLATTEN),
                t("slices", COMPOSE),
                t("channels", GROUPS + SELECTIONS),
                t("radix", RADIX),
                t("strided", STRIDED),
                t("detect", DETECT),
                t("patterns", PATTERNS),
                t("clamp", CLAMP),
                t("activations", ACTIVATIONS),
                t("subtract", SUBTRACT),
                t("pools", POOLS),
                t("lift", LIFT),
                t("requantize", REQUANTIZE),
                reshapes,
            ),
        ),
        Stage("layout", (to_nhwc,)),  # NCHW -> NHWC + boundary
        Stage(
            "device_layout",  # Conv3d, MaxPool3d, channels-last Linear, RELU fuse, PAD + VALID
            (
                t("reduce", REDUCE),
                t("frames", FRAMES),
                t("channels_last", CHANNELS_LAST + SEQUENCES),
                t("movement", MOVEMENT),
                reshapes,
                fuse_activations,
                *tail,
            ),
        ),
        Stage("cpu_forms", (t("cpu_forms", CPU_FORMS),)),  # what is left: the CPU's forms
    ]


def known_rules(target: Target | None = None, device: str = NPU) -> list[str]:
    """Every name `skip_rules` accepts: the rules of legalize's tables and its passes."""
    return known_names(pipeline(target, device))


def legalize(
    graph: Graph, target: Target, device: str = NPU, skip_rules: Collection[str] = ()
) -> Graph:
    """Rewrite `graph` for `device`; raise LegalizeError listing every op still unsupported.

    `skip_rules` names rules (or passes) that must not run (UnknownRuleError lists the known
    ones). With rules skipped the result is returned even where ops do not map: the device then
    says what it thinks of the construct the rule would have rewritten (`workbench bisect`).
    """
    graph = rewrite(graph, target, device, skip_rules)
    if skip_rules:
        return graph
    report = explain(graph, target, device)
    if not report.all_supported:
        items = [*report.notes] + [
            f"op #{o.index} `{o.name}` ({o.kind}): {o.reason}; fix: {o.fix}"
            for o in report.unsupported
        ]
        found = suggest(graph, report)
        advice = (str(found), found.by_pattern) if found else ()
        raise LegalizeError(
            f"graph `{graph.name}`: {len(items)} op(s) do not map on {target.name}/{device} "
            "after legalization:\n  "
            + "\n  ".join(items)
            + (f"\n  fix: {advice[0]}" if advice else ""),
            items,
            tuple(a for a in advice if a),
        )
    return graph


def rewrite(
    graph: Graph, target: Target, device: str = NPU, skip_rules: Collection[str] = ()
) -> Graph:
    """`legalize`'s rewrites without its proof: the device graph, every op mapped or not
    (`mdla_legalize.place` then puts the ones the user names on the CPU)."""
    check_device(target, device)
    try:
        graph, trace = run_stages(graph, pipeline(target, device), skip=skip_rules)
    except UnknownPassError as exc:
        raise UnknownRuleError(str(exc), exc.unknown, exc.known) from None
    except PassError as exc:
        raise LegalizeError(str(exc), exc.problems) from exc
    prov = graph.provenance
    rules = merge_rules(prov.rules, trace.rules())
    return graph.with_(
        provenance=dataclasses.replace(prov, target=target.name, device=device, rules=rules)
    )
