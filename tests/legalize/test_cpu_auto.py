"""`--cpu auto`: exactly the ops that do not map go to the CPU, said in the notes; mixed with
explicit tokens; and legalize's refusal suggesting the `--cpu` list (by kind, and by op-name
pattern when that gives fewer device switches)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir import Graph
from mdla_ir.partitions import CPU
from mdla_legalize import AUTO, LegalizeError, place
from mdla_legalize.suggest import patterns, switches
from tests.workbench.unmappable_models import convnext_block

TARGET = mdla_legalize.load_target("mdla3.5")
NPU = "mtk-mdla"


@pytest.fixture(scope="module")
def block() -> Graph:
    module, x = convnext_block()
    return mdla_ir.from_torch(module, (x,), name="block")


def test_auto_places_exactly_the_ops_that_do_not_map(block: Graph) -> None:
    placed = place(block, TARGET, NPU, [AUTO])
    report = mdla_legalize.explain(mdla_legalize.rewrite(block, TARGET, NPU), TARGET, NPU)
    unmapped = [o.name for o in report.ops if not o.supported]
    assert list(placed.graph.provenance.cpu_ops) == unmapped
    assert [o.why for o in placed.ops if o.device == CPU] == ["--cpu auto"] * len(unmapped)
    assert placed.notes[0] == (
        "--cpu auto: placed 2 op(s) on the CPU (GELU, LAYER_NORM), as they do not map on mtk-mdla:"
    )
    assert placed.notes[1].startswith("  op #1 `norm` (LAYER_NORM): LayerNorm needs RSQRT")
    assert len(placed.notes) == 1 + len(unmapped)
    assert placed.warnings == ()


def test_auto_mixes_with_explicit_tokens(block: Graph) -> None:
    placed = place(block, TARGET, NPU, ["GELU,auto", "add"])
    why = {o.name: o.why for o in placed.ops}
    assert why["act"] == "--cpu GELU"  # an explicit token names the op first
    assert why["norm"] == "--cpu auto"
    assert why["add"] == "--cpu 'add' (maps)"
    assert why["dw"] == "maps"
    assert "placed 1 op(s)" in placed.notes[0]
    assert len(placed.warnings) == 1


class Plain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


def test_auto_on_a_graph_that_maps_places_nothing_and_says_so() -> None:
    graph = mdla_ir.from_torch(Plain().eval(), (torch.zeros(1, 3, 4, 4),), name="plain")
    placed = place(graph, TARGET, NPU, [AUTO])
    assert placed.graph.provenance.cpu_ops == ()
    assert placed.notes == (
        "--cpu auto: every other op maps on mtk-mdla; it placed none on the CPU",
    )


def test_legalize_suggests_the_cpu_list(block: Graph) -> None:
    with pytest.raises(LegalizeError) as info:
        mdla_legalize.legalize(block, TARGET, NPU)
    want = "run them on the CPU: --cpu auto (here: --cpu LAYER_NORM,GELU; 4 device switch(es))"
    assert info.value.advice == (want,)  # two CPU ops apart: no pattern does better
    assert str(info.value).endswith("\n  fix: " + want)


class Head(nn.Module):
    """A backbone that maps, then a head whose GELUs alternate with convs: placing GELU by kind
    switches devices six times, the head's pattern once."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(*(nn.Conv2d(4, 4, 1) for _ in range(8)))
        self.head = nn.Sequential(*(m for _ in range(3) for m in (nn.Conv2d(4, 4, 1), nn.GELU())))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.head(self.body(x)))


def test_a_module_pattern_is_suggested_when_it_switches_less() -> None:
    graph = mdla_ir.from_torch(Head().eval(), (torch.zeros(1, 4, 4, 4),), name="head")
    with pytest.raises(LegalizeError) as info:
        mdla_legalize.legalize(graph, TARGET, NPU)
    assert info.value.advice == (
        "run them on the CPU: --cpu auto (here: --cpu GELU; 6 device switch(es))",
        "fewer device switches (2 instead of 6): --cpu 'head.*'",
    )
    placed = place(graph, TARGET, NPU, ["head.*"])
    assert placed.switches == 2
    assert placed.count(CPU) == 6


def test_patterns_never_take_more_than_half_the_graph() -> None:
    graph = mdla_ir.from_torch(Head().eval(), (torch.zeros(1, 4, 4, 4),), name="head")
    device = mdla_legalize.rewrite(graph, TARGET, NPU)
    base = [op.kind.name == "GELU" for op in device.ops]
    found = patterns(device, base)
    assert found is not None
    assert sum(found[1]) <= len(device.ops) // 2
    assert switches(found[1]) < switches(base)
    assert patterns(device, [False] * len(device.ops)) is None
