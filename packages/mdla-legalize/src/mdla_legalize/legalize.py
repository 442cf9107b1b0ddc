"""`legalize(graph, target)`: rewrite a float graph into ops the device maps, then prove it.

The pipeline (`pipeline()`), top to bottom; each stage list runs until nothing changes:
mdla_ir's import clean-up, the model-layout rules (MODEL_RULES), the NCHW -> NHWC layout pass,
the device-layout rules (DEVICE_RULES) with RELU/RELU6 fusion, then `explain` must find every op
mapped, else LegalizeError lists each op that is not, with its reason and fix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mdla_ir import Graph
from mdla_ir.passes import (
    PassResult,
    canonicalize_mean,
    canonicalize_reshapes,
    drop_identities,
    fold_batchnorm,
    fuse_activations,
    mark_depthwise,
)
from mdla_ir.verify import problems
from mdla_legalize.errors import LegalizeError
from mdla_legalize.explain import explain
from mdla_legalize.layout import to_nhwc
from mdla_legalize.rules import (
    ACTIVATIONS,
    FRAMES,
    MOVEMENT,
    PADDING,
    PATTERNS,
    POOLS,
    squeeze_boundary,
)
from mdla_legalize.rules.base import Rule, apply_table
from mdla_legalize.target import Target

Stage = Callable[[Graph], PassResult]
MAX_ROUNDS = 16


def table(name: str, rules: Sequence[Rule], target: Target | None, device: str) -> Stage:
    def stage(graph: Graph) -> PassResult:
        return apply_table(rules, graph, target, device)

    stage.__name__ = name
    return stage


def pipeline(target: Target | None, device: str = "mtk-mdla") -> list[tuple[Stage, ...]]:
    """The stage lists of `legalize`; each list runs to a fixed point before the next."""

    def t(name: str, rules: Sequence[Rule]) -> Stage:
        return table(name, rules, target, device)

    return [
        (
            drop_identities,
            canonicalize_reshapes,
            canonicalize_mean,  # mdla_ir import clean-up
            fold_batchnorm,
            mark_depthwise,
        ),
        (
            t("patterns", PATTERNS),
            t("activations", ACTIVATIONS),  # SiLU, hardsigmoid, ...
            t("pools", POOLS),
            canonicalize_reshapes,
        ),  # Linear, avg/adaptive pools
        (to_nhwc,),  # NCHW -> NHWC + boundary
        (
            t("frames", FRAMES),
            t("movement", MOVEMENT),  # Conv3d, MaxPool3d
            canonicalize_reshapes,
            fuse_activations,
            t("padding", PADDING),
            squeeze_boundary,
        ),  # RELU fuse, PAD + VALID
    ]


def run_to_fixed_point(graph: Graph, stages: Sequence[Stage]) -> Graph:
    for _ in range(MAX_ROUNDS):
        changed = False
        for stage in stages:
            result = stage(graph)
            found = problems(result.graph)
            if found:
                raise LegalizeError(
                    f"stage `{stage.__name__}` broke graph `{graph.name}`:\n  "
                    + "\n  ".join(found),
                    found,
                )
            graph, changed = result.graph, changed or result.changed
        if not changed:
            return graph
    names = ", ".join(s.__name__ for s in stages)
    raise LegalizeError(f"stages {names} did not reach a fixed point in {MAX_ROUNDS} rounds", [])


def legalize(graph: Graph, target: Target, device: str = "mtk-mdla") -> Graph:
    """Rewrite `graph` for `device`; raise LegalizeError listing every op still unsupported."""
    target.device(device)
    for stages in pipeline(target, device):
        graph = run_to_fixed_point(graph, stages)
    graph = graph.with_(meta={**graph.meta, "target": target.name, "device": device})
    report = explain(graph, target, device)
    if not report.all_supported:
        items = [*report.notes] + [
            f"op #{o.index} `{o.name}` ({o.kind}): {o.reason}; fix: {o.fix}"
            for o in report.unsupported
        ]
        raise LegalizeError(
            f"graph `{graph.name}`: {len(items)} op(s) do not map on {target.name}/{device} "
            "after legalization:\n  " + "\n  ".join(items),
            items,
        )
    return graph
