"""auto's fast path (torch.fx where it traces, maps and has no in-place hazard) changes no
result: where auto takes it, the graph equals torch.export's up to names (op kinds in order,
attributes, operand shapes, constants by value) and the quantized graphs give identical int8
outputs. Over the six bar models, zoo models, the fresh hand-written set and the third-party
models (timm; a subset, as each takes seconds: the MobileNet and lcnet families, whose blocks
the others share), int8 on a representative subset."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import mdla_ir
from tests import fresh
from tests.ir.fast_path import both, graph_differences, int8_outputs
from tests.models import MODELS, load
from tests.models_third_party import build as build_third_party

ZOO = ["mtcnn_pnet", "mtcnn_onet", "mobilenet_v3_small", "shufflenet_v2_x0_5"]
THIRD_PARTY = ["timm:mobilenetv3_small_050", "timm:lcnet_050"]
INT8 = ["squeezenet1_1", "lipnet_frontend", "mtcnn_onet", "timm:lcnet_050", "fresh"]


def _model(spec: str) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    if spec in MODELS:
        m = load(spec, frames=4)
        return m.module, tuple(m.example_inputs)
    if spec in ZOO:
        from mdla_zoo import load_model

        m = load_model(spec)
        return m.module, tuple(m.example_inputs)
    return build_third_party(spec, side=64)


def _same(spec: str, module: nn.Module, example: tuple[torch.Tensor, ...]) -> mdla_ir.Graph:
    auto, exported = both(module, example, spec.replace(":", "_"))
    assert auto.path == "fx", auto.note
    assert auto.graph.provenance.import_path == "fx"
    assert graph_differences(auto.graph, exported) == []
    return auto.graph


@pytest.mark.parametrize("spec", MODELS + ZOO + THIRD_PARTY)
def test_auto_takes_fx_and_its_graph_is_exports(spec: str) -> None:
    module, example = _model(spec)
    graph = _same(spec, module, example)
    if spec in INT8:
        _same_int8(graph, module, example, spec)


def _same_int8(
    graph: mdla_ir.Graph, module: nn.Module, example: tuple[torch.Tensor, ...], name: str
) -> None:
    exported = mdla_ir.import_torch(module, example, name=name, path="export").graph
    rng = np.random.default_rng(5)
    feeds = [[rng.standard_normal(x.shape).astype(np.float32) for x in example] for _ in range(3)]
    for a, b in zip(
        int8_outputs(graph, feeds[:2], feeds[2]),
        int8_outputs(exported, feeds[:2], feeds[2]),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)


def test_the_fresh_set_where_auto_takes_fx() -> None:
    """Every fresh model auto imports through fx (and export maps too) is export's graph; the
    others name why fx was not used. int8 identical on a sample of four."""
    taken, int8 = [], ["functional_conv", "se_net", "coord_attention", "dilated_context"]
    for name in fresh.CASES:
        module, example = fresh.build(name)
        try:
            auto = mdla_ir.import_torch(module, example, name=name)
        except mdla_ir.UnsupportedError:
            continue  # neither path maps it
        if auto.path != "fx":
            assert auto.note.endswith("; imported via torch.export"), name
            continue
        try:
            exported = mdla_ir.import_torch(module, example, name=name, path="export").graph
        except mdla_ir.UnsupportedError:
            continue  # only fx maps it: nothing to compare with
        assert graph_differences(auto.graph, exported) == [], name
        taken.append(name)
        if name in int8:
            _same_int8(auto.graph, module, example, name)
    assert len(taken) >= 40, taken


def test_reflected_operators_import_as_torch_computes_them() -> None:
    """`2 / x` is reciprocal(x) * 2 and `1 + x` is x + 1 in torch (and export); the fx path
    builds the same ops, where it used to build DIV(2, x) and ADD(1, x)."""

    class Reflected(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x * x + 1.0
            return 2.0 / y + 1.0 / y + (1.0 + y) * (3.0 * y)

    x = torch.randn(1, 2, 3, 3)
    fx = mdla_ir.from_torch(Reflected().eval(), (x,), path="fx")
    assert graph_differences(fx, mdla_ir.from_torch(Reflected().eval(), (x,), path="export")) == []
    assert "DIV" not in fx.count()
    (got,) = mdla_ir.run_float(fx, [x.numpy()])
    np.testing.assert_allclose(got, Reflected()(x).numpy(), rtol=1e-6)


def test_a_slice_of_the_whole_tensor_is_no_op() -> None:
    """torch returns the tensor itself for `x[:, :C]` with C its size (export records no
    slice); so does the fx path, where it used to build a SLICE (ghostnet's GhostModule)."""

    class Whole(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.cat([x, x * 2.0], 1)
            return y[:, :6, :, :] + 1.0

    graph = mdla_ir.from_torch(Whole().eval(), (torch.randn(1, 3, 4, 4),), path="fx")
    assert graph.count() == {"MUL": 1, "CONCATENATION": 1, "ADD": 1}
