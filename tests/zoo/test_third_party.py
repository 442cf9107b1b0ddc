"""Models from timm and segmentation_models_pytorch (pinned in requirements-dev.txt), built from
the libraries' code with random weights, through `mdla_ir.from_torch` and legalize, as a user
brings them. Those that do not compile yet are strict xfails naming why: each turns into a
failure the day it starts to work, so the list stays the truth."""

from __future__ import annotations

import pytest

import mdla_ir
import mdla_legalize
from mdla_legalize import LegalizeError
from tests.models_third_party import build
from tests.zoo.emulated import compile_auto

MAPS = [
    "timm:mobilenetv3_small_050",  # BatchNormAct2d: F.batch_norm, folded
    "timm:efficientnet_lite0",
    "timm:ghostnet_100",
    "timm:lcnet_050",
    "timm:regnety_002",
    "timm:repvgg_a0",
    "timm:dla34",  # an unused result in forward (DlaTree.project)
    "smp:Unet/resnet18",
    "smp:Unet/mobilenet_v2",
    "timm:tf_mobilenetv3_small_minimal_100",  # Conv2dSame: export evaluates math.ceil on sizes
]


def _refused(raises: type[Exception], reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, raises=raises, reason=reason)


REFUSED = [
    pytest.param(
        "timm:convnext_atto",
        marks=_refused(LegalizeError, "LayerNorm needs RSQRT and GELU erf: not on the MDLA"),
    ),
]


@pytest.mark.parametrize("name", MAPS + REFUSED)
def test_maps_on_the_mdla_as_brought(name: str) -> None:
    module, example = build(name, side=64)
    graph = mdla_ir.from_torch(module, example, name=name.split(":")[1].replace("/", "_"))
    device = mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5"))
    assert device.layout == "NHWC"
    assert all(not t.is_const or t.data is not None for t in device.tensors.values())


def test_convnext_maps_with_its_norms_on_the_cpu() -> None:
    """convnext's layer scale (`gamma.reshape(1, -1, 1, 1)` in forward) used to crash the
    layout pass; with the kinds the MDLA lacks on the CPU it places in partitions."""
    module, example = build("timm:convnext_atto", side=64)
    graph = mdla_ir.from_torch(module, example, name="convnext_atto")
    target = mdla_legalize.load_target("mdla3.5")
    placed = mdla_legalize.place(graph, target, "mtk-mdla", ["LAYER_NORM,GELU"])
    kinds = {o.kind for o in placed.ops if o.device == "cpu"}
    assert kinds == {"LAYER_NORM", "GELU"}  # its permutes and Linears stay in the device layout
    assert len(placed.partitions) > 2


@pytest.mark.parametrize("name", ["smp:FPN/resnet18", "smp:FPN/mobilenet_v2"])
def test_fpn_merges_its_stacked_maps_on_the_mdla(name: str) -> None:
    """smp FPN's merge, `torch.stack(maps).sum(0)`, reduces over the axis the stack made (the
    batch axis): an ADD chain of the maps. Only its GroupNorms leave the MDLA (--cpu auto),
    and the emulator equals run_int8 bit for bit."""
    compiled, _ = compile_auto(name)
    merge = [o for o in compiled.device_graph.ops if o.name.startswith("decoder.merge.")]
    assert {o.kind.name for o in merge} == {"ADD"}
    graph = compiled.device_graph
    on_cpu = {o.kind.name for o in graph.ops if o.name in graph.provenance.cpu_ops}
    assert on_cpu == {"GROUP_NORM"}


def test_mobilevit_attends_with_batch_matmuls_and_runs_bit_exact() -> None:
    """mobilevit_xxs's attention is F.scaled_dot_product_attention: kept whole on the export
    path (its decomposition guards masked rows with `aten.eq`), it is two BATCH_MATMULs around
    a SOFTMAX, and it compiles with --cpu auto, emulator == run_int8 bit for bit."""
    compiled, _ = compile_auto("timm:mobilevit_xxs")
    attn = [o for o in compiled.float_graph.ops if o.name.startswith("stages.2.1.transformer.0.")]
    kinds = [o.kind.name for o in attn]
    assert kinds.count("BATCH_MATMUL") == 2
    assert kinds.count("SOFTMAX") == 1
