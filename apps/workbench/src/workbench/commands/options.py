"""Parameters shared by several commands: Annotated aliases, and the option blocks that
compile, tune, validate, export and run take (dataclasses `binding.options` expands into each
command's signature, declared here once), and the output console."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

import mdla_quant
from mdla_compile import CompileOptions
from mdla_ir.devices import DEFAULT_TARGET
from workbench import contract as ct
from workbench.placement import Cpu

Debug = Annotated[bool, typer.Option("--debug", help="Show the traceback of an error.")]
On = Annotated[
    str,
    typer.Option(
        "--on",
        help="Where to run: `emu` (host emulator), `lib:PATH` (PATH: a "
        "libneuron_adapter.so), `ssh://user@host[:port]` (a phone).",
    ),
]
Device = Annotated[str, typer.Option("--device", help="Neuron device to target.")]
TargetName = Annotated[
    str, typer.Option("--target", help="Target description: `mdla3.5` or a target .toml path.")
]
Weights = Annotated[
    Path | None,
    typer.Option("--weights", help="State-dict file for a torchvision model.", exists=True),
]
Calib = Annotated[
    str,
    typer.Option(
        "--calib",
        help="Calibration data: `samples` (scikit-image photos), `random`, or a directory "
        "of images.",
    ),
]
Count = Annotated[int, typer.Option("--count", min=1, help="Number of calibration inputs.")]


class ImportPathName(StrEnum):
    """mdla_ir.PATHS as a choice."""

    fx = "fx"
    export = "export"
    auto = "auto"


ImportPath = Annotated[
    ImportPathName,
    typer.Option(
        "--import",
        help="How the model is captured: fx (symbolic tracing), export (torch.export to core "
        "ATen: Python on fixed shapes, in-place ops), auto (export, else fx; a note says why).",
    ),
]
JsonOut = Annotated[
    bool, typer.Option("--json", help="One JSON document on stdout; text on stderr.")
]


class MethodName(StrEnum):
    """mdla_quant.METHODS as a choice (tests hold the two equal)."""

    minmax = "minmax"
    percentile = "percentile"
    mse = "mse"
    entropy = "entropy"


class RoundingName(StrEnum):
    double = "double"
    single = "single"


class ReconstructionName(StrEnum):
    """mdla_quant.RECONSTRUCTIONS as a choice."""

    layer = "layer"
    block = "block"


class WeightRoundingName(StrEnum):
    """mdla_quant.WEIGHT_ROUNDINGS as a choice."""

    nearest = "nearest"
    balanced = "balanced"
    kernel = "kernel"
    weighted = "weighted"
    mean = "mean"


# A flag's default is the config's own.
DEFAULT_WEIGHT_ROUNDING = WeightRoundingName(mdla_quant.QuantConfig().weight_rounding)


Method = Annotated[MethodName, typer.Option("--method", help="Activation range method.")]
Percentile = Annotated[
    float, typer.Option("--percentile", min=50.0, max=100.0, help="Percentile for `percentile`.")
]
Rounding = Annotated[
    RoundingName,
    typer.Option(
        "--rounding", help="`double`: TFLite reference kernels; `single`: TFLITE_SINGLE_ROUNDING."
    ),
]
BiasCorrection = Annotated[
    bool,
    typer.Option(
        "--bias-correction",
        help="Shift each conv/FC bias by its measured mean int8 error (calibration data).",
    ),
]
Equalize = Annotated[
    bool,
    typer.Option(
        "--equalize",
        help="Cross-layer equalization of conv pairs before calibration, then high-bias "
        "absorption (exact in float; pairs through RELU6 are left alone).",
    ),
]
AdaRound = Annotated[
    int,
    typer.Option(
        "--adaround",
        min=0,
        metavar="ITERS",
        help="AdaRound: learn each weight's rounding, ITERS iterations per layer (e.g. 300; "
        "0 = round to nearest). Adds minutes to a compile.",
    ),
]
Reconstruction = Annotated[
    ReconstructionName,
    typer.Option(
        "--reconstruction",
        help="What AdaRound reconstructs: `layer` (each conv's output) or `block` (each "
        "inverted-residual block's output, its convs' roundings fit together; needs "
        "--adaround).",
    ),
]
WeightRounding = Annotated[
    WeightRoundingName,
    typer.Option(
        "--weight-rounding",
        help="How weights round to int8: `balanced` flips a few roundings so each kernel's "
        "and output channel's error sums stay within half a step (data-free, fast); "
        "`kernel`: each kernel's only; `weighted`: then flips weighed by the calibration's "
        "input means and variances; `mean`: `kernel`, and the weights' mean error on the "
        "calibration data moves into the bias (not with AdaRound); `nearest`: round to "
        "nearest. AdaRound keeps it where its own is no better.",
    ),
]
A16 = Annotated[
    str | None,
    typer.Option(
        "--a16",
        metavar="auto|joint|GLOBS",
        help="Hold some activations in int16 (16x8): `auto[:BUDGET]` chooses them by measured "
        "gain within BUDGET, a share of activation bytes (default 25%, e.g. auto:10%); "
        "`joint[:BUDGET]` by backward elimination from all int16 (sees tensors that gain "
        "together; slower); `refit[:BUDGET]` as joint, measured on weights AdaRound fits to "
        "the int16 activations (with --adaround); or comma-separated tensor/op name globs.",
    ),
]
SkipRule = Annotated[
    list[str] | None,
    typer.Option(
        "--skip-rule",
        help="Compile without this legalize rule (repeatable): see what the device says.",
    ),
]

OutputKind = Annotated[
    list[str] | None,
    typer.Option(
        "--output-kind",
        metavar="NAME=KIND",
        help="What output NAME is, recorded in the .mdla (default: guessed from its shape): "
        "logits, classmap, boxes, keypoints or raw; KIND alone for a one-output model. "
        "Repeatable.",
    ),
]


def quant_config(
    method: MethodName,
    percentile: float,
    rounding: RoundingName,
    target: str,
    *,
    bias_correction: bool = False,
    equalize: bool = False,
    adaround: int = 0,
    reconstruction: ReconstructionName = ReconstructionName.layer,
    weight_rounding: WeightRoundingName = DEFAULT_WEIGHT_ROUNDING,
) -> mdla_quant.QuantConfig:
    """The QuantConfig the calibration options above describe (one place for compile, tune,
    validate and export: the keyword defaults are QuantConfig's own, so a command without
    --bias-correction/--equalize/--adaround builds exactly the config it built before)."""
    return mdla_quant.QuantConfig(
        method=method.value,
        percentile=percentile,
        rounding=rounding.value,
        bias_correction=bias_correction,
        equalize=equalize,
        adaround=adaround,
        reconstruction=reconstruction.value,
        weight_rounding=weight_rounding.value,
        target=target,
    )


@dataclass(frozen=True)
class InputFlags:
    """The input contract's image options (`mdla_compile.contract`): compile stores them in
    the .mdla; given to `run`, they replace the stored ones."""

    preset: ct.PresetOpt = None
    mean: ct.Mean = None
    std: ct.Std = None
    channels: ct.ChannelsOpt = None
    resize: ct.Resize = None
    crop: ct.Crop = None
    labels: ct.LabelsOpt = None

    def contract(self, input_shape: str | None = None) -> ct.Contract:
        """The options parsed and checked (a malformed one: exit 2)."""
        return ct.contract_from(
            input_shape,
            self.preset,
            self.mean,
            self.std,
            self.channels,
            self.resize,
            self.crop,
            self.labels,
        )


@dataclass(frozen=True)
class QuantFlags:
    """The quantizer's options (`mdla_quant.QuantConfig`)."""

    method: Method = MethodName.percentile
    percentile: Percentile = 99.99
    rounding: Rounding = RoundingName.double
    bias_correction: BiasCorrection = False
    equalize: Equalize = False
    adaround: AdaRound = 0
    reconstruction: Reconstruction = ReconstructionName.layer
    weight_rounding: WeightRounding = DEFAULT_WEIGHT_ROUNDING

    def config(self, target: str) -> mdla_quant.QuantConfig:
        return quant_config(
            self.method,
            self.percentile,
            self.rounding,
            target,
            bias_correction=self.bias_correction,
            equalize=self.equalize,
            adaround=self.adaround,
            reconstruction=self.reconstruction,
            weight_rounding=self.weight_rounding,
        )


