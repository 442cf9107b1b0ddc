"""Whole models: legalized for mtk-mdla, every op maps, float parity with PyTorch."""

from __future__ import annotations

import pytest
import torch

import mdla_ir
from mdla_ir.testing import relative_error
from mdla_legalize import explain, legalize, load_target, prefix
from tests.models import load

TARGET = load_target("mdla3.5")

# Op counts after legalization (RELU/RELU6 fused into their producers).
EXPECTED = {
    "mobilenet_v2": {
        "CONV_2D": 36,
        "DEPTHWISE_CONV_2D": 17,
        "ADD": 10,
        "PAD": 5,
        "MEAN": 1,
        "RESHAPE": 1,
    },
    "resnet18": {"CONV_2D": 21, "ADD": 8, "PAD": 5, "MAX_POOL_2D": 1, "MEAN": 1, "RESHAPE": 1},
    "efficientnet_b0": {
        "CONV_2D": 66,
        "DEPTHWISE_CONV_2D": 16,
        "LOGISTIC": 65,
        "MUL": 65,
        "MEAN": 17,
        "ADD": 9,
        "PAD": 5,
        "RESHAPE": 1,
    },
    "squeezenet1_1": {"CONV_2D": 26, "MAX_POOL_2D": 3, "CONCATENATION": 8, "MEAN": 1, "RESHAPE": 1},
    "efficientnet_lite0": {
        "CONV_2D": 34,
        "DEPTHWISE_CONV_2D": 16,
        "ADD": 9,
        "MEAN": 1,
        "RESHAPE": 1,
    },
    "lipnet_frontend": {"CONV_2D": 6, "RESHAPE": 6, "MAX_POOL_2D": 3, "PAD": 1},
}


# The rules each model needed (graph.provenance.rules: rule name -> times it fired).
RULES = {
    "mobilenet_v2": {"linear_to_conv1x1": 1, "conv_pad_to_pad_valid": 5},
    "resnet18": {"linear_to_conv1x1": 1, "conv_pad_to_pad_valid": 4, "maxpool_pad_to_pad_valid": 1},
    "efficientnet_b0": {
        "silu_to_logistic_mul": 49,
        "gate_to_broadcast_mul": 16,
        "linear_to_conv1x1": 1,
        "conv_pad_to_pad_valid": 5,
    },
    "squeezenet1_1": {},
    "efficientnet_lite0": {"linear_to_conv1x1": 1, "pad_into_same_conv": 17},
    "lipnet_frontend": {
        "conv3d_to_conv2d": 3,
        "elementwise_into_reshape": 3,
        "pool3d_to_pool2d": 3,
        "conv_pad_to_pad_valid": 1,
    },
}


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def legalized(request: pytest.FixtureRequest) -> tuple[str, mdla_ir.Graph, torch.nn.Module]:
    spec = request.param
    model = load(spec, frames=5)
    graph = mdla_ir.from_torch(model.module, model.example_inputs, name=spec)
    return spec, legalize(graph, TARGET), model.module


def test_every_op_maps_on_the_mdla(legalized: tuple[str, mdla_ir.Graph, torch.nn.Module]) -> None:
    spec, graph, _ = legalized
    report = explain(graph, TARGET)
    assert report.all_supported, str(report)
    assert graph.count() == EXPECTED[spec]
    assert graph.provenance.rule_counts == RULES[spec]
    assert (graph.provenance.target, graph.provenance.device) == ("mdla3.5", "mtk-mdla")
    assert graph.layout == "NHWC"
    assert all(len(t.shape) <= 4 for t in graph.tensors.values() if not t.is_const)


def test_float_parity_with_pytorch(legalized: tuple[str, mdla_ir.Graph, torch.nn.Module]) -> None:
    _, graph, module = legalized
    x = torch.randn(graph.model_shape(graph.inputs[0]), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        want = module(x).numpy()
    (got,) = mdla_ir.run_float(graph, [x.numpy()])
    assert got.shape == want.shape
    assert relative_error(got, want) <= 1e-4


def test_legalize_is_a_fixed_point(legalized: tuple[str, mdla_ir.Graph, torch.nn.Module]) -> None:
    _, graph, _ = legalized
    again = legalize(graph, TARGET)
    assert mdla_ir.same_graph(again, graph)
    assert again.provenance == graph.provenance  # nothing fired, so no rule counted twice


def test_every_prefix_of_a_device_graph_maps(
    legalized: tuple[str, mdla_ir.Graph, torch.nn.Module],
) -> None:
    _, graph, _ = legalized
    for n in (1, len(graph) // 2, len(graph)):
        cut = prefix(graph, n)
        mdla_ir.verify(cut)
        assert explain(cut, TARGET).all_supported
