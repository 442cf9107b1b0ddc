"""Test helpers for rules: each rule is checked alone with mdla_ir's shared pass checker.

    check_rule(silu_to_logistic_mul, graph, {"SILU": -1, "LOGISTIC": 1, "MUL": 1})

runs a one-rule table as a pass and holds it to the pass contract (verified result, op-count
delta, honest `changed`, idempotence, float outputs within 1e-5 relative).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mdla_ir import Graph
from mdla_ir.devices import NPU
from mdla_ir.passes import PassResult
from mdla_ir.testing import check_pass
from mdla_legalize.rules import ALL_RULES
from mdla_legalize.rules.base import RuleFn, apply_table
from mdla_target.target import Target


def rule_pass(
    fn: RuleFn, target: Target | None = None, device: str = NPU
) -> Callable[[Graph], PassResult]:
    """The rule `fn` (with its pattern from the rule tables) as a graph pass."""
    table = [(kinds, f) for kinds, f in ALL_RULES if f is fn]
    if not table:
        raise KeyError(f"rule `{fn.__name__}` is in no rule table")

    def one_rule(graph: Graph) -> PassResult:
        return apply_table(table, graph, target, device)

    one_rule.__name__ = fn.__name__
    return one_rule


def check_rule(
    fn: RuleFn,
    graph: Graph,
    delta: Mapping[str, int],
    target: Target | None = None,
    device: str = NPU,
    rtol: float = 1e-5,
    inputs: Sequence[np.ndarray[Any, Any]] | None = None,
) -> Graph:
    """Apply rule `fn` alone to `graph` and check it with `mdla_ir.testing.check_pass` (on
    `inputs`, or random ones)."""
    return check_pass(rule_pass(fn, target, device), graph, delta, rtol=rtol, inputs=inputs)