@dataclass(frozen=True)
class CompileFlags:
    """Everything a compile takes from the command line (`mdla_compile.CompileOptions`)."""

    weights: Weights = None
    calib: Calib = "samples"
    count: Count = 6
    quant: QuantFlags = field(default_factory=QuantFlags)
    a16: A16 = None
    target: TargetName = DEFAULT_TARGET
    skip_rule: SkipRule = None
    cpu: Cpu = None
    arg: ct.ArgOpt = None
    input_shape: ct.InputShape = None
    inputs: InputFlags = field(default_factory=InputFlags)
    importer: ImportPath = ImportPathName.auto
    output_kind: OutputKind = None

    def options(self, model: str) -> CompileOptions:
        """The compile these options ask for (each checked: a malformed one is exit 2)."""
        return CompileOptions(
            model,
            args=tuple(self.arg or ()),
            weights=str(self.weights) if self.weights else None,
            contract=self.inputs.contract(self.input_shape),
            calib=self.calib,
            count=self.count,
            quant=self.quant.config(self.target),
            a16=self.a16,
            cpu=tuple(self.cpu or ()),
            target=self.target,
            skip_rules=tuple(self.skip_rule or ()),
            import_path=self.importer.value,
            output_kinds=tuple(self.output_kind or ()),
        )


def console() -> Console:
    """Rich console on stdout (made per call, so it writes wherever stdout is now)."""
    return Console(highlight=False, soft_wrap=True)
