"""Model specs: torchvision names, EfficientNet-Lite0/1/2's real weights, factories, weights
files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import skimage.data
import torch

import mdla_ir
from mdla_zoo import Model, ZooError, load_model


@pytest.mark.parametrize(
    ("spec", "side"),
    [("efficientnet_lite0", 224), ("efficientnet_lite1", 240), ("efficientnet_lite2", 260)],
)
def test_real_weights_classify_a_cat(spec: str, side: int) -> None:
    model = load_model(spec)
    assert tuple(model.example_inputs[0].shape) == (1, 3, side, side)
    assert model.prepare(skimage.data.chelsea()).shape == (1, 3, side, side)
    graph = mdla_ir.from_torch(model.module, model.example_inputs)
    (logits,) = mdla_ir.run_float(graph, [model.prepare(skimage.data.chelsea())])
    assert model.labels is not None
    top = model.labels[int(np.argmax(logits))]
    assert "cat" in top.lower()


def test_a_torchvision_name_is_seeded_eval_mode_imagenet() -> None:
    a, b = load_model("squeezenet1_1"), load_model("squeezenet1_1", seed=1)
    assert isinstance(a, Model)
    assert not a.module.training
    assert a.preprocess == "imagenet"
    assert a.labels is not None
    assert len(a.labels) == 1000
    assert tuple(a.example_inputs[0].shape) == (1, 3, 224, 224)
    wa, wb = (next(m.parameters()) for m in (a.module, b.module))
    assert not torch.equal(wa, wb)
    torch.testing.assert_close(wa, next(load_model("squeezenet1_1").module.parameters()))


def test_lipreads_frontend_factory_gives_its_own_example_clip() -> None:
    model = load_model("lipread.model:frontend")
    assert model.preprocess is None
    assert tuple(model.example_inputs[0].shape) == (1, 3, 75, 64, 128)
    assert not model.module.training


def test_a_file_factory_and_a_weights_file(tmp_path: Path) -> None:
    src = tmp_path / "net.py"
    src.write_text("import torch\n\ndef make():\n    return torch.nn.Conv2d(3, 2, 1)\n")
    made = load_model(f"{src}:make")
    assert made.preprocess == "imagenet"
    weights = tmp_path / "w.pt"
    torch.save(
        {"state_dict": {k: torch.ones_like(v) for k, v in made.module.state_dict().items()}},
        weights,
    )
    loaded = load_model(f"{src}:make", str(weights))
    assert all(bool((v == 1).all()) for v in loaded.module.state_dict().values())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_net", r"unknown model `no_such_net`: not a torchvision builder"),
        ("missing.py:make", r"model file `missing.py` does not exist"),
        ("no_such_module:make", r"cannot import `no_such_module` for model spec"),
        ("lipread.model:nothing", r"`lipread.model` has no `nothing`"),
    ],
)
def test_a_bad_spec_says_why(spec: str, message: str) -> None:
    with pytest.raises(ZooError, match=message):
        load_model(spec)


def test_weights_that_do_not_fit_name_the_keys(tmp_path: Path) -> None:
    weights = tmp_path / "w.pt"
    torch.save({"features.0.weight": torch.zeros(1)}, weights)
    with pytest.raises(ZooError, match=r"weights `.*w.pt` do not fit `squeezenet1_1`") as info:
        load_model("squeezenet1_1", str(weights))
    assert "'features.0.bias'" in str(info.value)  # missing
    assert "features.0.weight: file (1,) vs model (64, 3, 3, 3)" in str(info.value)
