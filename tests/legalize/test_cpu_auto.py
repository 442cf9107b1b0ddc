"""`--cpu auto`: exactly the ops that do not map go to the CPU, said in the notes; mixed with
explicit tokens; and legalize's refusal suggesting the `--cpu` list (by kind, and by op-name
pattern when that gives fewer device switches)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir import Graph
from mdla_ir.partitions import CPU
from mdla_legalize import AUTO, LegalizeError, place
from mdla_legalize.suggest import patterns, switches
from tests.runtime.test_engine_partitions import placed_engine_is_bit_exact
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


class FlatOut(nn.Module):
    """A model output flattened in NCHW order (the CPU's layout TRANSPOSE, then a RESHAPE that
    maps) beside a map output whose conv comes after it in the forward."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, 2, 1)
        self.cls = nn.Conv2d(8, 2, 1)
        self.box = nn.Conv2d(8, 3, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        f = torch.sigmoid(self.a(x))
        return self.cls(f).flatten(1), self.box(f)


def flat_out() -> Graph:
    return mdla_ir.from_torch(FlatOut().eval(), (torch.zeros(1, 3, 8, 8),), name="flat")


def test_auto_moves_a_reshape_to_the_cpu_when_that_spares_a_switch() -> None:
    placed = place(flat_out(), TARGET, NPU, [AUTO])
    rows = {o.name: o for o in placed.ops}
    assert [o.kind for o in placed.ops if o.device == CPU] == ["TRANSPOSE", "RESHAPE"]
    assert rows["flatten"].why == "--cpu auto, a switch fewer (maps)"
    assert (len(placed.partitions), placed.switches) == (2, 1)  # 3 and 2 with it on the NPU
    assert placed.warnings == ()  # nobody asked for it: a note, not a warning
    i = rows["flatten"].index
    assert placed.notes[-2:] == (
        "--cpu auto: moved 1 RESHAPE(s) that map to the CPU, one device switch fewer "
        "(a RESHAPE costs nothing on either):",
        f"  op #{i} `flatten` (RESHAPE)",
    )
    j = rows["flatten.to_model_0"].index  # every note numbers ops as the table does
    assert placed.notes[1].startswith(f"  op #{j} `flatten.to_model_0` (TRANSPOSE): ")


class FlatScaled(FlatOut):
    """A softmax over the flattened output, on the NPU after its RESHAPE: moving the RESHAPE to
    the CPU spares no switch (the SOFTMAX comes back to the NPU)."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cls, box = super().forward(x)
        return cls.softmax(1), box


def test_a_reshape_moves_only_under_auto_and_only_for_a_switch_fewer() -> None:
    x = torch.zeros(1, 3, 8, 8)
    placed = place(mdla_ir.from_torch(FlatScaled().eval(), (x,), name="s"), TARGET, NPU, [AUTO])
    assert [o.kind for o in placed.ops if o.device == CPU] == ["TRANSPOSE"]
    assert not any(n.startswith("--cpu auto: moved") for n in placed.notes)
    placed = place(flat_out(), TARGET, NPU, ["TRANSPOSE"])  # the user's own list, exactly
    assert [o.kind for o in placed.ops if o.device == CPU] == ["TRANSPOSE"]
    placed = place(flat_out(), TARGET, NPU, [AUTO, "box"])  # auto mixed with a name: it moves
    assert sorted(o.kind for o in placed.ops if o.device == CPU) == [
        "CONV_2D",
        "RESHAPE",
        "TRANSPOSE",
    ]
    assert placed.switches == 1


def test_the_moved_reshape_runs_bit_exact_on_the_engine(tmp_path: Path) -> None:
    placed = place(flat_out(), TARGET, NPU, [AUTO])
    placed_engine_is_bit_exact(placed.graph, (1, 3, 8, 8), tmp_path, "flat", seeds=2)
