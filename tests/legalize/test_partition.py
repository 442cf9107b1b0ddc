"""mdla_legalize.place: `--cpu` kinds and name patterns, the placement table, and each way a
placement is refused (a token that selects nothing, an op the CPU cannot run, an op left on the
NPU that does not map) or warned about (an op that maps anyway)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir import Graph
from mdla_ir.partitions import CPU, partitions
from mdla_legalize import LegalizeError, PlacementSpecError, parse_cpu, place
from tests.workbench.unmappable_models import convnext_block

TARGET = mdla_legalize.load_target("mdla3.5")
ALL = ["LAYER_NORM,GELU"]  # the block's Linears are 1x1 CONV_2Ds in the device layout


@pytest.fixture(scope="module")
def block() -> Graph:
    module, x = convnext_block()
    return mdla_ir.from_torch(module, (x,), name="block")


def test_parse_cpu_splits_commas_and_drops_repeats() -> None:
    assert parse_cpu(["LAYER_NORM, GELU", "GELU,features.7.*", ""]) == (
        "LAYER_NORM",
        "GELU",
        "features.7.*",
    )


def test_kinds_place_the_convnext_block(block: Graph) -> None:
    placed = place(block, TARGET, "mtk-mdla", ALL)
    assert [(o.name, o.device, o.partition) for o in placed.ops] == [
        ("dw", "mtk-mdla", 0),
        ("norm", CPU, 1),
        ("up", "mtk-mdla", 2),
        ("act", CPU, 3),
        ("down", "mtk-mdla", 4),
        ("add", "mtk-mdla", 4),
    ]
    assert placed.ops[1].why == "--cpu LAYER_NORM"
    assert placed.ops[0].why == "maps"
    assert placed.switches == 4
    assert (placed.count("mtk-mdla"), placed.count(CPU)) == (4, 2)
    assert placed.graph.provenance.cpu_ops == ("norm", "act")
    assert tuple(partitions(placed.graph)) == placed.partitions
    assert placed.partitions[4].inputs == (placed.partitions[3].outputs[0], "x")
    assert placed.warnings == ()
    text = str(placed)
    assert "5 partition(s), 4 op(s) on mtk-mdla, 2 on cpu, 4 device switch(es)" in text
    assert "partition 1 on cpu: ops #1..#1 (1), in: dw;" in text


def test_name_patterns_select_ops(block: Graph) -> None:
    placed = place(block, TARGET, "mtk-mdla", ["norm,act,up*,down*"])
    assert placed.count(CPU) == 4
    assert placed.ops[3].why == "--cpu 'act'"
    assert placed.ops[2].why == "--cpu 'up*' (maps)"


def test_a_token_that_selects_nothing_is_named(block: Graph) -> None:
    with pytest.raises(PlacementSpecError, match=r"--cpu 'features\.7\.\*' selects no op") as info:
        place(block, TARGET, "mtk-mdla", [*ALL, "features.7.*"])
    assert info.value.items == ["features.7.*"]
    with pytest.raises(PlacementSpecError, match="'SOFTMAX' selects no op"):
        place(block, TARGET, "mtk-mdla", ["SOFTMAX"])
    with pytest.raises(PlacementSpecError, match="names no op"):
        place(block, TARGET, "mtk-mdla", [" , "])


def test_an_unplaced_op_that_does_not_map_is_still_an_error(block: Graph) -> None:
    """No fallback: GELU not named -> named, with its fix."""
    with pytest.raises(LegalizeError) as info:
        place(block, TARGET, "mtk-mdla", ["LAYER_NORM"])
    assert [i.split("`")[1] for i in info.value.items] == ["act"]
    assert "fix: place it on the CPU: --cpu GELU" in info.value.items[0]
    assert "GELU needs erf" in info.value.items[0]


def test_an_op_that_maps_goes_to_the_cpu_with_a_warning(block: Graph) -> None:
    placed = place(block, TARGET, "mtk-mdla", [*ALL, "add"])
    assert placed.ops[-1].device == CPU
    assert placed.ops[-1].why == "--cpu 'add' (maps)"
    assert placed.warnings == (
        "warning: op `add` (ADD) maps on mtk-mdla; it runs on the CPU because of --cpu 'add'",
    )
    assert len(placed.partitions) == 6


class Shuffle1d(nn.Module):
    """A channel shuffle of a 1-D (N, C, L) signal: no CHANNEL_SHUFFLE on the MDLA and no CPU
    kernel for it; legalize makes it a selection CONV_2D (flat_channel_shuffle_to_selection),
    skipped here to keep it."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.channel_shuffle(self.conv(x), 2)


def test_an_op_the_cpu_cannot_run_is_refused() -> None:
    graph = mdla_ir.from_torch(Shuffle1d().eval(), (torch.zeros(1, 4, 6),), name="shuffle")
    keep = ("flat_channel_shuffle_to_selection",)
    with pytest.raises(LegalizeError, match="the CPU has no kernel for CHANNEL_SHUFFLE") as info:
        place(graph, TARGET, "mtk-mdla", ["CHANNEL_SHUFFLE,TRANSPOSE"], keep)
    assert len(info.value.items) == 1
    assert not isinstance(info.value, PlacementSpecError)
    with pytest.raises(LegalizeError, match="fix: the CPU has no kernel for CHANNEL_SHUFFLE eit"):
        place(graph, TARGET, "mtk-mdla", ["auto"], keep)
    device = mdla_legalize.legalize(graph, TARGET)  # the rule running: a selection conv
    assert [o.kind.name for o in device.ops] == ["RESHAPE", "CONV_2D", "CONV_2D", "RESHAPE"]


def test_legalize_without_cpu_is_unchanged(block: Graph) -> None:
    with pytest.raises(LegalizeError, match="2 op"):
        mdla_legalize.legalize(block, TARGET)
