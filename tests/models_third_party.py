"""Models as users bring them from third-party libraries (timm, segmentation_models_pytorch,
ultralytics), built from the libraries' code with random weights (seed 0, nothing downloaded:
timm's `pretrained=False`, smp's `encoder_weights=None`, ultralytics' model YAMLs shipped in its
package), in eval mode, with a small input.

    module, example = build("timm:mobilenetv3_small_050", side=64)
    module, example = build("smp:Unet/resnet18", side=64)
    module, example = build("yolo:yolov8n-seg", side=160)

ultralytics keeps its settings file in a temporary folder (`YOLO_CONFIG_DIR`, set before it is
first imported), never under $HOME, and is told it is offline (`YOLO_OFFLINE`).

`tests/zoo/test_third_party.py` compiles a handful of them; `bench/coverage.py --third-party`
prints the verdict of each of `MODELS`.
"""

from __future__ import annotations

import os
import tempfile

import torch
from torch import nn

# timm's mobile/efficient/res/reg/rep/ghost families, convnext, fastvit, mobilevit,
# efficientformer; smp's decoders with a resnet and a mobilenet encoder.
TIMM = [
    "mobilenetv3_small_050",
    "mobilenetv3_large_100",
    "mobilenetv4_conv_small",
    "efficientnet_lite0",
    "efficientnet_b0",
    "tf_efficientnet_lite0",
    "tf_mobilenetv3_small_minimal_100",
    "ghostnet_100",
    "lcnet_050",
    "mnasnet_100",
    "fbnetc_100",
    "tinynet_e",
    "rexnet_100",
    "regnetx_002",
    "regnety_002",
    "repvgg_a0",
    "mobileone_s0",
    "cspdarknet53",
    "resnet18",
    "resnet50d",
    "densenet121",
    "dla34",
    "hrnet_w18_small",
    "convnext_atto",
    "fastvit_t8",
    "mobilevit_xxs",
    "efficientformer_l1",
]
SMP = [
    f"{arch}/{encoder}"
    for arch in ("Unet", "FPN", "DeepLabV3Plus", "Linknet", "PSPNet")
    for encoder in ("resnet18", "mobilenet_v2")
]
# ultralytics' YOLO: v5 (anchor-free "u" head), v8, 11; detect, segment, pose.
YOLO = ["yolov5nu", "yolov8n", "yolo11n", "yolov8n-seg", "yolov8n-pose"]
MODELS = [f"timm:{n}" for n in TIMM] + [f"smp:{n}" for n in SMP] + [f"yolo:{n}" for n in YOLO]
# Models whose own code fixes the input size (attention bias tables built for it).
FIXED_SIDE = {"timm:efficientformer_l1": 224}


def build(name: str, side: int = 128) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """`timm:<model>`, `smp:<Arch>/<encoder>` or `yolo:<model YAML name>`, random weights,
    eval mode, one input."""
    torch.manual_seed(0)
    library, _, model = name.partition(":")
    if library == "timm":
        import timm

        module = timm.create_model(model, pretrained=False)
    elif library == "smp":
        import segmentation_models_pytorch as smp

        arch, _, encoder = model.partition("/")
        module = getattr(smp, arch)(encoder_name=encoder, encoder_weights=None, classes=2)
    elif library == "yolo":
        module = _yolo(model)
    else:
        raise ValueError(
            f"unknown library in {name!r}: timm:<model>, smp:<Arch>/<encoder> or yolo:<model>"
        )
    side = FIXED_SIDE.get(name, side)
    return module.eval(), (torch.rand(1, 3, side, side),)


def _yolo(model: str) -> nn.Module:
    """An ultralytics model built from the YAML its package ships (`yolov8n-seg.yaml`)."""
    os.environ.setdefault("YOLO_CONFIG_DIR", tempfile.mkdtemp(prefix="mdla-ultralytics-"))
    os.environ.setdefault("YOLO_OFFLINE", "1")
    from ultralytics.nn import tasks

    task = next((t for t in ("seg", "pose") if model.endswith(f"-{t}")), "detect")
    kind = {"seg": tasks.SegmentationModel, "pose": tasks.PoseModel}.get(task, tasks.DetectionModel)
    module: nn.Module = kind(f"{model}.yaml", verbose=False)
    return module
