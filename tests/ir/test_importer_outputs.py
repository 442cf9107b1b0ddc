"""Model outputs that are dicts, (nested) tuples and lists of tensors import as graph outputs in
order (a dict in key order), keyed leaves named after their key; other leaves are refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import mdla_ir
from mdla_ir import IRError
from mdla_ir.importer.outputs import flatten_outputs


class Segment(nn.Module):
    """torchvision's segmentation shape: {"out": ..., "aux": ...}, aux computed first."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 4, 1), nn.Conv2d(3, 2, 1)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        aux = torch.relu(self.b(x))
        return {"out": self.a(x), "aux": aux}


class Nested(nn.Module):
    """((a, [b, c]), {"d": {"e": e}}, x): a nest of every container kind, the input itself."""

    def forward(self, x: torch.Tensor) -> Any:
        a, b, c = torch.relu(x), torch.sigmoid(x), torch.tanh(x)
        return (a, [b, c]), {"d": {"e": x * 2.0}}, x


class Twice(nn.Module):
    """The same tensor under two keys, and a key that is already another tensor's name."""

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        y = torch.relu(x)
        relu = torch.sigmoid(y)
        return {"first": y, "second": y, "x": relu}


class Scalar(nn.Module):
    def forward(self, x: torch.Tensor) -> dict[str, Any]:
        return {"out": torch.relu(x), "n": 3}


def _check_float(module: nn.Module, graph: mdla_ir.Graph, x: torch.Tensor) -> None:
    with torch.no_grad():
        want = [w.numpy() for w in flatten_outputs(module(x))]
    got = mdla_ir.run_float(graph, [x.numpy()])
    assert len(got) == len(want) == len(graph.outputs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_a_dict_output_flattens_in_key_order_named_after_its_keys() -> None:
    torch.manual_seed(0)
    module, x = Segment().eval(), torch.rand(1, 3, 5, 5)
    graph = mdla_ir.from_torch(module, (x,))
    assert graph.outputs == ("out", "aux")
    assert graph.tensors["out"].shape == (1, 4, 5, 5)
    assert graph.tensors["aux"].shape == (1, 2, 5, 5)
    producers = {o for op in graph.ops for o in op.outputs}
    assert {"out", "aux"} <= producers  # the ops write the renamed tensors
    _check_float(module, graph, x)


def test_nested_tuples_lists_and_dicts_flatten_depth_first() -> None:
    module, x = Nested().eval(), torch.rand(1, 2, 3, 3) - 0.5
    graph = mdla_ir.from_torch(module, (x,))
    assert len(graph.outputs) == 5
    assert graph.outputs[3] == "d.e"  # nested keys joined by "."
    assert graph.outputs[4] == graph.inputs[0]  # an input returned as it is keeps its name
    _check_float(module, graph, x)


def test_a_tensor_under_two_keys_and_a_taken_name() -> None:
    module, x = Twice().eval(), torch.rand(1, 2, 3, 3) - 0.5
    graph = mdla_ir.from_torch(module, (x,))
    first, third = graph.outputs  # one tensor, one output (a manifest's are distinct)
    assert first == "first"  # named after its first key
    assert third != "x"
    assert "x" in graph.inputs
    _check_float(module, graph, x)


def test_a_non_tensor_leaf_is_refused_naming_its_key() -> None:
    with pytest.raises(IRError, match=r"model outputs \['n: 3'\] are not tensors"):
        mdla_ir.from_torch(Scalar().eval(), (torch.rand(1, 2, 3, 3),))


def test_flatten_outputs_matches_the_graph_order() -> None:
    a, b, c = (torch.full((1,), float(i)) for i in range(3))
    assert [t.item() for t in flatten_outputs({"z": a, "y": (b, [c])})] == [0.0, 1.0, 2.0]
