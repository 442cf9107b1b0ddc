"""Whole-model import: op counts after the passes and float parity with PyTorch eval."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mdla_ir
from mdla_ir.testing import relative_error
from mdla_zoo import load_model
from tests.models import load

# Op counts after the default passes (BN folded, ReLU/ReLU6 fused, dropout dropped).
EXPECTED = {
    "mobilenet_v2": {
        "CONV_2D": 35,
        "DEPTHWISE_CONV_2D": 17,
        "ADD": 10,
        "MEAN": 1,
        "RESHAPE": 1,
        "FULLY_CONNECTED": 1,
    },
    "resnet18": {
        "CONV_2D": 20,
        "MAX_POOL_2D": 1,
        "ADD": 8,
        "MEAN": 1,
        "RESHAPE": 1,
        "FULLY_CONNECTED": 1,
    },
    "efficientnet_b0": {
        "CONV_2D": 65,
        "DEPTHWISE_CONV_2D": 16,
        "SILU": 49,
        "LOGISTIC": 16,
        "MUL": 16,
        "MEAN": 17,
        "ADD": 9,
        "RESHAPE": 1,
        "FULLY_CONNECTED": 1,
    },
    "squeezenet1_1": {"CONV_2D": 26, "MAX_POOL_2D": 3, "CONCATENATION": 8, "MEAN": 1, "RESHAPE": 1},
    "efficientnet_lite0": {
        "CONV_2D": 33,
        "DEPTHWISE_CONV_2D": 16,
        "PAD": 17,
        "ADD": 9,
        "MEAN": 1,
        "RESHAPE": 1,
        "FULLY_CONNECTED": 1,
    },
    "lipnet_frontend": {"CONV_3D": 3, "RELU": 3, "MAX_POOL_3D": 3},
}


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def imported(request: pytest.FixtureRequest) -> tuple[str, mdla_ir.Graph, torch.nn.Module]:
    spec = request.param
    model = load(spec, frames=5)
    return spec, mdla_ir.from_torch(model.module, model.example_inputs, name=spec), model.module


def test_op_counts(imported: tuple[str, mdla_ir.Graph, torch.nn.Module]) -> None:
    spec, graph, _ = imported
    assert graph.count() == EXPECTED[spec]
    mdla_ir.verify(graph)


def test_float_parity_with_pytorch(imported: tuple[str, mdla_ir.Graph, torch.nn.Module]) -> None:
    _, graph, module = imported
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(graph.model_shape(graph.inputs[0]), generator=gen)
    with torch.no_grad():
        want = module(x).numpy()
    (got,) = mdla_ir.run_float(graph, [x.numpy()])
    assert got.shape == want.shape
    assert relative_error(got, want) <= 1e-4


def test_passes_preserve_the_unoptimized_graph() -> None:
    model = load_model("mobilenet_v2")
    raw = mdla_ir.from_torch(model.module, model.example_inputs, optimize=False)
    assert raw.count()["BATCH_NORM"] == 52
    assert raw.count()["RELU6"] == 35
    assert raw.count()["DROPOUT"] == 1
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    opt = mdla_ir.run_passes(raw)
    assert relative_error(mdla_ir.run_float(opt, [x])[0], mdla_ir.run_float(raw, [x])[0]) < 1e-5


def test_evaluate_streams_every_value_to_an_observer() -> None:
    model = load_model("squeezenet1_1")
    graph = mdla_ir.from_torch(model.module, model.example_inputs)
    seen: dict[str, tuple[int, ...]] = {}
    x = np.zeros((1, 3, 224, 224), np.float32)
    kept = mdla_ir.evaluate(graph, [x], keep=(), observe=lambda n, v: seen.update({n: v.shape}))
    assert kept == {}
    assert set(seen) == {*graph.inputs, *(o for op in graph.ops for o in op.outputs)}
    assert all(seen[n] == graph.tensors[n].shape for n in seen)
