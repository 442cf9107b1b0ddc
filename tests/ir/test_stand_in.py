"""The fx importer's shape propagation with zeros standing in for its convolutions
(`mdla_ir.importer.stand_in`) imports the very graph the real propagation imports."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import fx, nn

import mdla_ir
import mdla_ir.importer as importer
from mdla_ir.importer import stand_in


def _fingerprint(g: mdla_ir.Graph) -> list[Any]:
    """Every tensor (name, shape, dtype, constant bytes), every op, the inputs, outputs and
    provenance: equal fingerprints are the same graph bit for bit."""
    tensors = [
        (n, t.shape, t.dtype, None if t.data is None else np.ascontiguousarray(t.data).tobytes())
        for n, t in sorted(g.tensors.items())
    ]
    return [tensors, repr(g.ops), g.inputs, g.outputs, repr(g.provenance)]


def _tensor_metas(gm: fx.GraphModule) -> list[Any]:
    return [(n.name, n.meta.get("tensor_meta"), n.meta.get("type")) for n in gm.graph.nodes]


class _Spy:
    """Counts the propagations, their stand-ins, and convolutions run on real tensors."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.stand_ins: list[int] = []
        self.real_convs = 0
        self.gms: list[fx.GraphModule] = []
        propagate = importer._ValueProp.propagate
        conv = nn.Conv2d._conv_forward

        def spy_propagate(prop: Any, *args: Any) -> Any:
            try:
                return propagate(prop, *args)
            finally:
                self.stand_ins.append(len(prop.stand_ins))
                self.gms.append(prop.module)

        def spy_conv(m: nn.Conv2d, x: torch.Tensor, *args: Any) -> Any:
            self.real_convs += isinstance(x, torch.Tensor) and x.device.type != "meta"
            return conv(m, x, *args)

        monkeypatch.setattr(importer._ValueProp, "propagate", spy_propagate)
        monkeypatch.setattr(nn.Conv2d, "_conv_forward", spy_conv)


def _both(
    monkeypatch: pytest.MonkeyPatch, make: Any, x: torch.Tensor, path: str = "auto"
) -> tuple[mdla_ir.Imported, mdla_ir.Imported, _Spy, _Spy]:
    """`make()`'s module imported with stand-ins and with the real propagation (each from a
    fresh module and the same torch seed); the spies of both."""
    spies = []
    imported = []
    for flag in (True, False):
        spy = _Spy(monkeypatch)
        monkeypatch.setattr(stand_in, "STAND_INS", flag)
        torch.manual_seed(1)
        imported.append(mdla_ir.import_torch(make(), (x,), path=path))
        spies.append(spy)
        monkeypatch.undo()
    return imported[0], imported[1], spies[0], spies[1]


class _Net(nn.Module):
    """Convs (one unbiased and strided, one 'same'), BN, residual add, interpolation,
    pooling, and Python values from shapes: `size`, `shape`, `dim` and arithmetic on them."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.same = nn.Conv2d(8, 8, 3, padding="same")
        self.reflect = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn(self.stem(x)))
        y = y + self.reflect(F.relu(self.same(y)))
        h, w = y.shape[-2:]
        y = F.interpolate(y, size=(h * 2, w * 2))
        y = F.adaptive_avg_pool2d(y, 1).reshape(y.size(0), y.dim() - 5)
        return self.fc(y)


def test_stand_ins_give_the_real_propagations_graph_without_running_a_conv(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def make() -> nn.Module:
        torch.manual_seed(0)
        net = _Net().eval()
        net.bn.running_mean.uniform_(-1, 1)
        return net

    x = torch.randn(1, 3, 20, 18)
    fast, real, spy, spy_real = _both(monkeypatch, make, x)
    assert fast.path == real.path == "fx"
    assert _fingerprint(fast.graph) == _fingerprint(real.graph)
    assert spy.stand_ins == [3]
    assert spy.real_convs == 0
    assert spy_real.stand_ins == [0]
    assert spy_real.real_convs == 3
    assert _tensor_metas(spy.gms[0]) == _tensor_metas(spy_real.gms[0])


class _ReadsValues(nn.Module):
    """A Python number from a conv's values (`item`), a split's pieces (a tuple of tensors
    after a conv), and a constant drawn while the forward runs (`torch.rand` of its batch)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        a, b = torch.split(y, 2, dim=1)
        return torch.cat([a * y.abs().mean().item(), b], dim=1) + torch.rand(x.size(0))


def test_a_value_read_from_a_stand_ins_values_is_propagated_again_for_real(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def make() -> nn.Module:
        torch.manual_seed(0)
        return _ReadsValues().eval()

    x = torch.randn(1, 3, 8, 8)
    fast, real, spy, _ = _both(monkeypatch, make, x, path="fx")
    assert spy.stand_ins == [1, 0]  # the stand-in's zeros were read: run again
    # the item's number and torch.rand's draw are the real run's (the random state restored)
    assert _fingerprint(fast.graph) == _fingerprint(real.graph)
    consts = [t.data for t in fast.graph.tensors.values() if t.data is not None and t.data.size]
    assert any(np.any(c != 0) for c in consts if c.size == 1)


_counted: list[int] = []


def _counting(x: torch.Tensor) -> torch.Tensor:
    """User code the graph calls (`fx.wrap`): each run is counted."""
    _counted.append(1)
    return x


fx.wrap("_counting")


class _CallsUserCode(_ReadsValues):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _counting(super().forward(x))


def test_no_stand_ins_where_the_forward_runs_user_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in read (as in `_ReadsValues`) makes the forward run again: so none where that
    would run user code twice (a hook, a wrapped function)."""
    hooked: list[int] = []

    def make_hooked() -> nn.Module:
        torch.manual_seed(0)
        net = _ReadsValues().eval()
        net.conv.register_forward_hook(lambda *_: hooked.append(1))
        return net

    def make_calling() -> nn.Module:
        torch.manual_seed(0)
        return _CallsUserCode().eval()

    x = torch.randn(1, 3, 8, 8)
    fast, real, spy, _ = _both(monkeypatch, make_hooked, x, path="fx")
    assert spy.stand_ins == [0]
    assert len(hooked) == 2
    assert _fingerprint(fast.graph) == _fingerprint(real.graph)
    _counted.clear()
    spy = _Spy(monkeypatch)
    with pytest.raises(mdla_ir.UnsupportedError, match="_counting"):  # (after propagation)
        mdla_ir.import_torch(make_calling(), (x,), path="fx")
    assert spy.stand_ins == [0]
    assert len(_counted) == 1
