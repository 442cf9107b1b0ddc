"""Small hand-written models for the exact-rewrite constructs of issue 15, and the end-to-end
check they all go through: legalize -> every op on mtk-mdla -> float parity with torch ->
quantize -> emulator == run_int8 == LiteRT BUILTIN_REF, bit for bit.

- `ShuffleNet`: ShuffleNetV2 blocks (chunk, torch.split, x[:, :c], view-transpose-reshape and
  nn.ChannelShuffle shuffles);
- `VGGish`: a conv stack flattened (4×4×32) into Linear layers;
- `ResNeXtish`: a bottleneck with a grouped 3×3 conv (groups 4) and a residual;
- `KeywordSpotter`: a 1-D CNN on a 16 kHz waveform (Conv1d, BatchNorm1d, pools, residual);
- `FeatureTCN`: a 1-D CNN over 40 feature channels (a multi-channel 1-D input);
- `CeilPools`: avg_pool2d(ceil_mode=True) with a partial last window, max_pool ceil_mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

Array = np.ndarray[Any, Any]


def _bn_stats(module: nn.Module, seed: int) -> nn.Module:
    """Random (non-trivial) BatchNorm statistics, so folding is exercised; eval mode."""
    g = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d | nn.BatchNorm3d):
            n = m.num_features
            assert m.running_mean is not None
            assert m.running_var is not None
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.1)
    return module.eval()


def _cbr(cin: int, cout: int, k: int = 3, s: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
    )


def shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    """torchvision's ShuffleNetV2 channel shuffle: view, transpose, reshape."""
    n, c, h, w = x.shape
    x = x.view(n, groups, c // groups, h, w)
    return torch.transpose(x, 1, 2).contiguous().view(n, -1, h, w)


class ShuffleUnit(nn.Module):
    def __init__(self, c: int, how: str) -> None:
        super().__init__()
        self.how = how
        half = c // 2
        self.branch = nn.Sequential(
            _cbr(half, half, 1),
            nn.Conv2d(half, half, 3, 1, 1, groups=half, bias=False),
            nn.BatchNorm2d(half),
            _cbr(half, half, 1),
        )
        self.shuffle = nn.ChannelShuffle(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        half = x.shape[1] // 2
        if self.how == "chunk":
            a, b = x.chunk(2, dim=1)
        elif self.how == "split":
            a, b = torch.split(x, half, dim=1)
        else:
            a, b = x[:, :half], x[:, half:]
        y = torch.cat((a, self.branch(b)), dim=1)
        return self.shuffle(y) if self.how == "split" else shuffle(y, 2)


class ShuffleNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = _cbr(3, 16, 3, 2)
        self.units = nn.Sequential(
            ShuffleUnit(16, "chunk"), ShuffleUnit(16, "split"), ShuffleUnit(16, "index")
        )
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.units(self.stem(x))
        return self.head(x.mean((2, 3)))  # type: ignore[no-any-return]


class VGGish(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            _cbr(3, 16), nn.MaxPool2d(2), _cbr(16, 32), nn.MaxPool2d(2), _cbr(32, 32)
        )
        self.avgpool = nn.AdaptiveAvgPool2d((4, 4))  # the identity on the 4×4 map
        self.classifier = nn.Sequential(
            nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Dropout(), nn.Linear(64, 10)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))  # type: ignore[no-any-return]


class ResNeXtish(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = _cbr(3, 32, 3, 2)
        self.reduce = _cbr(32, 16, 1)
        self.grouped = _cbr(16, 16, 3, 1, groups=4)
        self.expand = nn.Sequential(nn.Conv2d(16, 32, 1, bias=False), nn.BatchNorm2d(32))
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        y = F.relu(x + self.expand(self.grouped(self.reduce(x))))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))  # type: ignore[no-any-return]


