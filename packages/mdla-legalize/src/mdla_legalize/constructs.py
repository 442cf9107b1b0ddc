"""Which PyTorch constructs run on the MDLA, as what, on what evidence: the one catalogue.

`workbench check --help` and the README's "Which constructs map" table are both rendered from
`CONSTRUCTS` (`help_text`, `markdown_table`), and `disagreements(target)` holds every status
against the target description, so neither text can claim more than the data says:

- MAPS: every op it becomes is supported on the device and *measured* there (the target
  entry's source starts with "measured");
- ASSUMED: it maps only because an op (or an attribute of one) that was never measured is
  assumed to: the target says `source = "assumed: ..."` for each name in `assumed`, and every
  other op it becomes is measured (`workbench probe` measures the assumed ones on a phone);
- NEVER: an op it needs is not supported on the device (`supported = false`), for the reason
  given; such a part runs on the CPU or is changed in the model.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mdla_ir import OpKind
from mdla_ir.devices import NPU
from mdla_target.target import Target


class Status(enum.Enum):
    MAPS = "maps"
    ASSUMED = "maps on an assumption"
    NEVER = "never"


@dataclass(frozen=True, slots=True)
class Construct:
    """One row. `ops`: what it becomes on the device (NEVER: the unsupported ops it needs);
    `assumed`: op kinds, or `KIND.attribute` for an attribute-level assumption, whose target
    entry is an assumption; `why`: for NEVER, the reason in a few words."""

    name: str
    where: str
    device_as: str
    ops: tuple[OpKind, ...]
    status: Status
    cost: str = "none"
    assumed: tuple[str, ...] = ()
    why: str = ""

    @property
    def status_text(self) -> str:
        if self.status is Status.ASSUMED:
            return f"maps on an assumption: {', '.join(_named(a) for a in self.assumed)} unmeasured"
        if self.status is Status.NEVER:
            return f"never: {self.why}"
        return "maps (measured)"


def _named(assumed: str) -> str:
    """`KIND`, or `KIND` with attr > 1 for an attribute-level assumption."""
    kind, _, attr = assumed.partition(".")
    return f"`{kind}` with {attr} > 1" if attr else f"`{kind}`"


K = OpKind
CONSTRUCTS: tuple[Construct, ...] = (
    Construct(
        "`F.interpolate` / `nn.Upsample`, bilinear (align_corners either way, size or scale)",
        "segmentation and detection necks (LRASPP, DeepLabV3, FCN, FPN, UNet)",
        "`RESIZE_BILINEAR` (a scale_factor only where torch and the op sample the same points)",
        (K.RESIZE_BILINEAR,),
        Status.MAPS,
    ),
    Construct(
        "`F.interpolate` / `nn.Upsample`, nearest and nearest-exact",
        "FPN, YOLO necks, UNet decoders",
        "`RESIZE_NEAREST_NEIGHBOR`",
        (K.RESIZE_NEAREST_NEIGHBOR,),
        Status.ASSUMED,
        assumed=("RESIZE_NEAREST_NEIGHBOR",),
    ),
    Construct(
        "`nn.ConvTranspose2d` (groups 1, dilation 1, output_padding <= padding)",
        "decoders, UNet, super-resolution",
        "`TRANSPOSE_CONV_2D` with explicit pads",
        (K.TRANSPOSE_CONV_2D,),
        Status.ASSUMED,
        assumed=("TRANSPOSE_CONV_2D",),
    ),
    Construct(
        "`nn.PixelShuffle` (depth-to-space)",
        "super-resolution (ESPCN)",
        "`DEPTH_TO_SPACE`; torch's channel order folded into the conv before it, else a 1×1 "
        "permutation `CONV_2D`",
        (K.DEPTH_TO_SPACE, K.CONV_2D),
        Status.ASSUMED,
        "a 1×1 conv where not folded",
        assumed=("DEPTH_TO_SPACE",),
    ),
    Construct(
        "`nn.PReLU`, `nn.LeakyReLU`; written by hand: `torch.where(x > 0, x, a * x)`, "
        "`x.masked_fill(x < 0, 0)`",
        "MTCNN (face detection), YOLO, GANs",
        "`PRELU` (LeakyReLU: a constant alpha, as LiteRT lowers it); `RELU` for a = 0",
        (K.PRELU,),
        Status.ASSUMED,
        assumed=("PRELU",),
    ),
    Construct(
        "dilated (atrous) convolutions, dilation > 1",
        "DeepLabV3's ASPP, dilated ResNet backbones (FCN)",
        "`CONV_2D` / `DEPTHWISE_CONV_2D` with their dilation",
        (K.CONV_2D, K.DEPTHWISE_CONV_2D),
        Status.ASSUMED,
        assumed=("CONV_2D.dilation", "DEPTHWISE_CONV_2D.dilation"),
    ),
    Construct(
        "`chunk`, `split`, `x[:, a:b]`, channel shuffle (view-transpose-reshape, "
        "`nn.ChannelShuffle`)",
        "ShuffleNetV2, CSP/YOLO blocks, GhostNet",
        "a 1×1 `CONV_2D` with a 0/1 selection filter at weight scale 1, output at the input's "
        "scale: multiplier exactly 1; folded into the conv that reads it where there is one",
        (K.CONV_2D,),
        Status.MAPS,
        "a 1×1 conv where not folded",
    ),
    Construct(
        "grouped convs, 1 < groups < channels",
        "ResNeXt, RegNet X/Y",
        "one `CONV_2D` with block-diagonal weights (`GROUPED_CONV_2D` is not measured on the MDLA)",
        (K.CONV_2D,),
        Status.MAPS,
        "groups× that layer's MACs (`explain` says so)",
    ),
    Construct(
        "`nn.Conv1d`, `BatchNorm1d`, `MaxPool1d`/`AvgPool1d`, `AdaptiveAvgPool1d` on (N, C, L)",
        "keyword spotting, audio, sensor models",
        "the 2-D op on the H = 1 image (N, C, 1, L); every (N, C, L) activation is held "
        "(N, L, C), so pads, means over channels, a permute or flatten into a Linear need no "
        "`TRANSPOSE`",
        (K.CONV_2D, K.MAX_POOL_2D, K.AVERAGE_POOL_2D, K.MEAN, K.RESHAPE),
        Status.MAPS,
    ),
    Construct(
        "`nn.Conv3d` (any temporal window, groups), `BatchNorm3d`, `MaxPool3d`/`AvgPool3d`, "
        "`AdaptiveAvgPool3d`",
        "video classifiers (torchvision r3d_18, mc3_18, r2plus1d_18), LipNet",
        "frames as the batch: a 0/1 `CONV_2D` stacks each temporal window on channels, one "
        "`CONV_2D` takes the 3-D filter; pools per frame, then over time",
        (K.CONV_2D, K.MAX_POOL_2D, K.AVERAGE_POOL_2D, K.MEAN, K.RESHAPE),
        Status.MAPS,
    ),
    Construct(
        "`Linear` after flattening an H×W×C map",
        "VGG, older detectors, MTCNN R-/O-Net",
        "one VALID H×W `CONV_2D`, the flatten order (and a permute before it) folded into "
        "the filter",
        (K.CONV_2D, K.RESHAPE),
        Status.MAPS,
    ),
    Construct(
        "`avg_pool2d`/`max_pool2d` with `ceil_mode` (a partial last window)",
        "small-input models, MTCNN",
        "explicit end padding; `count_include_pad` with padding: a zero `PAD` first. Maps where "
        "the end padding is the device's TF-SAME padding",
        (K.AVERAGE_POOL_2D, K.MAX_POOL_2D, K.PAD),
        Status.MAPS,
    ),
    Construct(
        "`nn.SiLU`, `nn.Hardsigmoid`, squeeze-excite gates",
        "EfficientNet, MobileNetV3",
        "`LOGISTIC` · `MUL`; `RELU6` · `MUL` (`HARD_SWISH` when it gates its own input); "
        "`MEAN` and a broadcast `MUL`",
        (K.LOGISTIC, K.MUL, K.ADD, K.RELU6, K.HARD_SWISH, K.MEAN),
        Status.MAPS,
        "one extra op per activation",
    ),
    Construct(
        "`sum`, `amax`/`max(dim)`, `amin`/`min(dim)` over any dims but the batch, keepdim or not",
        "CBAM and other attention gates, global sum/max pools, hand-written heads",
        "sum: `MEAN` · `MUL` by the count; max: one `MAX_POOL_2D` window over the reduced dims "
        "(viewed by `RESHAPE`s as [N, before, reduced, after]); min: -max(-x) with `MUL` by -1",
        (K.MEAN, K.MUL, K.MAX_POOL_2D, K.RESHAPE),
        Status.MAPS,
        "one or two extra ops per reduction",
    ),
    Construct(
        "`clamp`/`clip`/`nn.Hardtanh`/`F.hardtanh` with any bounds (one-sided too)",
        "bounded activations, hand-written clipping",
        "(0, 6) `RELU6`, (0, inf) `RELU`; otherwise `MUL`/`ADD` by constants around a fused "
        "RELU, RELU6 or RELU1",
        (K.RELU, K.RELU6, K.MUL, K.ADD),
        Status.MAPS,
        "up to four ops per clamp",
    ),
    Construct(
        "`expand`, `expand_as`, `broadcast_to`, `repeat`",
        "squeeze-excite gates, ASPP image pooling, tiled maps",
        "nothing where an `ADD`/`MUL` reading it broadcasts anyway; else a `CONCATENATION` of "
        "copies per expanded axis",
        (K.CONCATENATION, K.ADD, K.MUL),
        Status.MAPS,
    ),
    Construct(
        "`nn.AdaptiveMaxPool2d` to a size dividing the input",
        "classifier heads, SPP",
        "`MAX_POOL_2D`, kernel = stride = input / output",
        (K.MAX_POOL_2D,),
        Status.MAPS,
    ),
    Construct(
        "`a - b` of two activations (SUB), `c - x`",
        "FastViT's RepMixer, EfficientFormer's pooling mixer, centring",
        "`ADD(a, MUL(b, -1))`; a constant subtrahend: `ADD` of its negation",
        (K.ADD, K.MUL),
        Status.MAPS,
        "one `MUL` per SUB of two activations",
    ),
    Construct(
        "`torch.maximum`/`minimum`, `max`/`min` of two tensors, `clamp` to tensor bounds",
        "max of two branches, per-channel caps, hand-written clipping to a tensor",
        "max(a, b) = `ADD`(a, `RELU`(b - a)), min(a, b) = a - `RELU`(a - b); each SUB an `ADD` "
        "of a `MUL` by -1, the `RELU` fused",
        (K.ADD, K.MUL, K.RELU),
        Status.MAPS,
        "three or four ops per max/min",
    ),
    Construct(
        "`nn.LayerNorm` (ConvNeXt, ViT)",
        "transformers, ConvNeXt",
        "-",
        (K.LAYER_NORM, K.RSQRT),
        Status.NEVER,
        "run it on the CPU",
        why="needs RSQRT, which the MDLA lacks (silicon fact 2)",
    ),
    Construct(
        "attention (`nn.MultiheadAttention`)",
        "ViT, transformer blocks",
        "-",
        (K.LAYER_NORM, K.TRANSPOSE),
        Status.NEVER,
        "run it on the CPU",
        why="transformer blocks are out: their LayerNorm needs RSQRT (silicon fact 2), and "
        "splitting heads needs TRANSPOSE, which is not among the ops measured on the MDLA",
    ),
    Construct(
        "`nn.GELU`",
        "transformers, ConvNeXt",
        "-",
        (K.GELU, K.EXP),
        Status.NEVER,
        "use ReLU/ReLU6/Hardswish/SiLU, or the CPU",
        why="needs erf; no EXP on the MDLA (silicon fact 2), and no exact composition",
    ),
    Construct(
        "`nn.ELU`/`CELU`/`SELU`/`Softplus`/`Mish`/`LogSigmoid`/`Tanhshrink`/`Softsign`, "
        "their `F.*` functions",
        "YOLOv4's Mish, self-normalizing nets, GANs, older CNNs",
        "-",
        (K.ELU, K.CELU, K.SELU, K.SOFTPLUS, K.MISH, K.LOG_SIGMOID, K.TANHSHRINK, K.SOFTSIGN),
        Status.NEVER,
        "a CPU partition (`--cpu auto`): one int8 table lookup",
        why="needs EXP (or a division), which the MDLA lacks (silicon fact 2)",
    ),
    Construct(
        "`torch.cos`/`sin`/`tan`/`atan`/`expm1`/`log1p` (and their `Tensor` methods)",
        "oriented-box heads' angles, positional codes",
        "-",
        (K.COS, K.SIN, K.TAN, K.ATAN, K.EXPM1, K.LOG1P),
        Status.NEVER,
        "a CPU partition (`--cpu auto`): one int8 table lookup",
        why="no such operation on the MDLA; an int8 function of one input is a 256-entry table",
    ),
    Construct(
        "adaptive average pools (`nn.AdaptiveAvgPool2d`) to a size not dividing the input",
        "classifier heads and SPP on odd input sizes (VGG at 64, UPerNet, PSPNet)",
        "rows, then columns: one `DEPTHWISE_CONV_2D` per distinct bin (the whole axis as its "
        "kernel, 1/(bin size) inside the bin) and a `CONCATENATION` in the output's order",
        (K.DEPTHWISE_CONV_2D, K.CONCATENATION),
        Status.MAPS,
        "a few small depthwise convs and a concatenation per axis",
    ),
    Construct(
        "adaptive max pools (`F.adaptive_max_pool2d`, its module) to a size not dividing the input",
        "SPP on odd input sizes",
        "-",
        (K.ADAPTIVE_MAX_POOL_2D,),
        Status.NEVER,
        "a CPU partition (`--cpu auto`)",
        why="overlapping windows of varying size are no single Neuron pooling op",
    ),
)


def _source(target: Target, device: str, name: str) -> tuple[bool, str]:
    """(supported, source) of an op kind, or of `KIND.attribute` (the source the target records
    for a non-default value of that attribute, "" when it records none)."""
    kind, _, attr = name.partition(".")
    spec = target.op(device, OpKind[kind])
    return spec.supported, (spec.attribute_source(attr) if attr else spec.source)


def disagreements(
    target: Target, device: str = NPU, constructs: tuple[Construct, ...] = CONSTRUCTS
) -> list[str]:
    """Every claim of `constructs` the target does not back, one line each (empty: all hold)."""
    found: list[str] = []
    for c in constructs:
        where = f"{c.name}: {c.status.value}"
        assumed_kinds = {a for a in c.assumed if "." not in a}
        if c.status is Status.NEVER:
            if all(target.op(device, k).supported for k in c.ops):
                found.append(f"{where}, but every op it names maps on {device}")
            continue
        if c.status is Status.ASSUMED and not c.assumed:
            found.append(f"{where}, but it names no assumed op")
        if c.status is Status.MAPS and c.assumed:
            found.append(f"{where}, but it names assumptions {c.assumed}")
        for name in c.assumed:
            ok, source = _source(target, device, name)
            if not ok or not source.startswith("assumed"):
                found.append(f"{where}: `{name}` on {device} is {_said(ok, source)}")
        for kind in c.ops:
            if kind.name in assumed_kinds:
                continue
            ok, source = _source(target, device, kind.name)
            if not ok or not source.startswith("measured"):
                found.append(f"{where}: `{kind.name}` on {device} is {_said(ok, source)}")
    return found


def _said(supported: bool, source: str) -> str:
    if not supported:
        return "not supported"
    return f"supported, from {source!r}" if source else "not recorded as an assumption"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_table(constructs: tuple[Construct, ...] = CONSTRUCTS) -> str:
    """The README's table (one row per construct), ending in a newline."""
    rows = [
        "| construct | where users meet it | on the MDLA as | status | cost |",
        "|---|---|---|---|---|",
    ]
    rows += [
        "| "
        + " | ".join(_cell(v) for v in (c.name, c.where, c.device_as, c.status_text, c.cost))
        + " |"
        for c in constructs
    ]
    return "\n".join(rows) + "\n"


