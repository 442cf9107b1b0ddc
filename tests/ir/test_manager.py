"""The pass manager (mdla_ir/passes/manager.py): fixed points, verify after each pass, skips
by pass or rule name, the trace of fired rules."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np
import pytest

from mdla_ir import OpKind, run_passes
from mdla_ir.graph import Graph, same_graph
from mdla_ir.passes import (
    PassError,
    PassResult,
    Rewriter,
    RuleSet,
    Stage,
    UnknownPassError,
    drop_identities,
    fuse_activations,
    run_stages,
)
from mdla_ir.passes.manager import known_names
from mdla_ir.testing import GraphBuilder, check_pass


def positive() -> np.ndarray[Any, Any]:
    return np.random.default_rng(0).uniform(0, 5, (1, 3, 4, 4)).astype(np.float32)


def chain() -> Graph:
    """x -> DROPOUT -> RELU -> RELU -> RELU: each `relu_to_relu6` round rewrites one RELU."""
    b = GraphBuilder()
    h = b.op(OpKind.DROPOUT, [b.input("x", (1, 3, 4, 4))])
    for _ in range(3):
        h = b.op(OpKind.RELU, [h])
    return b.build(h)


class OneRelu:
    """A rule set of two rules; each call rewrites the first RELU only (so it needs rounds)."""

    __name__ = "one_relu"

    def __init__(self, skip: Collection[str] = ()) -> None:
        self.skip = frozenset(skip)

    def __call__(self, graph: Graph) -> PassResult:
        rw, fired = Rewriter(graph), {}
        for op in rw:
            if not fired and op.kind == OpKind.RELU and "relu_to_relu6" not in self.skip:
                rw.emit(op.with_(kind=OpKind.RELU6))
                fired = {"relu_to_relu6": 1}
            else:
                rw.emit(op)
        result = rw.finish()
        return PassResult(result.graph, True, fired) if result.changed else result

    def rule_names(self) -> tuple[str, ...]:
        return ("relu_to_relu6", "never_fires")

    def without(self, names: Collection[str]) -> OneRelu:
        return OneRelu(self.skip | set(names))


def test_a_pipeline_of_stages_obeys_the_pass_contract() -> None:
    """One OneRelu call is not idempotent; the stage, run to its fixed point, is."""
    assert isinstance(OneRelu(), RuleSet)
    assert not isinstance(drop_identities, RuleSet)
    stages = [Stage("clean", (drop_identities,)), Stage("rules", (OneRelu(),))]

    def pipeline(graph: Graph) -> PassResult:
        new = run_stages(graph, stages)[0]
        return PassResult(new, not same_graph(new, graph))

    # inputs >= 0 and < 6: RELU and RELU6 agree, so the float output must not move
    check_pass(pipeline, chain(), {"DROPOUT": -1, "RELU": -3, "RELU6": 3}, inputs=[positive()])


def test_stages_run_to_a_fixed_point_and_trace_what_fired() -> None:
    stages = [Stage("clean", (drop_identities,)), Stage("rules", (OneRelu(),))]
    graph, trace = run_stages(chain(), stages)
    assert graph.count() == {"RELU6": 3}
    assert trace.rules() == {"relu_to_relu6": 3}
    assert [(f.stage, f.name, f.count) for f in trace.fired] == [("rules", "relu_to_relu6", 3)]
    assert [(f.stage, f.name) for f in trace.changed] == [
        ("clean", "drop_identities"),
        ("rules", "one_relu"),
    ]
    assert trace.rounds == (("clean", 2), ("rules", 4))  # the last round changes nothing


def test_skipping_a_rule_or_a_pass() -> None:
    stages = [Stage("clean", (drop_identities,)), Stage("rules", (OneRelu(),))]
    graph, trace = run_stages(chain(), stages, skip={"relu_to_relu6"})
    assert graph.count() == {"RELU": 3}
    assert trace.rules() == {}
    graph, _ = run_stages(chain(), stages, skip={"drop_identities"})
    assert graph.count() == {"DROPOUT": 1, "RELU6": 3}


def test_an_unknown_skip_name_lists_the_known_ones() -> None:
    stages = [Stage("clean", (drop_identities, fuse_activations)), Stage("r", (OneRelu(),))]
    assert known_names(stages) == [
        "drop_identities",
        "fuse_activations",
        "one_relu",
        "relu_to_relu6",
        "never_fires",
    ]
    with pytest.raises(UnknownPassError, match="unknown rule\\(s\\) nope: known rules are") as e:
        run_stages(chain(), stages, skip={"nope", "relu_to_relu6"})
    assert e.value.unknown == ["nope"]
    assert "never_fires" in e.value.known


def test_a_broken_graph_names_the_stage_and_the_pass() -> None:
    def breaks(graph: Graph) -> PassResult:
        return PassResult(graph.with_(outputs=("nope",)), True)

    with pytest.raises(PassError, match="stage `s`: pass `breaks` broke graph `test`") as e:
        run_stages(chain(), [Stage("s", (drop_identities, breaks))])
    assert (e.value.stage, e.value.pass_name) == ("s", "breaks")
    assert e.value.problems


def test_a_stage_that_never_settles_is_an_error_naming_it() -> None:
    def flips(graph: Graph) -> PassResult:
        op = graph.ops[-1]
        kind = OpKind.RELU6 if op.kind == OpKind.RELU else OpKind.RELU
        return PassResult(graph.with_(ops=(*graph.ops[:-1], op.with_(kind=kind))), True)

    with pytest.raises(PassError, match="stage `osc` did not reach a fixed point in 5 rounds"):
        run_stages(chain(), [Stage("osc", (flips,))], max_rounds=5)


def test_run_passes_is_one_stage_to_a_fixed_point() -> None:
    assert run_passes(chain(), [drop_identities, OneRelu()]).count() == {"RELU6": 3}


def test_the_rewriter_gives_an_op_whose_inputs_stay_as_it_is() -> None:
    """Ops are immutable: the walk hands on an op none of whose inputs an alias redirects (no
    copy per op and pass), and a copy reading the alias's target where one does."""
    g = chain()
    rw = Rewriter(g)
    walked = []
    for op in rw:
        walked.append(op)
        if op.kind == OpKind.DROPOUT:
            rw.alias[op.outputs[0]] = op.inputs[0]  # dropped: its readers read its input
        else:
            rw.emit(op)
    assert walked[0] is g.ops[0]
    assert walked[1] is not g.ops[1]
    assert walked[1] == g.ops[1].with_(inputs=(g.ops[0].inputs[0],))
    assert all(a is b for a, b in zip(walked[2:], g.ops[2:], strict=True))
    assert rw.finish().graph.ops == tuple(walked[1:])
