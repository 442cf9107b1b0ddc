"""Dilated max pooling (`nn.MaxPool2d(dilation=d)`, `F.max_pool2d`, ATen) imports on both paths
by its phase decomposition (`mdla_ir/importer/dilated_pool.py`): float equal to torch, every op
on the MDLA, emulator == run_int8 == LiteRT BUILTIN_REF bit for bit, and the same through the
CPU (`--cpu`)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_compile
import mdla_ir
from mdla_compile import CompileOptions
from mdla_ir import OpKind
from mdla_ir.importer.context import Unsupported
from mdla_ir.importer.dilated_pool import phase_sources
from mdla_quant import run_int8
from mdla_runtime import open_target
from mdla_zoo import Model
from tests.models_rewrites import module_end_to_end

POOLS: list[dict[str, Any]] = [
    {"kernel_size": 3, "stride": 1, "padding": 1, "dilation": 2},
    {"kernel_size": 4, "stride": 2, "padding": 2, "dilation": 2},
    {"kernel_size": 2, "stride": 1, "padding": 0, "dilation": 3},
    {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True},
    {"kernel_size": (3, 1), "stride": 1, "padding": (1, 0), "dilation": (2, 1)},
    {"kernel_size": 3, "stride": 3, "padding": 1, "dilation": 3},
]


class Pooled(nn.Module):
    """A conv (signed output: the pool's padding matters), then the dilated pool."""

    def __init__(self, pool: dict[str, Any], functional: bool = False) -> None:
        super().__init__()
        self.conv, self.cfg, self.functional = nn.Conv2d(3, 4, 1), pool, functional
        self.pool = nn.MaxPool2d(**pool)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return F.max_pool2d(y, **self.cfg) if self.functional else self.pool(y)


@pytest.mark.parametrize("path", ["fx", "export"])
@pytest.mark.parametrize("functional", [False, True])
@pytest.mark.parametrize("pool", POOLS, ids=str)
def test_a_dilated_max_pool_computes_what_torch_does(
    pool: dict[str, Any], functional: bool, path: str
) -> None:
    torch.manual_seed(0)
    module = Pooled(pool, functional).eval()
    x = torch.randn(1, 3, 11, 10)
    graph = mdla_ir.from_torch(module, (x,), path=path)
    kinds = {o.kind for o in graph.ops}
    assert {OpKind.DEPTH_TO_SPACE, OpKind.MAX_POOL_2D} <= kinds
    with torch.no_grad():
        want = module(x).numpy()
    np.testing.assert_array_equal(mdla_ir.run_float(graph, [x.numpy()])[0], want)


def test_a_padded_position_takes_the_nearest_value_of_its_phase() -> None:
    assert phase_sources(5, 2, 1, 1) == [1, 0, 1, 2, 3, 4, 3, 4]
    assert phase_sources(4, 3, 0, 0) == [0, 1, 2, 3, 1, 2]
    with pytest.raises(Unsupported, match="no value of its phase"):
        phase_sources(1, 2, 1, 0)


def test_two_rates_are_refused_with_a_fix() -> None:
    module = Pooled({"kernel_size": 3, "padding": 1, "dilation": (2, 3)}).eval()
    with pytest.raises(Exception, match=r"dilation \(2, 3\).*fix: use the same dilation"):
        mdla_ir.from_torch(module, (torch.zeros(1, 3, 12, 12),), path="fx")


@pytest.mark.parametrize("pool", POOLS[:2], ids=str)
def test_a_dilated_max_pool_maps_and_is_bit_exact(pool: dict[str, Any], tmp_path: Path) -> None:
    """Every op on the MDLA; emulator == run_int8 == LiteRT BUILTIN_REF."""
    torch.manual_seed(0)
    result = module_end_to_end(Pooled(pool).eval(), (1, 3, 12, 12), "dilated", tmp_path, "fx")
    assert result.float_error <= 1e-6


def test_on_the_cpu_a_dilated_max_pool_is_bit_exact() -> None:
    """`--cpu MAX_POOL_2D,DEPTH_TO_SPACE`: the pool and its interleave run in a CPU partition,
    the engine equal to run_int8."""
    torch.manual_seed(0)
    module = Pooled(POOLS[1]).eval()
    rng = np.random.default_rng(0)
    shape = (1, 3, 12, 12)
    calib = [[rng.uniform(-1, 1, shape).astype(np.float32)] for _ in range(2)]
    model = Model("dilated_cpu", module, (torch.zeros(shape),), preprocess=None)
    cpu = ("MAX_POOL_2D", "DEPTH_TO_SPACE")
    compiled = mdla_compile.compile(CompileOptions(model, calib=calib, count=2, cpu=cpu))
    on_cpu = set(compiled.qgraph.provenance.cpu_ops)
    assert {o.kind for o in compiled.qgraph.ops if o.name in on_cpu} == {
        OpKind.MAX_POOL_2D,
        OpKind.DEPTH_TO_SPACE,
    }
    x = [rng.uniform(-1, 1, shape).astype(np.float32)]
    with tempfile.TemporaryDirectory() as tmp:
        manifest = compiled.save(Path(tmp) / "model.mdla", store_float=False)
        got = open_target("emu").run(manifest, x).raw_outputs
    (want,) = run_int8(compiled.qgraph, x, raw=True)
    np.testing.assert_array_equal(got[0].reshape(want.shape), want)