def replace_table(text: str, constructs: tuple[Construct, ...] = CONSTRUCTS) -> str:
    """`text` (the README) with its construct table (the header row and every `|` row after
    it) replaced by `markdown_table()`: the README is refreshed with

        p = pathlib.Path("README.md"); p.write_text(replace_table(p.read_text()))
    """
    table = markdown_table(constructs)
    start = text.index(table.split("\n", 1)[0] + "\n")
    end = start
    while text.startswith("|", end):
        end = text.index("\n", end) + 1
    return text[:start] + table + text[end:]


_HEADINGS = {
    Status.MAPS: "**Maps** (every op it becomes was measured on the MDLA):",
    Status.ASSUMED: "**Maps on an assumption** (an op never measured on the MDLA; "
    "`workbench probe` measures it on a phone):",
    Status.NEVER: "**Never** (no op of the MDLA does it; run that part on the CPU):",
}


def help_text(constructs: tuple[Construct, ...] = CONSTRUCTS) -> str:
    """`workbench check --help`'s construct list (Typer markdown), grouped by status."""
    parts = ["Constructs (the README's table adds where users meet them and the cost):"]
    for status, heading in _HEADINGS.items():
        items = [f"- {_help_item(c)}" for c in constructs if c.status is status]
        parts += [heading, "\n".join(items)]
    return "\n\n".join(parts) + "\n"


def _help_item(c: Construct) -> str:
    if c.status is Status.NEVER:
        return f"{c.name}: {c.why}"
    ops = ", ".join(k.name for k in c.ops)
    if c.status is Status.ASSUMED:
        return f"{c.name} -> {ops} (unmeasured: {', '.join(_named(a) for a in c.assumed)})"
    return f"{c.name} -> {ops}"
