"""recalibrate_batchnorm: honest BN statistics for a randomly initialized model."""

from __future__ import annotations

import torch
from torch import nn

from mdla_zoo import recalibrate_batchnorm


def small() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Conv2d(4, 4, 3))


def test_statistics_are_those_of_the_data_and_the_model_ends_in_eval_mode() -> None:
    model = small()
    bn = model[1]
    assert isinstance(bn, nn.BatchNorm2d)
    recalibrate_batchnorm(model, shape=(2, 3, 16, 16), steps=3)
    assert not model.training
    assert bn.running_var is not None
    assert bn.running_mean is not None
    assert not torch.allclose(bn.running_var, torch.ones(4))
    gen = torch.Generator().manual_seed(0)
    data = [torch.rand((2, 3, 16, 16), generator=gen) * 2 - 1 for _ in range(3)]
    with torch.no_grad():
        conv = [model[0](x) for x in data]
    mean = torch.stack([c.mean(dim=(0, 2, 3)) for c in conv]).mean(0)
    torch.testing.assert_close(bn.running_mean, mean, rtol=1e-5, atol=1e-6)


def test_it_is_deterministic() -> None:
    a, b = small(), small()
    recalibrate_batchnorm(a, shape=(2, 3, 16, 16))
    recalibrate_batchnorm(b, shape=(2, 3, 16, 16))
    for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=0)
