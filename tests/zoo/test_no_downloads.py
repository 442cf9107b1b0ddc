"""No model name downloads weights: torchvision segmentation and detection builders default
their backbone to ImageNet weights, which would be fetched (urlopen error offline, silently
pretrained weights online). Building them with the network cut must work."""

from __future__ import annotations

import inspect
import urllib.request

import pytest
import torch
import torchvision

from mdla_zoo import load_model
from mdla_zoo.models import no_weights


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every way torchvision fetches weights raises, and is recorded."""
    calls: list[str] = []

    def refuse(*args: object, **kwargs: object) -> None:
        calls.append(repr(args[:1]))
        raise AssertionError(f"network access: {args[:1]}")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", refuse)
    monkeypatch.setattr(torch.hub, "download_url_to_file", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    return calls


@pytest.mark.parametrize(
    "name",
    [
        "lraspp_mobilenet_v3_large",
        "deeplabv3_mobilenet_v3_large",
        "fcn_resnet50",
        "ssdlite320_mobilenet_v3_large",
    ],
)
def test_segmentation_and_detection_names_build_offline(name: str, offline: list[str]) -> None:
    model = load_model(name)
    assert not model.module.training
    assert offline == []


def test_every_torchvision_builder_gets_every_weights_parameter_as_none() -> None:
    """The cheap check over all 100+ names: no `weights*` parameter keeps its default."""
    for name in torchvision.models.list_models():
        builder = torchvision.models.get_model_builder(name)
        params = inspect.signature(builder).parameters
        given = no_weights(builder)
        assert {p for p in params if p.startswith("weights")} == set(given), name
        assert all(v is None for v in given.values())
