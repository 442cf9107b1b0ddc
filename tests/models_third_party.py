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

# A wider set nobody had tried (`bench/coverage.py --third-party --wide`): torchvision's own
# classifiers and segmenters, timm CNN families outside TIMM, smp decoders outside SMP,
# ultralytics heads outside YOLO.
WIDE_TORCHVISION = [
    "squeezenet1_1",
    "googlenet",
    "inception_v3",
    "mnasnet0_5",
    "densenet121",
    "efficientnet_v2_s",
    "convnext_tiny",
    "regnet_x_400mf",
    "wide_resnet50_2",
    "alexnet",
    "mobilenet_v3_small",
    "shufflenet_v2_x0_5",
    "maxvit_t",
    "swin_t",
    "vit_b_16",
    "deeplabv3_resnet50",
]
WIDE_TIMM = [
    "res2net50_14w_8s",
    "resnest14d",
    "skresnet18",
    "dpn48b",
    "xception41",
    "inception_v4",
    "mixnet_s",
    "gernet_s",
    "ese_vovnet19b_dw",
    "selecsls42b",
    "hardcorenas_a",
    "cspresnet50",
    "darknet17",
    "nf_regnet_b0",
    "poolformer_s12",
    "edgenext_xx_small",
    "repvit_m0_9",
    "repghostnet_050",
    "inception_next_atto",
    "starnet_s050",
    "efficientvit_b0",
    "ghostnetv2_100",
    "mobilevitv2_050",
    "levit_128s",
    "coatnet_nano_rw_224",
    "tresnet_m",
    "seresnext26d_32x4d",
    "ecaresnet26t",
    "regnetz_005",
    "fasternet_t0",
    "tf_efficientnetv2_b0",
    "hgnetv2_b0",
    "convnextv2_atto",
    "fbnetv3_b",
    "vgg11",
]
WIDE_SMP = [
    "UnetPlusPlus/resnet18",
    "MAnet/resnet18",
    "PAN/resnet18",
    "UPerNet/resnet18",
    "Segformer/resnet18",
    "DeepLabV3/resnet18",
    "Unet/efficientnet-b0",
    "FPN/mobilenet_v2",
]
WIDE_YOLO = ["yolov8n-cls", "yolov8n-obb", "yolov10n", "yolo11n-seg", "yolo11n-pose", "yolov9t"]
WIDE = (
    [f"tv:{n}" for n in WIDE_TORCHVISION]
    + [f"timm:{n}" for n in WIDE_TIMM]
    + [f"smp:{n}" for n in WIDE_SMP]
    + [f"yolo:{n}" for n in WIDE_YOLO]
)
# Models whose own code fixes the input size (attention bias tables built for it, windows,
# a minimum the stem's strides need).
FIXED_SIDE = {
    "timm:efficientformer_l1": 224,
    "tv:inception_v3": 75,
    "tv:maxvit_t": 224,
    "timm:levit_128s": 224,
    "timm:coatnet_nano_rw_224": 224,
    "timm:inception_v4": 96,  # torch itself refuses 64 (a 3x3 VALID conv on a 2x2 map)
    "smp:PAN/resnet18": 128,  # torch itself refuses 64 (its pyramid pools a 1x1 map by 2)
}


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
    elif library == "tv":
        module = _torchvision(model, FIXED_SIDE.get(name, side))
    else:
        raise ValueError(
            f"unknown library in {name!r}: timm:<model>, smp:<Arch>/<encoder>, yolo:<model> "
            "or tv:<torchvision model>"
        )
    side = FIXED_SIDE.get(name, side)
    return module.eval(), (torch.rand(1, 3, side, side),)


def _yolo(model: str) -> nn.Module:
    """An ultralytics model built from the YAML its package ships (`yolov8n-seg.yaml`)."""
    os.environ.setdefault("YOLO_CONFIG_DIR", tempfile.mkdtemp(prefix="mdla-ultralytics-"))
    os.environ.setdefault("YOLO_OFFLINE", "1")
    from ultralytics.nn import tasks

    task = next((t for t in ("seg", "pose", "cls", "obb") if model.endswith(f"-{t}")), "detect")
    kinds = {
        "seg": tasks.SegmentationModel,
        "pose": tasks.PoseModel,
        "cls": tasks.ClassificationModel,
        "obb": tasks.OBBModel,
    }
    module: nn.Module = kinds.get(task, tasks.DetectionModel)(f"{model}.yaml", verbose=False)
    return module


def _torchvision(model: str, side: int) -> nn.Module:
    """A torchvision classifier or segmenter, `weights=None` (nothing downloaded); ViT is made
    for the input's side (its position table is)."""
    import torchvision

    extra: dict[str, object] = {}
    if model in ("googlenet", "inception_v3"):  # no auxiliary heads, no scipy init warning
        extra = {"aux_logits": False, "init_weights": True}
    elif model.startswith("vit_"):
        extra = {"image_size": side}
    elif model.startswith(("deeplabv3_", "fcn_")):
        extra = {"weights_backbone": None, "aux_loss": False}
    module: nn.Module = torchvision.models.get_model(model, weights=None, **extra)
    return module