class KeywordSpotter(nn.Module):
    """1 s of 16 kHz audio -> 12 keywords: a strided Conv1d front-end, residual 1-D blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.front = nn.Sequential(
            nn.Conv1d(1, 16, 80, stride=16, padding=40, bias=False), nn.BatchNorm1d(16), nn.ReLU()
        )
        self.pool = nn.MaxPool1d(4)
        self.conv1 = nn.Conv1d(16, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm1d(16)
        self.conv2 = nn.Conv1d(16, 32, 3, padding=1)
        self.avg = nn.AvgPool1d(2)
        self.gap = nn.AdaptiveAvgPool1d(1)
        self.fc = nn.Linear(32, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.front(x))
        x = F.relu(x + self.bn1(self.conv1(x)))
        x = self.avg(F.relu(self.conv2(x)))
        return self.fc(torch.flatten(self.gap(x), 1))  # type: ignore[no-any-return]


class FeatureTCN(nn.Module):
    """A temporal CNN over 40 MFCC-like features × 50 frames: a multi-channel 1-D input, held
    (N, L, C) on the device so that no TRANSPOSE is needed."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(40, 32, 3, padding=1, bias=False),
            nn.BatchNorm1d(32),
            nn.ReLU(),
            nn.Conv1d(32, 32, 3, stride=2, padding=1, groups=4),
            nn.ReLU(),
            nn.AvgPool1d(3, 2, ceil_mode=True),
        )
        self.fc = nn.Linear(32, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.body(x).mean(-1))  # type: ignore[no-any-return]


class CeilPools(nn.Module):
    """Partial last windows on a 15×15 map: max pool 3/2 ceil, average pool 2/2 ceil (the
    TF-SAME end padding, so the MDLA maps it) with count_include_pad both ways."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = _cbr(3, 8)
        self.pool = nn.MaxPool2d(3, 2, ceil_mode=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)  # 15×15
        a = F.avg_pool2d(x, 2, 2, ceil_mode=True)  # 8×8, last window 1 wide
        b = F.avg_pool2d(x, 2, 2, ceil_mode=True, count_include_pad=False)
        return self.pool(a + b)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Case:
    make: Any
    shape: tuple[int, ...]
    low: float = -1.0


CASES: dict[str, Case] = {
    "shufflenet": Case(ShuffleNet, (1, 3, 32, 32)),
    "vggish": Case(VGGish, (1, 3, 16, 16)),
    "resnextish": Case(ResNeXtish, (1, 3, 32, 32)),
    "keyword_spotter": Case(KeywordSpotter, (1, 1, 16000)),
    "feature_tcn": Case(FeatureTCN, (1, 40, 50)),
    "ceil_pools": Case(CeilPools, (1, 3, 15, 15)),
}


def build(name: str, seed: int = 0) -> tuple[nn.Module, tuple[int, ...]]:
    torch.manual_seed(seed)
    case = CASES[name]
    return _bn_stats(case.make(), seed), case.shape


def inputs(shape: tuple[int, ...], n: int, seed: int) -> list[list[Array]]:
    rng = np.random.default_rng(seed)
    return [[rng.uniform(-1.0, 1.0, shape).astype(np.float32)] for _ in range(n)]


@dataclass(frozen=True)
class Result:
    float_error: float
    ops: int
    kinds: dict[str, int]
    qgraph: mdla_ir.Graph


def end_to_end(name: str, tmp: Path) -> Result:
    """The whole path; raises AssertionError on the first disagreement."""
    module, shape = build(name)
    return module_end_to_end(module, shape, name, tmp)


def module_end_to_end(
    module: nn.Module, shape: tuple[int, ...], name: str, tmp: Path, path: str = "auto"
) -> Result:
    """`end_to_end` of a given module (imported through `path`)."""
    target = mdla_legalize.load_target("mdla3.5")
    graph = mdla_ir.from_torch(module, torch.zeros(shape), name=name, path=path)
    device = mdla_legalize.legalize(graph, target)
    report = mdla_legalize.explain(device, target)
    assert report.all_supported, str(report)
    (x,) = inputs(shape, 1, 7)
    with torch.no_grad():
        want = module(torch.from_numpy(x[0])).numpy()
    err = relative_error(mdla_ir.run_float(device, x)[0], want)
    assert err <= 1e-4, f"{name}: float IR vs torch relative error {err:.3g}"
    qgraph = quantize(device, inputs(shape, 4, 0), QuantConfig())
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
    return Result(err, len(qgraph.ops), qgraph.count(), qgraph)


def resnextish() -> tuple[nn.Module, torch.Tensor]:
    """`workbench` factory: the grouped-conv model and its example input."""
    module, shape = build("resnextish")
    return module, torch.zeros(shape)
