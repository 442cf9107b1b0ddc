"""The importer's vocabulary of reductions, clamps, broadcasts and adaptive max pools, on both
import paths (torch.fx and torch.export): the op each construct becomes, its attributes, the
float graph equal to torch, and the refusals that remain (each naming the construct and fix)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
from mdla_ir import OpKind, UnsupportedError
from mdla_ir.testing import relative_error

PATHS = ("fx", "export")
Fn = Callable[[torch.Tensor], torch.Tensor]


class Wrap(nn.Module):
    def __init__(self, fn: Fn, layer: nn.Module | None = None) -> None:
        super().__init__()
        self.fn, self.layer = fn, layer if layer is not None else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(self.layer(torch.relu(x) - 0.5))


def _import(fn: Fn, path: str, layer: nn.Module | None = None) -> mdla_ir.Graph:
    module = Wrap(fn, layer).eval()
    x = torch.randn(2 if path == "batch" else 1, 4, 6, 8)
    graph = mdla_ir.from_torch(module, (x,), path=path)
    with torch.no_grad():
        want = module(x).numpy()
    assert relative_error(mdla_ir.run_float(graph, [x.numpy()])[0], want) <= 1e-6
    return graph


def _only(graph: mdla_ir.Graph, kind: OpKind) -> mdla_ir.Op:
    (op,) = [o for o in graph.ops if o.kind is kind]
    return op


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("fn", "kind", "axes", "keep"),
    [
        (lambda x: x.sum(dim=(2, 3)), OpKind.REDUCE_SUM, (2, 3), False),
        (lambda x: torch.sum(x, 1, keepdim=True), OpKind.REDUCE_SUM, (1,), True),
        (lambda x: torch.amax(x, dim=(2, 3), keepdim=True), OpKind.REDUCE_MAX, (2, 3), True),
        (lambda x: x.amin(-1), OpKind.REDUCE_MIN, (3,), False),
        (lambda x: torch.max(x, dim=1, keepdim=True)[0], OpKind.REDUCE_MAX, (1,), True),
        (lambda x: x.min(2).values, OpKind.REDUCE_MIN, (2,), False),
        (lambda x: x * torch.max(x), OpKind.REDUCE_MAX, (0, 1, 2, 3), False),
    ],
)
def test_reductions_over_any_dims(
    fn: Fn, kind: OpKind, axes: tuple[int, ...], keep: bool, path: str
) -> None:
    a = _only(_import(fn, path), kind).attrs
    assert (a.axes, a.keepdims) == (axes, keep)


def test_max_over_a_dim_unpacked_ignores_the_unused_indices() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        top, _ = torch.max(x, 1)
        return top

    assert _import(fn, "fx").count() == {"SUB": 1, "RELU": 1, "REDUCE_MAX": 1}


@pytest.mark.parametrize("path", PATHS)
def test_reduction_refusals_name_the_construct_and_the_fix(path: str) -> None:
    with pytest.raises(UnsupportedError, match=r"over the batch axis \(batch 2\).*fix: reduce"):
        mdla_ir.from_torch(Wrap(lambda x: x.sum(0)).eval(), (torch.randn(2, 4, 6, 8),), path=path)


def test_the_indices_of_a_max_over_a_dim_are_refused_on_export() -> None:
    with pytest.raises(UnsupportedError, match=r"output 1 of `max` \(its indices\).*fix: use"):
        _import(lambda x: x * torch.max(x, 1, keepdim=True)[1].float(), "export")


def test_the_indices_of_a_max_over_a_dim_are_refused() -> None:
    with pytest.raises(UnsupportedError, match=r"indices of torch\.max/min.*fix: use torch"):
        _import(lambda x: torch.max(x, 1)[1].float(), "fx")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("fn", "layer", "bounds"),
    [
        (lambda x: torch.clamp(x, -0.5, 0.75), None, (-0.5, 0.75)),
        (lambda x: x.clip(max=0.3), None, (-math.inf, 0.3)),
        (lambda x: x.clamp(min=-0.25), None, (-0.25, math.inf)),
        (lambda x: F.hardtanh(x, 0.0, 0.5), None, (0.0, 0.5)),
        (lambda x: x, nn.Hardtanh(), (-1.0, 1.0)),
        (lambda x: x, nn.Hardtanh(-2.0, 3.0), (-2.0, 3.0)),
    ],
)
def test_clamps_with_any_bounds(
    fn: Fn, layer: nn.Module | None, bounds: tuple[float, float], path: str
) -> None:
    a = _only(_import(fn, path, layer), OpKind.CLAMP).attrs
    assert (a.lo, a.hi) == bounds


@pytest.mark.parametrize("path", PATHS)
def test_relu_bounds_stay_relus(path: str) -> None:
    graph = _import(lambda x: torch.clamp(x, 0.0, 6.0) + torch.clamp(x, min=0.0), path)
    assert graph.count() == {"ADD": 1, "SUB": 1, "RELU": 2, "RELU6": 1}


@pytest.mark.parametrize("path", PATHS)
def test_expand_read_by_a_broadcasting_op_folds(path: str) -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return x * x.mean((2, 3), keepdim=True).expand_as(x)

    assert _import(fn, path).count() == {"SUB": 1, "RELU": 1, "MEAN": 1, "MUL": 1}


@pytest.mark.parametrize("path", PATHS)
def test_expand_and_repeat_elsewhere_are_concatenated_copies(path: str) -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        pooled = x.mean((2, 3), keepdim=True).expand(-1, -1, 6, 8)
        return torch.cat([x, pooled, x.repeat(1, 1, 1, 2)[..., :8]], 1)

    graph = _import(fn, path)
    concats = [op for op in graph.ops if op.kind is OpKind.CONCATENATION]
    assert sorted(len(op.inputs) for op in concats) == [2, 3, 6, 8]  # H, W, the tile, the cat


@pytest.mark.parametrize("path", PATHS)
def test_adaptive_max_pool_to_a_dividing_size_is_a_max_pool(path: str) -> None:
    pool = _only(_import(lambda x: x, path, nn.AdaptiveMaxPool2d((3, 2))), OpKind.MAX_POOL_2D)
    assert (pool.attrs.kernel, pool.attrs.stride) == ((2, 4), (2, 4))
    fn: Fn = lambda x: F.adaptive_max_pool2d(x, 1)  # noqa: E731
    assert _only(_import(fn, path), OpKind.MAX_POOL_2D).attrs.kernel == (6, 8)


@pytest.mark.parametrize("path", PATHS)
def test_adaptive_max_pool_that_does_not_divide_is_its_cpu_kind(path: str) -> None:
    pool = _only(_import(lambda x: x, path, nn.AdaptiveMaxPool2d(4)), OpKind.ADAPTIVE_MAX_POOL_2D)
    assert pool.attrs.output_size == (4, 4)


@pytest.mark.parametrize("path", PATHS)
def test_a_max_pool_dilated_by_two_rates_is_refused_with_a_fix(path: str) -> None:
    with pytest.raises(
        UnsupportedError, match=r"dilation \(2, 3\).*fix: use the same dilation for H and W"
    ):
        _import(lambda x: x, path, nn.MaxPool2d(3, 1, 1, dilation=(2, 3)))
    graph = _import(lambda x: x, path, nn.MaxPool2d(1, 2, dilation=3))  # no span to dilate
    assert _only(graph, OpKind.MAX_POOL_2D).attrs.kernel == (1, 1)


def test_float_kernels_of_the_new_kinds() -> None:
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4) - 10
    b = mdla_ir.testing.GraphBuilder()
    t = b.input("x", x.shape)
    graph = b.build(
        b.op(OpKind.REDUCE_SUM, [t], name="s", axes=(1, 3), keepdims=False),
        b.op(OpKind.REDUCE_MIN, [t], name="m", axes=(2,), keepdims=True),
        b.op(OpKind.CLAMP, [t], name="c", lo=-3.0, hi=2.5),
    )
    s, m, c = mdla_ir.run_float(graph, [x])
    np.testing.assert_array_equal(s, x.sum((1, 3)))
    np.testing.assert_array_equal(m, x.min(2, keepdims=True))
    np.testing.assert_array_equal(c, np.clip(x, -3.0, 2.5))
