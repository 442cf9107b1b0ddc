"""Dilated convolutions rest on an attribute-level assumption: CONV_2D is measured on the MDLA,
dilation > 1 is not (`dilation_source = "assumed: ..."` in the target). `explain` (so `workbench
check`) says so for exactly the dilated ops; a target that says `dilation = false` refuses
them, naming the dilation; one whose dilation source is a measurement claims no assumption."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir.graph import Op
from mdla_ir.ops import OpKind
from mdla_legalize.constraints import non_default
from mdla_target import Target, load_target

DILATED = "CONV_2D with dilation other than (1, 1)"
DEPTHWISE = "DEPTHWISE_CONV_2D with dilation other than (1, 1)"


def _graph(dilation: int, depthwise_dilation: int = 1) -> mdla_ir.Graph:
    torch.manual_seed(0)
    m = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=dilation, dilation=dilation),
        nn.ReLU(),
        nn.Conv2d(4, 4, 3, padding=depthwise_dilation, dilation=depthwise_dilation, groups=4),
    ).eval()
    graph = mdla_ir.from_torch(m, (torch.rand(1, 3, 12, 12),))
    return mdla_legalize.legalize(graph, load_target("mdla3.5"))


def _with_conv(target: Target, **changes: object) -> Target:
    dev = target.devices["mtk-mdla"]
    ops = dict(dev.ops)
    for kind in (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D):
        ops[kind] = dataclasses.replace(ops[kind], **changes)  # type: ignore[arg-type]
    devices = {**target.devices, "mtk-mdla": dataclasses.replace(dev, ops=ops)}
    return dataclasses.replace(target, devices=devices)


def test_the_shipped_target_assumes_dilation_and_measures_conv() -> None:
    t = load_target("mdla3.5")
    for kind in (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D):
        spec = t.op("mtk-mdla", kind)
        assert spec.source.startswith("measured")
        assert spec.dilation
        assert spec.attribute_source("dilation").startswith("assumed: ")
        assert "setSWDilatedConv" in spec.attribute_source("dilation")


@pytest.mark.parametrize(
    ("dilation", "depthwise", "said"),
    [(1, 1, set()), (2, 1, {DILATED}), (1, 3, {DEPTHWISE}), (2, 2, {DILATED, DEPTHWISE})],
)
def test_explain_names_the_dilated_ops_only(dilation: int, depthwise: int, said: set[str]) -> None:
    graph = _graph(dilation, depthwise)
    report = mdla_legalize.explain(graph, load_target("mdla3.5"))
    assert report.all_supported
    assert set(report.assumptions()) == said
    dilated_rows = [o for o in report.ops if o.assumed]
    assert len(dilated_rows) == len(said)
    for kind in said:
        assert f"  assumed: {kind} maps on an assumption" in str(report)


def test_a_measured_dilation_is_no_assumption() -> None:
    target = _with_conv(load_target("mdla3.5"), dilation_source="probed on a phone, 2030-01-02")
    report = mdla_legalize.explain(_graph(2, 2), target)
    assert report.all_supported
    assert report.assumptions() == {}


def test_a_target_without_dilation_refuses_it_naming_the_dilation() -> None:
    target = _with_conv(load_target("mdla3.5"), dilation=False, dilation_source="probed: fails")
    report = mdla_legalize.explain(_graph(2, 1), target)
    (row,) = report.unsupported
    assert row.kind.startswith("CONV_2D")
    assert "dilation (2, 2): CONV_2D on mtk-mdla maps only dilation (1, 1) (probed: fails)" in (
        row.reason
    )
    assert mdla_legalize.explain(_graph(1, 1), target).all_supported
    with pytest.raises(mdla_legalize.LegalizeError, match="dilation"):
        mdla_legalize.legalize(_graph(2, 1), target)


def test_only_a_dilation_other_than_one_counts() -> None:
    def conv(kind: OpKind, dilation: tuple[int, ...]) -> Op:
        return Op(kind, "c", ("x", "w"), ("y",), {"dilation": dilation})

    assert non_default(conv(OpKind.CONV_2D, (1, 1)), "dilation") is None
    assert non_default(conv(OpKind.CONV_3D, (1, 1, 1)), "dilation") is None
    assert non_default(conv(OpKind.CONV_2D, (1, 2)), "dilation") == (1, 1)
    assert non_default(conv(OpKind.CONV_3D, (1, 2, 1)), "dilation") == (1, 1)
    assert non_default(Op(OpKind.CONV_2D, "c", ("x", "w"), ("y",), {}), "dilation") is None
    assert non_default(conv(OpKind.CONV_2D, (2, 2)), "stride") is None
