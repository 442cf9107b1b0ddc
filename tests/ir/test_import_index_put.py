"""`index_put` with constant indices (export's `y[:, idx] = v`, `torch.index_put`,
`Tensor.index_put`) imports as a CONCATENATION of runs (`importer/index_put.py`), float equal
to torch; and `torch.meshgrid` of constants folds away on fx as it does on export."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import mdla_ir
from mdla_ir import OpKind
from mdla_ir.errors import UnsupportedError
from tests.models_rewrites import module_end_to_end

Fn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Written(nn.Module):
    """Two convs; `fn(y, z)` writes into y (z: another activation)."""

    def __init__(self, fn: Fn) -> None:
        super().__init__()
        self.fn = fn
        self.conv, self.other = nn.Conv2d(3, 6, 1), nn.Conv2d(3, 2, 1)
        self.register_buffer("idx", torch.tensor([4, 1]))
        self.register_buffer("mask", torch.tensor([True, False, False, True, True, False]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(self.conv(x), self.other(x))


def _setitem(y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    y = y.clone()
    y[:, torch.tensor([0, 2])] = 0.5
    return y


def _setitem_tensor(y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    y = y.clone()
    y[:, torch.tensor([5, 3])] = z
    return y


def _setitem_rows(y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    y = y.clone()
    y[:, :, torch.tensor([0, 7])] = -1.0
    return y


EXPORT_ONLY: dict[str, Fn] = {  # fx cannot trace an item assignment on a Proxy
    "constant": _setitem,
    "tensor": _setitem_tensor,
    "rows": _setitem_rows,
}


def _check(module: nn.Module, path: str) -> mdla_ir.Graph:
    x = torch.randn(1, 3, 8, 8)
    graph = mdla_ir.from_torch(module, (x,), path=path)
    with torch.no_grad():
        want = module(x).numpy()
    # The runs are copied exactly, but the convs before them sum in the order of whichever
    # BLAS/oneDNN kernel the CPU picks (ulps apart between AVX2 and AVX-512 machines); a run at
    # the wrong index is off by the data's own scale.
    np.testing.assert_allclose(mdla_ir.run_float(graph, [x.numpy()])[0], want, rtol=1e-5, atol=1e-6)
    return graph


@pytest.mark.parametrize("name", list(EXPORT_ONLY))
def test_a_write_at_constant_indices_is_a_concatenation(name: str) -> None:
    torch.manual_seed(0)
    graph = _check(Written(EXPORT_ONLY[name]).eval(), "export")
    assert OpKind.CONCATENATION in {o.kind for o in graph.ops}


class ByMask(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 1)
        self.register_buffer("mask", torch.tensor([True, False, False, True, True, False]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        rows = torch.tensor([2, 5, 6])
        return torch.index_put(y, (torch.tensor([0]), self.mask, rows), torch.tensor(2.0))


class OneAxis(nn.Module):
    """torch.index_put / Tensor.index_put of channels (the batch index [0] of a batch of one
    broadcasts: the whole axis), a constant or an activation written."""

    def __init__(self, method: bool) -> None:
        super().__init__()
        self.conv, self.method = nn.Conv2d(3, 6, 1), method
        self.register_buffer("idx", torch.tensor([0]))
        self.register_buffer("mask", torch.tensor([True, False, False, True, True, False]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        if self.method:
            return y.index_put((self.idx, self.mask), y[0, :3] * 0.5)
        return torch.index_put(y, (self.idx, torch.tensor([4, 1])), torch.tensor(0.25))


@pytest.mark.parametrize("path", ["fx", "export"])
@pytest.mark.parametrize("method", [False, True])
def test_index_put_on_one_axis_imports_on_both_paths(method: bool, path: str) -> None:
    torch.manual_seed(0)
    _check(OneAxis(method).eval(), path)


@pytest.mark.parametrize("path", ["fx", "export"])
def test_index_put_on_two_axes_is_refused_with_a_fix(path: str) -> None:
    with pytest.raises(UnsupportedError, match=r"2 indexed axes.*fix: index one axis"):
        mdla_ir.from_torch(ByMask().eval(), (torch.zeros(1, 3, 8, 8),), path=path)


def test_a_write_at_constant_indices_maps_and_is_bit_exact(tmp_path: Path) -> None:
    """Every op on the MDLA; emulator == run_int8 == LiteRT BUILTIN_REF."""
    torch.manual_seed(0)
    module = Written(_setitem_tensor).eval()
    module_end_to_end(module, (1, 3, 8, 8), "index_put", tmp_path, "export")


class Grid(nn.Module):
    """A YOLO-style grid: meshgrid of aranges over the feature map's size, added."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        h, w = y.shape[2:]
        gy, gx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        return y + torch.stack((gx, gy)).float().unsqueeze(0) * 0.5


@pytest.mark.parametrize("path", ["fx", "export"])
def test_meshgrid_of_constants_folds_on_both_paths(path: str) -> None:
    graph = _check(Grid().eval(), path)
    assert [o.kind for o in graph.ops] == [OpKind.CONV_2D, OpKind.ADD]
