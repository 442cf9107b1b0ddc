"""Small hand-written models for the vocabulary of issue 31 (one construct each, then
combinations), and the end-to-end check they go through on either import path: import ->
legalize -> every op on mtk-mdla -> float parity with torch -> quantize -> emulator ==
run_int8 == LiteRT BUILTIN_REF, bit for bit.

Reductions (`sum`, `amax`, `max(dim)`, `amin`), clamps with any bounds (`clamp`, `Hardtanh`,
`F.hardtanh`, one-sided), broadcasts (`expand_as` folded, `expand` and `repeat` materialized),
`AdaptiveMaxPool2d` to sizes that divide, SUB of two activations (a RepMixer-style block), and
elementwise extremes of two tensors (`maximum`, `min` with a constant, a clamp to tensors).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir.testing import relative_error
from mdla_quant import QuantConfig, quantize, run_int8
from mdla_quant.reference import quantize_inputs
from mdla_runtime import load, open_target, save
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes
from tests.models_rewrites import _bn_stats, inputs

SHAPE = (1, 3, 16, 16)


def _conv(cin: int = 3, cout: int = 8, k: int = 3, groups: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, k, 1, k // 2, groups=groups)


class SumHW(nn.Module):
    """A global sum pool into a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.fc = _conv(), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).sum(dim=(2, 3)) / 64.0)


class SumChannels(nn.Module):
    """A spatial gate from the sum over channels."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.out = _conv(), _conv(8, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return self.out(y * torch.sigmoid(y.sum(1, keepdim=True)))


class AmaxHW(nn.Module):
    """A global max pool written as amax over (H, W)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.fc = _conv(), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.amax(self.conv(x), dim=(2, 3)))


