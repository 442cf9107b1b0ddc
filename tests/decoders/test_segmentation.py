"""torchvision's segmentation models end to end (issue 15): `lraspp_mobilenet_v3_large`,
`deeplabv3_mobilenet_v3_large` (dilated depthwise convs, the ASPP's atrous convs and its global
pool branch upsampled from 1x1) and `fcn_resnet50` (a dilated ResNet). Random weights from the
zoo's offline builders, BatchNorm statistics from data (`recalibrate_batchnorm`), small inputs.

Each: the dict output {"out": ...} imports as the graph output `out`; the float IR matches
torch; every op of the device graph maps on mtk-mdla (the emulator's own support query agrees)
and the dilated ones say they rest on an assumption; the emulator and LiteRT's reference
kernels (the .tflite export) agree with run_int8 bit for bit.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import mdla_ir
import mdla_legalize
from mdla_ir.importer.outputs import flatten_outputs
from mdla_ir.ops import OpKind
from mdla_ir.testing import relative_error
from mdla_quant import QuantConfig, quantize
from mdla_zoo import load_model
from mdla_zoo.batchnorm import recalibrate_batchnorm
from tests.decoders.bitexact import assert_emulator_bit_exact, assert_tflite_bit_exact
from workbench.cli import app

Array = np.ndarray[Any, Any]

# Input side per model: the backbones reach output stride 16 (MobileNetV3) and 8 (dilated
# ResNet-50), so these keep a 4x4 or larger feature map and each model under a few seconds.
SIDES = {
    "lraspp_mobilenet_v3_large": 64,
    "deeplabv3_mobilenet_v3_large": 64,
    "fcn_resnet50": 32,
}
CLASSES = 21  # torchvision's segmentation heads default to the 21 VOC classes


@cache
def compiled(spec: str) -> tuple[Any, mdla_ir.Graph, mdla_ir.Graph, mdla_ir.Graph, list[Array]]:
    side = SIDES[spec]
    module = load_model(spec).module
    recalibrate_batchnorm(module, (2, 3, side, side), steps=2)
    example = torch.zeros(1, 3, side, side)
    graph = mdla_ir.from_torch(module, (example,), name=spec)
    legal = mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5"))
    rng = np.random.default_rng(1)
    shape = (1, 3, side, side)
    calib = [[rng.uniform(-1, 1, shape).astype(np.float32)] for _ in range(3)]
    qgraph = quantize(legal, calib, QuantConfig())
    return module, graph, legal, qgraph, [rng.uniform(-1, 1, shape).astype(np.float32)]


@pytest.mark.parametrize("spec", sorted(SIDES))
def test_dict_output_is_the_graph_output_out(spec: str) -> None:
    _, graph, legal, qgraph, _ = compiled(spec)
    side = SIDES[spec]
    for g in (graph, legal, qgraph):
        assert g.outputs == ("out",)
    assert graph.tensors["out"].shape == (1, CLASSES, side, side)


@pytest.mark.parametrize("spec", sorted(SIDES))
def test_float_ir_matches_torch(spec: str) -> None:
    module, graph, legal, _, xs = compiled(spec)
    with torch.no_grad():
        want = [w.numpy() for w in flatten_outputs(module(torch.from_numpy(xs[0])))]
    for g in (graph, legal):
        for got, ref in zip(mdla_ir.run_float(g, xs), want, strict=True):
            err = relative_error(got, ref)
            assert err <= 1e-4, (spec, g.layout, err)


def _dilated(graph: mdla_ir.Graph) -> set[str]:
    return {
        op.kind.name
        for op in graph.ops
        if op.kind in (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D)
        and tuple(op.attrs.dilation) != (1, 1)
    }


@pytest.mark.parametrize("spec", sorted(SIDES))
def test_every_op_maps_and_dilation_rests_on_an_assumption(spec: str) -> None:
    _, _, legal, _, _ = compiled(spec)
    report = mdla_legalize.explain(legal, mdla_legalize.load_target("mdla3.5"))
    assert report.all_supported, str(report)
    kinds = _dilated(legal)
    assert kinds, "each of these models has dilated convolutions"
    said = {k for k in report.assumptions() if "dilation" in k}
    assert said == {f"{k} with dilation other than (1, 1)" for k in kinds}
    assert "assumed: CONV_2D with dilation" in str(report) or "CONV_2D" not in kinds


@pytest.mark.parametrize("spec", sorted(SIDES))
def test_emulator_maps_every_op_and_is_bit_exact(spec: str, tmp_path: Path) -> None:
    _, _, _, qgraph, xs = compiled(spec)
    assert_emulator_bit_exact(qgraph, xs, tmp_path / f"{spec}.mdla")


@pytest.mark.parametrize("spec", sorted(SIDES))
def test_tflite_export_is_bit_exact_on_litert_reference(spec: str) -> None:
    _, _, _, qgraph, xs = compiled(spec)
    assert_tflite_bit_exact(qgraph, xs)


@pytest.mark.parametrize("spec", sorted(SIDES))
def test_the_zoo_gives_voc_labels_and_a_224_example(spec: str) -> None:
    """A label per output class (VOC's 21, background first), not ImageNet's 1000; the example
    input is 224 x 224 (torchvision evaluates at 520: `--input-shape 1,3,520,520`)."""
    model = load_model(spec)
    assert model.labels is not None
    assert len(model.labels) == CLASSES
    assert model.labels[0] == "__background__"
    assert model.labels[15] == "person"
    assert tuple(model.example_inputs[0].shape) == (1, 3, 224, 224)


def test_check_says_the_dilated_convs_rest_on_an_assumption(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`workbench check` on the zoo name: offline, every op maps (exit 0), and the dilated
    CONV_2D (ASPP) and DEPTHWISE_CONV_2D (the dilated MobileNetV3 tail) are named assumed."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access: {args[:1]}")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", refuse)
    result = CliRunner().invoke(app, ["check", "deeplabv3_mobilenet_v3_large", "--legalized"])
    assert result.exit_code == 0, result.output
    for kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        assert f"assumed: {kind} with dilation other than (1, 1) maps on an assumption" in (
            result.output
        )
    assert re.search(r"all \d+ ops of the device graph map on mtk-mdla", result.output)
