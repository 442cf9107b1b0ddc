"""Importing the constructs of issue 15: 1-D layers, chunk/split/indexing, ceil-mode pools.
Each imported (and legalized) graph computes what torch computes (float, 1e-5 relative)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
from mdla_ir.testing import relative_error
from mdla_legalize import explain, legalize, load_target

TARGET = load_target("mdla3.5")


class Fn(nn.Module):
    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


def _parity(module: nn.Module, shape: tuple[int, ...], legalized: bool = True) -> mdla_ir.Graph:
    torch.manual_seed(0)
    module = module.eval()
    x = torch.randn(shape)
    graph = mdla_ir.from_torch(module, x)
    if legalized:
        graph = legalize(graph, TARGET)
    with torch.no_grad():
        want = module(x).numpy()
    got = mdla_ir.run_float(graph, [x.numpy()])[0]
    assert got.shape == want.shape
    assert relative_error(got, want) <= 1e-5
    return graph


@pytest.mark.parametrize(
    "layer",
    [
        nn.Conv1d(4, 6, 5, stride=2, padding=2),
        nn.Conv1d(4, 6, 3, padding="same", dilation=2, bias=False),
        nn.Conv1d(4, 8, 3, groups=2),
        nn.Conv1d(4, 4, 3, groups=4, padding=1),
        nn.MaxPool1d(3, 2, padding=1),
        nn.MaxPool1d(2, ceil_mode=True),
        nn.AvgPool1d(3, 2, padding=1),
        nn.AvgPool1d(2, ceil_mode=True),
        nn.AdaptiveAvgPool1d(1),
        nn.AdaptiveAvgPool1d(3),
        nn.BatchNorm1d(4),
    ],
)
def test_1d_layers_are_2d_ops_on_an_h1_image(layer: nn.Module) -> None:
    if isinstance(layer, nn.BatchNorm1d):
        assert layer.running_mean is not None
        assert layer.running_var is not None
        layer.running_mean.uniform_(-1, 1)
        layer.running_var.uniform_(0.5, 2)
    graph = _parity(nn.Sequential(layer, nn.ReLU()), (2, 4, 15))
    assert all(len(graph.tensors[op.outputs[0]].shape) == 4 for op in graph.ops[1:-1])
    assert explain(graph, TARGET).all_supported
    assert graph.boundary[graph.inputs[0]] == (0, 2, 1)  # held (N, L, C): no TRANSPOSE


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: torch.cat((x.chunk(2, dim=1)[1], x.chunk(2, dim=1)[0]), 1),
        lambda x: torch.split(x, [2, 3, 3], dim=1)[1] * 2.0,
        lambda x: x[:, 2:6] + x[:, -4:],
        lambda x: x[..., 1:3, :],
        lambda x: x[:, 1],
        lambda x: F.channel_shuffle(x, 4),
    ],
)
def test_slices_import_as_slice_ops(fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
    graph = _parity(Fn(fn), (1, 8, 5, 5), legalized=False)
    assert graph.count().get("SLICE", 0) + graph.count().get("CHANNEL_SHUFFLE", 0) >= 1


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: F.max_pool1d(x, 3, 2, 1),
        lambda x: F.avg_pool1d(x, 2, ceil_mode=True),
        lambda x: F.adaptive_avg_pool1d(x, 1),
    ],
)
def test_functional_1d_pools(fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
    graph = _parity(Fn(fn), (2, 4, 15))
    assert explain(graph, TARGET).all_supported


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: torch.cat((x.chunk(2, dim=1)[1], x.chunk(2, dim=1)[0]), 1),
        lambda x: torch.split(x, [2, 3, 3], dim=1)[1] * 2.0,
        lambda x: x[:, 2:6] + x[:, -4:],
        lambda x: x.narrow(1, 3, 2) + torch.narrow(x, 1, 0, 2),
        lambda x: F.channel_shuffle(x, 4),
    ],
)
def test_channel_slices_map_as_selection_convs(fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
    graph = _parity(Fn(fn), (1, 8, 5, 5))
    assert explain(graph, TARGET).all_supported
    assert {"SLICE", "CHANNEL_SHUFFLE", "TRANSPOSE"}.isdisjoint(graph.count())


@pytest.mark.parametrize("size", [7, 8, 9])
@pytest.mark.parametrize(("k", "s", "p"), [(2, 2, 0), (3, 2, 0), (3, 2, 1), (3, 3, 1), (2, 1, 1)])
@pytest.mark.parametrize("include", [True, False])
def test_ceil_mode_average_pool_is_exact_end_padding(
    size: int, k: int, s: int, p: int, include: bool
) -> None:
    """PyTorch's ceil-mode divisors (window clipped to input + padding, or the in-bounds taps)
    equal Neuron's in-bounds count over (PAD p) + end padding, window by window."""

    def pool(x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(x, k, s, p, ceil_mode=True, count_include_pad=include)

    graph = _parity(Fn(pool), (1, 3, size, size), legalized=False)
    assert "AVERAGE_POOL_2D" in graph.count()


def test_partial_windows_the_mdla_cannot_pad_are_refused_clearly() -> None:
    """k=3, s=3 on 7: the end padding (0, 2) is not the TF-SAME (1, 1) the MDLA takes."""
    graph = mdla_ir.from_torch(
        Fn(lambda x: F.avg_pool2d(x, 3, 3, ceil_mode=True)).eval(), torch.zeros(1, 2, 7, 7)
    )
    report = explain(legalize(graph, TARGET, skip_rules=["conv_pad_to_pad_valid"]), TARGET)
    (pool,) = report.unsupported
    assert "pads (0, 2, 0, 2)" in pool.reason
    assert "TF-SAME (1, 1, 1, 1)" in pool.reason
    assert pool.fix.startswith("not mappable on this device")


def test_a_keyword_spotting_input_with_channels_is_still_exact() -> None:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv1d(1, 8, 9, stride=4), nn.ReLU(), nn.AdaptiveAvgPool1d(1))
    graph = _parity(net, (1, 1, 400))
    report = explain(graph, TARGET)
    assert report.all_supported, str(report)
    assert np.all([op.kind.name != "TRANSPOSE" for op in graph.ops])