class SpatialAttention(nn.Module):
    """CBAM's spatial attention: mean and max over channels, a 7x7 conv, a sigmoid gate."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.gate = _conv(), nn.Conv2d(2, 1, 7, padding=3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        top, _ = torch.max(y, dim=1, keepdim=True)
        pooled = torch.cat([y.mean(1, keepdim=True), top], 1)
        return y * torch.sigmoid(self.gate(pooled))


class MinCentred(nn.Module):
    """Each channel minus its minimum (amin over (H, W), a broadcast SUB)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.out = _conv(), _conv(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return self.out(y - y.amin(dim=(2, 3), keepdim=True))


class ClampAsym(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv, self.out = _conv(), _conv(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.clamp(self.conv(x), -0.5, 0.75))


class HardtanhDefault(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv, self.act, self.out = _conv(), nn.Hardtanh(), _conv(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.act(self.conv(x)))


class ClampOneSided(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.out = _conv(), _conv(), _conv(16, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lo, hi = self.a(x).clamp(min=-0.25), self.b(x).clamp(max=0.3)
        return self.out(torch.cat([lo, hi], 1))


class HardtanhRelu4(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv, self.out = _conv(), _conv(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(F.hardtanh(self.conv(x), 0.0, 0.5))


class ExpandGate(nn.Module):
    """A squeeze-excite gate written with expand_as (folded into the MUL's broadcast)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.fc = _conv(), nn.Conv2d(8, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        g = torch.sigmoid(self.fc(y.mean((2, 3), keepdim=True)))
        return y * g.expand_as(y)


class ExpandConcat(nn.Module):
    """Image pooling as in ASPP: the pooled features expanded and concatenated (materialized)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.out = _conv(), _conv(16, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        pooled = y.mean((2, 3), keepdim=True).expand(-1, -1, y.shape[2], y.shape[3])
        return self.out(torch.cat([y, pooled], 1))


class RepeatTile(nn.Module):
    """A map tiled 2x2 with repeat, and a pooled vector repeated as a broadcast."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.out = _conv(), _conv(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.max_pool2d(self.conv(x), 2)
        tiled = y.repeat(1, 1, 2, 2)
        return self.out(tiled + y.mean((2, 3), keepdim=True).repeat(1, 1, 16, 16))


class AdaptiveMax(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv, self.pool, self.top = _conv(), nn.AdaptiveMaxPool2d(4), nn.AdaptiveMaxPool2d(1)
        self.fc, self.head = nn.Linear(8 * 16, 4), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return self.fc(self.pool(y).flatten(1)) + self.head(self.top(y).flatten(1))


class RepMixer(nn.Module):
    """FastViT's RepMixer: x + scale * (mixer(x) - norm(x)), SUB of two activations."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = _conv()
        self.mixer = nn.Sequential(_conv(8, 8, 3, groups=8), nn.BatchNorm2d(8))
        self.norm = nn.BatchNorm2d(8)
        self.scale = nn.Parameter(torch.full((8, 1, 1), 0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return y + self.scale * (self.mixer(y) - self.norm(y))


class SubConst(nn.Module):
    """One minus a gate (rsub) and a map minus a constant."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.out = _conv(), _conv(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return self.out((1.0 - torch.sigmoid(y)) * (y - 0.25))


class PoolClampHead(nn.Module):
    """Combination: a sum pool and a max pool over (H, W), concatenated and clipped."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.fc = _conv(), nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        top = y.max(3, keepdim=True)[0].max(2, keepdim=True).values.flatten(1)
        z = torch.cat([y.sum((2, 3)) * (1.0 / 256), top], 1)
        return self.fc(torch.clip(z, -1.0, 2.0))


class GlobalScalars(nn.Module):
    """Combination: reductions over everything to rank-0 scalars (sum, amin, max) as gates."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.out = _conv(), _conv(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        gate = torch.sigmoid(y.sum() * y.amin() * (1.0 / 512))
        return self.out(y * gate + y * torch.max(y) * 0.1)


class MaxBranches(nn.Module):
    """The elementwise max of two conv branches (torch.maximum), then a 1x1 conv."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.out = _conv(), _conv(k=5), _conv(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.maximum(self.a(x), self.b(x)))


class MinConst(nn.Module):
    """A min with a per-channel constant (broadcast) and a clamp whose bounds are tensors."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.out = _conv(), _conv(), _conv(16, 4, 1)
        self.register_buffer("cap", torch.linspace(-0.2, 0.4, 8).reshape(1, 8, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, z = self.a(x), self.b(x)
        return self.out(torch.cat([torch.min(y, self.cap), y.clamp(min=-self.cap, max=z)], 1))


@dataclass(frozen=True)
class Case:
    make: Callable[[], nn.Module]


CASES: dict[str, Case] = {
    "sum_hw": Case(SumHW),
    "sum_channels": Case(SumChannels),
    "amax_hw": Case(AmaxHW),
    "spatial_attention": Case(SpatialAttention),
    "min_centred": Case(MinCentred),
    "clamp_asym": Case(ClampAsym),
    "hardtanh_default": Case(HardtanhDefault),
    "clamp_one_sided": Case(ClampOneSided),
    "hardtanh_0_half": Case(HardtanhRelu4),
    "expand_gate": Case(ExpandGate),
    "expand_concat": Case(ExpandConcat),
    "repeat_tile": Case(RepeatTile),
    "adaptive_max": Case(AdaptiveMax),
    "repmixer": Case(RepMixer),
    "sub_const": Case(SubConst),
    "pool_clamp_head": Case(PoolClampHead),
    "global_scalars": Case(GlobalScalars),
    "max_branches": Case(MaxBranches),
    "min_const": Case(MinConst),
}


def build(name: str, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return _bn_stats(CASES[name].make(), seed)


@dataclass(frozen=True)
class Result:
    float_error: float
    kinds: dict[str, int]
    path: str


def end_to_end(name: str, tmp: Path, path: str) -> Result:
    """The whole path; raises AssertionError (or the stage's error) on the first failure."""
    module = build(name)
    target = mdla_legalize.load_target("mdla3.5")
    graph = mdla_ir.from_torch(module, torch.zeros(SHAPE), name=name, path=path)
    device = mdla_legalize.legalize(graph, target)
    (x,) = inputs(SHAPE, 1, 7)
    with torch.no_grad():
        want = module(torch.from_numpy(x[0])).numpy()
    err = relative_error(mdla_ir.run_float(device, x)[0], want)
    assert err <= 1e-4, f"{name}: float IR vs torch relative error {err:.3g}"
    qgraph = quantize(device, inputs(SHAPE, 4, 0), QuantConfig())
    manifest = load(save(qgraph, tmp / f"{name}.mdla"))
    emu = open_target("emu")
    assert emu.supported(manifest) == {"mtk-mdla": [True] * len(qgraph.ops)}
    ref = run_int8(qgraph, x, raw=True)
    result = emu.run(manifest, x)
    assert result.device == "mtk-mdla"
    for got, exp in zip(result.raw_outputs, ref, strict=True):
        np.testing.assert_array_equal(got.reshape(exp.shape), exp)
    codes = list(quantize_inputs(qgraph, x).values())
    for got, exp in zip(run_tflite_reference(tflite_bytes(qgraph), codes), ref, strict=True):
        np.testing.assert_array_equal(got.reshape(exp.shape), exp)
    return Result(err, qgraph.count(), path)
