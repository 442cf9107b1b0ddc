"""Models as users bring them from third-party libraries (timm, segmentation_models_pytorch),
built from the libraries' code with random weights (seed 0, nothing downloaded: timm's
`pretrained=False`, smp's `encoder_weights=None`), in eval mode, with a small input.

    module, example = build("timm:mobilenetv3_small_050", side=64)
    module, example = build("smp:Unet/resnet18", side=64)

`tests/zoo/test_third_party.py` compiles a handful of them; `bench/coverage.py --third-party`
prints the verdict of each of `MODELS`.
"""

from __future__ import annotations

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
MODELS = [f"timm:{n}" for n in TIMM] + [f"smp:{n}" for n in SMP]
# Models whose own code fixes the input size (attention bias tables built for it).
FIXED_SIDE = {"timm:efficientformer_l1": 224}


def build(name: str, side: int = 128) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """`timm:<model>` or `smp:<Arch>/<encoder>`, random weights, eval mode, one input."""
    torch.manual_seed(0)
    library, _, model = name.partition(":")
    if library == "timm":
        import timm

        module = timm.create_model(model, pretrained=False)
    elif library == "smp":
        import segmentation_models_pytorch as smp

        arch, _, encoder = model.partition("/")
        module = getattr(smp, arch)(encoder_name=encoder, encoder_weights=None, classes=2)
    else:
        raise ValueError(f"unknown library in {name!r}: timm:<model> or smp:<Arch>/<encoder>")
    side = FIXED_SIDE.get(name, side)
    return module.eval(), (torch.rand(1, 3, side, side),)
