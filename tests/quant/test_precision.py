"""`mdla_quant.precision`: `--a16` parsing, name patterns, per-tensor costs and the budgeted
greedy choice."""

from __future__ import annotations

import pytest

import mdla_quant.a16
from mdla_ir import OpKind
from mdla_quant import QuantError
from mdla_quant.precision import (
    Cost,
    Request,
    a16_candidates,
    choose,
    parse_a16,
    select,
    tensor_costs,
)
from mdla_quant.sensitivity import Gain, Sensitivity
from tests.quant.test_sensitivity import mlp


def test_a16_requests_parse() -> None:
    assert parse_a16("auto") == Request(True, 0.25)
    assert parse_a16("auto:10%") == Request(True, 0.10)
    assert parse_a16("auto:0.5") == Request(True, 0.5)
    assert parse_a16(" h*, logits ") == Request(False, patterns=("h*", "logits"))
    assert parse_a16("joint") == Request(True, 0.25, joint=True)
    assert parse_a16("joint:10%") == Request(True, 0.10, joint=True)
    assert parse_a16("joint*") == Request(False, patterns=("joint*",))  # a glob, not the mode
    assert parse_a16("refit") == Request(True, 0.25, joint=True, refit=True)
    assert parse_a16("refit:50%") == Request(True, 0.5, joint=True, refit=True)


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("auto", "auto:25%"),
        ("joint:0.1", "joint:10%"),
        ("refit:12.5%", "refit:12.5%"),
        (" h*, logits ", "h*,logits"),
    ],
)
def test_a_request_names_its_mode_as_the_manifest_records_it(text: str, mode: str) -> None:
    assert parse_a16(text).mode == mode


@pytest.mark.parametrize(
    "bad", ["auto:0%", "auto:150%", "auto:ten", "auto:-0.1", "joint:2", "refit:0"]
)
def test_a_bad_budget_is_one_line_naming_the_fix(bad: str) -> None:
    mode = bad.split(":")[0]
    with pytest.raises(QuantError, match=rf"not a share of activation bytes .* e\.g\. {mode}:10%"):
        parse_a16(bad)


@pytest.mark.parametrize("bad", ["", "h,,logits", ","])
def test_an_empty_pattern_is_refused(bad: str) -> None:
    with pytest.raises(QuantError, match="none empty"):
        parse_a16(bad)


def test_patterns_select_tensors_by_their_or_their_ops_name() -> None:
    graph = mlp()
    assert select(graph, ["h*"]) == ("h", "h2")
    assert select(graph, ["logits", "x"]) == ("logits", "x")
    assert select(graph, ["h?", "h*"]) == ("h2", "h")  # each once, in the patterns' order
    with pytest.raises(QuantError, match="pattern `conv\\*` matches no tensor or op"):
        select(graph, ["h", "conv*"])


def test_costs_count_elements_reads_and_16x8_macs() -> None:
    costs = tensor_costs(mlp())
    assert costs["x"] == Cost("x", 16, 16 * 2, 16 * 32)  # read by FC h: 32 outputs x 16
    assert costs["h"] == Cost("h", 32, 64, 32 * 32)
    assert costs["logits"] == Cost("logits", 10, 10, 0)  # the output: no reader


def _found(gains: dict[str, float]) -> Sensitivity:
    return Sensitivity(20.0, None, tuple(Gain(t, 20 + g, g, None) for t, g in gains.items()))


def test_the_choice_keeps_to_the_budget_best_gain_per_byte_first() -> None:
    costs = {n: Cost(n, e, e, 0) for n, e in (("a", 50), ("b", 30), ("c", 10), ("d", 10))}
    found = _found({"a": 6.0, "b": 3.0, "c": 2.0, "d": -1.0})  # per element .12 .1 .2 -
    assert [c.tensor for c in choose(found, costs, 1.0)] == ["c", "a", "b"]  # no loss taken
    picked = choose(found, costs, 0.5)  # 50 of 100 elements: c (10), a (50) would be 60
    assert [c.tensor for c in picked] == ["c", "b"]
    assert sum(c.share for c in picked) <= 0.5
    assert picked[0].gain_db == 2.0
    assert choose(found, costs, 0.05) == ()
    assert [c.tensor for c in choose(found, costs, 1.0, allowed={"b", "d"})] == ["b"]


def test_candidates_are_what_the_16x8_kernels_take(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = mlp()
    monkeypatch.setattr(mdla_quant.a16, "A16_OPS", frozenset())
    assert a16_candidates(graph) == []
    monkeypatch.setattr(mdla_quant.a16, "A16_OPS", frozenset({OpKind.FULLY_CONNECTED}))
    assert a16_candidates(graph) == ["h", "h2", "logits"]  # not the graph's input
